// Chapter 28's printing: what each rank holds, gathered to rank 0 and laid out as tables.
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
#include "attn/dist/ring_attention.hpp"
#include "textbook/display.hpp"

namespace ch28 {

// "10 11 12 13": a few whole numbers, as the chapter's tiny tensors hold them.
inline std::string numbers(const float* x, std::size_t n) {
    std::string text;
    for (std::size_t i = 0; i < n; ++i) text += (i ? " " : "") + std::to_string(std::lround(x[i]));
    return text;
}

// One row per rank: its small tensors (the same size on every rank), gathered to every rank.
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

// The bytes each rank handed MPI for other ranks while `call` ran, gathered (counted by
// attn::dist's profiling-interface definitions of MPI's send calls).
inline std::vector<std::uint64_t> bytes_sent(const attn::dist::Communicator& world, const std::function<void()>& call) {
    const std::uint64_t before = attn::dist::traffic_so_far().bytes;
    call();
    const float sent = float(attn::dist::traffic_so_far().bytes - before);
    std::vector<std::uint64_t> all;
    for (float b : world.all_gather(&sent, 1)) all.push_back(std::uint64_t(b));
    return all;
}

// "16 16 16 16 bytes; the formula: 16": counted per rank beside the formula's count.
inline std::string bytes_line(const std::vector<std::uint64_t>& counted, std::uint64_t formula) {
    std::string text;
    for (std::uint64_t b : counted) text += std::to_string(b) + " ";
    return text + "bytes; the formula: " + std::to_string(formula);
}

// Each rank's positions under each split of T tokens.
inline std::string positions(std::size_t T, std::size_t P) {
    using attn::dist::SequenceSplit;
    std::vector<textbook::Row> rows{{"rank"}};
    const SequenceSplit splits[] = {SequenceSplit::contiguous, SequenceSplit::zigzag, SequenceSplit::striped};
    for (SequenceSplit s : splits) rows[0].push_back(attn::dist::split_name(s));
    for (std::size_t r = 0; r < P; ++r) {
        rows.push_back({std::to_string(r)});
        for (SequenceSplit s : splits) {
            std::string cell;
            for (std::size_t p : attn::dist::rank_positions(T, P, r, s)) cell += (cell.empty() ? "" : " ") + std::to_string(p);
            rows.back().push_back(cell);
        }
    }
    return textbook::table(rows);
}

// The (query, key) pairs each rank computed at each step: [rank, step], gathered.
inline attn::Tensor pairs_matrix(const attn::dist::Communicator& world, const attn::dist::RingForward& forward) {
    const std::size_t P = std::size_t(world.size());
    std::vector<float> mine;
    for (const attn::dist::RingStep& s : forward.steps) mine.push_back(float(s.pairs));
    const std::vector<float> all = world.all_gather(mine.data(), P);
    attn::Tensor m = attn::Tensor::from_shape({P, P});
    std::copy(all.begin(), all.end(), m.begin());
    return m;
}

// `pairs_matrix` as a table, a row per rank, then the busiest rank's count of each step added.
inline std::string pairs(const attn::Tensor& m) {
    const std::size_t P = m.shape()[0];
    std::vector<textbook::Row> rows{{"rank"}};
    for (std::size_t s = 0; s < P; ++s) rows[0].push_back("step " + std::to_string(s));
    rows[0].push_back("all steps");
    std::vector<float> busiest(P, 0.0f);
    for (std::size_t r = 0; r < P; ++r) {
        rows.push_back({std::to_string(r)});
        float total = 0;
        for (std::size_t s = 0; s < P; ++s) {
            const float n = m(r, s);
            rows.back().push_back(numbers(&n, 1));
            total += n;
            busiest[s] = std::max(busiest[s], n);
        }
        rows.back().push_back(numbers(&total, 1));
    }
    float sum = 0;
    for (float b : busiest) sum += b;
    return textbook::table(rows) + "\nthe busiest rank's pairs, step by step, added: " + numbers(&sum, 1);
}

// "4.47e-07 (bound: 8 x 1.19e-07 = 9.54e-07)": the largest |ring - one process| over the
// elements, relative to the largest |one process|, beside the bound the tests hold it to.
inline std::string distance(const attn::Tensor& ring, const attn::Tensor& one, std::size_t ranks) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
        worst = std::max(worst, double(std::fabs(ring.data()[i] - one.data()[i])));
        scale = std::max(scale, double(std::fabs(one.data()[i])));
    }
    const double eps = std::numeric_limits<float>::epsilon(), bound = (4.0 + 2.0 * double(ranks)) * eps;
    char text[160];
    std::snprintf(text, sizeof text, "%.3g (bound: %zu x %.3g = %.3g)", scale > 0 ? worst / scale : worst,
                  4 + 2 * ranks, eps, bound);
    return text;
}

// The numbers one rank holds for a sequence of T tokens of width h (b = 1) on P ranks: six
// blocks of c = T / P rows (queries, output, two of keys and values), as float32 bytes.
inline std::string memory_table(std::size_t T, std::size_t h) {
    std::vector<textbook::Row> rows{{"ranks P", "tokens per rank c", "6 b c h numbers", "float32"}};
    for (std::size_t P = 1; P <= 64; P *= 4) {
        const std::size_t c = T / P, n = 6 * c * h;
        rows.push_back({std::to_string(P), std::to_string(c), std::to_string(n), textbook::gb_text(4 * n)});
    }
    return textbook::table(rows);
}

}  // namespace ch28
