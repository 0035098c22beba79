// Naive attention (chapter 7's path: the whole [B, H, T, T] scores, masked_softmax, matmul)
// against the tiled forward of chapter 12 (the attention core's tiled backend), causal, B = 1, 12 heads
// of 64 (d = 768), T = 1024, 4096, 16384, float32, one thread. A Google Benchmark program: it
// measures and asserts nothing; `meson test` does not run it. benchmarks/run/record_flash.py
// runs each benchmark in a process of its own (so `peak_rss_bytes`, the process's
// ru_maxrss, belongs to that benchmark alone) and records the JSON under data/benchmarks/.
//
// The projections are left out (they are the same products on both paths): one iteration is
// the attention of q, k, v [1, 12, T, 64] -> [1, 12, T, 64]. The naive path at T = 16384
// needs 12.9 GB for one copy of the scores and is not registered.
#include <cmath>
#include <cstdint>

#include <benchmark/benchmark.h>

#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t B = 1, H = 12, hd = 64;

template <bool Tiled>
void BM_attention(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(0));
    const auto block = static_cast<std::size_t>(state.range(1));
    attn::Generator gen(0);
    const attn::Tensor q = attn::randn({B, H, T, hd}, gen), k = attn::randn({B, H, T, hd}, gen),
                       v = attn::randn({B, H, T, hd}, gen);
    attn::SDPAOptions options{
        .is_causal = true, .scale = attn::ScoreScale::divide_by(std::sqrt(float(hd))),
        .fully_masked_rows = attn::FullyMaskedRows::zero,
        .backend = Tiled ? attn::SDPABackend::tiled : attn::SDPABackend::step};
    if (Tiled) options.block_q = options.block_k = block;  // the naive path has no blocks (0)
    for (auto _ : state) {
        attn::Tensor out = attn::scaled_dot_product_attention(q, k, v, options);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.counters["T"] = static_cast<double>(T);
    state.counters["heads"] = static_cast<double>(H);
    state.counters["d"] = static_cast<double>(H * hd);
    state.counters["peak_rss_bytes"] = bench::peak_rss_bytes();
    // scores and weights @ values on the visible (causal) pairs only, as the other programs count
    bench::count_flops(state, 2 * double(B * H) * 2.0 * hd * double(T) * double(T + 1) / 2);
    state.counters["inputs_bytes"] = static_cast<double>(3 * B * H * T * hd * sizeof(float));
    state.SetLabel(Tiled ? "tiled" : "naive");
}

}  // namespace

BENCHMARK_TEMPLATE(BM_attention, false)->Name("naive")->ArgNames({"T", "block"})
    ->Args({1024, 0})->Args({4096, 0})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_TEMPLATE(BM_attention, true)->Name("tiled")->ArgNames({"T", "block"})
    ->Args({1024, 64})->Args({4096, 64})->Args({16384, 64})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

int main(int argc, char** argv) {
    return bench::main(argc, argv, "causal attention of q, k, v [1, 12, T, 64], naive "
                                   "(whole scores) against tiled (attn::flash), float32");
}
