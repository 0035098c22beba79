// The exercises' figure: Raschka's batched product a @ a.transpose(2, 3), one block per head,
// as the chapter printed it.
#include "figures.hpp"

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "X", .step = "per_head", .file = "chX_per_head_product.svg",
    .caption = "Exercises: a @ a.transpose(2, 3) for a of shape (1, 2, 3, 4) is one 3 x 3 block per "
               "head, each head's own head @ head.T: the two blocks of Raschka's In [37], as this "
               "program prints them.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor blocks = data.printed("rch03-In37", {6, 3});  // [2 * 3, 3]
        figures::svg::HeatmapStyle style;
        style.title = "a @ a.transpose(2, 3), one block per head";
        style.row_labels = {"token 0", "token 1", "token 2"};
        style.col_labels = style.row_labels;
        style.vmax = 2.0;
        return figures::svg::heatmaps({attn::slice(blocks, 0, 0, 3), attn::slice(blocks, 0, 3, 6)},
                                      {"head 0", "head 1"}, style);
    }}};

}  // namespace
