// Chapter 11's speed table: one forward of each layout at Raschka's shape (B = 8, T = 1024,
// d_in = d_out = 768, 12 heads, causal, dropout 0), float32, one thread. A Google Benchmark
// program: it measures and asserts nothing; `meson test` does not run it.
// benchmarks/run/record_efficient.py runs each layout in its own process, interleaved with
// PyTorch's implementations (benchmarks/peers/torch_efficient.py), and records both under
// data/benchmarks/. Arguments: `--benchmark_filter`, and the environment variable
// EFFICIENT_T to change T (default 1024).
#include <cstdlib>
#include <string>

#include <benchmark/benchmark.h>

#include "attn/modules/efficient.hpp"
#include "attn/modules/causal.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t B = 8, d = 768, H = 12;

std::size_t tokens() {
    const char* t = std::getenv("EFFICIENT_T");
    return t ? std::stoul(t) : 1024;
}

// The products of one forward credited to every layout (the same count whatever the layout
// computes, so ratios of GFLOPs are ratios of time): `projections` products [T, d] x [d, d]
// (4, or 3 for the wrapper, which has no output projection) and the causal attention's two
// products on the visible pairs only, for each of the B sequences.
double flops(double projections) {
    const double T = double(tokens()), hd = double(d / H);
    return double(B) * (projections * 2 * T * d * d + 2 * double(H) * 2 * hd * T * (T + 1) / 2);
}

template <class F>
void run(benchmark::State& state, const char* label, F forward, double projections = 4) {
    for (auto _ : state) {
        attn::Tensor out = forward();
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.counters["T"] = static_cast<double>(tokens());
    state.counters["peak_rss_bytes"] = bench::peak_rss_bytes();
    bench::count_flops(state, flops(projections));
    state.SetLabel(label);
}

struct Setup {
    attn::Generator gen{0};
    attn::MultiHeadAttention mha{{.d_in = d, .d_out = d, .context_length = tokens(), .num_heads = H}, gen};
    attn::Tensor x = attn::randn({B, tokens(), d}, gen);
};

void BM_wrapper(benchmark::State& state) {
    attn::Generator gen(0);
    const attn::MultiHeadAttentionWrapper w({.d_in = d, .d_out = d / H, .context_length = tokens(), .num_heads = H}, gen);
    const attn::Tensor x = attn::randn({B, tokens(), d}, gen);
    run(state, "wrapper", [&] { return w(x); }, 3);
}
void BM_mha(benchmark::State& state) {
    Setup s;
    run(state, "MultiHeadAttention", [&] { return s.mha(s.x); });
}
void BM_kernel(benchmark::State& state) {
    Setup s;
    const auto kernel = static_cast<attn::AttentionKernel>(state.range(0));
    const auto m = attn::combine_qkv(s.mha, kernel);
    const char* names[] = {"combined QKV", "SDPA is_causal", "SDPA attn_mask", "tiled"};
    run(state, names[state.range(0)], [&] { return m(s.x); });
}
void BM_einsum(benchmark::State& state) {
    Setup s;
    const auto m = attn::to_einsum(s.mha);
    run(state, "einsum", [&] { return m(s.x); });
}
void BM_torch_layout(benchmark::State& state) {
    Setup s;
    const auto m = attn::to_torch_layout(s.mha);
    const attn::BoolTensor mask = attn::causal_attn_mask(tokens());
    run(state, "nn.MultiheadAttention layout (need_weights=False)",
        [&] { return m(s.x, s.x, s.x, {.need_weights = false, .attn_mask = &mask}).attn_output; });
}
void BM_tiled_forward(benchmark::State& state) {
    Setup s;
    const attn::SDPABackendGuard tiled(attn::SDPABackend::tiled);
    run(state, "MultiHeadAttention, tiled backend", [&] { return s.mha(s.x); });
}

}  // namespace

BENCHMARK(BM_wrapper)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_mha)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_kernel)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_einsum)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_torch_layout)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_tiled_forward)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

int main(int argc, char** argv) {
    return bench::main(argc, argv, "one forward of each multi-head attention layout, B = 8, "
                                   "d = 768, 12 heads, causal, float32, one thread");
}
