// Chapter 24's speed: grouped-query attention with RoPE at GPT-2 sizes (B = 1, T = 1024, d_in =
// d_out = 768, 12 query heads, 4 key/value heads, head_dim 64, causal, float32, one thread),
// beside the same module without positions and with ALiBi, and ALiBi as the core's option
// against the same bias passed as a dense `[H, T, T]` additive mask. A Google Benchmark
// program: it measures and asserts nothing; `meson test` does not run it.
// benchmarks/run/record_positions.py runs each case in its own process, interleaved with
// PyTorch running Raschka's Llama 3 GroupedQueryAttention (benchmarks/peers/torch_positions.py).
// Arguments: `--benchmark_filter`, and the environment variable POSITIONS_T to change T.
#include <cstdlib>
#include <string>

#include <benchmark/benchmark.h>

#include "attn/attention/positions.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/gqa.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t d = 768, H = 12, G = 4, hd = 64;

std::size_t tokens() {
    const char* t = std::getenv("POSITIONS_T");
    return t ? std::stoul(t) : 1024;
}

// The products of one forward: queries and output [T, d] x [d, d], keys and values
// [T, d] x [d, G * hd], the causal attention's two products on the visible pairs.
double module_flops() {
    const double T = double(tokens());
    return 2 * T * d * d * 2 + 2 * T * d * double(G * hd) * 2 + 2 * double(H) * 2 * hd * T * (T + 1) / 2;
}
double core_flops() {
    const double T = double(tokens());
    return 2 * double(H) * 2 * hd * T * (T + 1) / 2;
}

template <class F>
void run(benchmark::State& state, const char* label, double flops, F forward) {
    for (auto _ : state) {
        attn::Tensor out = forward();
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.counters["T"] = static_cast<double>(tokens());
    state.counters["peak_rss_bytes"] = bench::peak_rss_bytes();
    bench::count_flops(state, flops);
    state.SetLabel(label);
}

// Raschka's Llama 3.2 settings (base 500 000, factor 32) at T positions.
attn::AttentionConfig config(attn::PositionScheme scheme) {
    attn::AttentionConfig c{.d_in = d, .d_out = d, .context_length = tokens(), .num_heads = H, .num_kv_groups = G,
                            .positions = scheme};
    if (scheme == attn::PositionScheme::rope) c.rope_base = 500000.0, c.rope_freq = attn::RopeFreqConfig::llama3_2();
    return c;
}

void BM_gqa(benchmark::State& state) {
    const auto scheme = static_cast<attn::PositionScheme>(state.range(0));
    attn::Generator gen(0);
    const attn::GroupedQueryAttention gqa(config(scheme), gen);
    const attn::Tensor x = attn::randn({1, tokens(), d}, gen);
    const char* names[] = {"GQA", "GQA + RoPE (Llama 3.2)", "GQA + ALiBi"};
    run(state, names[state.range(0)], module_flops(), [&] { return gqa(x); });
}

// The core alone on [1, 12, T, 64] heads, causal: ALiBi as slopes, or as a dense bias.
void BM_alibi_core(benchmark::State& state) {
    attn::Generator gen(0);
    const std::size_t T = tokens();
    const attn::Tensor q = attn::randn({1, H, T, hd}, gen), k = attn::randn({1, H, T, hd}, gen),
                       v = attn::randn({1, H, T, hd}, gen);
    const attn::Tensor slopes = attn::alibi_slopes(H);
    const bool dense = state.range(0) == 1;
    const attn::Tensor bias = dense ? attn::alibi_bias(slopes, T, T) : attn::Tensor();
    attn::SDPAOptions o{.is_causal = true, .backend = attn::SDPABackend::fast};
    if (dense) o.attn_bias = &bias;
    else o.alibi_slopes = &slopes;
    run(state, dense ? "core, ALiBi as attn_bias [H, T, T]" : "core, ALiBi as alibi_slopes [H]", core_flops(),
        [&] { return attn::scaled_dot_product_attention(q, k, v, o); });
}

}  // namespace

BENCHMARK(BM_gqa)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_alibi_core)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

int main(int argc, char** argv) {
    return bench::main(argc, argv, "grouped-query attention with and without RoPE and ALiBi, B = 1, d = 768, "
                                   "12 heads, 4 key/value heads, causal, float32, one thread");
}
