// The reader's machine: its CPU's name and a read-bandwidth probe (machine.hpp).
#include "textbook/machine.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "textbook/book.hpp"
#include "textbook/text_file.hpp"

namespace textbook {

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
        }
    return "this CPU";
}

unsigned machine_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

double read_bytes_per_second(unsigned threads, std::size_t bytes, int rounds) {
    if (bytes == 0 || threads == 0 || rounds <= 0)
        throw std::invalid_argument("read_bytes_per_second: expected bytes, threads and rounds > 0");
    const std::size_t share = bytes / threads;
    // Zeros written once: the pages exist before the timed passes.
    const std::unique_ptr<unsigned char[]> buffer(new unsigned char[share * threads]());
    double best = 0.0;
    for (int r = 0; r < rounds; ++r) {
        std::vector<std::thread> pool;
        std::vector<const void*> found(threads);
        const auto start = std::chrono::steady_clock::now();
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] { found[t] = std::memchr(buffer.get() + t * share, 1, share); });
        for (auto& th : pool) th.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (std::any_of(found.begin(), found.end(), [](const void* p) { return p != nullptr; }))
            throw std::logic_error("read_bytes_per_second: memchr found a byte that was never written");
        if (seconds > 0) best = std::max(best, double(share * threads) / seconds);
    }
    return best;
}

namespace {

nlohmann::json read_benchmark(const std::string& benchmark) {
    const auto path = data_dir() / "benchmarks" / (benchmark + ".json");
    if (!std::filesystem::is_regular_file(path)) return nullptr;
    try {
        return nlohmann::json::parse(read_data_file(path));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path.string() + ": not valid JSON (" + e.what() + ")");
    }
}

// The row of `rows` (each with "threads") recorded with the most threads not above `threads`
// that `keep` accepts, and its library side's `field`.
template <class Keep>
std::optional<RecordedFigure> pick(const nlohmann::json& doc, const nlohmann::json& rows, unsigned threads,
                                   const std::string& field, Keep keep) {
    if (!rows.is_array()) return std::nullopt;
    std::optional<RecordedFigure> best;
    for (const auto& row : rows) {
        if (!row.is_object() || !keep(row) || !row.contains("threads") || !row["threads"].is_number_unsigned()) continue;
        const auto t = row["threads"].get<unsigned>();
        const auto side = row.value("/sides/library"_json_pointer, nlohmann::json());
        if (t > threads || (best && best->threads >= t) || !side.is_object() || !side.contains(field) ||
            !side[field].is_number())
            continue;
        best = RecordedFigure{side[field].get<double>(), t, doc.value("/meta/machine/cpu"_json_pointer, std::string()),
                              doc.value("/meta/commit"_json_pointer, std::string()).substr(0, 12)};
    }
    return best;
}

}  // namespace

std::optional<RecordedFigure> recorded_summary(const std::string& benchmark, const std::string& case_name,
                                               unsigned threads, const std::string& field, std::optional<long> arg) {
    const nlohmann::json doc = read_benchmark(benchmark);
    if (!doc.is_object() || !doc.contains("summary")) return std::nullopt;
    return pick(doc, doc["summary"], threads, field, [&](const nlohmann::json& row) {
        return row.value("case", std::string()) == case_name &&
               (!arg || (row.contains("arg") && row["arg"].is_number_integer() && row["arg"].get<long>() == *arg));
    });
}

std::optional<RecordedFigure> recorded_whole_run(const std::string& benchmark, unsigned threads, const std::string& field,
                                                 std::size_t train_steps) {
    const nlohmann::json doc = read_benchmark(benchmark);
    if (!doc.is_object()) return std::nullopt;
    const auto steps = doc.value("/whole_run/counts/train_step"_json_pointer, nlohmann::json());
    if (!steps.is_number_unsigned() || steps.get<std::size_t>() != train_steps) return std::nullopt;
    return pick(doc, doc.value("/whole_run/rows"_json_pointer, nlohmann::json()), threads, field,
                [](const nlohmann::json&) { return true; });
}

std::string threads_text(unsigned threads) { return std::to_string(threads) + (threads == 1 ? " thread" : " threads"); }

}  // namespace textbook
