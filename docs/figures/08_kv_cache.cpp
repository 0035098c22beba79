// Chapter 8's figures: time per generated token with and without the KV cache (from the
// recorded benchmark), and the causal mask of Sq new queries against Sk keys, as the chapter
// printed it.
#include "figures.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "textbook/book.hpp"

namespace fs = std::filesystem;

namespace {

double to_microseconds(double value, const std::string& unit) {
    if (unit == "ns") return value / 1e3;
    if (unit == "us") return value;
    if (unit == "ms") return value * 1e3;
    if (unit == "s") return value * 1e6;
    throw std::runtime_error("unknown time_unit '" + unit + "'");
}

// data/benchmarks/kv_cache.json (benchmarks/run/record_kv_cache.py): each benchmark is a point; its
// series is its label (`with_cache`, `without_cache`; else the name before the first `/`) and
// its `embed_dim` counter, x its `context` counter (else the first number in its name), y its
// real time per iteration in microseconds (one iteration generates one token; a `tokens`
// counter divides otherwise). With repetitions the median aggregate is used, as
// benchmarks/run/record_kv_cache.py does.
std::string kv_cache_plot(const figures::Data& data) {
    const fs::path file = data.dir / "benchmarks" / "kv_cache.json";
    const nlohmann::json json = figures::read_json(file);
    if (!json.contains("benchmarks") || !json["benchmarks"].is_array())
        throw figures::Absent("No benchmark results recorded in data/benchmarks/kv_cache.json.");
    static const std::regex number_re(R"(/(?:[A-Za-z_]+:)?(\d+))");
    bool medians = false;
    for (const auto& b : json["benchmarks"]) medians = medians || b.value("aggregate_name", "") == "median";
    std::map<std::string, std::map<double, double>> series;
    for (const auto& b : json["benchmarks"]) {
        const bool aggregate = b.value("run_type", "iteration") == "aggregate";
        if (medians ? b.value("aggregate_name", "") != "median" : aggregate) continue;
        const std::string run_name = b.value("run_name", b.value("name", ""));
        std::string name = b.value("label", "");
        if (name.empty()) name = run_name.substr(0, run_name.find('/'));
        std::replace(name.begin(), name.end(), '_', ' ');
        auto number = [&b](const char* key) { return b.contains(key) && b[key].is_number(); };
        if (number("embed_dim")) name += " (E = " + std::to_string(std::lround(b["embed_dim"].get<double>())) + ")";
        double x = 0;
        std::smatch m;
        if (number("context")) x = b["context"].get<double>();
        else if (std::regex_search(run_name, m, number_re)) x = std::stod(m[1].str());
        else continue;
        double us = to_microseconds(b.at("real_time").get<double>(), b.value("time_unit", "ns"));
        if (number("tokens")) us /= b["tokens"].get<double>();
        series[name][x] = us;
    }
    if (series.empty()) throw figures::Absent("No benchmark results recorded in data/benchmarks/kv_cache.json.");
    // One colour per width; the cached variant solid, the uncached one dashed.
    static const std::vector<std::string> colours{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
    std::map<std::string, std::string> colour_of;
    std::vector<figures::svg::Series> lines;
    for (const auto& [name, points] : series) {
        figures::svg::Series s;
        s.name = name;
        for (const auto& [x, y] : points) s.x.push_back(x), s.y.push_back(y);
        const auto paren = name.find(" (");
        const std::string width = paren == std::string::npos ? "" : name.substr(paren);
        if (!colour_of.count(width)) colour_of[width] = colours[colour_of.size() % colours.size()];
        s.colour = colour_of[width];
        s.dashed = name.rfind("without", 0) == 0;
        lines.push_back(s);
    }
    figures::svg::PlotStyle style;
    style.title = "Time per generated token, with and without the KV cache";
    style.x_label = "context length (tokens before the new one)";
    style.y_label = "time per token (\u00b5s)";
    style.log_x = style.log_y = true;
    style.subtitle = "median of the repetitions recorded in data/benchmarks/kv_cache.json; log-log axes";
    return figures::svg::line_plot(lines, style);
}

FIGURES{
    {.chapter = "8", .step = "saves", .file = "ch08_kv_cache_time.svg",
     .caption = "Chapter 8: time per generated token with and without the KV cache, against the "
                "context length, from the Google Benchmark results recorded in data/benchmarks/.",
     .draw = kv_cache_plot},
    {.chapter = "8", .step = "causal_mask", .file = "ch08_causal_mask_sq_sk.svg",
     .caption = "Chapter 8: with a KV cache, Sq new queries meet Sk keys: the causal mask is the last "
                "Sq rows of tril(ones(Sk, Sk)), causal_mask(Sq, Sk), as the chapter prints it (1 = may "
                "attend).",
     .draw = [](const figures::Data& data) {
         const std::string key = "causal_mask(3, 7)";
         const auto dims = textbook::numbers_in(key);  // Sq, Sk
         const auto Sq = static_cast<std::size_t>(dims.at(0).value), Sk = static_cast<std::size_t>(dims.at(1).value);
         figures::svg::HeatmapStyle style;
         style.title = key;
         for (std::size_t i = 0; i < Sq; ++i)
             style.row_labels.push_back("new " + std::to_string(i) + " (pos " + std::to_string(Sk - Sq + i) + ")");
         for (std::size_t j = 0; j < Sk; ++j) style.col_labels.push_back("k" + std::to_string(j));
         style.precision = 0;
         return figures::svg::heatmap(data.printed(key, {Sq, Sk}), style);
     }}};

}  // namespace
