// The ranks of an MPI job (communicator.hpp), and the traffic counter: this file defines
// MPI_Send, MPI_Isend, MPI_Sendrecv and MPI_Alltoall, which count and call MPI's PMPI_ entry
// points (the profiling interface), so that every such call in the process is counted.
#include "attn/dist/communicator.hpp"

#include <atomic>
#include <chrono>
#include <climits>
#include <stdexcept>
#include <string>
#include <thread>

namespace attn::dist {

namespace {

std::atomic<std::uint64_t> sent_bytes{0};
std::atomic<std::uint64_t> sent_messages{0};

void count_send(int count, MPI_Datatype type, int dest, MPI_Comm comm) {
    int self = 0, size = 0;
    if (dest == MPI_PROC_NULL || PMPI_Comm_rank(comm, &self) != MPI_SUCCESS || dest == self) return;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS) return;
    sent_bytes += std::uint64_t(count) * std::uint64_t(size);
    sent_messages += 1;
}

int as_count(std::size_t count, const char* what) {
    if (count > std::size_t(INT_MAX))
        throw std::length_error(std::string(what) + ": " + std::to_string(count) +
                                " floats do not fit in one MPI message (at most " +
                                std::to_string(INT_MAX) + ")");
    return int(count);
}

}  // namespace

void check_mpi(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, message, &length) != MPI_SUCCESS) length = 0;
    throw std::runtime_error(std::string(what) + ": MPI error: " + std::string(message, std::size_t(length)));
}

Traffic traffic_so_far() { return {sent_bytes.load(), sent_messages.load()}; }

Communicator::Communicator(MPI_Comm comm, bool owned) : comm_(comm) {
    if (owned && comm != MPI_COMM_NULL)
        owner_ = std::shared_ptr<void>(new MPI_Comm(comm), [](void* p) {
            auto* c = static_cast<MPI_Comm*>(p);
            int finalized = 0;
            MPI_Finalized(&finalized);
            if (!finalized) MPI_Comm_free(c);
            delete c;
        });
}

Communicator Communicator::world() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        throw std::logic_error("attn::dist::Communicator::world: MPI is not initialised "
                               "(hold an attn::dist::Session in main)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return Communicator(MPI_COMM_WORLD, false);
}

Communicator Communicator::split(int color) const {
    MPI_Comm part = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, rank(), &part),
              "Communicator::split");
    if (part != MPI_COMM_NULL) MPI_Comm_set_errhandler(part, MPI_ERRORS_RETURN);
    return Communicator(part, true);
}

int Communicator::rank() const {
    int r = 0;
    check_mpi(MPI_Comm_rank(comm_, &r), "Communicator::rank");
    return r;
}

int Communicator::size() const {
    int n = 0;
    check_mpi(MPI_Comm_size(comm_, &n), "Communicator::size");
    return n;
}

void Communicator::barrier() const { check_mpi(MPI_Barrier(comm_), "Communicator::barrier"); }

void Communicator::barrier_sleeping() const {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(comm_, &request), "Communicator::barrier_sleeping (MPI_Ibarrier)");
    for (int done = 0;;) {
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "Communicator::barrier_sleeping (MPI_Test)");
        if (done) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void Communicator::ring_shift(const float* send, float* recv, std::size_t count) const {
    const int n = as_count(count, "Communicator::ring_shift");
    check_mpi(MPI_Sendrecv(send, n, MPI_FLOAT, next(), 0, recv, n, MPI_FLOAT, previous(), 0,
                           comm_, MPI_STATUS_IGNORE),
              "Communicator::ring_shift");
}

Communicator::Shift::Shift(Shift&& other) noexcept {
    for (int i = 0; i < 2; ++i) std::swap(requests_[i], other.requests_[i]);
}

Communicator::Shift& Communicator::Shift::operator=(Shift&& other) noexcept {
    if (this != &other) {
        MPI_Waitall(2, requests_, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 2; ++i) {
            requests_[i] = other.requests_[i];
            other.requests_[i] = MPI_REQUEST_NULL;
        }
    }
    return *this;
}

Communicator::Shift::~Shift() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Waitall(2, requests_, MPI_STATUSES_IGNORE);
}

void Communicator::Shift::wait() {
    check_mpi(MPI_Waitall(2, requests_, MPI_STATUSES_IGNORE), "Communicator::Shift::wait");
}

Communicator::Shift Communicator::start_ring_shift(const float* send, float* recv,
                                                   std::size_t count) const {
    const int n = as_count(count, "Communicator::start_ring_shift");
    Shift shift;
    check_mpi(MPI_Irecv(recv, n, MPI_FLOAT, previous(), 1, comm_, &shift.requests_[1]),
              "Communicator::start_ring_shift (MPI_Irecv)");
    check_mpi(MPI_Isend(send, n, MPI_FLOAT, next(), 1, comm_, &shift.requests_[0]),
              "Communicator::start_ring_shift (MPI_Isend)");
    return shift;
}

void Communicator::all_reduce_sum(float* data, std::size_t count) const {
    const std::size_t P = std::size_t(size()), r = std::size_t(rank());
    if (P == 1 || count == 0) return;
    // Block b is [begin(b), begin(b + 1)): the first count % P blocks have one more element.
    auto begin = [&](std::size_t b) { return b * (count / P) + std::min(b, count % P); };
    std::vector<float> incoming(count / P + 1);
    // Reduce-scatter: at step s this rank sends its partial sum of block (r - s) and adds the
    // block (r - s - 1) that arrives; after P - 1 steps it holds block (r + 1) summed.
    for (std::size_t s = 0; s + 1 < P; ++s) {
        const std::size_t out = (r + P - s) % P, in = (r + 2 * P - s - 1) % P;
        const std::size_t n_out = begin(out + 1) - begin(out), n_in = begin(in + 1) - begin(in);
        check_mpi(MPI_Sendrecv(data + begin(out), as_count(n_out, "all_reduce_sum"), MPI_FLOAT,
                               next(), 2, incoming.data(), int(n_in), MPI_FLOAT, previous(), 2,
                               comm_, MPI_STATUS_IGNORE),
                  "Communicator::all_reduce_sum (reduce-scatter)");
        float* mine = data + begin(in);
        for (std::size_t i = 0; i < n_in; ++i) mine[i] = incoming[i] + mine[i];
    }
    // All-gather: the summed blocks travel the ring once more, each overwriting its copies.
    for (std::size_t s = 0; s + 1 < P; ++s) {
        const std::size_t out = (r + 1 + P - s) % P, in = (r + P - s) % P;
        const std::size_t n_out = begin(out + 1) - begin(out), n_in = begin(in + 1) - begin(in);
        check_mpi(MPI_Sendrecv(data + begin(out), int(n_out), MPI_FLOAT, next(), 3,
                               data + begin(in), int(n_in), MPI_FLOAT, previous(), 3, comm_,
                               MPI_STATUS_IGNORE),
                  "Communicator::all_reduce_sum (all-gather)");
    }
}

void Communicator::all_to_all(const float* send, float* recv, std::size_t block) const {
    check_mpi(MPI_Alltoall(send, as_count(block, "Communicator::all_to_all"), MPI_FLOAT, recv,
                           int(block), MPI_FLOAT, comm_),
              "Communicator::all_to_all");
}

std::vector<float> Communicator::all_gather(const float* data, std::size_t count) const {
    std::vector<float> all(count * std::size_t(size()));
    check_mpi(MPI_Allgather(data, as_count(count, "Communicator::all_gather"), MPI_FLOAT,
                            all.data(), int(count), MPI_FLOAT, comm_),
              "Communicator::all_gather");
    return all;
}

std::vector<std::uint64_t> Communicator::all_gather_count(std::uint64_t value) const {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size()));
    check_mpi(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_),
              "Communicator::all_gather_count");
    return all;
}

double Communicator::max(double value) const {
    double result = 0;
    check_mpi(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm_), "Communicator::max");
    return result;
}

void Communicator::all_or_none(const std::function<void()>& check) const {
    std::string message;
    try {
        check();
    } catch (const std::invalid_argument& e) {
        message = e.what();
    }
    // The first rank that failed: the smallest rank, as the largest of -rank (size() if none).
    const int first = -int(max(message.empty() ? -double(size()) : -double(rank())));
    if (!message.empty()) throw std::invalid_argument(message);
    if (first < size())
        throw std::invalid_argument("rank " + std::to_string(first) + " refused its inputs (its message is on its stderr)");
}

void Communicator::require_same(std::size_t value, const std::string& what) const {
    const std::vector<std::uint64_t> all = all_gather_count(value);
    for (std::size_t r = 1; r < all.size(); ++r)
        if (all[r] != all[0])
            throw std::invalid_argument(what + ": " + std::to_string(all[0]) + " on rank 0, " +
                                        std::to_string(all[r]) + " on rank " + std::to_string(r) +
                                        ": every rank must give the same");
}

Session::Session() {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

Session::~Session() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

}  // namespace attn::dist

// The profiling interface: MPI's own entry points are PMPI_*; these count and forward.
extern "C" {

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    attn::dist::count_send(count, type, dest, comm);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
    attn::dist::count_send(count, type, dest, comm);
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
    attn::dist::count_send(sendcount, sendtype, dest, comm);
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    int self = 0, size = 0;
    if (PMPI_Comm_rank(comm, &self) == MPI_SUCCESS && PMPI_Comm_size(comm, &size) == MPI_SUCCESS)
        for (int r = 0; r < size; ++r) attn::dist::count_send(sendcount, sendtype, r, comm);
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

}  // extern "C"
