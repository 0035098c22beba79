// libFuzzer target: the safetensors reader (lib/attn/io/safetensors.hpp) on any bytes. The
// input is a whole file. Findings besides crashes and sanitizer reports (each a trap):
// - an exception other than the reader's std::runtime_error or std::length_error;
// - load_safetensors of the bytes written to a file disagreeing with parse_safetensors of the
//   bytes (another outcome, another message, other tensors);
// - a file that is read but does not read back the same after serialize_safetensors (its
//   floating tensors, as float32, and its metadata: the writer's output must be readable and
//   exact).
// Seeds: tools/ci_extra.sh uses data/oracle/safetensors/*.safetensors (the format's layout as
// the reference writer makes it), with the format's words as a dictionary (safetensors.dict).
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/io/safetensors.hpp"
#include "fuzz_common.hpp"

namespace {

// The outcome of a read: the message of a clean refusal ("" when it was read).
template <class F>
std::string outcome(F&& read, attn::io::SafetensorsFile& out) {
    try {
        out = read();
        return "";
    } catch (const std::runtime_error& e) {
        return std::string("runtime_error: ") + e.what();
    } catch (const std::length_error& e) {
        return std::string("length_error: ") + e.what();
    } catch (...) {
        __builtin_trap();  // any other exception is a finding
    }
}

// A message with the file's name in front replaced by "F".
std::string without_name(const std::string& message, const std::string& name) {
    const std::size_t at = message.find(name + ": ");
    return at == std::string::npos ? message : message.substr(0, at) + "F" + message.substr(at + name.size());
}

bool same(const attn::io::SafetensorsFile& a, const attn::io::SafetensorsFile& b) {
    if (!attn::bitwise_equal(a.tensors, b.tensors) || a.metadata != b.metadata || a.infos.size() != b.infos.size())
        return false;
    for (const auto& [name, t] : a.int64_tensors) {
        const auto it = b.int64_tensors.find(name);
        if (it == b.int64_tensors.end() || attn::shape_of(it->second) != attn::shape_of(t) || !(it->second == t))
            return false;
    }
    return a.int64_tensors.size() == b.int64_tensors.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    attn::io::SafetensorsFile parsed, loaded;
    const std::string parse_outcome = outcome([&] { return attn::io::parse_safetensors(bytes, "input"); }, parsed);

    const auto path = fuzz::work_dir() / "input.safetensors";
    fuzz::write(path, data, size);
    const std::string load_outcome = outcome([&] { return attn::io::load_safetensors(path); }, loaded);
    if (without_name(parse_outcome, "input") != without_name(load_outcome, path.string())) __builtin_trap();
    if (!parse_outcome.empty()) return 0;
    if (!same(parsed, loaded)) __builtin_trap();

    // Read, written, read again: the same float32 tensors and metadata.
    attn::io::SafetensorsFile again;
    const std::string written = attn::io::serialize_safetensors(parsed.tensors, parsed.metadata);
    if (!outcome([&] { return attn::io::parse_safetensors(written, "written"); }, again).empty()) __builtin_trap();
    // The writer orders the tensors by name: compared by name.
    for (const auto& [name, t] : parsed.tensors) {
        const attn::Tensor* u = again.tensors.find(name);
        if (u == nullptr || attn::shape_of(*u) != attn::shape_of(t) ||
            (t.size() != 0 && std::memcmp(u->data(), t.data(), t.size() * sizeof(float)) != 0))
            __builtin_trap();
    }
    if (again.tensors.size() != parsed.tensors.size() || again.metadata != parsed.metadata) __builtin_trap();
    return 0;
}
