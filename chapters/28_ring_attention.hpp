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
#include "textbook/ranks_display.hpp"

namespace ch28 {

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
            rows.back().push_back(textbook::numbers(&n, 1));
            total += n;
            busiest[s] = std::max(busiest[s], n);
        }
        rows.back().push_back(textbook::numbers(&total, 1));
    }
    float sum = 0;
    for (float b : busiest) sum += b;
    return textbook::table(rows) + "\nthe busiest rank's pairs, step by step, added: " + textbook::numbers(&sum, 1);
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
