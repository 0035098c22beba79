// Shared by the libFuzzer targets: the parsers read files, so each input is written to a
// private temporary directory first. Any std::exception is a clean rejection; a crash, a
// sanitizer report, a hang or an exception of another kind is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace fuzz {

// The directory this process writes its inputs to (made once, per process).
inline const std::filesystem::path& work_dir() {
    static const std::filesystem::path dir = [] {
        const char* base = std::getenv("TMPDIR");
        std::filesystem::path d = std::filesystem::path(base && *base ? base : "/tmp") /
                                  ("attn_fuzz_" + std::to_string(::getpid()));
        std::filesystem::create_directories(d / "book" / "b");
        return d;
    }();
    return dir;
}

inline void write(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

inline void write(const std::filesystem::path& path, const std::string& text) {
    write(path, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

}  // namespace fuzz
