// Generation with Raschka's GPT (chapter 23): the library's side of the generation benchmark. A
// Google Benchmark program: it measures and asserts nothing; `meson test` does not run it.
// benchmarks/run/record_generation.py runs each case in a process of its own beside PyTorch
// running his scripts (benchmarks/peers/torch_generation.py) and records both in
// data/benchmarks/generation.json.
//
//   generation_benchmark [--output=FILE] [Google Benchmark flags]
//
// Every case builds GPTModel(GPT_CONFIG_124M) after attn::manual_seed(123) in evaluation mode
// (his gpt_with_kv_cache.py's main; PyTorch draws the same weights) and feeds it his prompt
// "Hello, I am" = [15496, 11, 314, 716] (select one case with e.g.
// --benchmark_filter='^generate/tokens:200/threads:1/real_time$'):
//   generate/tokens:200/threads:{1,2}
//       one iteration is his generate_text_simple_cached: the prompt once (prefill), then 200
//       tokens each through the cache. Counters new_tokens_per_s (200 / time) and GBps: the
//       bytes of the weights a decode step reads (every weight but the two embedding tables,
//       of which it reads one row each: weights_read_MB) times the decode steps, per second.
//       --output=FILE writes the warm-up's 204 ids (raw int64) for the driver's check.
//   generate_no_cache/tokens:200/threads:{1,2}
//       his gpt_ch04.py: the whole sequence through the model for every new token (minutes).
//   decode/context:C/threads:{1,2}, C = 16, 64, 256, 1023
//       one decode step with the cache holding C tokens (the time per token at that context):
//       the caches, preallocated for the context length (GPTCache::capacity, his optimized
//       cache), are prefilled with C tokens once; each iteration feeds one token and then
//       (untimed) drops it from the caches again. Counters cache_read_MB: the keys and values a
//       step's attention reads (2 x n_layers x (C + 1) tokens x emb_dim floats), and GBps: the
//       weights and the cache read per second (the bytes a step must read).
//   prefill/T:N/threads:{1,2}, N = 16, 64, 256, 1024
//       a forward of N tokens without the cache (GPTModel::forward_into: the logits' memory
//       kept between forwards): the prefill of an N-token prompt, and the time a step without
//       the cache takes at context N - 1. GFLOPs: 2 flops per multiply-add of
//       the products, the attention's causal pairs only.
//   decode_fma/context:C/threads:{1,2}, prefill_fma/T:N/threads:{1,2}
//       the same under ArithmeticGuard(Arithmetic::fma): every product of the model by fused
//       multiply-adds (the linear layers, the scores, weights x values). A prefill's products
//       are bound by the multiply-adds, a decode step's by reading the weights.
//
// Counters: bench.hpp's (faults, peak_rss_MB, rss_before_MB, threads), and the above.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"
#include "bench.hpp"

namespace {

std::string output_path;  // --output: where generate's warm-up writes its ids

const attn::LongTensor& prompt() {
    static const attn::LongTensor p = {{15496, 11, 314, 716}};
    return p;
}

// The model of every case, built once per process (163 million draws).
const attn::GPTModel& model() {
    static const attn::GPTModel m = [] {
        attn::manual_seed(123);
        attn::GPTModel g(attn::GPT_CONFIG_124M);
        g.eval();
        return g;
    }();
    return m;
}

// The weights a decode step reads: every parameter but the embeddings (one row of each).
double weights_read_bytes() {
    const attn::GPTConfig& c = attn::GPT_CONFIG_124M;
    const auto n = attn::parameter_count(c);
    return 4.0 * double(n.total - c.vocab_size * c.emb_dim - c.context_length * c.emb_dim);
}

// Products of a forward of T tokens (2 flops per multiply-add), the attention on its causal
// pairs: per block 4 E^2 + 8 E^2 per token, and per head 2 * hd * T (T + 1) / 2 twice.
double forward_flops(double T) {
    const attn::GPTConfig& c = attn::GPT_CONFIG_124M;
    const double E = double(c.emb_dim), L = double(c.n_layers), V = double(c.vocab_size);
    const double per_token = L * (12 * E * E) + E * V;
    return 2 * T * per_token + L * 2 * 2 * E * T * (T + 1) / 2;
}

attn::LongTensor tokens(std::size_t n) {
    attn::LongTensor t = xt::empty<std::int64_t>(attn::Shape{1, n});
    for (std::size_t i = 0; i < n; ++i) t(0, i) = prompt()(0, i % 4);
    return t;
}

void BM_generate(benchmark::State& state, bool use_cache) {
    const auto n = std::size_t(state.range(0));
    const attn::GPTModel& m = model();
    bench::Run run(state, int(state.range(1)));
    attn::GPTCache cache;
    cache.capacity = attn::GPT_CONFIG_124M.context_length;  // his optimized cache: max_seq_len
    const attn::LongTensor ids = attn::generate_text_simple_cached(m, prompt(), n, cache, 0, use_cache);
    if (!output_path.empty() && use_cache) {
        std::ofstream(output_path, std::ios::binary)
            .write(reinterpret_cast<const char*>(ids.data()), std::streamsize(ids.size() * sizeof(std::int64_t)));
    }
    run.start();
    for (auto _ : state)
        benchmark::DoNotOptimize(attn::generate_text_simple_cached(m, prompt(), n, cache, 0, use_cache));
    run.finish();
    const double iters = double(state.iterations());
    state.counters["new_tokens_per_s"] = benchmark::Counter(double(n) * iters, benchmark::Counter::kIsRate);
    state.counters["weights_read_MB"] = weights_read_bytes() / 1e6;
    if (use_cache)
        state.counters["GBps"] = benchmark::Counter(weights_read_bytes() * double(n) * iters / 1e9,
                                                    benchmark::Counter::kIsRate);
}

template <attn::Arithmetic A>
void BM_decode(benchmark::State& state) {
    const attn::ArithmeticGuard arithmetic(A);
    const auto C = std::size_t(state.range(0));
    const attn::GPTModel& m = model();
    bench::Run run(state, int(state.range(1)));
    attn::GPTCache cache;
    cache.capacity = attn::GPT_CONFIG_124M.context_length;  // his optimized cache: max_seq_len
    m.forward(tokens(C), cache);
    const attn::LongTensor next = attn::LongTensor(xt::ones<std::int64_t>(attn::Shape{1, 1})) * std::int64_t{716};
    const auto drop_last = [&] {  // back to C tokens: the slot of token C is written again
        for (attn::KVCache& c : cache.layers) c.pos = C;
    };
    m.forward(next, cache);  // warm-up
    drop_last();
    run.start();
    for (auto _ : state) {
        benchmark::DoNotOptimize(m.forward(next, cache));
        state.PauseTiming();
        drop_last();
        state.ResumeTiming();
    }
    run.finish(forward_flops(1) + 2.0 * 2 * double(attn::GPT_CONFIG_124M.emb_dim) * double(C) *
                                      double(attn::GPT_CONFIG_124M.n_layers));
    const attn::GPTConfig& c = attn::GPT_CONFIG_124M;
    const double cache_bytes = 2.0 * double(c.n_layers) * double(C + 1) * double(c.emb_dim) * 4.0;
    state.counters["cache_read_MB"] = cache_bytes / 1e6;
    state.counters["GBps"] = benchmark::Counter((weights_read_bytes() + cache_bytes) * double(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
}

template <attn::Arithmetic A>
void BM_prefill(benchmark::State& state) {
    const attn::ArithmeticGuard arithmetic(A);
    const auto T = std::size_t(state.range(0));
    const attn::GPTModel& m = model();
    bench::Run run(state, int(state.range(1)));
    const attn::LongTensor ids = tokens(T);
    attn::Tensor logits;  // kept between forwards, as PyTorch's allocator keeps its blocks
    m.forward_into(ids, logits);  // warm-up
    run.start();
    for (auto _ : state) {
        m.forward_into(ids, logits);
        benchmark::DoNotOptimize(logits.data());
    }
    run.finish(forward_flops(double(T)));
}

}  // namespace

BENCHMARK_CAPTURE(BM_generate, cached, true)->Name("generate")->ArgNames({"tokens", "threads"})
    ->Args({200, 1})->Args({200, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_generate, recomputed, false)->Name("generate_no_cache")->ArgNames({"tokens", "threads"})
    ->Args({200, 1})->Args({200, 2})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_TEMPLATE(BM_decode, attn::Arithmetic::exact)->Name("decode")->ArgNames({"context", "threads"})
    ->ArgsProduct({{16, 64, 256, 1023}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_decode, attn::Arithmetic::fma)->Name("decode_fma")->ArgNames({"context", "threads"})
    ->ArgsProduct({{16, 64, 256, 1023}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_prefill, attn::Arithmetic::exact)->Name("prefill")->ArgNames({"T", "threads"})
    ->ArgsProduct({{16, 64, 256, 1024}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_prefill, attn::Arithmetic::fma)->Name("prefill_fma")->ArgNames({"T", "threads"})
    ->ArgsProduct({{16, 64, 256, 1024}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--output=", 0) == 0) output_path = arg.substr(9);
        else rest.push_back(argv[i]);
    }
    int n = int(rest.size());
    return bench::main(n, rest.data(),
                       "Raschka's GPT (GPT_CONFIG_124M, seed 123, evaluation mode) generating from "
                       "\"Hello, I am\": 200 tokens with and without the KV cache, one decode step at a "
                       "context, a forward of T tokens",
                       "generation_benchmark [--output=FILE] [Google Benchmark flags]");
}
