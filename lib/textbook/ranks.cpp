// Chapters run as the ranks of an MPI job (ranks.hpp).
#include "textbook/ranks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace textbook {

std::optional<int> launched_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
        if (const char* value = std::getenv(name); value && *value) return std::atoi(value);
    return std::nullopt;
}

void exec_under_mpirun(int argc, char** argv, int ranks) {
    std::vector<char> self(4096);
    const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
    if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
    self[std::size_t(n)] = '\0';
    ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
    ::setenv("OMPI_MCA_orte_execute_quiet", "1", 0);
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
    ::setenv("OMP_NUM_THREADS", "1", 0);
    if (::geteuid() == 0) {
        ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    const std::string count = std::to_string(ranks);
    std::vector<char*> args = {const_cast<char*>("mpirun"), const_cast<char*>("-np"),
                               const_cast<char*>(count.c_str()), self.data()};
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    ::execvp("mpirun", args.data());
    throw std::runtime_error(std::string("cannot start mpirun (") + std::strerror(errno) +
                             "): this chapter runs as " + count +
                             " MPI processes; install Open MPI (apt-get install openmpi-bin)");
}

void silence_this_rank() {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null < 0) return;
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::close(null);
}

}  // namespace textbook
