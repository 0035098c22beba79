// Safetensors files (safetensors.hpp): the writer (serde_json's compact header, padded to 8
// bytes, tensors by dtype alignment then name, as safetensors/src/tensor.rs's `serialize`) and
// the reader, which checks the whole header against the file's size before it allocates
// anything the header sizes (`SafeTensors::read_metadata` and `Metadata::validate` there).
#include "attn/io/safetensors.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include "attn/io/safetensors_header.hpp"

namespace attn::io {

static_assert(std::endian::native == std::endian::little,
              "the safetensors reader and writer copy little-endian bytes as they are");

namespace {

using detail::fail;
using detail::fail_tensor;
using detail::printable;

// ------------------------------------------------------------------------------ writing

bool valid_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = detail::utf8_sequence(text, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

// A JSON string as serde_json writes it: `"` and `\` escaped, \b \f \n \r \t, other control
// characters as \u00xx (lowercase hex), everything else (UTF-8 included) as it is.
void json_string(std::string& out, std::string_view text) {
    out += '"';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    static const char* hex = "0123456789abcdef";
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

// The header (padded) and the order in which the tensors' data follows it.
struct Layout {
    std::string header;
    std::vector<const TensorDict::value_type*> order;
};

Layout layout_of(const TensorDict& tensors, const Metadata& metadata, const char* where) {
    Layout l;
    for (const auto& entry : tensors) {
        if (entry.first == "__metadata__")
            throw std::invalid_argument(std::string(where) + ": __metadata__: a tensor may not be named as the metadata");
        if (!valid_utf8(entry.first))
            throw std::invalid_argument(std::string(where) + ": " + printable(entry.first) +
                                        ": the name is not valid UTF-8");
        shape_of(entry.second);  // a shape that does not match its storage: std::length_error
        l.order.push_back(&entry);
    }
    for (const auto& [key, value] : metadata)
        if (!valid_utf8(key) || !valid_utf8(value))
            throw std::invalid_argument(std::string(where) + ": __metadata__: the key or value of \"" + printable(key) +
                                        "\" is not valid UTF-8");
    // All F32: the reference's order (descending dtype alignment, then name) is by name alone.
    std::sort(l.order.begin(), l.order.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    std::string& h = l.header;
    h += '{';
    if (!metadata.empty()) {
        h += "\"__metadata__\":{";
        bool first = true;
        for (const auto& [key, value] : metadata) {
            if (!first) h += ',';
            first = false;
            json_string(h, key);
            h += ':';
            json_string(h, value);
        }
        h += '}';
    }
    std::uint64_t offset = 0;
    for (const auto* entry : l.order) {
        if (h.size() > 1) h += ',';
        json_string(h, entry->first);
        h += ":{\"dtype\":\"F32\",\"shape\":[";
        const Shape shape = shape_of(entry->second);
        for (std::size_t i = 0; i < shape.size(); ++i) {
            if (i) h += ',';
            h += std::to_string(shape[i]);
        }
        const std::uint64_t bytes = checked_mul(entry->second.size(), sizeof(float), where);
        h += "],\"data_offsets\":[";
        h += std::to_string(offset);
        h += ',';
        offset = checked_add(offset, bytes, where);
        h += std::to_string(offset);
        h += "]}";
    }
    h += '}';
    h.append((8 - h.size() % 8) % 8, ' ');
    if (h.size() > max_header_bytes)
        throw std::length_error(std::string(where) + ": the header would take " + std::to_string(h.size()) +
                                " bytes, more than the " + std::to_string(max_header_bytes) + " a reader accepts");
    return l;
}

std::string length_prefix(std::uint64_t n) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out;
}

// write(2) until all is written (short writes and EINTR retried); false on an error.
bool write_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, data, std::min<std::size_t>(n, std::size_t{1} << 30));
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

// ------------------------------------------------------------------------------ reading

// The bytes of a float16 as a float32, as PyTorch's `tensor.float()` converts them (c10's
// fp16_ieee_to_fp32_value, and F16C's vcvtph2ps alike): exact, subnormals normalised,
// infinities and NaN payloads kept, a signalling NaN quieted (0x7C01 -> 0x7FC02000).
float from_f16(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exponent = (h >> 10) & 0x1Fu;
    std::uint32_t mantissa = h & 0x3FFu;
    std::uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // a subnormal: shift the mantissa up to its leading 1
        exponent = 113;
        while ((mantissa & 0x400u) == 0) mantissa <<= 1, --exponent;
        bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
    }
    return std::bit_cast<float>(bits);
}

// The dtypes of the format (safetensors/src/tensor.rs `Dtype`), for the messages.
bool known_dtype(const std::string& d) {
    static const std::array<const char*, 20> all = {"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2",
                                                    "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16", "I32",
                                                    "U32", "F32", "C64", "F64", "I64", "U64"};
    return std::find(all.begin(), all.end(), d) != all.end();
}

std::size_t element_size(const TensorInfo& t, const std::string& file) {
    if (t.dtype == "F32") return 4;
    if (t.dtype == "F16" || t.dtype == "BF16") return 2;
    if (t.dtype == "I64") return 8;
    if (known_dtype(t.dtype))
        fail_tensor(file, t.name, "dtype \"" + t.dtype + "\" is not supported (this library reads F32, F16, BF16 and I64)");
    fail_tensor(file, t.name, "unknown dtype \"" + printable(t.dtype, 40) + "\"");
}

std::string offsets_str(const TensorInfo& t) {
    return "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
}

// Checks one entry on its own: its dtype, its byte count and its range within the data.
void check_entry(const TensorInfo& t, std::uint64_t data_size, const std::string& file) {
    const std::size_t size = element_size(t, file);
    std::uint64_t count = 1;
    for (const std::size_t d : t.shape)
        if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count))
            fail_tensor(file, t.name, "shape " + shape_str(t.shape) + ": its element count overflows 64 bits");
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(size), &bytes))
        fail_tensor(file, t.name, "shape " + shape_str(t.shape) + " of " + t.dtype + ": its byte count overflows 64 bits");
    if (t.end < t.begin) fail_tensor(file, t.name, offsets_str(t) + " end before they begin");
    if (t.end > data_size)
        fail_tensor(file, t.name, offsets_str(t) + " run past the end of the data (" + std::to_string(data_size) +
                                      " bytes after the header)");
    if (t.end - t.begin != bytes)
        fail_tensor(file, t.name, "shape " + shape_str(t.shape) + " of " + t.dtype + " takes " + std::to_string(bytes) +
                                      " bytes, but " + offsets_str(t) + " hold " + std::to_string(t.end - t.begin));
}

// Reads `n` bytes at `offset` of the data into `out`; false when the read fails.
using ReadFn = std::function<bool(std::uint64_t offset, char* out, std::size_t n)>;

// The whole reader, on a source of `size` bytes.
SafetensorsFile read_safetensors(const ReadFn& read, std::uint64_t size, const std::string& file) {
    if (size < 8)
        fail(file, "the file is " + std::to_string(size) + " bytes long, shorter than the 8 bytes of its header's length");
    unsigned char prefix[8];
    if (!read(0, reinterpret_cast<char*>(prefix), 8)) fail(file, "cannot be read (a read failed)");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
    if (n > max_header_bytes)
        fail(file, "the header's length is " + std::to_string(n) + " bytes, more than the " +
                       std::to_string(max_header_bytes) + " a header may have");
    if (n > size - 8)
        fail(file, "the header's length (" + std::to_string(n) + " bytes) runs past the end of the file (" +
                       std::to_string(size) + " bytes)");
    std::string header(n, '\0');
    if (!read(8, header.data(), n)) fail(file, "cannot be read (a read failed)");
    detail::ParsedHeader parsed = detail::parse_header(header, file);
    const std::uint64_t data_size = size - 8 - n;
    for (const TensorInfo& t : parsed.entries) check_entry(t, data_size, file);

    // The layout: sorted by offsets, the ranges tile the data from 0 to its end.
    std::vector<TensorInfo>& entries = parsed.entries;
    std::stable_sort(entries.begin(), entries.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const TensorInfo& t = entries[i];
        if (t.begin < at)
            fail_tensor(file, t.name, offsets_str(t) + " overlap the tensor before it, " + printable(entries[i - 1].name) +
                                          ", which ends at " + std::to_string(at));
        if (t.begin > at)
            fail_tensor(file, t.name, offsets_str(t) + " leave a gap: bytes " + std::to_string(at) + " to " +
                                          std::to_string(t.begin) + " of the data belong to no tensor");
        at = t.end;
    }
    if (at != data_size)
        fail(file, "bytes " + std::to_string(at) + " to " + std::to_string(data_size) +
                       " of the data, after the last tensor, belong to no tensor");

    SafetensorsFile out;
    out.metadata = std::move(parsed.metadata);
    for (const TensorInfo& t : entries) {
        const std::uint64_t start = 8 + n + t.begin;
        const std::size_t bytes = t.end - t.begin;
        try {
            check_allocation("load_safetensors", t.shape, t.dtype == "I64" ? 8 : 4);
        } catch (const std::length_error& e) {
            throw std::length_error(file + ": " + printable(t.name) + ": " + e.what());
        }
        if (t.dtype == "I64") {
            LongTensor v = LongTensor::from_shape(t.shape);
            if (bytes && !read(start, reinterpret_cast<char*>(v.data()), bytes))
                fail_tensor(file, t.name, "cannot be read (a read failed)");
            out.int64_tensors.emplace(t.name, std::move(v));
        } else {
            Tensor v = Tensor::from_shape(t.shape);
            if (t.dtype == "F32") {
                if (bytes && !read(start, reinterpret_cast<char*>(v.data()), bytes))
                    fail_tensor(file, t.name, "cannot be read (a read failed)");
            } else {
                std::vector<std::uint16_t> half(v.size());
                if (bytes && !read(start, reinterpret_cast<char*>(half.data()), bytes))
                    fail_tensor(file, t.name, "cannot be read (a read failed)");
                float* d = v.data();
                if (t.dtype == "F16")
                    for (std::size_t i = 0; i < half.size(); ++i) d[i] = from_f16(half[i]);
                else
                    for (std::size_t i = 0; i < half.size(); ++i)
                        d[i] = std::bit_cast<float>(static_cast<std::uint32_t>(half[i]) << 16);
            }
            out.tensors.insert(t.name, std::move(v));
        }
        out.infos.push_back(t);
    }
    return out;
}

}  // namespace

std::string serialize_safetensors(const TensorDict& tensors, const Metadata& metadata) {
    const Layout l = layout_of(tensors, metadata, "serialize_safetensors");
    std::string out = length_prefix(l.header.size()) + l.header;
    for (const auto* entry : l.order)
        out.append(reinterpret_cast<const char*>(entry->second.data()), entry->second.size() * sizeof(float));
    return out;
}

void save_safetensors(const std::filesystem::path& file, const TensorDict& tensors, const Metadata& metadata) {
    const Layout l = layout_of(tensors, metadata, "save_safetensors");
    const std::string name = file.string();
    if (file.filename().empty()) throw std::runtime_error(name + ": cannot be written (not a file name)");
    static std::atomic<unsigned> counter{0};
    std::filesystem::path tmp = file;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error(name + ": cannot be written (cannot create " + tmp.string() + ": " +
                                 std::strerror(errno) + ")");
    const std::string head = length_prefix(l.header.size()) + l.header;
    bool ok = write_all(fd, head.data(), head.size());
    for (std::size_t i = 0; ok && i < l.order.size(); ++i)
        ok = write_all(fd, reinterpret_cast<const char*>(l.order[i]->second.data()),
                       l.order[i]->second.size() * sizeof(float));
    int error = ok ? 0 : errno;
    if (ok && ::fsync(fd) != 0) ok = false, error = errno;
    if (::close(fd) != 0 && ok) ok = false, error = errno;
    if (!ok) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(name + ": cannot be written (" + std::strerror(error) + ")");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, file, ec);
    if (ec) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(name + ": cannot be written (" + ec.message() + ")");
    }
}

SafetensorsFile load_safetensors(const std::filesystem::path& file) {
    const std::string name = file.string();
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (ec || !std::filesystem::exists(status)) fail(name, "cannot be read (no such file)");
    if (!std::filesystem::is_regular_file(status)) fail(name, "cannot be read (not a regular file)");
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(name, "cannot be read (cannot open it)");
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) fail(name, "cannot be read (its size is unknown)");
    const ReadFn read = [&in](std::uint64_t offset, char* out, std::size_t n) {
        in.seekg(static_cast<std::streamoff>(offset));
        in.read(out, static_cast<std::streamsize>(n));
        return in.good() && static_cast<std::size_t>(in.gcount()) == n;
    };
    return read_safetensors(read, static_cast<std::uint64_t>(size), name);
}

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& name) {
    const ReadFn read = [bytes](std::uint64_t offset, char* out, std::size_t n) {
        if (offset > bytes.size() || n > bytes.size() - offset) return false;
        std::memcpy(out, bytes.data() + offset, n);
        return true;
    };
    return read_safetensors(read, bytes.size(), name);
}

}  // namespace attn::io
