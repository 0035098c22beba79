// Chapter 24: where position comes from (learned and sinusoidal positions, RoPE, ALiBi). Prose: docs/chapters/.
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/positions.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/positional_encoding.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"
#include "24_positions.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "24_positions", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("permutation");
        //! [permutation]
        const attn::Tensor inputs = textbook::inputs();
        attn::Tensor weights, weights_perm;
        const attn::Tensor context_vecs = ch24::attention(inputs, &weights);
        const std::vector<std::size_t> perm = {5, 0, 3, 1, 4, 2};  // "step Your with journey one starts"
        const attn::Tensor permuted = ch24::attention(ch24::rows(inputs, perm), &weights_perm);
        //! [permutation]
        ch.book("o24-In02", "context_vecs = attention(inputs)", attn::repr(context_vecs));
        ch.book("o24-In03", "attention(inputs[perm])", attn::repr(permuted),
                {{"weights", weights}, {"weights_perm", weights_perm}});
        ch.book("o24-In04", "max |attention(inputs[perm]) - context_vecs[perm]|",
                attn::repr(ch24::max_abs(permuted, ch24::rows(context_vecs, perm))));

        ch.step("learned");
        //! [learned]
        attn::manual_seed(ch.seed(123));
        const attn::nn::Embedding pos_emb(6, 3);  // GPT-2's pos_emb: one learned vector per position
        const attn::LongTensor positions = {0, 1, 2, 3, 4, 5};
        const attn::Tensor x = inputs + pos_emb(positions);
        const attn::Tensor x_perm = ch24::rows(inputs, perm) + pos_emb(positions);  // tokens move, positions stay
        //! [learned]
        ch.book("o24-In05", "print(pos_emb.weight)", attn::parameter_repr(pos_emb.weight),
                {{"gram", attn::matmul(pos_emb.weight, attn::transpose(pos_emb.weight, 0, 1))}});
        ch.book("o24-In06", "attention(x)[perm]", attn::repr(ch24::rows(ch24::attention(x), perm)));
        ch.book("o24-In07", "attention(x_perm)", attn::repr(ch24::attention(x_perm)));

        ch.step("sinusoidal");
        //! [sinusoidal]
        const attn::PositionalEncoding pe(/*d_model=*/8, /*dropout=*/0.0, /*max_len=*/6);
        const attn::Tensor table = attn::view(pe.pe, {6, 8});  // pe.pe[0]
        //! [sinusoidal]
        ch.book("o24-In08", "pe.pe[0]: sin in even columns, cos in odd ones", attn::repr(table));
        ch.book("o24-In09", "pe.pe[0] @ pe.pe[0].T", attn::repr(attn::matmul(table, attn::transpose(table, 0, 1))));

        ch.step("rope");
        //! [rope]
        const auto [cos, sin] = attn::precompute_rope_params(/*head_dim=*/16, 10000.0, /*context_length=*/5);
        attn::manual_seed(ch.seed(123));
        const attn::Tensor queries = attn::randn({2, 4, 5, 16});  // batch 2, 4 heads, 5 tokens
        const attn::Tensor keys = attn::randn({2, 4, 5, 16});
        const attn::Tensor queries_rot = attn::compute_rope(queries, cos, sin);
        const attn::Tensor keys_rot = attn::compute_rope(keys, cos, sin);
        //! [rope]
        ch.book("o24-In11", "print(cos)", attn::repr(cos));
        ch.book("o24-In12", "print(sin)", attn::repr(sin));
        ch.book("o24-In13", "print(queries_rot[0, 0])", attn::repr(attn::select(attn::select(queries_rot, 0), 0)));
        ch.book("o24-In14", "print(keys_rot[1, 3])", attn::repr(attn::select(attn::select(keys_rot, 1), 3)));

        ch.step("offset");
        //! [offset]
        const auto everywhere = [](const attn::Tensor& v) { return attn::view(attn::stack({v, v, v, v, v}, 0), {1, 1, 5, 16}); };
        const attn::Tensor q = everywhere(attn::select(attn::select(attn::select(queries, 0), 0), 0));
        const attn::Tensor k = everywhere(attn::select(attn::select(attn::select(keys, 0), 0), 0));
        const attn::Tensor scores = attn::matmul(attn::compute_rope(q, cos, sin),
                                                 attn::transpose(attn::compute_rope(k, cos, sin), 2, 3));
        //! [offset]
        ch.book("o24-In15", "q_m . k_n for one query and one key at positions 0..4",
                attn::repr(attn::view(scores, {5, 5})));

        ch.step("frequencies");
        //! [frequencies]
        const attn::Tensor llama2 = attn::rope_inv_freq(64, 10000.0);
        const attn::Tensor llama3 = attn::rope_inv_freq(64, 500000.0);
        const attn::Tensor llama31 = attn::rope_inv_freq(64, 500000.0, attn::RopeFreqConfig::llama3_1());
        const attn::Tensor llama32 = attn::rope_inv_freq(64, 500000.0, attn::RopeFreqConfig::llama3_2());
        //! [frequencies]
        ch.book("o24-In16", "inv_freq, head_dim 64, Llama 2 (theta_base 10 000)", attn::repr(llama2));
        ch.book("o24-In17", "inv_freq, Llama 3 (theta_base 500 000)", attn::repr(llama3));
        ch.book("o24-In18", "inv_freq, Llama 3.1 (factor 8)", attn::repr(llama31));
        ch.book("o24-In19", "inv_freq, Llama 3.2 (factor 32)", attn::repr(llama32));

        ch.step("gqa");
        //! [gqa]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::GroupedQueryAttention gqa({.d_in = 3, .d_out = 16, .context_length = 6, .num_heads = 4,
                                               .num_kv_groups = 2, .positions = attn::PositionScheme::rope,
                                               .rope_base = 500000.0, .rope_freq = attn::RopeFreqConfig::llama3_2()});
        const attn::Tensor gqa_out = gqa(batch);
        //! [gqa]
        ch.book("o24-In20", "gqa(batch, None, cos, sin): Llama 3.2's RoPE, head_dim 4", attn::repr(gqa_out));

        ch.step("cache");
        //! [cache]
        attn::KVCache cache;
        std::vector<attn::Tensor> steps;
        for (long t = 0; t < 6; ++t) steps.push_back(gqa.forward(attn::slice(batch, 1, t, t + 1), cache));
        const attn::Tensor decoded = attn::cat(steps, 1);  // one token at a time, keys rotated as cached
        const attn::Tensor gqa_keys = attn::transpose(attn::view(gqa.W_key(batch), {2, 6, 2, 4}), 1, 2);
        const attn::Tensor keys_rotated = attn::compute_rope(gqa_keys, gqa.positions.cos, gqa.positions.sin);
        //! [cache]
        ch.show("decoded token by token against gqa(batch); cache.key against the rotated keys",
                textbook::labelled_lines({{"max |decoded - gqa(batch)|", attn::repr(ch24::max_abs(decoded, gqa_out))},
                                          {"max |cache.key - compute_rope(keys)|", attn::repr(ch24::max_abs(cache.key, keys_rotated))}}),
                {{"cache_key", cache.key}, {"keys", gqa_keys}});

        ch.step("alibi");
        //! [alibi]
        const attn::Tensor slopes8 = attn::alibi_slopes(8), slopes12 = attn::alibi_slopes(12), slopes4 = attn::alibi_slopes(4);
        const attn::Tensor bias = attn::alibi_bias(slopes4, 6, 6);  // [4 heads, 6, 6]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 4,
                                            .positions = attn::PositionScheme::alibi});
        const attn::Tensor mha_out = mha(batch);
        //! [alibi]
        ch.book("o24-In21", "alibi_slopes(8)", attn::repr(slopes8));
        ch.book("o24-In22", "alibi_slopes(12): 8 slopes, then every other slope of 16", attn::repr(slopes12));
        ch.book("o24-In23", "alibi_bias(slopes of 4 heads, 6, 6)[0]: slope 1/4", attn::repr(attn::select(bias, 0)),
                {{"bias", bias}});
        ch.book("o24-In24", "MultiHeadAttention with ALiBi, 4 heads (seed 123)", attn::repr(mha_out));

        ch.step("bias");
        //! [bias]
        attn::manual_seed(42);
        const attn::Tensor qa = attn::randn({1, 4, 6, 2}), ka = attn::randn({1, 4, 6, 2}), va = attn::randn({1, 4, 6, 2});
        attn::SDPAOptions as_option{.alibi_slopes = &slopes4, .is_causal = true};
        attn::SDPAOptions as_mask{.attn_bias = &bias, .is_causal = true};
        std::vector<std::pair<std::string, std::string>> gaps;
        for (const attn::SDPABackend b : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
            as_option.backend = as_mask.backend = b;
            gaps.push_back({attn::backend_name(b), attn::repr(ch24::max_abs(attn::scaled_dot_product_attention(qa, ka, va, as_option),
                                                                            attn::scaled_dot_product_attention(qa, ka, va, as_mask)))});
        }
        //! [bias]
        ch.show("max |alibi_slopes option - attn_bias = alibi_bias|, per backend", textbook::labelled_lines(gaps));
    });
}
