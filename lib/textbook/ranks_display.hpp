/// @file ranks_display.hpp
/// @brief What the chapters of Part VI print of their ranks: the numbers each rank holds,
/// gathered to rank 0 as a table, the bytes each rank sent beside a formula, and the distance of
/// a distributed result to one process's. Header-only: only the chapters that run as MPI
/// processes include it (the harness itself does not depend on MPI).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/dist/communicator.hpp"
#include "textbook/display.hpp"

namespace textbook {

/// "10 11 12 13": a few whole numbers, as the chapters' tiny tensors hold them.
inline std::string numbers(const float* x, std::size_t n) {
    std::string text;
    for (std::size_t i = 0; i < n; ++i) text += (i ? " " : "") + std::to_string(std::lround(x[i]));
    return text;
}

/// One row per rank: its small tensors (the same size on every rank), gathered to every rank.
inline std::string per_rank(const attn::dist::Communicator& world,
                            const std::vector<std::pair<std::string, attn::Tensor>>& columns) {
    std::vector<textbook::Row> rows{{"rank"}};
    for (const auto& [label, t] : columns) rows[0].push_back(label);
    std::vector<std::vector<float>> all;
    for (const auto& column : columns) all.push_back(world.all_gather(column.second.data(), column.second.size()));
    for (int r = 0; r < world.size(); ++r) {
        rows.push_back({std::to_string(r)});
        for (std::size_t k = 0; k < columns.size(); ++k) {
            const std::size_t n = columns[k].second.size();
            rows.back().push_back(numbers(all[k].data() + std::size_t(r) * n, n));
        }
    }
    return textbook::table(rows);
}

/// The bytes each rank handed MPI for other ranks while `call` ran, gathered (counted by
/// attn::dist's profiling-interface definitions of MPI's send calls).
inline std::vector<std::uint64_t> bytes_sent(const attn::dist::Communicator& world, const std::function<void()>& call) {
    const std::uint64_t before = attn::dist::traffic_so_far().bytes;
    call();
    return world.all_gather_count(attn::dist::traffic_so_far().bytes - before);
}

/// "16 16 16 16 bytes; the formula: 16": counted per rank beside the formula's count.
inline std::string bytes_line(const std::vector<std::uint64_t>& counted, std::uint64_t formula) {
    std::string text;
    for (std::uint64_t b : counted) text += std::to_string(b) + " ";
    return text + "bytes; the formula: " + std::to_string(formula);
}

/// "4.47e-07 (bound: 8 x 1.19e-07 = 9.54e-07)": the largest |distributed - one process| over
/// the elements, relative to the largest |one process|, beside the bound (in float32 epsilons)
/// the tests hold it to.
inline std::string distance(const attn::Tensor& ring, const attn::Tensor& one, double bound_epsilons) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
        worst = std::max(worst, double(std::fabs(ring.data()[i] - one.data()[i])));
        scale = std::max(scale, double(std::fabs(one.data()[i])));
    }
    const double eps = std::numeric_limits<float>::epsilon();
    char text[160];
    std::snprintf(text, sizeof text, "%.3g (bound: %g x %.3g = %.3g)", scale > 0 ? worst / scale : worst,
                  bound_epsilons, eps, bound_epsilons * eps);
    return text;
}

}  // namespace textbook
