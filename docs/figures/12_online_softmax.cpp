// Chapter 12's figures: the online normaliser's state after each score of chapter 1's query,
// as the chapter printed it, and naive against tiled attention from the recorded benchmark
// data/benchmarks/flash.json.
#include "figures.hpp"

#include <cmath>
#include <limits>
#include <map>

namespace {

std::string normalizer_plot(const figures::Data& data) {
    const attn::Tensor table = data.printed("(m, l) after each score", {6, 4});  // j, x_j, m, l
    figures::svg::Series x, m, l;
    x.name = "score x_j", m.name = "running maximum m_j", l.name = "running sum l_j";
    for (std::size_t j = 0; j < table.shape()[0]; ++j) {
        x.x.push_back(table(j, 0)), x.y.push_back(table(j, 1));
        m.x.push_back(table(j, 0)), m.y.push_back(table(j, 2));
        l.x.push_back(table(j, 0)), l.y.push_back(table(j, 3));
    }
    x.dashed = true;
    figures::svg::PlotStyle style;
    style.title = "The online normaliser, one score at a time";
    style.subtitle = "chapter 1's query \"journey\" against the six tokens; l_j is the sum of exp(x_i - m_j), i <= j";
    style.x_label = "j (the score just read)";
    style.y_label = "value";
    return figures::svg::line_plot({x, m, l}, style);
}

std::string flash_plot(const figures::Data& data) {
    const nlohmann::json json = figures::read_json(data.dir / "benchmarks" / "flash.json");
    std::map<std::string, std::map<double, double>> cpu;  // path -> T -> min CPU seconds
    std::string commit = "unknown";
    for (const auto& run : json.at("runs")) {
        commit = run.at("context").value("commit", commit);
        for (const auto& b : run.at("benchmarks")) {
            const std::string path = b.value("label", "?");
            const double T = b.at("T").get<double>(), s = b.at("cpu_time").get<double>() / 1e3;
            auto& best = cpu[path];
            best[T] = best.count(T) ? std::min(best[T], s) : s;
        }
    }
    if (cpu.empty()) throw figures::Absent("No results recorded in data/benchmarks/flash.json.");
    std::vector<figures::svg::Series> lines;
    for (const auto& [path, points] : cpu) {
        figures::svg::Series s;
        s.name = path + " (CPU time)";
        for (const auto& [T, sec] : points) s.x.push_back(T), s.y.push_back(sec);
        s.dashed = path == "naive";
        lines.push_back(s);
    }
    figures::svg::PlotStyle style;
    style.title = "Causal attention of [1, 12, T, 64]: naive against tiled";
    style.subtitle = "minimum CPU time over the rounds of data/benchmarks/flash.json (commit " + commit + "); log-log axes";
    style.x_label = "sequence length T";
    style.y_label = "CPU time of one forward (s)";
    style.log_x = style.log_y = true;
    return figures::svg::line_plot(lines, style);
}

FIGURES{
    {.chapter = "12", .step = "online", .file = "ch12_online_normalizer.svg",
     .caption = "Chapter 12, step 2: after each score the normaliser keeps the largest score so far "
                "(m) and the sum of the exponentials relative to it (l); when m grows, l is scaled "
                "down before the new term is added.",
     .draw = normalizer_plot},
    {.chapter = "12", .step = "cost", .file = "ch12_naive_tiled_time.svg",
     .caption = "Chapter 12: the CPU time of one causal attention forward, naive (whole [T, T] "
                "scores) and tiled, against T, read from data/benchmarks/flash.json when these pages "
                "were built. The naive path was not run at T = 16384 (its scores alone would not fit).",
     .draw = flash_plot}};

}  // namespace
