// Time per generated token with and without the KV cache (chapter 8), for contexts of 64 to
// 1024 tokens. A Google Benchmark program: it measures, it asserts nothing, and `meson test`
// does not run it. Run it with benchmarks/run/record_kv_cache.py, which records the JSON output under
// data/benchmarks/ with the machine and the commit.
//
// One iteration = generating the token at position `context`:
// - with the cache: BaseSelfAttention::forward on the new token [B, 1, E] with a KVCache of
//   `context` tokens (projections of one token, one row of attention, plus the concatenation of
//   the cache, which copies it, as torch.concat does in notebook 000);
// - without: forward on the whole sequence [B, context + 1, E] (every projection and the full
//   causal attention), of which generation uses the last row.
#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/base_self_attention.hpp"
#include "attn/attention/kv_cache.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t B = 1;

void BM_token_with_cache(benchmark::State& state) {
    const auto context = static_cast<std::size_t>(state.range(0));
    const auto E = static_cast<std::size_t>(state.range(1));
    attn::manual_seed(0);
    const attn::BaseSelfAttention attention({.embed_dim = E});
    const attn::BaseOutput prompt = attention(attn::rand({B, context, E}));
    const attn::KVCache cache(prompt.key, prompt.value);
    const attn::Tensor token = attn::rand({B, 1, E});
    for (auto _ : state) {
        attn::BaseOutput out = attention(token, std::nullopt, &cache);
        benchmark::DoNotOptimize(out.attention_output.data());
        benchmark::ClobberMemory();
    }
    state.counters["context"] = static_cast<double>(context);
    state.counters["embed_dim"] = static_cast<double>(E);
    state.counters["cache_bytes"] = static_cast<double>(cache.bytes());
    // Bound by memory, if by anything: each token reads the whole cache (at least once).
    state.counters["GBps"] = benchmark::Counter(double(cache.bytes()) * double(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
    state.SetLabel("with_cache");
}

void BM_token_without_cache(benchmark::State& state) {
    const auto context = static_cast<std::size_t>(state.range(0));
    const auto E = static_cast<std::size_t>(state.range(1));
    attn::manual_seed(0);
    const attn::BaseSelfAttention attention({.embed_dim = E});
    const attn::Tensor sequence = attn::rand({B, context + 1, E});
    for (auto _ : state) {
        attn::BaseOutput out = attention(sequence);
        attn::Tensor last = attn::slice(out.attention_output, 1, -1, static_cast<long>(context) + 1);
        benchmark::DoNotOptimize(last.data());
        benchmark::ClobberMemory();
    }
    state.counters["context"] = static_cast<double>(context);
    state.counters["embed_dim"] = static_cast<double>(E);
    // Four projections of every token and the attention's two products over all [S, S] pairs.
    const double S = double(context + 1), e = double(E);
    bench::count_flops(state, 4 * 2 * S * e * e + 2 * 2 * e * S * S);
    state.SetLabel("without_cache");
}

// Contexts 64..1024 (powers of two); E = 16 (notebook 000) and E = 128 (a more realistic width).
void contexts(benchmark::internal::Benchmark* b) {
    for (const std::int64_t E : {16, 128})
        for (std::int64_t context = 64; context <= 1024; context *= 2) b->Args({context, E});
    b->ArgNames({"context", "E"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_token_with_cache)->Apply(contexts);
BENCHMARK(BM_token_without_cache)->Apply(contexts);

int main(int argc, char** argv) {
    return bench::main(argc, argv, "time per generated token with and without the KV cache "
                                   "(attn::BaseSelfAttention, one layer, one head, batch 1, "
                                   "float32)");
}
