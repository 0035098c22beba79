#include "textbook/benchmark_results.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace textbook {

namespace fs = std::filesystem;

namespace {

double to_microseconds(double value, const std::string& unit) {
    if (unit == "ns") return value / 1e3;
    if (unit == "us") return value;
    if (unit == "ms") return value * 1e3;
    if (unit == "s") return value * 1e6;
    throw std::runtime_error("unknown time_unit '" + unit + "'");
}

}  // namespace

std::map<std::string, std::vector<BenchmarkPoint>> read_benchmark_series(const fs::path& dir,
                                                                    std::vector<std::string>& sources) {
    std::map<std::string, std::map<double, double>> series;
    std::vector<fs::path> files;
    if (fs::is_directory(dir))
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    static const std::regex number_re(R"(/(?:[A-Za-z_]+:)?(\d+))");
    for (const auto& file : files) {
        std::ifstream in(file);
        std::stringstream text;
        text << in.rdbuf();
        // Google Benchmark writes NaN for the coefficient of variation of a zero counter;
        // JSON has no NaN, so those values become null (they are never plotted).
        static const std::regex non_finite(R"(:\s*-?(NaN|nan|Infinity|inf)\b)");
        nlohmann::json json;
        try {
            json = nlohmann::json::parse(std::regex_replace(text.str(), non_finite, ": null"));
        } catch (const nlohmann::json::exception& e) {
            throw std::runtime_error(file.string() + ": not JSON: " + e.what());
        }
        if (!json.contains("benchmarks") || !json["benchmarks"].is_array()) continue;
        bool medians = false;
        for (const auto& b : json["benchmarks"])
            medians = medians || b.value("aggregate_name", "") == "median";
        bool used = false;
        for (const auto& b : json["benchmarks"]) {
            const bool aggregate = b.value("run_type", "iteration") == "aggregate";
            if (medians ? b.value("aggregate_name", "") != "median" : aggregate) continue;
            const std::string run_name = b.value("run_name", b.value("name", ""));
            std::string name = b.value("label", "");
            if (name.empty()) name = run_name.substr(0, run_name.find('/'));
            std::replace(name.begin(), name.end(), '_', ' ');
            auto number = [&b](const char* key) { return b.contains(key) && b[key].is_number(); };
            if (number("embed_dim"))
                name += " (E = " + std::to_string(std::lround(b["embed_dim"].get<double>())) + ")";
            double x = 0;
            std::smatch m;
            if (number("context")) x = b["context"].get<double>();
            else if (std::regex_search(run_name, m, number_re)) x = std::stod(m[1].str());
            else continue;
            double us = to_microseconds(b.at("real_time").get<double>(), b.value("time_unit", "ns"));
            if (number("tokens")) us /= b["tokens"].get<double>();
            series[name][x] = us;
            used = true;
        }
        if (used) sources.push_back(file.filename().string());
    }
    std::map<std::string, std::vector<BenchmarkPoint>> out;
    for (const auto& [name, points] : series)
        for (const auto& [x, y] : points) out[name].push_back({x, y});
    return out;
}

}  // namespace textbook
