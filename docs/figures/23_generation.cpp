// Chapter 23's figure: time per generated token with and without the KV cache as the context
// grows, the library beside PyTorch, from the recorded benchmark (data/benchmarks/generation.json,
// benchmarks/run/record_generation.py): with the cache a decode step at that context, without it
// a forward of the whole context (prefill/T: the step at context T - 1).
#include "figures.hpp"

#include <map>

namespace {

std::string ch23_time_per_token(const figures::Data& data) {
    const std::filesystem::path file = data.dir / "benchmarks" / "generation.json";
    const nlohmann::json json = figures::read_json(file);
    if (!json.contains("summary") || !json["summary"].is_array())
        throw figures::Absent("No generation benchmark recorded in data/benchmarks/generation.json.");
    // series name -> context -> ms, at one thread
    std::map<std::string, std::map<double, double>> series;
    const std::map<std::string, std::string> side_names = {
        {"library", "library"}, {"pytorch-default", "PyTorch"}, {"pytorch-reuse", "PyTorch (malloc reusing memory)"}};
    for (const auto& row : json["summary"]) {
        const std::string c = row.value("case", "");
        if (row.value("threads", 0) != 1 || (c != "decode" && c != "prefill")) continue;
        const double context = row.value("arg", 0.0) - (c == "prefill" ? 1.0 : 0.0);
        for (const auto& [side, v] : row["sides"].items()) {
            if (!side_names.count(side) || !v.contains("time_ms")) continue;
            series[side_names.at(side) + (c == "decode" ? ", with the cache" : ", without the cache")][context] =
                v["time_ms"].get<double>();
        }
    }
    if (series.empty()) throw figures::Absent("No decode or prefill case at one thread in data/benchmarks/generation.json.");
    std::vector<figures::svg::Series> lines;
    for (const auto& [name, points] : series) {
        figures::svg::Series s;
        s.name = name;
        for (const auto& [x, y] : points) s.x.push_back(x), s.y.push_back(y);
        s.colour = name.rfind("library", 0) == 0 ? "#1f77b4" : name.find("malloc") != std::string::npos ? "#2ca02c" : "#d62728";
        s.dashed = name.find("without") != std::string::npos;
        lines.push_back(s);
    }
    figures::svg::PlotStyle style;
    style.title = "Time per new token, with and without the KV cache";
    style.subtitle = "1 thread, fastest recorded round; log-log axes";
    style.x_label = "context (tokens before the new one)";
    style.y_label = "time per token (ms)";
    style.log_x = style.log_y = true;
    return figures::svg::line_plot(lines, style);
}

FIGURES{{
    .chapter = "23", .step = "speed", .file = "ch23_time_per_token.svg",
    .caption = "Chapter 23, step 6: the time one new token takes as the context grows, recorded by the generation "
               "benchmark. With the cache (solid) a step reads every weight once, whatever the context; without it "
               "(dashed) the model runs the whole context again, and the step's time grows with it.",
    .draw = ch23_time_per_token}};

}  // namespace
