// Chapter 11's speed table: one forward of each layout at Raschka's shape (B = 8, T = 1024,
// d_in = d_out = 768, 12 heads, causal, dropout 0), float32, one thread. A Google Benchmark
// program: it measures and asserts nothing; `meson test` does not run it.
// benchmarks/run/record_efficient.sh runs each layout in its own process, interleaved with
// PyTorch's implementations (benchmarks/peers/torch_efficient.py), and records both under
// data/benchmarks/. Arguments: `--benchmark_filter`, and the environment variable
// EFFICIENT_T to change T (default 1024).
#include <cstdlib>
#include <string>

#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include "attn/modules/efficient.hpp"
#include "attn/modules/causal.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"

namespace {

constexpr std::size_t B = 8, d = 768, H = 12;

std::size_t tokens() {
    const char* t = std::getenv("EFFICIENT_T");
    return t ? std::stoul(t) : 1024;
}

double peak_rss_bytes() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) * 1024.0;
}

template <class F>
void run(benchmark::State& state, const char* label, F forward) {
    for (auto _ : state) {
        attn::Tensor out = forward();
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.counters["T"] = static_cast<double>(tokens());
    state.counters["peak_rss_bytes"] = peak_rss_bytes();
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
    run(state, "wrapper", [&] { return w(x); });
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
        [&] { return m(s.x, s.x, s.x, mask, false).attn_output; });
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
    benchmark::AddCustomContext("what", "one forward of each multi-head attention layout, B = 8, "
                                        "d = 768, 12 heads, causal, float32, one thread");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
