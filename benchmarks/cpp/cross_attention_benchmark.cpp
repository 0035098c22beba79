// Chapter 25's speed: torch.nn.MultiheadAttention as cross-attention at GPT-2's sizes (E = 768,
// 12 heads, batch 1), T queries attending to S source tokens (default 1024 and 1024; the
// environment variables CROSS_T and CROSS_S change them), float32, on the threads OpenMP is
// given. A Google Benchmark program: it measures and asserts nothing; `meson test` does not run
// it. benchmarks/run/record_cross_attention.py runs each case in its own process, interleaved
// with PyTorch's own module (benchmarks/peers/torch_cross_attention.py), and records both.
// Cases:
//   BM_cross/0, /1        the forward, need_weights False (what a decoder asks) and True
//                         (PyTorch's default: the [B, T, S] weights averaged over the heads)
//   BM_decode_step/0, /1  one decoding step: 1 query against the S source tokens, the memory's
//                         keys and values projected again (0) or taken from the cache (1)
#include <cstdlib>
#include <string>

#include <benchmark/benchmark.h>

#include "attn/attention/kv_cache.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/torch_mha.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t E = 768, H = 12;

std::size_t env_size(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::stoul(v) : 1024;
}

struct Setup {
    std::size_t T = env_size("CROSS_T"), S = env_size("CROSS_S");
    attn::Generator gen{0};
    attn::MultiheadAttention mha{{.embed_dim = E, .num_heads = H, .batch_first = true}, gen};
    attn::Tensor query = attn::randn({1, T, E}, gen);
    attn::Tensor memory = attn::randn({1, S, E}, gen);
};

// The products of a forward of `T` queries against `S` source tokens: the four projections
// (2 T E^2 for the queries and out_proj each, 2 S E^2 for keys and values each, the latter
// only when `project_memory`) and the two attention products (2 T S E each).
double flops(double T, double S, bool project_memory) {
    return 4 * T * E * E + (project_memory ? 4 * S * E * E : 0) + 4 * T * S * E;
}

template <class F>
void run(benchmark::State& state, const Setup& s, std::size_t T, bool project_memory, const std::string& label,
         F forward) {
    bench::Run r(state, omp_get_max_threads());
    r.start();
    for (auto _ : state) {
        attn::Tensor out = forward();
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    r.finish(flops(double(T), double(s.S), project_memory));
    state.counters["T"] = double(T);
    state.counters["S"] = double(s.S);
    state.SetLabel(label);
}

void BM_cross(benchmark::State& state) {
    const Setup s;
    const bool need_weights = state.range(0) != 0;
    run(state, s, s.T, true, need_weights ? "forward, need_weights=True" : "forward, need_weights=False", [&] {
        return s.mha(s.query, s.memory, s.memory, {.need_weights = need_weights}).attn_output;
    });
}

void BM_decode_step(benchmark::State& state) {
    const Setup s;
    const bool cached = state.range(0) != 0;
    const attn::Tensor token = attn::slice(s.query, 1, 0, 1);  // one new query
    const attn::KVCache memory_kv = s.mha.memory_cache(s.memory, s.memory);
    run(state, s, 1, !cached, cached ? "decode step, memory cached" : "decode step, memory projected again", [&] {
        return cached ? s.mha(token, memory_kv, {.need_weights = false}).attn_output
                      : s.mha(token, s.memory, s.memory, {.need_weights = false}).attn_output;
    });
}

}  // namespace

BENCHMARK(BM_cross)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decode_step)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
    return bench::main(argc, argv, "cross-attention: torch.nn.MultiheadAttention, E = 768, 12 heads, batch 1, "
                                   "T queries against S source tokens, float32");
}
