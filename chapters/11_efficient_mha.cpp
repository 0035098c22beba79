// Chapter 11: efficient multi-head attention, every layout of Raschka's comparison. Prose: docs/chapters/.
#include <string>
#include <utility>
#include <vector>

#include "attn/modules/efficient.hpp"
#include "attn/modules/causal.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "11_efficient_mha", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();               // 002 In [1], 004 In [2]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // [2, 6, 3], chapter 6

        ch.step("reference");
        //! [reference]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .num_heads = 2});
        const attn::Tensor reference = mha(batch);
        //! [reference]
        ch.show("(b) context_vecs = mha(batch), and its shape",
                attn::repr(reference) + "\ncontext_vecs.shape: " + attn::repr(attn::shape_of(reference)));

        ch.step("combined");
        //! [combined]
        const auto combined = attn::combine_qkv(mha, attn::AttentionKernel::matmul_softmax);
        const attn::Tensor out_combined = combined(batch);
        //! [combined]
        ch.show("qkv.weight = cat(W_query, W_key, W_value): [3 d_out, d_in]", attn::repr(combined.qkv.weight));
        ch.show("MultiHeadAttentionCombinedQKV(batch)", attn::repr(out_combined));

        ch.step("einsum");
        //! [einsum]
        const attn::MHAEinsum einsum = attn::to_einsum(mha);
        const attn::Tensor out_einsum = einsum(batch);
        //! [einsum]
        ch.show("MHAEinsum(batch)", attn::repr(out_einsum));

        ch.step("torch_mha");
        //! [torch_mha]
        const attn::MultiheadAttention torch_mha = attn::to_torch_layout(mha);
        const attn::BoolTensor causal = attn::causal_attn_mask(6);  // true = may NOT attend
        const auto [out_torch, avg_weights] = torch_mha(batch, batch, batch, {.attn_mask = &causal});
        //! [torch_mha]
        ch.show("in_proj_weight, in_proj_bias",
                attn::repr(*torch_mha.in_proj_weight) + "\n" + attn::repr(*torch_mha.in_proj_bias));
        ch.show("attn_output", attn::repr(out_torch));
        ch.show("attn_output_weights[0] (need_weights=True: averaged over the heads)",
                attn::repr(attn::select(*avg_weights, 0)));

        ch.step("sdpa");
        //! [sdpa]
        const attn::Tensor out_causal = attn::combine_qkv(mha, attn::AttentionKernel::sdpa_is_causal)(batch);
        const attn::Tensor out_masked = attn::combine_qkv(mha, attn::AttentionKernel::sdpa_attn_mask)(batch);
        const attn::Tensor out_tiled = attn::combine_qkv(mha, attn::AttentionKernel::tiled)(batch);
        //! [sdpa]
        ch.show("scaled_dot_product_attention(is_causal=True), then proj", attn::repr(out_causal));

        ch.step("compare");
        //! [compare]
        const std::vector<std::pair<std::string, attn::Tensor>> layouts = {
            {"combined QKV", out_combined},        {"einsum", out_einsum},
            {"nn.MultiheadAttention", out_torch},  {"SDPA is_causal", out_causal},
            {"SDPA attn_mask", out_masked},        {"tiled (chapter 12)", out_tiled}};
        //! [compare]
        const auto diff_to = [](const attn::Tensor& ref) {
            return [&ref](const attn::Tensor& t) { return textbook::max_abs_diff_text(t, ref); };
        };
        ch.show("max |layout - MultiHeadAttention| on the book's batch", textbook::labelled_lines(layouts, diff_to(reference)));

        ch.step("random");
        //! [random]
        attn::Generator gen(11);
        const attn::MultiHeadAttention big(
            {.d_in = 48, .d_out = 64, .context_length = 64, .num_heads = 4, .qkv_bias = true}, gen);
        const attn::Tensor x = attn::randn({3, 37, 48}, gen);
        const attn::Tensor expected = big(x);
        const attn::BoolTensor causal37 = attn::causal_attn_mask(37);
        const std::vector<std::pair<std::string, attn::Tensor>> random_layouts = {
            {"combined QKV", attn::combine_qkv(big, attn::AttentionKernel::matmul_softmax)(x)},
            {"einsum", attn::to_einsum(big)(x)},
            {"nn.MultiheadAttention",
             attn::to_torch_layout(big)(x, x, x, {.need_weights = false, .attn_mask = &causal37}).attn_output},
            {"SDPA is_causal", attn::combine_qkv(big, attn::AttentionKernel::sdpa_is_causal)(x)},
            {"SDPA attn_mask", attn::combine_qkv(big, attn::AttentionKernel::sdpa_attn_mask)(x)},
            {"tiled (chapter 12)", attn::combine_qkv(big, attn::AttentionKernel::tiled)(x)}};
        //! [random]
        ch.show("max |layout - MultiHeadAttention|, b = 3, T = 37, d = 64, 4 heads, qkv_bias",
                textbook::labelled_lines(random_layouts, diff_to(expected)));

        ch.step("wrapper");
        //! [wrapper]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWrapper wrapper({.d_in = 3, .d_out = 2, .context_length = 6, .num_heads = 2});
        const attn::Tensor concatenated = wrapper(batch);
        const attn::SDPABackendGuard tiled(attn::SDPABackend::tiled);  // from here on, attention runs tiled
        const attn::Tensor via_tiled = attn::stack_heads(wrapper)(batch);
        //! [wrapper]
        ch.show("max |wrapper(batch) - tiled(stack_heads(wrapper))(batch)|",
                textbook::max_abs_diff_text(concatenated, via_tiled));
    });
}
