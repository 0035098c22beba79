// Where position comes from (attention/positions.hpp): the sinusoidal table, RoPE's frequencies,
// tables and rotation, ALiBi's slopes and bias, and ALiBi as an option of the attention core on
// every backend, forward and backward. Expected values: tools/oracle/positions.py's run of
// Raschka's functions, the Annotated Transformer's PositionalEncoding and Press et al.'s
// get_slopes in PyTorch 1.13 (data/oracle/positions.json), bit for bit.
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include "attn/attention/positions.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/positional_encoding.hpp"
#include "attn/print/print.hpp"

namespace test_positions {

namespace {

using namespace attn;

const nlohmann::json& oracle() { return test::oracle_file("positions.json"); }

// The rows `rows` of a [n, w] table.
Tensor rows_of(const Tensor& t, const nlohmann::json& rows) {
    const std::size_t w = t.shape()[1];
    Tensor out = zeros({rows.size(), w});
    for (std::size_t r = 0; r < rows.size(); ++r)
        std::copy_n(t.data() + rows[r].get<std::size_t>() * w, w, out.data() + r * w);
    return out;
}

// Equal to the last bit (NaN payloads and the sign of 0 included).
bool same_bits(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint32_t>(a.data()[i]) != std::bit_cast<std::uint32_t>(b.data()[i])) return false;
    return true;
}

std::optional<RopeFreqConfig> freq(const nlohmann::json& name) {
    if (name.is_null()) return std::nullopt;
    return name == "llama3.1" ? RopeFreqConfig::llama3_1() : RopeFreqConfig::llama3_2();
}

}  // namespace

TEST_CASE("RoPE tables and rotation are his cell 9's bits") {
    const auto& demo = oracle()["demo"];
    const auto [cos, sin] = precompute_rope_params(16, 10000.0, 5);
    CHECK(same_bits(cos, test::oracle_bits_tensor(demo["cos"])));
    CHECK(same_bits(sin, test::oracle_bits_tensor(demo["sin"])));
    manual_seed(123);
    const Tensor queries = randn({2, 4, 5, 16});
    const Tensor keys = randn({2, 4, 5, 16});
    CHECK(same_bits(queries, test::oracle_bits_tensor(demo["queries"])));
    CHECK(same_bits(keys, test::oracle_bits_tensor(demo["keys"])));
    CHECK(same_bits(compute_rope(queries, cos, sin), test::oracle_bits_tensor(demo["queries_rot"])));
    CHECK(same_bits(compute_rope(keys, cos, sin), test::oracle_bits_tensor(demo["keys_rot"])));
}

TEST_CASE("RoPE tables of 4096 and 8192 positions: rows past 124 too") {
    for (const auto& t : oracle()["rope_tables"]) {
        INFO("head_dim " << t["head_dim"] << ", theta_base " << t["theta_base"] << ", " << t["freq_config"]);
        const auto [cos, sin] = precompute_rope_params(t["head_dim"], t["theta_base"].get<double>(),
                                                       t["context_length"], freq(t["freq_config"]));
        CHECK(same_bits(rows_of(cos, t["rows"]), test::oracle_bits_tensor(t["cos"])));
        CHECK(same_bits(rows_of(sin, t["rows"]), test::oracle_bits_tensor(t["sin"])));
    }
}

TEST_CASE("inv_freq under Llama 2, 3, 3.1 and 3.2 settings") {
    for (const auto& c : oracle()["inv_freq"]) {
        const std::string setting = c["setting"];
        INFO(setting << ", head_dim " << c["head_dim"]);
        const double base = setting == "llama2" ? 10000.0 : 500000.0;
        const std::optional<RopeFreqConfig> fc = setting == "llama3.1"   ? RopeFreqConfig::llama3_1()
                                                 : setting == "llama3.2" ? std::optional(RopeFreqConfig::llama3_2())
                                                                         : std::nullopt;
        CHECK(same_bits(rope_inv_freq(c["head_dim"], base, fc), test::oracle_bits_tensor(c["inv_freq"])));
    }
}

TEST_CASE("The sinusoidal table is the Annotated Transformer's pe") {
    for (const auto& c : oracle()["sinusoidal"]) {
        INFO("d_model " << c["d_model"] << ", max_len " << c["max_len"]);
        CHECK(same_bits(rows_of(sinusoidal_encoding(c["max_len"], c["d_model"]), c["rows"]),
                        test::oracle_bits_tensor(c["pe"])));
    }
}

TEST_CASE("PositionalEncoding adds the Annotated Transformer's table, then dropout") {
    const PositionalEncoding pe(8, 0.0, 6);
    const auto& c = oracle()["sinusoidal"][0];  // d_model 8, max_len 6
    CHECK(same_bits(rows_of(attn::view(pe.pe, {6, 8}), c["rows"]), test::oracle_bits_tensor(c["pe"])));
    CHECK(attn::repr(pe) == "PositionalEncoding(\n  (dropout): Dropout(p=0.0, inplace=False)\n)");
    const Tensor x = attn::ones({2, 3, 8});
    const Tensor y = pe(x, 2);  // positions 2..4, as a decoder at position 2 would add them
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t d = 0; d < 8; ++d) CHECK(y(1, t, d) == 1.0f + pe.pe(0, 2 + t, d));
}

TEST_CASE("ALiBi's slopes are Press et al.'s get_slopes, as float32") {
    for (const auto& c : oracle()["alibi_slopes"]) {
        INFO("num_heads " << c["num_heads"]);
        CHECK(same_bits(alibi_slopes(c["num_heads"]), test::oracle_bits_tensor(c["slopes"])));
    }
}

TEST_CASE("compute_rope's backward is autograd's") {
    const auto& c = oracle()["rope_backward"];
    const auto [cos, sin] = precompute_rope_params(8, 10000.0, c["context_length"]);
    const Tensor x = test::oracle_bits_tensor(c["x"]);
    CHECK(same_bits(compute_rope(x, cos, sin), test::oracle_bits_tensor(c["y"])));
    CHECK(same_bits(compute_rope_backward(test::oracle_bits_tensor(c["grad_output"]), cos, sin),
                    test::oracle_bits_tensor(c["grad_x"])));
}

TEST_CASE("RoPE: a score depends only on the offset between query and key") {
    // One query and one key placed at every position: q_m . k_n is a function of m - n (equal
    // within the rounding of the rotation; exactly so in real arithmetic).
    const auto [cos, sin] = precompute_rope_params(16, 10000.0, 64);
    Generator gen(24);
    const Tensor q = randn({1, 1, 1, 16}, gen), k = randn({1, 1, 1, 16}, gen);
    const auto at_every_position = [](const Tensor& v) {
        Tensor out = zeros({1, 1, 64, 16});
        for (std::size_t p = 0; p < 64; ++p) std::copy_n(v.data(), 16, out.data() + p * 16);
        return out;
    };
    const Tensor scores = attn::matmul(compute_rope(at_every_position(q), cos, sin),
                                 attn::transpose(compute_rope(at_every_position(k), cos, sin), 2, 3));
    double worst = 0.0;
    for (std::size_t m = 0; m < 64; ++m)
        for (std::size_t n = 0; n < 64; ++n) {
            const std::size_t m0 = m >= n ? m - n : 0, n0 = m >= n ? 0 : n - m;  // same offset, first row or column
            worst = std::max(worst, double(std::fabs(scores(0, 0, m, n) - scores(0, 0, m0, n0))));
        }
    CHECK(worst < 1e-5);
    // And at an offset: rotating from position 10 shifts every angle by 10 * inv_freq.
    const Tensor shifted = compute_rope(at_every_position(q), cos, sin, 0);
    const Tensor later = compute_rope(attn::slice(at_every_position(q), 2, 0, 54), cos, sin, 10);
    CHECK(same_bits(later, attn::slice(shifted, 2, 10, 64)));
    // Without RoPE the same query and key give one score everywhere: position is invisible.
    const Tensor plain = attn::matmul(at_every_position(q), attn::transpose(at_every_position(k), 2, 3));
    CHECK(plain(0, 0, 5, 0) == plain(0, 0, 0, 5));
}

TEST_CASE("ALiBi as a core option equals its dense bias, on every backend, forward and backward") {
    Generator gen(7);
    const std::size_t B = 2, H = 4, Hkv = 2, Tq = 37, Tk = 45, E = 8;
    const Tensor q = randn({B, H, Tq, E}, gen), k = randn({B, Hkv, Tk, E}, gen), v = randn({B, Hkv, Tk, E}, gen);
    const Tensor grad = randn({B, H, Tq, E}, gen);
    const Tensor slopes = alibi_slopes(H);
    const std::size_t query_start = Tk - Tq;  // new queries after a cache of 8 tokens
    const Tensor bias = alibi_bias(slopes, Tq, Tk, query_start, 0);
    const Tensor extra = randn({Tq, Tk}, gen);
    const Tensor both = bias + extra;  // a given additive mask and ALiBi: one mask, their sum
    for (const bool causal : {true, false})
        for (const bool with_mask : {false, true}) {
            SDPAOptions o{.is_causal = causal, .query_start = query_start};
            o.alibi_slopes = &slopes;
            if (with_mask) o.attn_bias = &extra;
            SDPAOptions dense{.is_causal = causal, .query_start = query_start};
            dense.attn_bias = with_mask ? &both : &bias;
            INFO("causal " << causal << ", with attn_bias " << with_mask);
            for (const SDPABackend b : {SDPABackend::step, SDPABackend::fast, SDPABackend::tiled}) {
                INFO(backend_name(b));
                o.backend = dense.backend = b;
                const SDPAForward f = scaled_dot_product_attention_forward(q, k, v, o);
                const SDPAForward fd = scaled_dot_product_attention_forward(q, k, v, dense);
                CHECK(same_bits(f.output, fd.output));
                const SDPAGradients g = scaled_dot_product_attention_backward(grad, q, k, v, f, o);
                const SDPAGradients gd = scaled_dot_product_attention_backward(grad, q, k, v, fd, dense);
                CHECK(same_bits(g.grad_query, gd.grad_query));
                CHECK(same_bits(g.grad_key, gd.grad_key));
                CHECK(same_bits(g.grad_value, gd.grad_value));
            }
            // fast == step bit for bit; tiled within its bound
            o.backend = SDPABackend::step;
            const SDPAForward step = scaled_dot_product_attention_forward(q, k, v, o);
            const SDPAGradients gs = scaled_dot_product_attention_backward(grad, q, k, v, step, o);
            o.backend = SDPABackend::fast;
            const SDPAForward fast = scaled_dot_product_attention_forward(q, k, v, o);
            const SDPAGradients gf = scaled_dot_product_attention_backward(grad, q, k, v, fast, o);
            CHECK(same_bits(step.output, fast.output));
            CHECK(same_bits(gs.grad_query, gf.grad_query));
            CHECK(same_bits(gs.grad_key, gf.grad_key));
            CHECK(same_bits(gs.grad_value, gf.grad_value));
            o.backend = SDPABackend::tiled;
            CHECK(test::max_abs_diff(scaled_dot_product_attention_forward(q, k, v, o).output, step.output) < 2e-6);
        }
}

TEST_CASE("Positions: bad input names the problem") {
    // A pair, not a structured binding: clang 14 cannot capture bindings in a lambda.
    const auto rope = precompute_rope_params(16, 10000.0, 6);
    const Tensor& cos = rope.first;
    const Tensor& sin = rope.second;
    test::require_invalid([] { (void)precompute_rope_params(15); }, {"Embedding dimension must be even", "15"});
    test::require_invalid([&] { (void)compute_rope(zeros({1, 1, 4, 15}), cos, sin); },
                          {"compute_rope", "Head dimension must be even", "head_dim = 15"});
    test::require_invalid([&] { (void)compute_rope(zeros({1, 1, 7, 16}), cos, sin); },
                          {"positions 0..6 are beyond the precomputed table of 6 positions"});
    test::require_invalid([&] { (void)compute_rope(zeros({1, 1, 3, 16}), cos, sin, 4); },
                          {"positions 4..6 are beyond the precomputed table of 6 positions"});
    test::require_invalid([&] { (void)compute_rope(zeros({1, 1, 3, 8}), cos, sin); },
                          {"compute_rope (cos): expected [context_length, 8], got [6, 16]"});
    test::require_invalid([] { (void)precompute_rope_params(16, -1.0); }, {"theta_base > 0", "-1"});
    test::require_invalid([] { (void)precompute_rope_params(16, 10000.0, 0); }, {"context_length in 1..2^24", "got 0"});
    RopeFreqConfig bad = RopeFreqConfig::llama3_1();
    bad.high_freq_factor = bad.low_freq_factor;
    test::require_invalid([&] { (void)rope_inv_freq(64, 500000.0, bad); }, {"high_freq_factor", "greater than low_freq_factor"});
    test::require_invalid([] { (void)sinusoidal_encoding(6, 7); }, {"d_model must be even", "d_model = 7"});
    test::require_invalid([] { (void)alibi_slopes(0); }, {"alibi_slopes: expected num_heads > 0"});
    const Tensor q = zeros({1, 4, 3, 8}), k = zeros({1, 2, 3, 8});
    const Tensor three = alibi_slopes(3);
    SDPAOptions o;
    o.alibi_slopes = &three;
    test::require_invalid([&] { (void)scaled_dot_product_attention(q, k, k, o); },
                          {"(alibi_slopes): expected [4] (one slope per query head), got [3]"});
    Tensor nan_slopes = alibi_slopes(4);
    nan_slopes(2) = std::nanf("");
    o.alibi_slopes = &nan_slopes;
    test::require_invalid([&] { (void)scaled_dot_product_attention(q, k, k, o); }, {"finite slopes", "head 2"});
}

}  // namespace test_positions
