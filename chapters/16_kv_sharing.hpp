// Chapter 16's helper: what Raschka's memory_estimator_kv_sharing.py prints. Compiled with
// the chapter, in the chapters' unity file (chapters/meson.build): everything here is in
// namespace ch16. Includes textbook/display.hpp, the layouts (and the estimators' common part)
// chapters share.
#pragma once

#include <stdexcept>
#include <string>

#include "attn/attention/kv_memory.hpp"
#include "textbook/display.hpp"

namespace ch16 {

/// What `memory_estimator_kv_sharing.py` (ch04/10_kv-sharing) prints for `args`, byte for
/// byte: MHA, GQA, each with and without sharing, the ratio and savings of GQA + sharing
/// against MHA; the totals from attn::kv_bytes_total over all layers or the producing ones.
/// @throws std::invalid_argument as his script raises: `n_kv_groups` not dividing `n_heads`,
/// an unknown dtype, a size of 0, `n_kv_producing_layers` not in `1 .. n_layers`;
/// std::length_error when a total overflows.
inline std::string kv_sharing_estimator_report(const textbook::EstimatorArgs& a) {
    using textbook::gb_text, textbook::grouped_fixed;
    const textbook::EstimatorSizes s = textbook::estimator_sizes("memory_estimator_kv_sharing", a);
    if (a.n_kv_producing_layers < 1 || a.n_kv_producing_layers > a.n_layers)
        throw std::invalid_argument("memory_estimator_kv_sharing: n_kv_producing_layers must be between 1 and n_layers.");
    const auto total = [&](std::size_t kv_heads, std::size_t layers) {
        return attn::kv_bytes_total(a.batch_size, a.context_length, a.emb_dim, a.n_heads, kv_heads, layers,
                                    s.bytes_per_elem);
    };
    const std::size_t mha = total(a.n_heads, a.n_layers), gqa = total(s.kv_heads_gqa, a.n_layers);
    const std::size_t mha_sharing = total(a.n_heads, a.n_kv_producing_layers);
    const std::size_t gqa_sharing = total(s.kv_heads_gqa, a.n_kv_producing_layers);
    std::string out = textbook::estimator_config(a, s, {"n_kv_producing_layers", a.n_kv_producing_layers}, 23);
    out += "MHA total KV cache        : " + gb_text(mha) + "\n";
    out += "GQA total KV cache        : " + gb_text(gqa) + "\n";
    out += "MHA + KV sharing          : " + gb_text(mha_sharing) + "\n";
    out += "GQA + KV sharing          : " + gb_text(gqa_sharing) + "\n";
    const double ratio = static_cast<double>(mha) / static_cast<double>(gqa_sharing);
    out += "Ratio (MHA / GQA+sharing) : " + grouped_fixed(ratio) + "x\n";
    return out + "Savings vs MHA            : " +
           grouped_fixed((1 - static_cast<double>(gqa_sharing) / static_cast<double>(mha)) * 100) + "%";
}

}  // namespace ch16
