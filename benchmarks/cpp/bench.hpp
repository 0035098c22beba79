// What every attention benchmark case reports beside its time (Google Benchmark counters),
// the same fields benchmarks/peers/torch_side.py and benchmarks/peers/onnxruntime/run.mjs
// report for the peers:
//   faults         minor + major page faults per iteration of the timed loop
//   peak_rss_MB    the process's peak resident set (getrusage ru_maxrss) after the run, in
//                  10^6 bytes; run one case per process to read it per configuration
//   rss_before_MB  resident set before the timed loop (module, input and workspaces built)
//   threads        OpenMP threads
#pragma once

#include <algorithm>
#include <fstream>

#include <benchmark/benchmark.h>
#include <omp.h>
#include <sys/resource.h>

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

inline double peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_maxrss) * 1024.0 / 1e6;  // KiB -> MB (10^6 bytes)
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
        if (flops > 0)
            state.counters["GFLOPs"] =
                benchmark::Counter(flops * iters / 1e9, benchmark::Counter::kIsRate);
        state.counters["faults"] = (faults_now() - faults0) / std::max(iters, 1.0);
        state.counters["peak_rss_MB"] = peak_rss_mb();
        state.counters["rss_before_MB"] = rss0;
        state.counters["threads"] = omp_get_max_threads();
    }
};

}  // namespace bench
