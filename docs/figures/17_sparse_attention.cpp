// Chapter 17's figure: the lightning indexer's scores and the keys each query keeps (top-k),
// as the chapter printed them for the book's batch.
#include "figures.hpp"

#include <cmath>
#include <limits>

namespace {

FIGURES{{
    .chapter = "17", .step = "indexer", .file = "ch17_topk_selection.svg",
    .caption = "Chapter 17, step 2: MultiHeadAttentionWithDSA(3, 4, 0.0, 2, index_n_heads=2, "
               "index_head_dim=4, topk=2) after manual_seed(123), first sequence of the batch, as the "
               "chapter prints it. Left: the indexer's scores I[t, s], the future hatched (the causal "
               "mask hides it). Right: 1 where query t keeps key s; each query keeps its two best "
               "visible keys, the first two queries everything they see (one colour scale: the darkest "
               "cell is the largest visible score).",
    .draw = [](const figures::Data& data) {
        attn::Tensor scores = data.printed("o17-In04", {6, 6});
        for (std::size_t t = 0; t < 6; ++t)
            for (std::size_t s = t + 1; s < 6; ++s) scores(t, s) = -std::numeric_limits<float>::infinity();
        const attn::Tensor kept = data.printed("keys each query keeps (topk = 2; 1 = kept)", {6, 6});
        auto style = figures::token_style("Index scores and the top-2 keys each query keeps");
        style.vmax = figures::finite_range(scores).second;  // the kept panel's 1s are drawn darkest
        return figures::svg::heatmaps({scores, kept}, {"index scores I[t, s]", "kept (1)"}, style);
    }}};

}  // namespace
