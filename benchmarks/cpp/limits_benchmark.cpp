// This CPU's own limits, for every instruction set the kernels of lib/attn/kernels/ can run
// here (attn::fast::available_isas()), on 1 and 2 threads (OpenMP). A Google Benchmark
// program: it measures and asserts nothing; `meson test` does not run it. Every recorder in
// benchmarks/run/ runs it in the same recording as its own cases (recording.py), and the
// pages show each result as a fraction of the limit that binds it.
//
//   fma/isa:<isa>/threads:<n>      independent fused multiply-adds, c = fma(c, m, a), in as many
//                                  chains as cover the latency of every port: the peak of any
//                                  float32 product on this CPU (not for the portable width:
//                                  SSE2 has no FMA)
//   mul_add/isa:<isa>/threads:<n>  the same chains with a multiply and then an add, each rounded
//                                  (-ffp-contract=off): the peak of the exact path, which keeps
//                                  the reference BLAS's bits and so may not fuse them
//   read/isa:<isa>/threads:<n>     the sum of a float array larger than the caches (twice the
//                                  last-level cache and the L2 caches together, at least 256 MiB),
//                                  each thread its own contiguous half: read bandwidth from memory
//
// Counters: GFLOPs (2 flops per lane for a fused multiply-add, and for a multiply plus an add),
// GBps (bytes read per second, 10^9), threads, lanes, accumulators, array_MB. On a CPU whose
// adds and multiplies share the FMA ports, mul_add comes out about half of fma.
//
// The loops are in limits_impl.hpp, compiled once per instruction set; each chain depends on
// its previous step, so the compiler can neither drop nor hoist a step (benchmarks/README.md:
// checking the instructions with objdump).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <benchmark/benchmark.h>
#include <omp.h>

#include "attn/kernels/gemm.hpp"
#include "bench.hpp"
#include "limits_isa.hpp"

namespace {

using bench::limits::Isa;

constexpr std::size_t STEPS = std::size_t(1) << 20;  // per chain and call: ~10 ms at peak
constexpr float M = 0.999999f, A = 1e-6f;            // c -> A / (1 - M) = 1: bounded, normal

const Isa* isa_named(const std::string& name) {
    if (name == "avx512f") return &bench::limits::isa_avx512();
    if (name == "avx2") return &bench::limits::isa_avx2();
    if (name == "portable") return &bench::limits::isa_portable();
    return nullptr;
}

void compute(benchmark::State& state, const Isa* isa, int threads, bool fused) {
    const auto loop = fused ? isa->fma : isa->mul_add;
    float sink = 0;
    for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += loop(STEPS, M, A);
        benchmark::DoNotOptimize(sink);
    }
    const double flops = 2.0 * double(isa->lanes * isa->accumulators * STEPS) * threads;
    state.counters["GFLOPs"] =
        benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.counters["threads"] = threads;
    state.counters["lanes"] = double(isa->lanes);
    state.counters["accumulators"] = double(isa->accumulators);
}

// Twice the caches the machine reports (the last level and every core's L2), at least 256 MiB.
std::size_t array_bytes() {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const double caches = double(std::max(l3, 0L)) + double(std::max(l2, 0L)) * double(std::max(cores, 1L));
    return std::max(std::size_t(2 * caches), std::size_t(256) << 20);
}

struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
};

void read_bandwidth(benchmark::State& state, const Isa* isa, int threads) {
    const std::size_t block = isa->lanes * isa->accumulators * std::size_t(threads);
    const std::size_t n = array_bytes() / sizeof(float) / block * block;
    std::unique_ptr<float[], FreeDeleter> x(
        static_cast<float*>(std::aligned_alloc(64, n * sizeof(float))));
    // Touched by the threads that read it (first touch), with values whose sum stays exact.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::size_t i = 0; i < n; ++i) x[i] = float(i % 3);
    const std::size_t part = n / std::size_t(threads);
    float sink = 0;
    for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += isa->read(x.get() + part * std::size_t(omp_get_thread_num()), part);
        benchmark::DoNotOptimize(sink);
    }
    const double bytes = double(n) * sizeof(float);
    state.counters["GBps"] =
        benchmark::Counter(bytes * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.counters["threads"] = threads;
    state.counters["lanes"] = double(isa->lanes);
    state.counters["accumulators"] = double(isa->accumulators);
    state.counters["array_MB"] = bytes / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    for (const std::string& name : attn::fast::available_isas()) {
        const Isa* isa = isa_named(name);
        if (!isa) continue;  // a kernel this program does not know: nothing to measure
        for (const int threads : {1, 2}) {
            const std::string tail = "/isa:" + name + "/threads:" + std::to_string(threads);
            if (isa->fma)
                benchmark::RegisterBenchmark(("fma" + tail).c_str(), compute, isa, threads, true)
                    ->Unit(benchmark::kMillisecond)->UseRealTime();
            benchmark::RegisterBenchmark(("mul_add" + tail).c_str(), compute, isa, threads, false)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
            benchmark::RegisterBenchmark(("read" + tail).c_str(), read_bandwidth, isa, threads)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
        }
    }
    return bench::main(argc, argv, "this CPU's limits: fused multiply-adds, separate multiplies "
                                   "and adds (the exact path's), read bandwidth from memory");
}
