// Every module's forward runs the attention core: its operator() equals its forward_steps (the
// lesson, the core's step backend in the middle) bit for bit on the fast backend and on the
// step backend, at the book's sizes and at GPT-2's (768 wide, 12 heads), in evaluation mode and
// with dropout in training mode (the same draws). Modules without forward_steps are compared
// across backends: the step backend is their step-by-step path. With OpenBLAS (whose products
// sum in another order than the fast kernels) the comparison is within 1e-5 relative.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <cstring>
#include <functional>
#include <string>

#include "attn/modules/base_self_attention.hpp"
#include "attn/modules/causal.hpp"
#include "attn/modules/efficient.hpp"
#include "attn/modules/gpt2.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/attention/masks.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/modules/self_attention.hpp"
#include "attn/modules/swa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"

namespace test_modules {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::SDPABackend;

void check_same(const attn::Tensor& a, const attn::Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
#if ATTN_BLAS_REFERENCE
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
#else
    CHECK(test::max_abs_diff(a, b) <= 1e-5 * std::max(1.0, test::max_abs_diff(b, attn::zeros(attn::shape_of(b)))));
#endif
}

// `f(gen)` on `backend`, with a generator seeded 11 (the dropout masks).
attn::Tensor on(SDPABackend backend, const std::function<attn::Tensor(attn::Generator&)>& f) {
    const attn::SDPABackendGuard guard(backend);
    attn::Generator gen(11);
    return f(gen);
}

// operator() on the fast and the step backend equals `steps` (forward_steps' result, drawn
// from a generator seeded 11 as well).
void check_module(const std::function<attn::Tensor(attn::Generator&)>& forward,
                  const std::function<attn::Tensor(attn::Generator&)>& steps) {
    attn::Generator gen(11);
    const attn::Tensor expected = steps(gen);
    for (const SDPABackend backend : {SDPABackend::fast, SDPABackend::step}) {
        INFO(attn::backend_name(backend));
        check_same(on(backend, forward), expected);
    }
}

// Sizes: the book's (chapter 6-7) and GPT-2's.
struct Sizes {
    std::size_t b, T, d_in, d_out, heads;
};
constexpr Sizes kBook{2, 6, 3, 2, 2};
constexpr Sizes kGpt2{1, 200, 768, 768, 12};

}  // namespace

TEST_CASE("CausalAttention and the wrapper: operator() == forward_steps on both backends") {
    for (const Sizes s : {kBook, Sizes{2, 70, 48, 64, 1}}) {
        for (const double p : {0.0, 0.3}) {
            INFO("T=" << s.T << " dropout=" << p);
            attn::Generator init(1);
            const attn::CausalAttention ca({.d_in = s.d_in, .d_out = s.d_out, .context_length = s.T,
                                            .dropout = p, .qkv_bias = true}, init);
            const attn::Tensor x = attn::randn({s.b, s.T, s.d_in}, init);
            check_module([&](attn::Generator& g) { return ca(x, g); },
                         [&](attn::Generator& g) { return ca.forward_steps(x, g).context_vec; });
            const attn::MultiHeadAttentionWrapper w({.d_in = s.d_in, .d_out = s.d_out, .context_length = s.T,
                                                     .dropout = p, .num_heads = 2}, init);
            attn::Generator g_cat(11);
            std::vector<attn::Tensor> heads;  // the heads' forward_steps, concatenated
            for (const auto& h : w.heads) heads.push_back(h.forward_steps(x, g_cat).context_vec);
            const attn::Tensor expected = attn::cat(heads, -1);
            for (const SDPABackend backend : {SDPABackend::fast, SDPABackend::step})
                check_same(on(backend, [&](attn::Generator& g) { return w(x, g); }), expected);
        }
    }
}

TEST_CASE("MultiHeadAttention: operator() == forward_steps on both backends, book and GPT-2 sizes") {
    for (const Sizes s : {kBook, kGpt2}) {
        for (const double p : {0.0, 0.1}) {
            INFO("d_out=" << s.d_out << " dropout=" << p);
            attn::Generator init(2);
            const attn::MultiHeadAttention m({.d_in = s.d_in, .d_out = s.d_out, .context_length = s.T,
                                              .dropout = p, .num_heads = s.heads}, init);
            const attn::Tensor x = attn::randn({s.b, s.T, s.d_in}, init);
            check_module([&](attn::Generator& g) { return m(x, g); },
                         [&](attn::Generator& g) { return m.forward_steps(x, g).context_vec; });
        }
    }
}

TEST_CASE("GPT2Attention: operator() == forward_steps on both backends, both dropouts drawn") {
    for (const auto& sizes : {std::array<std::size_t, 3>{5, 12, 3}, {200, 768, 12}}) {
        const std::size_t T = sizes[0], S = sizes[1], H = sizes[2];
        for (const double p : {0.0, 0.2}) {
            INFO("S=" << S << " dropout=" << p);
            attn::Generator init(3);
            const attn::GPT2Attention layer({.block_size = T, .n_embd = S, .n_head = H, .dropout = p, .bias = true},
                                            attn::nn::BernoulliBackend::portable, init);
            const attn::Tensor x = attn::randn({2, T, S}, init);
            check_module([&](attn::Generator& g) { return layer(x, g); },
                         [&](attn::Generator& g) { return layer.forward_steps(x, g).output; });
        }
    }
}

TEST_CASE("the efficient layouts and the first self-attention: fast == step backend") {
    for (const Sizes s : {kBook, kGpt2}) {
        INFO("d_out=" << s.d_out);
        attn::Generator init(4);
        const attn::MultiHeadAttention m({.d_in = s.d_in, .d_out = s.d_out, .context_length = s.T,
                                          .num_heads = s.heads, .qkv_bias = true}, init);
        const attn::Tensor x = attn::randn({s.b, s.T, s.d_in}, init);
        for (const auto kernel : {attn::AttentionKernel::matmul_softmax, attn::AttentionKernel::sdpa_is_causal,
                                  attn::AttentionKernel::sdpa_attn_mask}) {
            const auto layout = attn::combine_qkv(m, kernel);
            check_same(on(SDPABackend::fast, [&](attn::Generator&) { return layout(x); }),
                       on(SDPABackend::step, [&](attn::Generator&) { return layout(x); }));
        }
        const auto einsum = attn::to_einsum(m);
        check_same(on(SDPABackend::fast, [&](attn::Generator&) { return einsum(x); }),
                   on(SDPABackend::step, [&](attn::Generator&) { return einsum(x); }));
        const auto torch_layout = attn::to_torch_layout(m);
        const attn::BoolTensor mask = attn::causal_attn_mask(s.T);
        check_same(on(SDPABackend::fast, [&](attn::Generator&) { return torch_layout(x, x, x, {.need_weights = false, .attn_mask = &mask}).attn_output; }),
                   on(SDPABackend::step, [&](attn::Generator&) { return torch_layout(x, x, x, {.need_weights = false, .attn_mask = &mask}).attn_output; }));
    }
    attn::Generator init(5);
    const attn::SelfAttention_v1 v1(3, 2, init);
    const attn::SelfAttention_v2 v2(3, 2, false, init);
    const attn::Tensor inputs = textbook::inputs();
    check_same(on(SDPABackend::fast, [&](attn::Generator&) { return v1(inputs); }),
               on(SDPABackend::step, [&](attn::Generator&) { return v1(inputs); }));
    check_same(on(SDPABackend::fast, [&](attn::Generator&) { return v2(inputs); }),
               on(SDPABackend::step, [&](attn::Generator&) { return v2(inputs); }));
}

TEST_CASE("GQA and SWA, without and with their caches: fast == step backend") {
    for (const Sizes s : {Sizes{2, 6, 3, 8, 4}, kGpt2}) {
        for (const double p : {0.0, 0.2}) {
            INFO("d_out=" << s.d_out << " dropout=" << p);
            attn::Generator init(6);
            const attn::GroupedQueryAttention gqa({.d_in = s.d_in, .d_out = s.d_out, .context_length = s.T,
                                                   .dropout = p, .num_heads = s.heads,
                                                   .num_kv_groups = s.heads / 4, .qkv_bias = true}, init);
            const attn::MultiHeadAttentionWithSWA swa({.d_in = s.d_in, .d_out = s.d_out, .context_length = s.T,
                                                       .dropout = p, .num_heads = s.heads,
                                                       .sliding_window_size = s.T / 3 + 1}, init);
            const attn::Tensor x = attn::randn({s.b, s.T, s.d_in}, init);
            check_same(on(SDPABackend::fast, [&](attn::Generator& g) { return gqa(x, g); }),
                       on(SDPABackend::step, [&](attn::Generator& g) { return gqa(x, g); }));
            check_same(on(SDPABackend::fast, [&](attn::Generator& g) { return swa(x, g); }),
                       on(SDPABackend::step, [&](attn::Generator& g) { return swa(x, g); }));
            // Decoding in chunks of 5 through the one KVCache (full for GQA, a ring for SWA).
            const auto decode = [&](auto& module, attn::KVCache cache) {
                return [&module, &x, cache](attn::Generator& g) mutable {
                    std::vector<attn::Tensor> outs;
                    for (std::size_t i = 0; i < x.shape()[1]; i += 5)
                        outs.push_back(module.forward(attn::slice(x, 1, long(i), long(std::min(i + 5, x.shape()[1]))),
                                                      cache, g));
                    return attn::cat(outs, 1);
                };
            };
            check_same(on(SDPABackend::fast, decode(gqa, attn::KVCache())),
                       on(SDPABackend::step, decode(gqa, attn::KVCache())));
            check_same(on(SDPABackend::fast, decode(swa, swa.make_cache())),
                       on(SDPABackend::step, decode(swa, swa.make_cache())));
        }
    }
}

TEST_CASE("BaseSelfAttention's forward (the core) equals its methods run one by one") {
    attn::Generator init(7);
    const attn::BaseSelfAttention m({.embed_dim = 16, .fully_masked_rows = attn::FullyMaskedRows::zero}, init);
    const attn::Tensor x = attn::randn({2, 5, 16}, init);
    const attn::KVCache cache(attn::randn({2, 3, 16}, init), attn::randn({2, 3, 16}, init));
    attn::LongTensor mask = xt::ones<std::int64_t>(attn::Shape{2, 8});
    mask(0, 0) = mask(0, 1) = mask(0, 2) = mask(0, 3) = 0;  // query 0 of sequence 0 sees nothing
    const attn::BaseOutput out = m(x, mask, &cache);
    const auto qkv = m.construct_query_key_value(x, &cache);
    attn::Tensor logits = m.calculate_unmasked_attention_logits(qkv.query, qkv.key);
    logits = m.apply_attention_mask(mask, m.apply_causal_mask(logits));
    const attn::Tensor weights = m.calculate_attention_weights(logits);
    check_same(out.attention_weights, weights);
    check_same(out.attention_output, m.calculate_final_output(weights, qkv.value));
}

}  // namespace test_modules
