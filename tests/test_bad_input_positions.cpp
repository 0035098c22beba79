// The bad-input table (issue 32's last bullet), positions: RoPE's tables and rotation, the
// sinusoidal table and module, ALiBi's slopes and the core's option, and the position schemes of
// the modules. The machinery and the expected values' sources: bad_input.hpp. PyTorch 1.13's
// answers for Raschka's functions (tools/oracle/reference/llama.py): an odd head_dim fails his
// assert "Embedding dimension must be even" / "Head dimension must be even", positions beyond
// the table fail a broadcast ("The size of tensor a (7) must match the size of tensor b (5)"),
// zero tokens give an empty result (`compute_rope` of `[1, 2, 0, 16]` and his
// GroupedQueryAttention on `[2, 0, 4]` return `[1, 2, 0, 16]` and `[2, 0, 8]`);
// `get_slopes(1)` is `[2^-8]` and `get_slopes(3)` `[1/16, 1/256, 1/4]`.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "bad_input.hpp"

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/positions.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/positional_encoding.hpp"

namespace test_bad_input_positions {

namespace {

using namespace attn;
using namespace bad_input;

AttentionConfig rope_gqa() {
    return {.d_in = 4, .d_out = 8, .context_length = 6, .num_heads = 2, .num_kv_groups = 1,
            .positions = PositionScheme::rope};
}

std::vector<Case> position_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    // --- RoPE's functions.
    err("precompute_rope_params odd head_dim", RUN(precompute_rope_params(15)), IA,
        "precompute_rope_params: Embedding dimension must be even, got head_dim = 15");
    err("precompute_rope_params head_dim 0", RUN(precompute_rope_params(0)), IA, "Embedding dimension must be even");
    err("precompute_rope_params head_dim 2^41", RUN(precompute_rope_params(std::size_t{1} << 41)), LE,
        "precompute_rope_params (inv_freq [head_dim / 2]): cannot allocate");
    err("precompute_rope_params theta_base 0", RUN(precompute_rope_params(16, 0.0)), IA, "expected a finite theta_base > 0, got 0");
    err("precompute_rope_params theta_base nan", RUN(precompute_rope_params(16, std::nan(""))), IA, "finite theta_base > 0");
    err("precompute_rope_params context_length 2^24 + 1", RUN(precompute_rope_params(16, 10000.0, (1u << 24) + 1)), IA,
        "expected context_length in 1..2^24 (positions are float32), got 16777217");
    err("rope_freq factor 0", [] { RopeFreqConfig f = RopeFreqConfig::llama3_1(); f.factor = 0; (void)rope_inv_freq(64, 5e5, f); return true; },
        IA, "freq_config factor must be finite and > 0, got 0");
    err("rope_freq high_freq_factor below low_freq_factor",
        [] { RopeFreqConfig f = RopeFreqConfig::llama3_1(); f.high_freq_factor = 0.5; (void)rope_inv_freq(64, 5e5, f); return true; },
        IA, "high_freq_factor must be finite and greater than low_freq_factor, got 0.5");
    err("compute_rope odd head_dim", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        (void)compute_rope(zeros({1, 1, 5, 15}), c, s); return true; }, IA, "compute_rope: Head dimension must be even, got head_dim = 15");
    err("compute_rope 7 positions, a table of 5", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        (void)compute_rope(zeros({1, 2, 7, 16}), c, s); return true; }, IA,
        "compute_rope: positions 0..6 are beyond the precomputed table of 5 positions");
    err("compute_rope offset past the table", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        (void)compute_rope(zeros({1, 1, 1, 16}), c, s, 5); return true; }, IA, "positions 5..5 are beyond the precomputed table of 5");
    err("compute_rope offset SIZE_MAX", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        (void)compute_rope(zeros({1, 1, 2, 16}), c, s, SIZE_MAX); return true; }, IA, "(overflow) are beyond the precomputed table");
    err("compute_rope sin of another shape", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        (void)compute_rope(zeros({1, 1, 2, 16}), c, zeros({4, 16})); return true; }, IA,
        "compute_rope (sin): expected [5, 16], got [4, 16]");
    err("compute_rope 1-D x", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        (void)compute_rope(zeros({16}), c, s); return true; }, IA, "compute_rope (x): expected [..., seq_len, head_dim], got [16]");
    ok("compute_rope of zero tokens is empty, as PyTorch", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        return shape_of(compute_rope(zeros({1, 2, 0, 16}), c, s)) == Shape{1, 2, 0, 16}; });
    ok("compute_rope of zero tokens past the table is empty too", [] { const auto [c, s] = precompute_rope_params(16, 1e4, 5);
        return compute_rope(zeros({1, 2, 0, 16}), c, s, 9).size() == 0; });

    // --- the sinusoidal table and module.
    err("sinusoidal_encoding odd d_model", RUN(sinusoidal_encoding(6, 7)), IA,
        "sinusoidal_encoding: d_model must be even and > 0 (sin and cos fill alternate columns), got d_model = 7");
    err("sinusoidal_encoding 2^20 x 2^50", RUN(sinusoidal_encoding(1u << 20, std::size_t{1} << 50)), LE, "cannot allocate");
    err("sinusoidal_encoding max_len 0, d_model 2^40 (found by fuzz_modules)", RUN(sinusoidal_encoding(0, std::size_t{1} << 40)), LE,
        "sinusoidal_encoding (div_term [d_model / 2]): cannot allocate");
    err("PositionalEncoding beyond max_len", RUN(PositionalEncoding(8, 0.0, 6)(zeros({1, 7, 8}))), IA,
        "PositionalEncoding: a token beyond the context: positions 0..6 but context_length = 6");
    err("PositionalEncoding of another width", RUN(PositionalEncoding(8, 0.0, 6)(zeros({1, 2, 4}))), IA,
        "PositionalEncoding: expected [b, T, 8], got [1, 2, 4]");
    err("PositionalEncoding dropout 2", RUN(PositionalEncoding(8, 2.0, 6)), IA, "PositionalEncoding: expected dropout in [0, 1]");
    err("PositionalEncoding pe replaced by a 2-D table",
        [] { PositionalEncoding pe(8, 0.0, 6); pe.pe = zeros({6, 8}); (void)pe(zeros({1, 2, 8})); return true; }, IA,
        "PositionalEncoding (pe): expected [1, max_len, d_model], got [6, 8]");
    err("PositionalEncoding::d_model of a 2-D pe (it read a third dimension that is not there)",
        [] { PositionalEncoding pe(8, 0.0, 6); pe.pe = zeros({6, 8}); return pe.d_model() == 8; }, IA,
        "PositionalEncoding::d_model (pe): expected [1, max_len, d_model], got [6, 8]");
    err("PositionalEncoding::max_len of a 1-D pe",
        [] { PositionalEncoding pe(8, 0.0, 6); pe.pe = zeros({48}); return pe.max_len() == 6; }, IA,
        "PositionalEncoding::max_len (pe): expected [1, max_len, d_model], got [48]");

    // --- ALiBi.
    err("alibi_slopes(0)", RUN(alibi_slopes(0)), IA, "alibi_slopes: expected num_heads > 0, got 0");
    err("alibi_slopes(2^62)", RUN(alibi_slopes(std::size_t{1} << 62)), LE, "alibi_slopes");
    ok("alibi_slopes(1) is [2^-8], as get_slopes(1)", [] { return alibi_slopes(1)(0) == 0.00390625f; });
    ok("alibi_slopes(3) is [1/16, 1/256, 1/4], as get_slopes(3)",
        [] { const Tensor s = alibi_slopes(3); return s(0) == 0.0625f && s(1) == 0.00390625f && s(2) == 0.25f; });
    err("alibi_bias from position SIZE_MAX (found by fuzz_modules)", RUN(alibi_bias(alibi_slopes(2), 1, 1, SIZE_MAX, 0)), IA,
        "alibi_bias: expected positions below 2^62, got queries from 18446744073709551615 and keys from 0");
    ok("alibi_bias of 2^40 queries and no key returns at once (found by fuzz_modules)",
       [] { return alibi_bias(alibi_slopes(2), std::size_t{1} << 40, 0).size() == 0; });
    err("alibi_bias of 2-D slopes", RUN(alibi_bias(zeros({2, 2}), 3, 3)), IA, "alibi_bias (slopes): expected [num_heads], got [2, 2]");
    err("SDPAOptions alibi_slopes of 3 for 4 heads", [] { const Tensor s = alibi_slopes(3);
        (void)scaled_dot_product_attention(zeros({1, 4, 2, 2}), zeros({1, 4, 2, 2}), zeros({1, 4, 2, 2}), {.alibi_slopes = &s}); return true; },
        IA, "scaled_dot_product_attention (alibi_slopes): expected [4] (one slope per query head), got [3]");
    err("SDPAOptions alibi_slopes with inf", [] { Tensor s = alibi_slopes(2); s(1) = inf;
        (void)scaled_dot_product_attention(zeros({2, 2, 2}), zeros({2, 2, 2}), zeros({2, 2, 2}), {.alibi_slopes = &s}); return true; },
        IA, "expected finite slopes, got inf for head 1");

    // --- the modules' position schemes.
    err("GQA RoPE with an odd head_dim", RUN(GroupedQueryAttention({.d_in = 4, .d_out = 6, .context_length = 6, .num_heads = 2,
                                                                     .num_kv_groups = 1, .positions = PositionScheme::rope})),
        IA, "GroupedQueryAttention: RoPE rotates pairs of a head's columns: head_dim must be even, got head_dim = 3 (d_out = 6, num_heads = 2)");
    err("MHA rope_base without RoPE", RUN(MultiHeadAttention({.d_in = 4, .d_out = 8, .context_length = 6, .num_heads = 2,
                                                              .positions = PositionScheme::alibi, .rope_base = 5e5})),
        IA, "MultiHeadAttention: rope_base applies to positions = PositionScheme::rope only");
    err("MHA an unknown PositionScheme", RUN(MultiHeadAttention({.d_in = 4, .d_out = 8, .context_length = 6, .num_heads = 2,
                                                                 .positions = static_cast<PositionScheme>(-1)})),
        IA, "MultiHeadAttention: positions is not a PositionScheme value (-1)");
    err("GQA RoPE context_length 2^25", [] { AttentionConfig c = rope_gqa(); c.context_length = 1u << 25;
        (void)GroupedQueryAttention(c); return true; }, IA,
        "GroupedQueryAttention: RoPE's tables hold positions as float32, exact up to 2^24 = 16777216, got context_length = 33554432");
    err("GQA RoPE tables replaced by narrower ones", [] { GroupedQueryAttention g(rope_gqa());
        std::tie(g.positions.cos, g.positions.sin) = precompute_rope_params(2, 1e4, 6);
        (void)g(zeros({1, 3, 4})); return true; }, IA, "RoPE (cos): expected [context_length, 4], got [6, 2]");
    err("GQA RoPE cache past the tables", [] { GroupedQueryAttention g(rope_gqa());
        std::tie(g.positions.cos, g.positions.sin) = precompute_rope_params(4, 1e4, 3);
        KVCache cache;
        g.forward(zeros({1, 3, 4}), cache);
        (void)g.forward(zeros({1, 1, 4}), cache); return true; }, IA, "RoPE: positions 3..3 are beyond the precomputed table of 3 positions");
    err("GQA RoPE decode beyond context_length", [] { GroupedQueryAttention g(rope_gqa());
        KVCache cache;
        g.forward(zeros({1, 6, 4}), cache);
        (void)g.forward(zeros({1, 1, 4}), cache); return true; }, IA, "a token beyond the context: positions 6..6 but context_length = 6");
    err("MHA ALiBi slopes replaced by 3 for 2 heads", [] {
        MultiHeadAttention m({.d_in = 4, .d_out = 8, .context_length = 6, .num_heads = 2, .positions = PositionScheme::alibi});
        m.positions.alibi_slopes = alibi_slopes(3);
        (void)m(zeros({1, 2, 4})); return true; }, IA, "(alibi_slopes): expected [2] (one slope per query head), got [3]");
    err("MHA backward after RoPE was switched off", [] {
        MultiHeadAttention m({.d_in = 4, .d_out = 8, .context_length = 6, .num_heads = 2, .positions = PositionScheme::rope});
        AttentionSaved saved;
        (void)m.forward(zeros({1, 3, 4}), saved);
        m.positions = ModulePositions{};
        (void)m.backward(saved, zeros({1, 3, 8})); return true; }, IA,
        "MultiHeadAttention::backward: the forward rotated queries and keys (RoPE), but the module no longer holds RoPE's tables");
    ok("MHA with RoPE on 2^40 empty sequences returns at once (found by fuzz_modules)", [] {
        const MultiHeadAttention m({.d_in = 4, .d_out = 8, .context_length = 6, .num_heads = 2, .positions = PositionScheme::rope});
        return shape_of(m(Tensor::from_shape({std::size_t{1} << 40, 0, 4}))) == Shape{std::size_t{1} << 40, 0, 8}; });
    ok("GQA with RoPE on zero tokens gives [2, 0, 8], as his module", [] {
        return shape_of(GroupedQueryAttention(rope_gqa())(zeros({2, 0, 4}))) == Shape{2, 0, 8}; });
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (positions): every case has its exact outcome") {
    run_table("positions", position_cases());
}

}  // namespace test_bad_input_positions
