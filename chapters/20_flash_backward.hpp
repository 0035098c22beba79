// Chapter 20's helper: what its figure of step 1 draws, recorded with the step's block (the
// figure reads it from the chapter's record; it computes nothing). Compiled with the chapter,
// in the chapters' unity file (chapters/meson.build): everything here is in namespace ch20.
// Includes textbook/display.hpp, the layouts chapters share.
#pragma once

#include <cmath>
#include <vector>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "textbook/display.hpp"
#include "textbook/record.hpp"

namespace ch20 {

/// Head 0 of batch element 0, `[T, T]` each: `attn_weights`, the softmax's weights of the
/// causal attention of the saved `queries`, `keys`, `values` (`[b, T, num_heads * head_dim]`,
/// heads merged; scale 1, as the chapter's module), and `exp(S - L)`, the same weights rebuilt
/// from the masked scores S and the forward's log-sum-exp `L` (`[b, num_heads, T]`) alone.
/// @throws std::invalid_argument when the shapes do not fit.
inline std::vector<textbook::TensorRecord> weights_from_lse(const attn::Tensor& queries, const attn::Tensor& keys,
                                                            const attn::Tensor& values, const attn::Tensor& L) {
    const std::size_t T = queries.shape()[1], H = L.shape()[1];
    const auto heads = [&](const attn::Tensor& t) {  // [b, T, H * d] -> [b, H, T, d]
        return attn::transpose(attn::view(t, {static_cast<long>(t.shape()[0]), static_cast<long>(T),
                                              static_cast<long>(H), -1}), 1, 2);
    };
    const attn::SDPASteps st = attn::scaled_dot_product_attention_steps(
        heads(queries), heads(keys), heads(values), {.is_causal = true, .scale = attn::ScoreScale::divide_by(1.0f)});
    attn::Tensor recomputed = attn::zeros({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j)  // exp(-inf) = 0 behind the mask
            recomputed(i, j) = std::exp(st.masked_scores(0, 0, i, j) - L(0, 0, i));
    return {{"attn_weights", attn::select(attn::select(st.attn_weights, 0), 0)}, {"exp(S - L)", recomputed}};
}

}  // namespace ch20
