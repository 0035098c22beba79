// Chapter 15's helper: what Raschka's memory_estimator_mla.py prints. Compiled with the
// chapter, in the chapters' unity file (chapters/meson.build): everything here is in namespace
// ch15. Includes textbook/display.hpp, the layouts (and the estimators' common part) chapters
// share.
#pragma once

#include <string>

#include "attn/attention/kv_memory.hpp"
#include "textbook/display.hpp"

namespace ch15 {

/// What `memory_estimator_mla.py` (ch04/05_mla) prints for `args`: its `==== Config ====` and
/// `==== KV-cache totals across all layers ====` blocks, byte for byte, the totals from
/// attn::kv_bytes_total and attn::mla_bytes_total.
/// @throws std::invalid_argument as his script raises: `n_kv_groups` not dividing `n_heads`,
/// an unknown dtype, a size of 0; std::length_error when a total overflows.
inline std::string mla_estimator_report(const textbook::EstimatorArgs& a) {
    using textbook::gb_text, textbook::grouped_fixed;
    const textbook::EstimatorSizes s = textbook::estimator_sizes("memory_estimator_mla", a);
    const auto total = [&](std::size_t kv_heads) {
        return attn::kv_bytes_total(a.batch_size, a.context_length, a.emb_dim, a.n_heads, kv_heads, a.n_layers,
                                    s.bytes_per_elem);
    };
    const std::size_t mla_bytes = attn::mla_bytes_total(a.batch_size, a.context_length, a.n_layers, a.latent_dim,
                                                        s.bytes_per_elem);
    const double mha = static_cast<double>(total(a.n_heads)), gqa = static_cast<double>(total(s.kv_heads_gqa));
    const double mla = static_cast<double>(mla_bytes);
    std::string out = textbook::estimator_config(a, s, {"latent_dim", a.latent_dim}, 17);
    out += "MHA total KV cache  : " + gb_text(total(a.n_heads)) + "\n";
    out += "GQA total KV cache  : " + gb_text(total(s.kv_heads_gqa)) + "\n";
    out += "MLA total KV cache  : " + gb_text(mla_bytes) + "\n";
    out += "Ratio (MHA / GQA)   : " + grouped_fixed(mha / gqa) + "x\n";
    out += "Savings (GQA vs MHA): " + grouped_fixed((1 - gqa / mha) * 100) + "%\n";
    out += "Ratio (MHA / MLA)   : " + grouped_fixed(mha / mla) + "x\n";
    return out + "Savings (MLA vs MHA): " + grouped_fixed((1 - mla / mha) * 100) + "%";
}

}  // namespace ch15
