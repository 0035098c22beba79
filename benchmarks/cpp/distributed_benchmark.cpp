// Part VI's benchmark (chapters 28 and 29): ring attention (zig-zag split, with and without the
// overlap of transfer and compute) and DeepSpeed-Ulysses on the ranks of an MPI job, beside
// one process's fast kernel, causal, at T = 4096 and 16384 tokens; the transfer rate of a ring
// shift; a rank's peak memory at c tokens per rank (ring_memory, one case per process:
// benchmarks/run/record_distributed.py). Run under mpirun:
//
//   mpirun -np 4 build/benchmarks/distributed_benchmark
//
// Every rank runs every case (the collectives meet); each case has a fixed number of
// iterations (Google Benchmark would otherwise choose a count per rank, and the ranks would
// wait for each other forever), and its time is the slowest rank's, by manual timing. Rank 0
// reports. Counters: bytes each rank sent per call (counted by attn::dist), the slowest rank's
// compute and wait seconds per call (ring), and the largest peak RSS over the ranks.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <benchmark/benchmark.h>

#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/dist/ring_attention.hpp"
#include "attn/dist/ulysses.hpp"

namespace {

using attn::Tensor;
using namespace attn::dist;

constexpr std::size_t kHeads = 8, kHeadDim = 64;

const Communicator& world() {
    static const Communicator w = Communicator::world();
    return w;
}

// This rank's zig-zag or contiguous shard of q, k, v [1, 8, T, 64] (the same draws on every rank).
struct Inputs {
    Tensor q, k, v;
};

Inputs inputs(std::size_t T, SequenceSplit split) {
    attn::Generator gen(123);
    const std::size_t P = std::size_t(world().size()), r = std::size_t(world().rank());
    Inputs in;
    for (Tensor* t : {&in.q, &in.k, &in.v}) *t = shard(attn::randn({1, kHeads, T, kHeadDim}, gen), P, r, split);
    return in;
}

double peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return world().max(double(u.ru_maxrss) / 1024.0);
}

template <class F>
void timed(benchmark::State& state, F&& call) {
    const Traffic before = traffic_so_far();
    for (auto _ : state) {
        world().barrier();
        const auto start = std::chrono::steady_clock::now();
        call();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        state.SetIterationTime(world().max(seconds));
    }
    state.counters["bytes_per_rank"] = double(traffic_so_far().bytes - before.bytes) / double(state.iterations());
    state.counters["peak_rss_mb"] = peak_rss_mb();
    state.counters["ranks"] = double(world().size());
}

// The work of one causal attention over T tokens: 4 T^2 / 2 d H flops (half the pairs).
void count_flops(benchmark::State& state) {
    const double T = double(state.range(0));
    state.counters["GFLOP"] = 4.0 * T * T / 2.0 * kHeadDim * kHeads / 1e9;
}

void BM_ring(benchmark::State& state) {
    RingOptions options;
    options.is_causal = true;
    options.split = SequenceSplit::zigzag;
    options.overlap = state.range(1) != 0;
    const Inputs in = inputs(std::size_t(state.range(0)), options.split);
    double compute = 0, wait = 0;
    timed(state, [&] {
        const RingForward f = ring_attention_forward(world(), in.q, in.k, in.v, options);
        double c = 0, w = 0;
        for (const RingStep& s : f.steps) c += s.compute_seconds, w += s.wait_seconds;
        compute += world().max(c);
        wait += world().max(w);
    });
    state.counters["compute_s"] = compute / double(state.iterations());
    state.counters["wait_s"] = wait / double(state.iterations());
    count_flops(state);
    state.SetLabel(options.overlap ? "ring, overlapped" : "ring, in turn");
}

void BM_ulysses(benchmark::State& state) {
    const Inputs in = inputs(std::size_t(state.range(0)), SequenceSplit::contiguous);
    attn::SDPAOptions options;
    options.is_causal = true;
    timed(state, [&] { benchmark::DoNotOptimize(ulysses_attention_forward(world(), in.q, in.k, in.v, options)); });
    count_flops(state);
    state.SetLabel("ulysses");
}

// The transfer rate between ranks: one ring shift of a block of keys and values of c tokens
// (8 heads of 64, float32: 4 kB per token), as the ring sends it; bytes each rank sent per
// second of the slowest rank.
void BM_transfer(benchmark::State& state) {
    const std::size_t c = std::size_t(state.range(0)), count = 2 * kHeads * c * kHeadDim;
    std::vector<float> block(count, 1.0f), arriving(count);
    timed(state, [&] { world().ring_shift(block.data(), arriving.data(), count); });
    state.counters["GBps"] = benchmark::Counter(double(count * sizeof(float)) * double(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
    state.SetLabel("ring shift");
}

// A rank's memory at c tokens per rank (T = P c, zig-zag, causal): each rank draws only its own
// c tokens (no whole sequence is ever held), then runs one ring forward. Run one per process:
// the peak RSS is the process's.
void BM_ring_memory(benchmark::State& state) {
    const std::size_t c = std::size_t(state.range(0));
    attn::Generator gen(123 + std::uint64_t(world().rank()));
    const Tensor q = attn::randn({1, kHeads, c, kHeadDim}, gen), k = attn::randn({1, kHeads, c, kHeadDim}, gen),
                 v = attn::randn({1, kHeads, c, kHeadDim}, gen);
    const double rss_before = peak_rss_mb();
    RingOptions options;
    options.is_causal = true;
    options.split = SequenceSplit::zigzag;
    timed(state, [&] { benchmark::DoNotOptimize(ring_attention_forward(world(), q, k, v, options)); });
    state.counters["rss_inputs_mb"] = rss_before;
    state.counters["tokens_per_rank"] = double(c);
    state.SetLabel("ring, memory");
}

// One process's fast kernel on the whole sequence, on rank 0's clock (the others wait).
void BM_one_process(benchmark::State& state) {
    attn::Generator gen(123);
    const std::size_t T = std::size_t(state.range(0));
    const Tensor q = attn::randn({1, kHeads, T, kHeadDim}, gen), k = attn::randn({1, kHeads, T, kHeadDim}, gen),
                 v = attn::randn({1, kHeads, T, kHeadDim}, gen);
    attn::SDPAOptions options;
    options.is_causal = true;
    timed(state, [&] {
        if (world().rank() == 0) benchmark::DoNotOptimize(attn::scaled_dot_product_attention(q, k, v, options));
    });
    count_flops(state);
    state.SetLabel("one process");
}

BENCHMARK(BM_one_process)->ArgNames({"T"})->Args({4096})->Args({16384})->UseManualTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ring)->ArgNames({"T", "overlap"})->ArgsProduct({{4096, 16384}, {1, 0}})->UseManualTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ulysses)->ArgNames({"T"})->Args({4096})->Args({16384})->UseManualTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_transfer)->ArgNames({"c"})->Args({1024})->Args({8192})->UseManualTime()->Iterations(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ring_memory)->ArgNames({"c"})->Args({2048})->Args({4096})->Args({8192})->UseManualTime()
    ->Iterations(1)->Unit(benchmark::kMillisecond);

// Rank 0 reports; the others run silently.
class Silent : public benchmark::BenchmarkReporter {
public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
    Session mpi;
    benchmark::Initialize(&argc, argv);
    if (world().rank() == 0) {
        benchmark::RunSpecifiedBenchmarks();
    } else {
        Silent silent;  // (give --benchmark_out to rank 0 alone: mpirun -np 1 ... : -np 3 ...)
        benchmark::RunSpecifiedBenchmarks(&silent);
    }
    benchmark::Shutdown();
    return 0;
}
