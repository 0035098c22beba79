// Chapter 13's figure: which key/value head each query head uses, repeat_interleave against
// repeat, as the library repeats the heads.
#include "figures.hpp"

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "13", .step = "repeat", .file = "ch13_kv_head_pairing.svg",
    .caption = "Chapter 13, step 5: four query heads (rows) and two key/value heads (columns); a 1 "
               "marks the key/value head each query head attends with. repeat_interleave(2) gives "
               "heads 0, 0, 1, 1: query heads 0 and 1 share group 0, as the GQA module computes. "
               "repeat(2) gives 0, 1, 0, 1 and pairs query head 1 with the wrong group.",
    .draw = [](const figures::Data&) {
        const attn::Tensor kv_heads = attn::tensor({0.0f, 1.0f});
        const auto pairing = [](const attn::Tensor& head_of_query) {
            attn::Tensor m = attn::zeros({4, 2});
            for (std::size_t q = 0; q < 4; ++q) m(q, static_cast<std::size_t>(head_of_query(q))) = 1.0f;
            return m;
        };
        figures::svg::HeatmapStyle style;
        style.title = "Key/value head used by each query head";
        style.row_labels = {"query head 0", "query head 1", "query head 2", "query head 3"};
        style.col_labels = {"kv 0", "kv 1"};
        style.precision = 0;
        return figures::svg::heatmaps({pairing(attn::repeat_interleave(kv_heads, 2, 0)),
                                       pairing(attn::repeat_along(kv_heads, 2, 0))},
                                      {"repeat_interleave (right)", "repeat (wrong)"}, style);
    }}};

}  // namespace
