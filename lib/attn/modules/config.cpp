// AttentionConfig (config.hpp): which fields a module takes, and their checks.
#include "attn/modules/config.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/core/require.hpp"

namespace attn {

namespace {

const char* field_name(ConfigField f) {
    switch (f) {
        case ConfigField::d_in: return "d_in";
        case ConfigField::d_out: return "d_out";
        case ConfigField::context_length: return "context_length";
        case ConfigField::dropout: return "dropout";
        case ConfigField::num_heads: return "num_heads";
        case ConfigField::num_kv_groups: return "num_kv_groups";
        case ConfigField::qkv_bias: return "qkv_bias";
        case ConfigField::out_bias: return "out_bias";
        case ConfigField::sliding_window_size: return "sliding_window_size";
        case ConfigField::latent_dim: return "latent_dim";
        case ConfigField::index_n_heads: return "index_n_heads";
        case ConfigField::index_head_dim: return "index_head_dim";
        case ConfigField::topk: return "topk";
        case ConfigField::ties: return "ties";
        case ConfigField::backend: return "backend";
        case ConfigField::positions: return "positions";
        case ConfigField::rope_base: return "rope_base";
        case ConfigField::rope_freq: return "rope_freq";
        case ConfigField::projection_order: return "projection_order";
    }
    return "?";
}

// The field's value as a message shows it, or empty when it is the default.
std::string changed(const AttentionConfig& c, ConfigField f) {
    const AttentionConfig d;
    const auto size = [](std::size_t have, std::size_t dflt) { return have == dflt ? "" : std::to_string(have); };
    const auto flag = [](bool have, bool dflt) { return have == dflt ? "" : have ? "True" : "False"; };
    switch (f) {
        case ConfigField::d_in: return size(c.d_in, d.d_in);
        case ConfigField::d_out: return size(c.d_out, d.d_out);
        case ConfigField::context_length: return size(c.context_length, d.context_length);
        case ConfigField::dropout: return c.dropout == d.dropout ? "" : std::to_string(c.dropout);
        case ConfigField::num_heads: return size(c.num_heads, d.num_heads);
        case ConfigField::num_kv_groups: return size(c.num_kv_groups, d.num_kv_groups);
        case ConfigField::qkv_bias: return flag(c.qkv_bias, d.qkv_bias);
        case ConfigField::out_bias: return flag(c.out_bias, d.out_bias);
        case ConfigField::sliding_window_size: return size(c.sliding_window_size, d.sliding_window_size);
        case ConfigField::latent_dim: return c.latent_dim ? std::to_string(*c.latent_dim) : "";
        case ConfigField::index_n_heads: return size(c.index_n_heads, d.index_n_heads);
        case ConfigField::index_head_dim: return size(c.index_head_dim, d.index_head_dim);
        case ConfigField::topk: return size(c.topk, d.topk);
        case ConfigField::ties: return c.ties == d.ties ? "" : std::to_string(static_cast<int>(c.ties));
        case ConfigField::backend: return c.backend == d.backend ? "" : std::to_string(static_cast<int>(c.backend));
        case ConfigField::positions:
            return c.positions == d.positions ? "" : std::to_string(static_cast<int>(c.positions));
        case ConfigField::projection_order:
            return c.projection_order == d.projection_order ? "" : std::to_string(static_cast<int>(c.projection_order));
        case ConfigField::rope_base: return c.rope_base == d.rope_base ? "" : std::to_string(c.rope_base);
        case ConfigField::rope_freq: return c.rope_freq ? "a RopeFreqConfig" : "";
    }
    return "";
}

}  // namespace

void AttentionConfig::check(const std::string& module, std::initializer_list<ConfigField> takes,
                            bool heads_split_d_out) const {
    check(module, std::vector<ConfigField>(takes), heads_split_d_out);
}

void AttentionConfig::check(const std::string& module, const std::vector<ConfigField>& takes,
                            bool heads_split_d_out) const {
    const auto taken = [&](ConfigField f) { return std::find(takes.begin(), takes.end(), f) != takes.end(); };
    for (int i = 0; i <= static_cast<int>(ConfigField::rope_freq); ++i) {
        const auto f = static_cast<ConfigField>(i);
        if (taken(f)) continue;
        const std::string value = changed(*this, f);
        if (!value.empty())
            throw std::invalid_argument(module + ": " + field_name(f) + " is not one of its arguments (got " +
                                        value + ")");
    }
    const auto positive = [&](ConfigField f, std::size_t value) {
        if (taken(f)) require_positive(module, field_name(f), value);
    };
    positive(ConfigField::d_in, d_in);
    positive(ConfigField::d_out, d_out);
    positive(ConfigField::context_length, context_length);
    // "d_out must be divisible by num_heads, got ..., num_heads = 0" also names a zero.
    if (heads_split_d_out && taken(ConfigField::num_heads))
        require_divisible(module, "d_out", d_out, "num_heads", num_heads);
    positive(ConfigField::num_heads, num_heads);
    positive(ConfigField::num_kv_groups, num_kv_groups);
    positive(ConfigField::sliding_window_size, sliding_window_size);
    positive(ConfigField::index_n_heads, index_n_heads);
    positive(ConfigField::index_head_dim, index_head_dim);
    positive(ConfigField::topk, topk);
    if (latent_dim) require_positive(module, "latent_dim", *latent_dim);
    if (taken(ConfigField::num_kv_groups))
        require_divisible(module, "num_heads", num_heads, "num_kv_groups", num_kv_groups);
    if (taken(ConfigField::dropout)) require_probability(module, "dropout", dropout);
    if (ties != IndexTies::earliest && ties != IndexTies::torch_topk)
        throw std::invalid_argument(module + ": ties is not an IndexTies value (" +
                                    std::to_string(static_cast<int>(ties)) + ")");
    nn::check_backend(backend, module.c_str());
    if (projection_order != ProjectionOrder::query_key_value && projection_order != ProjectionOrder::key_query_value)
        throw std::invalid_argument(module + ": projection_order is not a ProjectionOrder value (" +
                                    std::to_string(static_cast<int>(projection_order)) + ")");
    if (positions != PositionScheme::none && positions != PositionScheme::rope && positions != PositionScheme::alibi)
        throw std::invalid_argument(module + ": positions is not a PositionScheme value (" +
                                    std::to_string(static_cast<int>(positions)) + ")");
    if (positions != PositionScheme::rope) {
        const AttentionConfig d;
        if (rope_base != d.rope_base || rope_freq)
            throw std::invalid_argument(module + ": " + (rope_freq ? "rope_freq" : "rope_base") +
                                        " applies to positions = PositionScheme::rope only");
        return;
    }
    const std::size_t head_dim = num_heads ? d_out / num_heads : 0;
    if (head_dim % 2 != 0)
        throw std::invalid_argument(module + ": RoPE rotates pairs of a head's columns: head_dim must be even, got head_dim = " +
                                    std::to_string(head_dim) + " (d_out = " + std::to_string(d_out) +
                                    ", num_heads = " + std::to_string(num_heads) + ")");
    if (!std::isfinite(rope_base) || rope_base <= 0.0)
        throw std::invalid_argument(module + ": expected a finite rope_base > 0, got " + std::to_string(rope_base));
    if (rope_freq) rope_freq->validate(module.c_str());
}

}  // namespace attn
