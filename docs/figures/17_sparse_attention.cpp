// Chapter 17's figure: the lightning indexer's scores and the keys each query keeps (top-k),
// as the chapter computes them on the book's batch.
#include "figures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/modules/dsa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{{
    .chapter = "17", .step = "indexer", .file = "ch17_topk_selection.svg",
    .caption = "Chapter 17, step 2: MultiHeadAttentionWithDSA(3, 4, 0.0, 2, index_n_heads=2, "
               "index_head_dim=4, topk=2) after manual_seed(123), first sequence of the batch. Left: "
               "the indexer's scores I[t, s] under the causal mask (hatched: the future). Right: 1 "
               "where query t keeps key s; each query keeps its two best visible keys, the first "
               "two queries everything they see (one colour scale: the darkest cell is the largest score).",
    .draw = [](const figures::Data&) {
        const attn::Tensor inputs = textbook::inputs();
        attn::manual_seed(123);
        const attn::MultiHeadAttentionWithDSA dsa({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2,
                                                   .index_n_heads = 2, .index_head_dim = 4, .topk = 2});
        const auto sel = dsa.select(attn::stack({inputs, inputs}, 0));
        attn::Tensor scores = attn::select(sel.index_scores, 0);
        for (std::size_t t = 0; t < 6; ++t)
            for (std::size_t s = t + 1; s < 6; ++s) scores(t, s) = -std::numeric_limits<float>::infinity();
        const attn::Tensor kept = attn::select(attn::to_float(sel.selected), 0);
        double top = 0.0;
        for (const float v : scores) top = std::max(top, std::isfinite(v) ? double(v) : 0.0);
        auto style = figures::token_style("Index scores and the top-2 keys each query keeps");
        style.vmax = top;  // the kept panel's 1s are drawn darkest
        return figures::svg::heatmaps({scores, kept}, {"index scores I[t, s]", "kept (1)"}, style);
    }}};

}  // namespace
