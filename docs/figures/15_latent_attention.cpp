// Chapter 15's figure: the KV cache of multi-head, grouped-query and latent attention for the
// model of Raschka's memory_estimator_mla.py README, read from the report the chapter printed.
#include "figures.hpp"

#include <string>

namespace {

std::string latent_cache_bars(const figures::Data& data) {
    const std::string& report = data.block("o15-In07").text;
    const auto arg = [&](const std::string& key) {
        return std::to_string(static_cast<long long>(figures::report_value(report, key)));
    };
    const std::string dtype = figures::report_text(report, "dtype");  // `bf16 (2 Bytes/elem)`
    figures::svg::BarStyle style;
    style.title = "KV cache of one " + arg("context_length") + "-token sequence, all " + arg("n_layers") + " layers";
    style.subtitle = "memory_estimator_mla.py with his README's arguments (emb_dim " + arg("emb_dim") + ", " +
                     arg("n_heads") + " heads, " + dtype.substr(0, dtype.find(' ')) + "), as the chapter prints it";
    style.x_label = "GB";
    style.series = {"total KV cache"};
    return figures::svg::bar_chart(
        {{"MHA: K and V of " + arg("n_heads") + " heads", {figures::report_value(report, "MHA total KV cache")}},
         {"GQA: K and V of " + arg("GQA n_kv_heads") + " heads", {figures::report_value(report, "GQA total KV cache")}},
         {"MLA: one latent of " + arg("latent_dim"), {figures::report_value(report, "MLA total KV cache")}}},
        style);
}

FIGURES{{
    .chapter = "15", .step = "estimator", .file = "ch15_latent_bytes.svg",
    .caption = "Chapter 15, step 7: the KV cache of the model of Raschka's memory_estimator_mla.py "
               "README, as the chapter's run of his estimator prints it. Multi-head attention keeps "
               "keys and values of every head, grouped-query attention of one head per group, latent "
               "attention only the latent W_DKV x of each token, from which W_UK and W_UV rebuild "
               "every head's keys and values.",
    .draw = latent_cache_bars}};

}  // namespace
