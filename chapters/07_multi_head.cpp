// Chapter 7: multi-head attention, three layouts (004 In [58]-[62], 003 In [2]-[8], Raschka 3 In [35]-[36]). Prose: docs/chapters/.
#include <cmath>
#include <limits>

#include "attn/modules/gpt2.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "07_multi_head", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();               // 002 In [1], 004 In [2]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // [2, 6, 3], chapter 6

        ch.step("wrapper");
        //! [wrapper]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWrapper wrapper(
            {.d_in = 3, .d_out = 2, .context_length = batch.shape()[1], .num_heads = 2});
        const auto wrapped = wrapper.forward_steps(batch);
        //! [wrapper]
        ch.show("(a) each head's output and torch.cat(..., dim=-1): shapes",
                textbook::shape_lines({{"heads[0](batch)", wrapped.head_outputs[0]},
                                       {"heads[1](batch)", wrapped.head_outputs[1]},
                                       {"torch.cat(..., dim=-1)", wrapped.context_vec}}));
        ch.book("rch03-In35", "(a) context_vecs = mha(batch), and its shape",
                attn::repr(wrapped.context_vec) + "\ncontext_vecs.shape: " +
                    attn::repr(attn::shape_of(wrapped.context_vec)));

        ch.step("head0");
        //! [head0]
        attn::manual_seed(ch.seed(123));
        const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6});
        const bool same = xt::all(xt::equal(wrapped.head_outputs[0], ca(batch)));
        //! [head0]
        ch.show("torch.equal(heads[0](batch), chapter 6's context_vecs)", attn::repr_bool(same));

        ch.step("mha");
        //! [mha]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttention mha(
            {.d_in = 3, .d_out = 2, .context_length = batch.shape()[1], .num_heads = 2});
        const auto steps = mha.forward_steps(batch);
        //! [mha]
        ch.show("(b) shapes, step by step (b = 2, T = 6, num_heads = 2, head_dim = 1)",
                textbook::shape_lines({{"queries = W_query(x)", steps.queries},
                                       {"queries.view(b, T, num_heads, head_dim)", steps.queries_split},
                                       {"queries.transpose(1, 2)", steps.queries_heads},
                                       {"attn_scores = queries @ keys.transpose(2, 3)", steps.attn_scores},
                                       {"attn_weights (softmax, dropout)", steps.dropped_weights},
                                       {"(attn_weights @ values)", steps.context_heads},
                                       {"  .transpose(1, 2)", steps.context_transposed},
                                       {"  .contiguous().view(b, T, d_out)", steps.context_merged},
                                       {"out_proj(context_vec)", steps.context_vec}}));
        ch.show("(b) the module", attn::repr(mha));
        ch.book("rch03-In36", "(b) context_vecs = mha(batch), and its shape",
                attn::repr(steps.context_vec) + "\ncontext_vecs.shape: " +
                    attn::repr(attn::shape_of(steps.context_vec)));

        ch.step("divisible");
        const std::string error = textbook::error_text([] {
            //! [divisible]
            attn::MultiHeadAttention({.d_in = 3, .d_out = 3, .context_length = 6, .num_heads = 2});
            //! [divisible]
        });
        ch.show("MultiHeadAttention(d_in=3, d_out=3, ..., num_heads=2)", error);

        ch.step("gpt2");
        //! [gpt2]
        const attn::GPT2Config cfg{.block_size = 5, .n_embd = 12, .n_head = 3};  // T, S, H
        attn::manual_seed(ch.seed(123));
        attn::GPT2Attention layer(cfg);
        layer.eval();
        //! [gpt2]
        ch.book("003-In02", "layer = GPT2Attention(cfg); layer.eval()", attn::repr(layer));

        ch.step("gpt2_forward");
        //! [gpt2_forward]
        const attn::Tensor input_tensor = attn::randn({16, cfg.block_size, cfg.n_embd});  // (B, T, S)
        const long B = 16, T = 5, S = 12;
        const attn::Tensor original_output = layer(input_tensor);
        //! [gpt2_forward]
        ch.book("003-In03", "input_tensor.size() == original_output.size()",
                attn::repr_bool(attn::shape_of(input_tensor) == attn::shape_of(original_output)));

        ch.step("gpt2_split");
        //! [gpt2_split]
        const auto qkv = attn::split(layer.c_attn(input_tensor), S, 2);
        attn::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
        //! [gpt2_split]
        ch.book("003-In04", "q, k, v all (B, T, S)",
                attn::repr_bool(attn::shape_of(q) == attn::shape_of(k) &&
                                attn::shape_of(k) == attn::shape_of(v) &&
                                attn::shape_of(v) == attn::shape_of(input_tensor)));

        ch.step("gpt2_heads");
        //! [gpt2_heads]
        const long H = static_cast<long>(layer.num_heads), hs = static_cast<long>(layer.head_dim);
        q = attn::transpose(attn::view(q, {B, T, H, hs}), 1, 2);
        k = attn::transpose(attn::view(k, {B, T, H, hs}), 1, 2);
        v = attn::transpose(attn::view(v, {B, T, H, hs}), 1, 2);
        //! [gpt2_heads]
        ch.book("003-In05", "q.shape: (B, H, T, S // H)", attn::repr(attn::shape_of(q)));

        ch.step("gpt2_attention");
        //! [gpt2_attention]
        attn::Tensor att = attn::matmul(q, attn::transpose(k, -2, -1)) *
                           static_cast<float>(1.0 / std::sqrt(static_cast<double>(k.shape().back())));
        const attn::Tensor bias = attn::slice(attn::slice(layer.bias, 2, 0, T), 3, 0, T);  // [:, :, :T, :T]
        att = attn::masked_fill(att, attn::eq(bias, 0.0f), -std::numeric_limits<float>::infinity());
        att = attn::softmax(att, -1);
        attn::Tensor y = attn::matmul(att, v);
        //! [gpt2_attention]
        ch.book("003-In06", "y = att @ v: (B, H, T, S // H)", attn::repr(attn::shape_of(y)));

        ch.step("gpt2_merge");
        //! [gpt2_merge]
        y = attn::view(attn::transpose(y, 1, 2), {B, T, S});  // .contiguous().view(B, T, S)
        //! [gpt2_merge]
        ch.book("003-In07", "y.transpose(1, 2).contiguous().view(B, T, S)", attn::repr(attn::shape_of(y)));
        ch.book("003-In08", "torch.allclose(layer.c_proj(y), original_output)",
                attn::repr_bool(attn::allclose(layer.c_proj(y), original_output)));
        ch.show("max |c_proj(y) - original_output|",
                textbook::max_abs_diff_text(layer.c_proj(y), original_output));
        ch.show("[seed 123] att[0, 0]: the first sequence's weights, head 0",
                attn::repr(attn::select(attn::select(att, 0), 0)), {{"att[0]", attn::select(att, 0)}});
        ch.show("[seed 123] original_output[0]", attn::repr(attn::select(original_output, 0)));

        ch.step("equivalence");
        //! [equivalence]
        const attn::MultiHeadAttention from_wrapper = attn::stack_heads(wrapper);
        const attn::Tensor b_of_a = from_wrapper(batch);
        const attn::MultiHeadAttention from_gpt2 = attn::split_c_attn(layer);
        const attn::Tensor b_of_c = from_gpt2(input_tensor);
        //! [equivalence]
        ch.show("(a) -> (b): W_query, then the heads' W_query",
                attn::repr(from_wrapper.W_query.weight) + "\n\n" +
                    attn::repr(wrapper.heads[0].W_query.weight) + "\n" +
                    attn::repr(wrapper.heads[1].W_query.weight));
        ch.show("(a) -> (b): max |difference|, allclose(atol=1e-6)",
                textbook::max_abs_diff_text(wrapped.context_vec, b_of_a) + "\n" +
                    attn::repr_bool(attn::allclose(wrapped.context_vec, b_of_a, 0.0, 1e-6)));
        ch.show("(c) -> (b): max |difference|, allclose(atol=1e-6)",
                textbook::max_abs_diff_text(original_output, b_of_c) + "\n" +
                    attn::repr_bool(attn::allclose(original_output, b_of_c, 0.0, 1e-6)));
    });
}
