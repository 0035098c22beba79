// Chapter 13's figure: which key/value head each query head uses, repeat_interleave against
// repeat, from the heads the chapter printed.
#include "figures.hpp"

#include <algorithm>

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "13", .step = "repeat", .file = "ch13_kv_head_pairing.svg",
    .caption = "Chapter 13, step 5: query heads (rows) and key/value heads (columns); a 1 marks the "
               "key/value head each query head attends with, as the chapter prints the pairing. "
               "repeat_interleave gives heads 0, 0, 1, 1: query heads 0 and 1 share group 0, as the GQA "
               "module computes. repeat gives 0, 1, 0, 1 and pairs query head 1 with the wrong group.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor head_of = data.printed("key head serving query heads 0-3: repeat_interleave, repeat", {2, 4});
        const std::size_t queries = head_of.shape()[1], kv_heads = static_cast<std::size_t>(*std::max_element(head_of.begin(), head_of.end())) + 1;
        const auto pairing = [&](std::size_t row) {
            attn::Tensor m = attn::zeros({queries, kv_heads});
            for (std::size_t q = 0; q < queries; ++q) m(q, static_cast<std::size_t>(head_of(row, q))) = 1.0f;
            return m;
        };
        figures::svg::HeatmapStyle style;
        style.title = "Key/value head used by each query head";
        for (std::size_t q = 0; q < queries; ++q) style.row_labels.push_back("query head " + std::to_string(q));
        for (std::size_t k = 0; k < kv_heads; ++k) style.col_labels.push_back("kv " + std::to_string(k));
        style.precision = 0;
        return figures::svg::heatmaps({pairing(0), pairing(1)}, {"repeat_interleave (right)", "repeat (wrong)"}, style);
    }}};

}  // namespace
