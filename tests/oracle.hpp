/// @file oracle.hpp
/// @brief Reading the oracle files under data/oracle/ (recorded from Debian's python3-torch
/// by tools/oracle/*.py, with their provenance): the test programs share it. Every test
/// reads its oracle through here: JSON files, `.npy` arrays, and tensors stored as values or
/// as float32 bit patterns.
#pragma once

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <openssl/sha.h>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace test {

/// `data/oracle/<file>` (`$ATTN_DATA_DIR`, which meson test sets; run by hand without it,
/// `textbook::data_dir()` falls back to the source tree's data/).
inline std::filesystem::path oracle_path(const std::string& file) {
    return textbook::data_dir() / "oracle" / file;
}

/// `data/oracle/<file>` (e.g. `"ch10/loss.json"`), parsed once per program. Fails the test
/// when it cannot be read.
inline const nlohmann::json& oracle_file(const std::string& file) {
    static std::map<std::string, nlohmann::json> parsed;
    auto it = parsed.find(file);
    if (it == parsed.end()) {
        std::ifstream in(oracle_path(file));
        INFO("oracle file " << oracle_path(file).string());
        REQUIRE(in.good());
        it = parsed.emplace(file, nlohmann::json::parse(in)).first;
    }
    return it->second;
}

/// The case named `name` of an oracle file shaped `{"cases": [{"name": ...}, ...]}`.
inline const nlohmann::json& oracle_case(const std::string& file, const std::string& name) {
    for (const auto& c : oracle_file(file)["cases"])
        if (c["name"] == name) return c;
    FAIL("no oracle case " << name << " in " << file);
    throw std::logic_error("unreachable");
}

/// The elements of the `.npy` array `data/oracle/<file>` in C order, as `T` (`float` for
/// `<f4`, `double` for `<f8`, `std::int64_t` for `<i8`, `std::uint8_t` for `|u1`); xtensor's
/// reader checks that the file's dtype is `T`'s.
template <class T>
std::vector<T> oracle_npy(const std::string& file) {
    const auto a = xt::load_npy<T>(oracle_path(file).string());
    return {a.begin(), a.end()};
}

/// An oracle tensor `{"shape": [...], "values": [...]}` (values as doubles, row-major) as a
/// float32 tensor of that shape; fails the test when the counts disagree.
inline attn::Tensor oracle_tensor(const nlohmann::json& out) {
    attn::Tensor t = attn::zeros(out["shape"].get<attn::Shape>());
    const auto& values = out["values"];
    REQUIRE(values.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = static_cast<float>(values[i].get<double>());
    return t;
}

/// SHA-256 of a float32 tensor's bytes, row-major, in hex: the digest the oracle scripts record
/// for whole tensors (`hashlib.sha256(t.numpy().astype("<f4").tobytes())`; x86-64 is
/// little-endian).
inline std::string sha256(const attn::Tensor& t) {
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(t.data()), t.size() * sizeof(float), h);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : h) out += {hex[c >> 4], hex[c & 15]};
    return out;
}

/// A float32 tensor of `shape` from its elements' bit patterns (`float.view(int32)`, row-major),
/// exact to the last bit, NaN payloads and `-0` included; fails the test when the counts
/// disagree.
inline attn::Tensor oracle_bits_tensor(const attn::Shape& shape, const nlohmann::json& bits) {
    attn::Tensor t = attn::zeros(shape);
    REQUIRE(bits.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i)
        t.data()[i] = std::bit_cast<float>(bits[i].get<std::uint32_t>());
    return t;
}

/// An oracle tensor `{"shape": [...], "bits": [...]}`: see the overload above.
inline attn::Tensor oracle_bits_tensor(const nlohmann::json& out) {
    return oracle_bits_tensor(out["shape"].get<attn::Shape>(), out["bits"]);
}

/// An int64 oracle tensor `{"shape": [...], "values": [...]}`; fails the test when the counts
/// disagree.
inline attn::LongTensor oracle_long_tensor(const nlohmann::json& out) {
    attn::LongTensor t = attn::LongTensor::from_shape(out["shape"].get<attn::Shape>());
    const auto& values = out["values"];
    REQUIRE(values.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = values[i].get<std::int64_t>();
    return t;
}

/// A bool oracle tensor `{"shape": [...], "values": [0 or 1, ...]}`; fails the test when the
/// counts disagree.
inline attn::BoolTensor oracle_bool_tensor(const nlohmann::json& out) {
    attn::BoolTensor t = attn::BoolTensor::from_shape(out["shape"].get<attn::Shape>());
    const auto& values = out["values"];
    REQUIRE(values.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = values[i].get<int>() != 0;
    return t;
}

}  // namespace test
