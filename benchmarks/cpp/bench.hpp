// What every benchmark program of benchmarks/cpp/ shares: the counters each case reports beside
// its time (Google Benchmark counters, the same fields benchmarks/peers/torch_side.py and
// benchmarks/peers/onnxruntime/run.mjs report for the peers), and main().
//   faults         minor + major page faults per iteration of the timed loop
//   peak_rss_MB    the process's peak resident set (getrusage ru_maxrss) after the run, in
//                  10^6 bytes; run one case per process to read it per configuration
//   rss_before_MB  resident set before the timed loop (module, input and workspaces built)
//   threads        OpenMP threads
//   GFLOPs         flops / wall time, when the case counts its flops
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <benchmark/benchmark.h>
#include <omp.h>
#include <sys/resource.h>

#include "attn/kernels/gemm.hpp"

namespace bench {

inline double faults_now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_minflt + u.ru_majflt);
}

// Current resident set from /proc (ru_maxrss is the peak).
inline double rss_mb() {
    std::ifstream in("/proc/self/statm");
    long pages = 0, resident = 0;
    in >> pages >> resident;
    return double(resident) * 4096.0 / 1e6;
}

// The process's peak resident set in bytes (Linux reports ru_maxrss in KiB).
inline double peak_rss_bytes() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_maxrss) * 1024.0;
}

inline double peak_rss_mb() { return peak_rss_bytes() / 1e6; }

// `flops` per iteration as the rate counter GFLOPs (flops / wall time, 10^9).
inline void count_flops(benchmark::State& state, double flops) {
    state.counters["GFLOPs"] =
        benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// Sets the thread count; start() marks the timed loop's first page fault count.
struct Run {
    benchmark::State& state;
    double faults0 = 0, rss0 = 0;
    Run(benchmark::State& s, int threads) : state(s) {
        omp_set_num_threads(threads);
        rss0 = rss_mb();
    }
    void start() { faults0 = faults_now(); }
    // `flops` per iteration, if given, adds GFLOPs (flops / wall time).
    void finish(double flops = 0) {
        const double iters = double(state.iterations());
        if (flops > 0) count_flops(state, flops);
        state.counters["faults"] = (faults_now() - faults0) / std::max(iters, 1.0);
        state.counters["peak_rss_MB"] = peak_rss_mb();
        state.counters["rss_before_MB"] = rss0;
        state.counters["threads"] = omp_get_max_threads();
    }
};

// Every program's main() after its own flags are taken out of argv: `what` (what the program
// measures) and `fast_isa` (the kernels lib/attn/kernels/ chose on this CPU) in the JSON's
// context, then Google Benchmark's flags and the run. An unknown flag prints `usage` and gives 2.
inline int main(int argc, char** argv, const char* what, const char* usage = nullptr) {
    benchmark::AddCustomContext("what", what);
    benchmark::AddCustomContext("fast_isa", attn::fast::isa_name());
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        if (usage) std::fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

}  // namespace bench
