// Positions as options of the attention modules (AttentionConfig::positions): Raschka's Llama 3
// GroupedQueryAttention and Llama 2 MultiHeadAttention with RoPE, chapter 3's MultiHeadAttention
// with ALiBi, forward and backward, against tools/oracle/positions.py's PyTorch 1.13 run
// (data/oracle/positions.json); decoding with a KV cache equal to recomputation; the fast
// backend equal to the step backend bit for bit for every option, the tiled one within its bound.
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/positions.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/nn/nn.hpp"

namespace test_position_modules {

namespace {

using namespace attn;

const nlohmann::json& oracle() { return test::oracle_file("positions.json"); }

bool same_bits(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint32_t>(a.data()[i]) != std::bit_cast<std::uint32_t>(b.data()[i])) return false;
    return true;
}

AttentionConfig llama32_gqa() {
    return {.d_in = 3, .d_out = 16, .context_length = 6, .num_heads = 4, .num_kv_groups = 2,
            .positions = PositionScheme::rope, .rope_base = 500000.0, .rope_freq = RopeFreqConfig::llama3_2()};
}

// sum(out * w)'s gradient is w: the module's training forward and backward on the oracle's x.
struct Trained {
    Tensor out, grad_x;
};
Trained train(MultiHeadAttention& m, const Tensor& x, const Tensor& w) {
    AttentionSaved saved;
    Trained t;
    t.out = m.forward(x, saved);
    t.grad_x = m.backward(saved, w);
    return t;
}

void check_against_oracle(MultiHeadAttention& m, const nlohmann::json& c, int grad_x_ulps) {
    const Tensor x = test::oracle_bits_tensor(c["x"]), w = test::oracle_bits_tensor(c["w"]);
    CHECK(same_bits(rand({2, 6, 3}), x));  // drawn after the module, as the oracle's
    CHECK(same_bits(m(x), test::oracle_bits_tensor(c["out"])));
    const Trained t = train(m, x, w);
    CHECK(same_bits(t.out, test::oracle_bits_tensor(c["out"])));
    for (const auto& p : m.named_parameters()) {
        INFO(p.name);
        REQUIRE(p.grad->has_value());
        CHECK(same_bits(**p.grad, test::oracle_bits_tensor(c["grads"][p.name])));
    }
    CHECK(test::max_ulp(t.grad_x, test::oracle_bits_tensor(c["grad_x"])) <= grad_x_ulps);
}

}  // namespace

TEST_CASE("Llama 3.2's GroupedQueryAttention with RoPE equals his module, seed 123") {
    manual_seed(123);
    const GroupedQueryAttention gqa(llama32_gqa());
    const auto& c = oracle()["gqa_rope"];
    for (const auto& p : const_cast<GroupedQueryAttention&>(gqa).named_parameters())
        CHECK(same_bits(*p.value, test::oracle_bits_tensor(c["params"][p.name])));
    CHECK(same_bits(gqa(test::book_batch()), test::oracle_bits_tensor(c["out"])));
}

TEST_CASE("Llama 2's MultiHeadAttention with RoPE: output and every gradient equal his module's") {
    manual_seed(123);
    MultiHeadAttention m({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 2, .out_bias = false,
                          .positions = PositionScheme::rope});
    // his forward computes keys before queries, so autograd adds x's shares as (v + q) + k, the
    // library as (v + k) + q: x.grad within 1 ulp (the weights' gradients are exact)
    check_against_oracle(m, oracle()["llama2_mha"], 1);
}

TEST_CASE("MultiHeadAttention with ALiBi: output and every gradient equal PyTorch's") {
    manual_seed(123);
    MultiHeadAttention m({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 4,
                          .positions = PositionScheme::alibi});
    check_against_oracle(m, oracle()["alibi_mha"], 0);
}

// Every module that takes `positions` (MultiHeadAttention's cached forward once ignored RoPE: a
// prefill or token-by-token decode was the output without positions, up to 0.018 away).
TEST_CASE("MultiHeadAttention: decoding with RoPE or ALiBi equals recomputation, bit for bit") {
    Generator gen(31);
    const Tensor x = rand({2, 24, 6}, gen);
    for (const PositionScheme scheme : {PositionScheme::rope, PositionScheme::alibi}) {
        manual_seed(7);
        const MultiHeadAttention mha({.d_in = 6, .d_out = 16, .context_length = 24, .dropout = 0.0,
                                      .num_heads = 4, .positions = scheme});
        for (const std::size_t chunk : {1, 5, 24}) {
            INFO((scheme == PositionScheme::rope ? "RoPE" : "ALiBi") << ", chunks of " << chunk);
            KVCache cache;
            const double gap = test::decode_gap(
                x, chunk, [&](const Tensor& part, long, long) { return mha.forward(part, cache); },
                [&](const Tensor& prefix) { return mha(prefix); });
            CHECK(gap == 0.0);
        }
    }
}

// Recomputation is the forward over the tokens so far (test::decode_gap): a row of fewer than
// 8 keys is summed in another order than a longer one, in PyTorch as here.
TEST_CASE("Decoding with RoPE or ALiBi equals recomputation, bit for bit") {
    Generator gen(24);
    const Tensor x = rand({2, 40, 6}, gen);
    for (const PositionScheme scheme : {PositionScheme::rope, PositionScheme::alibi}) {
        AttentionConfig c{.d_in = 6, .d_out = 16, .context_length = 40, .num_heads = 4, .num_kv_groups = 2,
                          .positions = scheme};
        if (scheme == PositionScheme::rope) c.rope_base = 500000.0, c.rope_freq = RopeFreqConfig::llama3_1();
        const GroupedQueryAttention gqa(c, gen);
        for (const std::size_t chunk : {1, 3, 7, 40}) {
            INFO((scheme == PositionScheme::rope ? "RoPE" : "ALiBi") << ", chunks of " << chunk);
            KVCache cache;
            const double gap = test::decode_gap(
                x, chunk, [&](const Tensor& part, long, long) { return gqa.forward(part, cache); },
                [&](const Tensor& prefix) { return gqa(prefix); });
            CHECK(gap == 0.0);
        }
        // The cache holds keys rotated at their own positions: the full forward's rotated keys.
        KVCache cache;
        gqa.forward(x, cache);
        if (scheme == PositionScheme::rope) {
            const Tensor keys = attn::transpose(attn::view(gqa.W_key(x), {2, 40, 2, 4}), 1, 2);
            CHECK(same_bits(cache.key, compute_rope(keys, gqa.positions.cos, gqa.positions.sin)));
        }
    }
}

TEST_CASE("Positions in the modules: fast == step bit for bit, tiled within its bound, forward and backward") {
    Generator gen(5);
    const Tensor x = rand({2, 70, 12}, gen);
    const Tensor w = rand({2, 70, 16}, gen);
    for (const PositionScheme scheme : {PositionScheme::none, PositionScheme::rope, PositionScheme::alibi}) {
        INFO("scheme " << static_cast<int>(scheme));
        MultiHeadAttention mha({.d_in = 12, .d_out = 16, .context_length = 70, .num_heads = 4, .positions = scheme},
                               gen);
        const GroupedQueryAttention gqa({.d_in = 12, .d_out = 16, .context_length = 70, .num_heads = 4,
                                         .num_kv_groups = 2, .positions = scheme}, gen);
        Tensor out[3], gout[3], dx[3], dwq[3];
        const SDPABackend backends[3] = {SDPABackend::step, SDPABackend::fast, SDPABackend::tiled};
        for (int b = 0; b < 3; ++b) {
            const SDPABackendGuard guard(backends[b]);
            out[b] = mha(x, gen);
            gout[b] = gqa(x, gen);
            mha.zero_grad(true);
            dx[b] = train(mha, x, w).grad_x;
            dwq[b] = **mha.named_parameters()[0].grad;
        }
        CHECK(same_bits(out[0], out[1]));
        CHECK(same_bits(gout[0], gout[1]));
        CHECK(same_bits(dx[0], dx[1]));
        CHECK(same_bits(dwq[0], dwq[1]));
        CHECK(test::max_abs_diff(out[0], out[2]) < 1e-6);
        CHECK(test::max_abs_diff(gout[0], gout[2]) < 1e-6);
        CHECK(test::max_abs_diff(dx[0], dx[2]) < 1e-5);
        // the teaching path gives the fast path's bits
        const MultiHeadAttention::Steps st = mha.forward_steps(x, gen);
        CHECK(same_bits(st.context_vec, out[1]));
        CHECK((st.queries_rotated.dimension() == 4) == (scheme == PositionScheme::rope));  // empty (0-d) otherwise
    }
}

TEST_CASE("GQA with RoPE equals the MultiHeadAttention of its expanded key/value weights") {
    manual_seed(123);
    const GroupedQueryAttention gqa(llama32_gqa());
    const MultiHeadAttention mha = expand_kv_groups(gqa);
    CHECK(same_bits(mha(test::book_batch()), gqa(test::book_batch())));
}

TEST_CASE("Meta's interleaved RoPE on unpermuted weights equals the halves on permuted ones") {
    // Meta's Llama code rotates neighbours (2i, 2i + 1) as complex numbers; Hugging Face and
    // Raschka rotate (i, i + hd/2). His loader's permute(w, n_heads, out, in) =
    // w.view(n_heads, out // n_heads // 2, 2, in).transpose(1, 2).reshape(out, in) maps
    // Meta's row h*hd + 2i + j to row h*hd + j*hd/2 + i: then the rotated heads are the same
    // numbers, coordinates renamed, and every score is the same up to the order of its sum.
    const std::size_t H = 2, hd = 8, d_in = 5, T = 7, half = hd / 2;
    Generator gen(3);
    const Tensor W_meta = randn({H * hd, d_in}, gen), x = randn({1, T, d_in}, gen);
    Tensor W_hf = zeros({H * hd, d_in});
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < half; ++i)
            for (std::size_t j = 0; j < 2; ++j)
                for (std::size_t c = 0; c < d_in; ++c) W_hf(h * hd + j * half + i, c) = W_meta(h * hd + 2 * i + j, c);
    const auto [cos, sin] = precompute_rope_params(hd, 10000.0, T);
    const Tensor q_meta = nn::Linear(W_meta, std::nullopt)(x), q_hf = nn::Linear(W_hf, std::nullopt)(x);
    const Tensor rot_hf = compute_rope(attn::transpose(attn::view(q_hf, {1, long(T), long(H), long(hd)}), 1, 2), cos, sin);
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t i = 0; i < half; ++i) {
                // Meta: (a + ib)(cos + i sin), cos and sin of pair i at position t
                const float a = q_meta(0, t, h * hd + 2 * i), b = q_meta(0, t, h * hd + 2 * i + 1);
                const float c = cos(t, i), s = sin(t, i);
                CHECK(rot_hf(0, h, t, i) == a * c - b * s);
                CHECK(rot_hf(0, h, t, i + half) == b * c + a * s);
            }
}

TEST_CASE("Position options: bad input names the problem") {
    test::require_invalid(
        [] { (void)GroupedQueryAttention({.d_in = 3, .d_out = 12, .context_length = 6, .num_heads = 4,
                                          .num_kv_groups = 2, .positions = PositionScheme::rope}); },
        {"GroupedQueryAttention: RoPE rotates pairs of a head's columns: head_dim must be even, got head_dim = 3"});
    test::require_invalid(
        [] { (void)MultiHeadAttention({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 2, .rope_base = 500000.0}); },
        {"MultiHeadAttention: rope_base applies to positions = PositionScheme::rope only"});
    test::require_invalid(
        [] { (void)MultiHeadAttention({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 2,
                                       .positions = PositionScheme::alibi, .rope_freq = RopeFreqConfig::llama3_1()}); },
        {"rope_freq applies to positions = PositionScheme::rope only"});
    test::require_invalid(
        [] { (void)MultiHeadAttention({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 2,
                                       .positions = PositionScheme::rope, .rope_base = -2.0}); },
        {"expected a finite rope_base > 0"});
    test::require_invalid(
        [] { (void)MultiHeadAttention({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 2,
                                       .positions = static_cast<PositionScheme>(7)}); },
        {"positions is not a PositionScheme value (7)"});
    // the tables replaced by shorter ones: the positions beyond them are named
    GroupedQueryAttention gqa(llama32_gqa());
    std::tie(gqa.positions.cos, gqa.positions.sin) = precompute_rope_params(4, 500000.0, 4);
    test::require_invalid([&] { (void)gqa(test::book_batch()); },
                          {"RoPE: positions 0..5 are beyond the precomputed table of 4 positions"});
    KVCache cache;
    gqa.forward(attn::slice(test::book_batch(), 1, 0, 4), cache);
    test::require_invalid([&] { (void)gqa.forward(attn::slice(test::book_batch(), 1, 4, 5), cache); },
                          {"RoPE: positions 4..4 are beyond the precomputed table of 4 positions"});
    CHECK(cache.pos == 4);  // nothing changed
}

}  // namespace test_position_modules
