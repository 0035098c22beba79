// Chapter 11's figure: one forward of each layout, C++ beside PyTorch, from the recorded
// benchmark data/benchmarks/efficient.json (benchmarks/run/record_efficient.py).
#include "figures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace {

std::string efficient_bars(const figures::Data& data) {
    const nlohmann::json json = figures::read_json(data.dir / "benchmarks" / "efficient.json");
    struct Times {
        double wall = std::numeric_limits<double>::infinity(), cpu = wall;
    };
    std::map<std::string, Times> cpp;
    std::string commit = json.value("commit", "unknown"), what;
    for (const auto& run : json.at("cpp")) {
        if (what.empty()) what = run.at("context").value("what", "");
        for (const auto& b : run.at("benchmarks")) {
            const std::string label = b.value("label", b.at("name").get<std::string>());
            Times& t = cpp[label];
            t.wall = std::min(t.wall, b.at("real_time").get<double>() / 1e3);
            t.cpu = std::min(t.cpu, b.at("cpu_time").get<double>() / 1e3);
        }
    }
    std::map<std::string, double> torch;  // "wrapper" for "torch wrapper"
    for (const auto& round : json.value("torch", nlohmann::json::array()))
        for (const auto& item : round) {
            if (!item.contains("impl")) continue;
            std::string name = item.at("impl").get<std::string>();
            if (name.rfind("torch ", 0) == 0) name = name.substr(6);
            double best = std::numeric_limits<double>::infinity();
            for (const auto& ms : item.at("ms")) best = std::min(best, ms.get<double>() / 1e3);
            torch[name] = torch.count(name) ? std::min(torch[name], best) : best;
        }
    if (cpp.empty()) throw figures::Absent("No C++ results recorded in data/benchmarks/efficient.json.");
    std::vector<std::pair<std::string, Times>> rows(cpp.begin(), cpp.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.cpu < b.second.cpu; });
    std::vector<figures::svg::BarGroup> groups;
    for (const auto& [label, t] : rows) {
        double peer = std::numeric_limits<double>::quiet_NaN();
        for (const auto& [name, s] : torch)
            if (label == name || label.rfind(name + " ", 0) == 0) peer = s;
        groups.push_back({label.substr(0, label.find(" (")), {t.cpu, t.wall, peer}});
    }
    figures::svg::BarStyle style;
    style.title = "One forward of each layout, C++ and PyTorch";
    style.subtitle = what;  // as recorded: shapes, dtype, threads
    style.x_label = "seconds (the minimum over the rounds of data/benchmarks/efficient.json, commit " + commit + ")";
    style.series = {"C++ CPU time", "C++ wall time", "PyTorch wall time"};
    return figures::svg::bar_chart(groups, style);
}

FIGURES{{
    .chapter = "11", .step = "cost", .file = "ch11_layout_times.svg",
    .caption = "Chapter 11: the time of one forward of each layout, in C++ (CPU and wall time) and, "
               "where PyTorch has the same layout, in PyTorch (wall time), read from "
               "data/benchmarks/efficient.json when these pages were built; the table below gives "
               "the numbers and where and when they were recorded.",
    .draw = efficient_bars}};

}  // namespace
