// Part VI's benchmark (chapters 28 and 29): ring attention (zig-zag split, with and without the
// overlap of transfer and compute) and DeepSpeed-Ulysses on the ranks of an MPI job, beside
// one process's fast kernel, causal, at T = 4096 and 16384 tokens. Run under mpirun:
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
#include <cstdio>

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
    const double T = double(state.range(0));
    state.counters["GFLOP"] = 4.0 * T * T / 2.0 * kHeadDim * kHeads / 1e9;  // causal: half the pairs
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
    state.SetLabel(options.overlap ? "ring, overlapped" : "ring, in turn");
}

void BM_ulysses(benchmark::State& state) {
    const Inputs in = inputs(std::size_t(state.range(0)), SequenceSplit::contiguous);
    attn::SDPAOptions options;
    options.is_causal = true;
    timed(state, [&] { benchmark::DoNotOptimize(ulysses_attention_forward(world(), in.q, in.k, in.v, options)); });
    state.SetLabel("ulysses");
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
    state.SetLabel("one process");
}

BENCHMARK(BM_one_process)->ArgNames({"T"})->Args({4096})->Args({16384})->UseManualTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ring)->ArgNames({"T", "overlap"})->ArgsProduct({{4096, 16384}, {1, 0}})->UseManualTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ulysses)->ArgNames({"T"})->Args({4096})->Args({16384})->UseManualTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);

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
