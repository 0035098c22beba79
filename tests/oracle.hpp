/// @file oracle.hpp
/// @brief Reading the oracle files under data/oracle/ (recorded from Debian's python3-torch
/// by tools/oracle/*.py, with their provenance): the test programs share it.
#pragma once

#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace test {

/// `data/oracle/<file>`, parsed once per program. Fails the test when it cannot be read.
inline const nlohmann::json& oracle_file(const std::string& file) {
    static std::map<std::string, nlohmann::json> parsed;
    auto it = parsed.find(file);
    if (it == parsed.end()) {
        std::ifstream in(textbook::data_dir() / "oracle" / file);
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

/// An oracle tensor `{"shape": [...], "values": [...]}` (values as doubles, row-major) as a
/// float32 tensor of that shape; fails the test when the counts disagree.
inline attn::Tensor oracle_tensor(const nlohmann::json& out) {
    attn::Tensor t = attn::zeros(out["shape"].get<attn::Shape>());
    const auto& values = out["values"];
    REQUIRE(values.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = static_cast<float>(values[i].get<double>());
    return t;
}

}  // namespace test
