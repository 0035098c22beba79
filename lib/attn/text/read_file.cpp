// A whole file's bytes (read_file.hpp).
#include "attn/text/read_file.hpp"

#include <fstream>
#include <stdexcept>
#include <system_error>

namespace attn {

std::string read_file(const std::filesystem::path& file) {
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (ec || !std::filesystem::exists(status))
        throw std::runtime_error(file.string() + ": cannot be read (no such file)");
    if (!std::filesystem::is_regular_file(status))
        throw std::runtime_error(file.string() + ": cannot be read (not a regular file)");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error(file.string() + ": cannot be read (cannot open it)");
    std::string bytes;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
        bytes.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (in.bad()) throw std::runtime_error(file.string() + ": cannot be read (a read failed)");
    return bytes;
}

}  // namespace attn
