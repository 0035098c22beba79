// The safetensors header's parser (safetensors_header.hpp): nlohmann/json's SAX interface with
// a handler that knows the format's one shape of header, so that nothing but that shape is
// ever built: a key seen twice, a value of the wrong kind or any nesting beyond
// `{"name": {"shape": [..]}}` stops the parse at that token, with the file, the tensor and
// the field named.
#include "attn/io/safetensors_header.hpp"

#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace attn::io::detail {

std::size_t utf8_sequence(std::string_view text, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) return 1;
    std::size_t n = 0;
    char32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (i + n > text.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

std::string printable(std::string_view text, std::size_t limit) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size() && out.size() < limit) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = utf8_sequence(text, i);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (n == 0 || c < 0x20 || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out.append(text.substr(i, n));
            i += n;
            continue;
        }
        ++i;
    }
    if (i < text.size()) out += "...";
    return out;
}

void fail(const std::string& file, const std::string& what) { throw std::runtime_error(file + ": " + what); }

void fail_tensor(const std::string& file, std::string_view name, const std::string& what) {
    throw std::runtime_error(file + ": " + (name.empty() ? std::string("\"\"") : printable(name)) + ": " + what);
}

namespace {

using json = nlohmann::json;

// The SAX handler: depth 0 before the root, 1 inside it, 2 inside an entry (a tensor's or the
// metadata), 3 inside a tensor's `shape` or `data_offsets`. Every callback either accepts its
// token or throws a std::runtime_error naming what was expected.
class HeaderHandler {
public:
    explicit HeaderHandler(const std::string& file) : file_(file) {}

    ParsedHeader result;

    bool null() { return wrong("null"); }
    bool boolean(bool value) { return wrong(value ? "true" : "false"); }
    bool number_integer(json::number_integer_t value) {
        if (depth_ == 3) array_fail(std::to_string(value));
        return wrong("a number");
    }
    bool number_unsigned(json::number_unsigned_t value) {
        if (depth_ != 3) return wrong("a number");
        if (field_ == "shape" && array_.size() == max_file_rank)
            fail_tensor(file_, name_, "shape: more than " + std::to_string(max_file_rank) + " dimensions");
        if (field_ == "data_offsets" && array_.size() == 2)
            fail_tensor(file_, name_, "data_offsets: expected two integers [begin, end], got more");
        array_.push_back(value);
        return true;
    }
    bool number_float(json::number_float_t, const std::string& text) {
        if (depth_ == 3) array_fail(printable(text, 40));
        return wrong("a number");
    }
    bool string(std::string& value) {
        if (depth_ == 2 && in_metadata_) {
            result.metadata.emplace(key_, std::move(value));
            return true;
        }
        if (depth_ == 2 && field_ == "dtype") {
            dtype_ = std::move(value);
            return true;
        }
        return wrong("a string");
    }
    bool binary(json::binary_t&) { return wrong("binary data"); }

    bool start_object(std::size_t) {
        if (depth_ == 0) {
            depth_ = 1;
            return true;
        }
        if (depth_ == 1) {
            depth_ = 2;
            in_metadata_ = name_ == "__metadata__";
            fields_.clear();
            dtype_.clear();
            shape_.clear();
            offsets_.clear();
            return true;
        }
        return wrong("an object");
    }
    bool key(std::string& k) {
        if (depth_ == 1) {
            if (!root_keys_.insert(k).second) {
                if (k == "__metadata__") fail(file_, "__metadata__ appears twice in the header");
                fail_tensor(file_, k, "the name appears twice in the header");
            }
            if (k.empty()) fail_tensor(file_, k, "a tensor name must not be empty");
            name_ = std::move(k);
            return true;
        }
        // depth 2
        if (in_metadata_) {
            if (result.metadata.count(k) != 0)
                fail(file_, "__metadata__: the key \"" + printable(k) + "\" appears twice");
            key_ = std::move(k);
            return true;
        }
        if (k != "dtype" && k != "shape" && k != "data_offsets")
            fail_tensor(file_, name_, "unknown field \"" + printable(k, 40) +
                                          "\" (an entry holds dtype, shape and data_offsets)");
        if (!fields_.insert(k).second) fail_tensor(file_, name_, "the field " + k + " appears twice");
        field_ = std::move(k);
        return true;
    }
    bool end_object() {
        if (depth_ == 2) {
            if (!in_metadata_) {
                for (const char* f : {"dtype", "shape", "data_offsets"})
                    if (fields_.count(f) == 0)
                        fail_tensor(file_, name_, std::string("the entry has no ") + f +
                                                      " (it needs dtype, shape and data_offsets)");
                result.entries.push_back({name_, dtype_, shape_, offsets_[0], offsets_[1]});
            }
            in_metadata_ = false;
            field_.clear();
        }
        depth_ -= 1;
        return true;
    }
    bool start_array(std::size_t) {
        if (depth_ == 2 && !in_metadata_ && (field_ == "shape" || field_ == "data_offsets")) {
            depth_ = 3;
            array_.clear();
            return true;
        }
        return wrong("an array");
    }
    bool end_array() {
        if (field_ == "shape") {
            shape_.assign(array_.begin(), array_.end());
        } else {
            if (array_.size() != 2)
                fail_tensor(file_, name_, "data_offsets: expected two integers [begin, end], got " +
                                              std::to_string(array_.size()));
            offsets_ = array_;
        }
        depth_ = 2;
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        // nlohmann's own message after "...: " without its "last read: '...'" echo of the bytes.
        std::string what = e.what();
        if (const auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
        if (const auto last = what.find("; last read"); last != std::string::npos) what = what.substr(0, last);
        fail(file_, "the header is not valid JSON (at byte " + std::to_string(position) + " of the header: " +
                        printable(what) + ")");
    }

private:
    // A value of kind `kind` where the format has none of that kind.
    bool wrong(const std::string& kind) {
        if (depth_ == 0) fail(file_, "the header is not a JSON object (it is " + kind + ")");
        if (depth_ == 1) {
            if (name_ == "__metadata__") fail(file_, "__metadata__: expected an object of strings, got " + kind);
            fail_tensor(file_, name_, "expected an object {\"dtype\", \"shape\", \"data_offsets\"}, got " + kind);
        }
        if (in_metadata_)
            fail(file_, "__metadata__: the value of \"" + printable(key_) + "\" is not a string (it is " + kind + ")");
        if (depth_ == 2) {
            if (field_ == "dtype") fail_tensor(file_, name_, "dtype: expected a string, got " + kind);
            fail_tensor(file_, name_, field_ + ": expected a list of non-negative integers, got " + kind);
        }
        array_fail(kind);
    }
    [[noreturn]] void array_fail(const std::string& got) {
        fail_tensor(file_, name_, field_ + ": expected non-negative integers, got " + got);
    }

    const std::string& file_;
    int depth_ = 0;
    bool in_metadata_ = false;
    std::unordered_set<std::string> root_keys_;
    std::unordered_set<std::string> fields_;  // the current entry's fields
    std::string name_;                        // the current root key
    std::string field_;                       // the current entry's field
    std::string key_;                         // the current metadata key
    std::string dtype_;
    Shape shape_;
    std::vector<std::uint64_t> offsets_;
    std::vector<std::uint64_t> array_;
};

}  // namespace

ParsedHeader parse_header(std::string_view text, const std::string& file) {
    if (text.empty() || text.front() != '{')
        fail(file, "the header does not start with '{' (a safetensors header is one JSON object)");
    // nlohmann's lexer takes a NUL byte for the end of its input (and would ignore what
    // follows); JSON has none outside its strings, and inside them only escaped.
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        fail(file, "the header is not valid JSON (at byte " + std::to_string(nul) + " of the header: a NUL byte)");
    HeaderHandler handler(file);
    json::sax_parse(text.begin(), text.end(), &handler, json::input_format_t::json, /*strict=*/true);
    return std::move(handler.result);
}

}  // namespace attn::io::detail
