/// @file benchmark_results.hpp
/// @brief Reading the Google Benchmark results recorded under data/benchmarks/ for the
/// generated book's plots (docs/tools/make_figures).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace textbook {

/// One point of a benchmark plot: time per generated token at a context length.
struct BenchmarkPoint {
    double context_length;  ///< tokens in the context (x)
    double microseconds;    ///< real time per generated token, in microseconds (y)
};

/// Reads the Google Benchmark JSON files in `dir` (tools/run_kv_benchmark.sh writes
/// kv_cache.json there), in file-name order. Each benchmark is a point: its series is its label
/// (`with_cache`, `without_cache`; else the name before the first `/`, underscores as spaces)
/// and its `embed_dim` counter (` (E = 128)`), x is its `context` counter (else the first
/// number in its name; a benchmark with neither is skipped), y its real time per iteration in
/// microseconds; one iteration generates one token (a `tokens` counter divides otherwise).
/// With repetitions the median aggregate is used, as tools/summarise_kv_benchmark.py does.
/// Appends the names of the files that gave points to `sources`. An absent `dir` gives no
/// series. Each series' points are in increasing x.
/// @throws std::runtime_error naming the file when a `.json` file is not JSON, and naming
/// the unit when a benchmark's `time_unit` is not ns, us, ms or s.
std::map<std::string, std::vector<BenchmarkPoint>> read_benchmark_series(
    const std::filesystem::path& dir, std::vector<std::string>& sources);

}  // namespace textbook
