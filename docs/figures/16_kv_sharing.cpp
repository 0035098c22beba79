// Chapter 16's figure: the KV cache of Gemma 3n E2B- and E4B-like models with and without
// cross-layer sharing, read from the reports of Raschka's memory_estimator_kv_sharing.py the
// chapter printed.
#include "figures.hpp"

#include <string>
#include <vector>

namespace {

std::string sharing_gb_bars(const figures::Data& data) {
    std::vector<figures::svg::BarGroup> groups;
    std::string context, dtype;
    for (const char* id : {"o16-In07", "o16-In08"}) {
        const std::string& report = data.block(id).text;
        const auto arg = [&](const std::string& key) {
            return std::to_string(static_cast<long long>(figures::report_value(report, key)));
        };
        const std::string kv_heads = arg("GQA n_kv_heads");
        groups.push_back({arg("n_layers") + " layers, " + arg("n_kv_producing_layers") + " producing, " + kv_heads +
                              " KV head" + (kv_heads == "1" ? "" : "s"),
                          {figures::report_value(report, "MHA total KV cache"),
                           figures::report_value(report, "MHA + KV sharing"),
                           figures::report_value(report, "GQA total KV cache"),
                           figures::report_value(report, "GQA + KV sharing")}});
        context = arg("context_length");
        dtype = figures::report_text(report, "dtype");
    }
    figures::svg::BarStyle style;
    style.title = "KV cache of one " + context + "-token sequence, " + dtype.substr(0, dtype.find(' '));
    style.subtitle = "memory_estimator_kv_sharing.py with Gemma 3n E2B's and E4B's sizes, as the chapter prints it";
    style.x_label = "GB";
    style.series = {"MHA", "MHA + KV sharing", "GQA", "GQA + KV sharing"};  // his report's names
    return figures::svg::bar_chart(groups, style);
}

FIGURES{{
    .chapter = "16", .step = "estimator", .file = "ch16_sharing_bytes.svg",
    .caption = "Chapter 16, step 6: the KV cache of the E2B- and E4B-like models of Raschka's "
               "memory_estimator_kv_sharing.py README, as the chapter's runs of his estimator print it. "
               "Only the producing layers compute and cache keys and values; every later layer reads "
               "the last producer's, so the cache shrinks by the share of layers that consume.",
    .draw = sharing_gb_bars}};

}  // namespace
