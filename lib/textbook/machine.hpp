/// @file machine.hpp
/// @brief The reader's machine, measured while a chapter runs: its CPU's name and a short probe
/// of how fast it reads memory, for the lines that put a chapter's own timing beside the bound
/// it runs against (`terminal_note`, progress.hpp). The recorded benchmarks measure the same
/// limit properly (benchmarks/cpp/limits_benchmark.cpp); this is the few-tenths-of-a-second
/// version a chapter can afford.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace textbook {

/// The CPU's name as /proc/cpuinfo gives it (`model name`), or "this CPU" without one.
std::string cpu_model();

/// The cores a run may use: `std::thread::hardware_concurrency()`, at least 1.
unsigned machine_threads();

/// Bytes per second that `threads` threads read from memory together: each scans its share of
/// `bytes` zero bytes with glibc's `memchr` (vectorised, one pass, nothing written) for a byte
/// that is not there; the fastest of `rounds` passes. 256 MB: about 0.1 s per pass at 10 GB/s.
/// @throws std::invalid_argument when `bytes`, `threads` or `rounds` is 0.
double read_bytes_per_second(unsigned threads, std::size_t bytes = std::size_t{256} << 20, int rounds = 3);

/// A figure of a recorded benchmark (`data/benchmarks/NAME.json`): the library's value, and
/// the machine, threads and commit it was recorded with.
struct RecordedFigure {
    double value = 0.0;   ///< the field's value, in the benchmark's unit (tokens/s, seconds)
    unsigned threads = 0; ///< the threads of the row it was read from
    std::string cpu;     ///< `meta.machine.cpu`
    std::string commit;  ///< `meta.commit`, 12 digits
};

/// The library's `field` in the `summary` row of `case_name` (with `arg`, when given) recorded
/// with the most threads not above `threads`; nullopt when the file, the row or the field is
/// missing or the field is null. (`recorded_summary("generation", "generate", 2, "tokens_per_s")`.)
/// @throws std::runtime_error when the file is not valid JSON (its path named).
std::optional<RecordedFigure> recorded_summary(const std::string& benchmark, const std::string& case_name,
                                               unsigned threads, const std::string& field,
                                               std::optional<long> arg = std::nullopt);

/// The library's `field` in `whole_run.rows` (pretraining's model of chapter 26's whole run, in
/// seconds), as `recorded_summary` chooses its row; nullopt also when the recorded run is not
/// one of `train_steps` training steps (`whole_run.counts.train_step`).
std::optional<RecordedFigure> recorded_whole_run(const std::string& benchmark, unsigned threads, const std::string& field,
                                                 std::size_t train_steps);

/// "2 threads" or "1 thread".
std::string threads_text(unsigned threads);

}  // namespace textbook
