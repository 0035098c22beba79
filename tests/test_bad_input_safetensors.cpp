// The bad-input table, safetensors files (lib/attn/io/safetensors.hpp): every malformed file a
// reader can be handed -- a header length beyond the file or beyond 100 MB, a header that is
// not one JSON object, malformed or nested too deeply, keys twice at any level, metadata that
// is not strings, unknown or unsupported dtypes, shapes that are not non-negative integers or
// whose sizes overflow, offsets out of order, overlapping, leaving gaps or running past the
// end -- refused with `<file>: <tensor name>: <reason>` on one line, and nothing read before the
// whole header is checked. Which files are malformed: the format's specification and its
// reference reader (safetensors/src/tensor.rs, `read_metadata` and `validate`), which refuses
// the same files. The machinery: bad_input.hpp.
#include <cstdint>
#include <string>

#include <sys/stat.h>

#include "bad_input.hpp"

#include "attn/io/safetensors.hpp"

namespace test_bad_input_safetensors {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace bad_input;

std::string le64(std::uint64_t n) {
    std::string out(8, '\0');
    for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out;
}

// A file: the header's length, the header, the data.
std::string file_of(const std::string& header, const std::string& data = "") {
    return le64(header.size()) + header + data;
}

// One F32 tensor entry.
std::string entry(const std::string& name, const std::string& shape, const std::string& offsets,
                  const std::string& dtype = "F32") {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

bool parse(const std::string& bytes) {
    const auto f = attn::io::parse_safetensors(bytes, "f.safetensors");
    return !f.infos.empty() || f.tensors.empty();
}

bool load(const fs::path& path) {
    (void)attn::io::load_safetensors(path);
    return true;
}

std::vector<Case> safetensors_cases() {
    Table t;
    const std::string four(4, '\0'), eight(8, '\0'), twelve(12, '\0');
    const std::string ok_a = entry("a", "[2]", "[0,8]");

    // The length and the file's size.
    t.err("an empty file", [] { return parse(""); }, RE, "f.safetensors: the file is 0 bytes long, shorter than the 8 bytes");
    t.err("a file of 5 bytes", [] { return parse(std::string("\x02\0\0\0\0", 5)); }, RE, "the file is 5 bytes long");
    t.err("a header length beyond the file", [] { return parse(le64(100) + "{}"); }, RE,
          "f.safetensors: the header's length (100 bytes) runs past the end of the file (10 bytes)");
    t.err("a header length of 2^64 - 1", [] { return parse(le64(~std::uint64_t{0}) + "{}"); }, RE,
          "the header's length is 18446744073709551615 bytes, more than the 100000000 a header may have");
    t.err("a header length of 100,000,001", [] { return parse(le64(100'000'001) + "{}"); }, RE,
          "more than the 100000000 a header may have");

    // The header's JSON.
    t.err("a header that is a JSON array", [] { return parse(file_of("[1, 2]  ")); }, RE,
          "f.safetensors: the header does not start with '{'");
    t.err("a header that starts with a space", [] { return parse(file_of(" {}     ")); }, RE, "does not start with '{'");
    t.err("a header that starts with a UTF-8 BOM", [] { return parse(file_of("\xef\xbb\xbf{}   ")); }, RE,
          "does not start with '{'");
    t.err("an empty header", [] { return parse(file_of("")); }, RE, "does not start with '{'");
    t.err("a header cut short", [] { return parse(file_of("{\"a\":  ")); }, RE,
          "f.safetensors: the header is not valid JSON (at byte 8 of the header: syntax error");
    t.err("NUL bytes after the object", [] { return parse(file_of(std::string("{}\0\0\0\0\0\0", 8))); }, RE,
          "the header is not valid JSON (at byte 2 of the header: a NUL byte)");
    t.err("a NUL byte after the object, then more", [] { return parse(file_of(std::string("{}\0,\"a\":1}", 10))); }, RE,
          "the header is not valid JSON (at byte 2 of the header: a NUL byte)");
    t.err("other bytes after the object", [] { return parse(file_of("{}  x   ")); }, RE,
          "the header is not valid JSON (at byte 5 of the header: syntax error while parsing value - invalid literal");
    t.err("a name that is not UTF-8", [] { return parse(file_of("{\"\xff\":{}}   ")); }, RE,
          "the header is not valid JSON (at byte");
    t.err("a lone surrogate escape", [] { return parse(file_of("{\"\\ud800\":1}")); }, RE, "not valid JSON");
    t.err("a number overflowing a double", [] { return parse(file_of("{\"a\":{\"shape\":[1e999]}}")); }, RE,
          "not valid JSON");
    t.err("100,000 nested arrays in a shape", [] { return parse(file_of("{\"a\":{\"shape\":" + std::string(100000, '[') + "}}")); },
          RE, "f.safetensors: a: shape: expected non-negative integers, got an array");
    t.err("100,000 nested objects in the metadata",
          [] { return parse(file_of("{\"__metadata__\":{\"k\":" + std::string(100000, '{') + "}}")); }, RE,
          "f.safetensors: __metadata__: the value of \"k\" is not a string (it is an object)");
    t.err("a metadata value that is a number", [] { return parse(file_of("{\"__metadata__\":{\"k\":1}}")); }, RE,
          "__metadata__: the value of \"k\" is not a string (it is a number)");
    t.err("metadata that is a string", [] { return parse(file_of("{\"__metadata__\":\"x\"}")); }, RE,
          "f.safetensors: __metadata__: expected an object of strings, got a string");
    t.err("an entry that is an array", [] { return parse(file_of("{\"a\":[1]}")); }, RE,
          "f.safetensors: a: expected an object {\"dtype\", \"shape\", \"data_offsets\"}, got an array");
    t.err("an entry that is null", [] { return parse(file_of("{\"a\":null}")); }, RE, "a: expected an object");

    // Keys twice (nlohmann would keep the last one).
    t.err("a tensor name twice", [=] { return parse(file_of("{" + ok_a + "," + ok_a + "}", eight)); }, RE,
          "f.safetensors: a: the name appears twice in the header");
    t.err("a metadata key twice", [] { return parse(file_of("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}")); }, RE,
          "f.safetensors: __metadata__: the key \"k\" appears twice");
    t.err("__metadata__ twice", [] { return parse(file_of("{\"__metadata__\":{},\"__metadata__\":{}}")); }, RE,
          "f.safetensors: __metadata__ appears twice in the header");
    t.err("a field twice", [] { return parse(file_of("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\"}}")); }, RE,
          "f.safetensors: a: the field dtype appears twice");

    // An entry's fields.
    t.err("an unknown field", [] { return parse(file_of("{\"a\":{\"offsets\":[0,4]}}")); }, RE,
          "f.safetensors: a: unknown field \"offsets\" (an entry holds dtype, shape and data_offsets)");
    t.err("a missing field", [] { return parse(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}")); }, RE,
          "f.safetensors: a: the entry has no data_offsets");
    t.err("an empty tensor name", [] { return parse(file_of("{" + entry("", "[1]", "[0,4]") + "}", "\0\0\0\0")); }, RE,
          "f.safetensors: \"\": a tensor name must not be empty");
    t.err("an unknown dtype", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,4]", "Q8") + "}", four)); }, RE,
          "f.safetensors: a: unknown dtype \"Q8\"");
    t.err("a dtype not read here (F64)", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,8]", "F64") + "}", eight)); },
          RE, "f.safetensors: a: dtype \"F64\" is not supported (this library reads F32, F16, BF16 and I64)");
    t.err("a dtype in lower case", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,4]", "f32") + "}", four)); }, RE,
          "a: unknown dtype \"f32\"");
    t.err("a dtype that is a number", [] { return parse(file_of("{\"a\":{\"dtype\":4}}")); }, RE,
          "f.safetensors: a: dtype: expected a string, got a number");
    t.err("a shape that is a string", [] { return parse(file_of("{\"a\":{\"shape\":\"[1]\"}}")); }, RE,
          "a: shape: expected a list of non-negative integers, got a string");

    // Shapes.
    t.err("a negative dimension", [=] { return parse(file_of("{" + entry("a", "[-2]", "[0,8]") + "}", eight)); }, RE,
          "f.safetensors: a: shape: expected non-negative integers, got -2");
    t.err("a fractional dimension", [=] { return parse(file_of("{" + entry("a", "[2.5]", "[0,8]") + "}", eight)); }, RE,
          "a: shape: expected non-negative integers, got 2.5");
    t.err("a dimension beyond 2^64", [=] { return parse(file_of("{" + entry("a", "[99999999999999999999]", "[0,8]") + "}", eight)); },
          RE, "a: shape: expected non-negative integers, got 99999999999999999999");
    t.err("65 dimensions", [=] {
        std::string shape = "[1";
        for (int i = 1; i < 65; ++i) shape += ",1";
        return parse(file_of("{" + entry("a", shape + "]", "[0,4]") + "}", four));
    }, RE, "f.safetensors: a: shape: more than 64 dimensions");
    t.err("an element count that overflows",
          [=] { return parse(file_of("{" + entry("a", "[4294967296,4294967296]", "[0,8]") + "}", eight)); }, RE,
          "f.safetensors: a: shape [4294967296, 4294967296]: its element count overflows 64 bits");
    t.err("a byte count that overflows", [=] { return parse(file_of("{" + entry("a", "[4611686018427387904]", "[0,8]") + "}", eight)); },
          RE, "a: shape [4611686018427387904] of F32: its byte count overflows 64 bits");
    t.err("a shape whose bytes differ from its range", [=] { return parse(file_of("{" + entry("a", "[2,3]", "[0,20]") + "}", std::string(20, '\0'))); },
          RE, "f.safetensors: a: shape [2, 3] of F32 takes 24 bytes, but data_offsets [0, 20] hold 20");

    // Offsets and the layout.
    t.err("offsets that end before they begin", [=] { return parse(file_of("{" + entry("a", "[1]", "[8,4]") + "}", eight)); },
          RE, "f.safetensors: a: data_offsets [8, 4] end before they begin");
    t.err("offsets past the end of the data", [=] { return parse(file_of("{" + entry("a", "[2]", "[0,8]") + "}", four)); }, RE,
          "f.safetensors: a: data_offsets [0, 8] run past the end of the data (4 bytes after the header)");
    t.err("an end offset of 2^64 - 1", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,18446744073709551615]") + "}", four)); },
          RE, "a: data_offsets [0, 18446744073709551615] run past the end of the data");
    t.err("three offsets", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,4,8]") + "}", four)); }, RE,
          "f.safetensors: a: data_offsets: expected two integers [begin, end], got more");
    t.err("one offset", [=] { return parse(file_of("{" + entry("a", "[1]", "[4]") + "}", four)); }, RE,
          "a: data_offsets: expected two integers [begin, end], got 1");
    t.err("overlapping tensors", [=] { return parse(file_of("{" + ok_a + "," + entry("b", "[2]", "[4,12]") + "}", twelve)); }, RE,
          "f.safetensors: b: data_offsets [4, 12] overlap the tensor before it, a, which ends at 8");
    t.err("a gap between tensors", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,4]") + "," + entry("b", "[1]", "[8,12]") + "}", twelve)); },
          RE, "f.safetensors: b: data_offsets [8, 12] leave a gap: bytes 4 to 8 of the data belong to no tensor");
    t.err("data that does not start at 0", [=] { return parse(file_of("{" + entry("a", "[1]", "[4,8]") + "}", eight)); }, RE,
          "a: data_offsets [4, 8] leave a gap: bytes 0 to 4");
    t.err("bytes after the last tensor", [=] { return parse(file_of("{" + entry("a", "[1]", "[0,4]") + "}", eight)); }, RE,
          "f.safetensors: bytes 4 to 8 of the data, after the last tensor, belong to no tensor");
    t.err("data but no tensor", [=] { return parse(file_of("{}      ", eight)); }, RE, "bytes 0 to 8 of the data");

    // Names as messages show them.
    t.err("a name with a newline and an escape character",
          [=] { return parse(file_of("{" + entry("a\\nb\\u001b", "[1]", "[0,4]", "Q8") + "}", four)); }, RE,
          "f.safetensors: a\\nb\\x1b: unknown dtype \"Q8\"");
    t.err("a name of 10,000 bytes",
          [=] { return parse(file_of("{" + entry(std::string(10000, 'n'), "[1]", "[0,4]", "Q8") + "}", four)); }, RE,
          std::string(200, 'n') + "...: unknown dtype \"Q8\"");

    // What the format allows.
    t.ok("the header's order differs from the data's", [=] {
        const std::string data = std::string("\0\0\x80\x3f", 4) + std::string("\0\0\0\x40", 4);
        const auto f = attn::io::parse_safetensors(
            file_of("{" + entry("b", "[1]", "[4,8]") + "," + entry("a", "[]", "[0,4]") + "}", data), "f");
        return f.tensors.names() == std::vector<std::string>{"a", "b"} && f.tensors.at("a")() == 1.0f &&
               f.tensors.at("b")(0) == 2.0f;
    });
    t.ok("empty tensors at one offset", [=] {
        const auto f = attn::io::parse_safetensors(
            file_of("{" + entry("a", "[0,3]", "[0,0]") + "," + entry("b", "[2,0]", "[0,0]") + "}"), "f");
        return f.tensors.size() == 2 && same_shape(f.tensors.at("a"), {0, 3});
    });
    t.ok("no tensors, no metadata: {}", [] { return parse(file_of("{}      ")); });

    // Files.
    t.err("a file that does not exist", [] { return load(fresh_dir() / "missing.safetensors"); }, RE,
          "missing.safetensors: cannot be read (no such file)");
    t.err("a directory", [] { return load(fresh_dir()); }, RE, "cannot be read (not a regular file)");
    t.err("a FIFO (refused unopened)", [] {
        const fs::path p = fresh_dir() / "fifo.safetensors";
        if (::mkfifo(p.c_str(), 0600) != 0) throw std::logic_error("mkfifo failed");
        return load(p);
    }, RE, "fifo.safetensors: cannot be read (not a regular file)");
    t.err("a file whose header length runs past it", [=] {
        const fs::path p = fresh_dir() / "short.safetensors";
        write(p, le64(4000) + "{}");
        return load(p);
    }, RE, "short.safetensors: the header's length (4000 bytes) runs past the end of the file (10 bytes)");

    // Writing.
    t.err("saving a name that is not UTF-8", [] {
        attn::TensorDict d;
        d.insert("\xc3", attn::zeros({1}));
        return !attn::io::serialize_safetensors(d).empty();
    }, IA, "serialize_safetensors: \\xc3: the name is not valid UTF-8");
    t.err("saving a tensor whose shape does not match its storage", [] {
        attn::TensorDict d;
        d.insert("w", broken());
        return !attn::io::serialize_safetensors(d).empty();
    }, LE, "overflow");
    return t.cases;
}

}  // namespace

TEST_CASE("bad-input table (safetensors): every case has its exact outcome") {
    run_table("safetensors", safetensors_cases());
}

}  // namespace test_bad_input_safetensors
