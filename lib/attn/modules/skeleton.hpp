/// @file skeleton.hpp
/// @brief The skeleton of Raschka's multi-head variants, written once: what each of his
/// `__init__` sets (`num_heads`, `head_dim`, `W_query`, `out_proj`, `dropout`; `W_key` and
/// `W_value` where the keys are projected from `x`), the config's one validation, the
/// forward's check of the public fields, and the options the variant hands the core. A
/// variant is then its own fields and layers, its `children()` when its order differs, and
/// its forward.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/config.hpp"
#include "attn/modules/module.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The base of Raschka's multi-head variants whose queries are `W_query(x)` and whose merged
/// heads go through `out_proj` (`MultiHeadLatentAttention`, and through `ProjectedAttention`
/// GQA, SWA, KV sharing, gated attention and DSA).
///
/// The base validates the config and builds `dropout` (which draws nothing); the variant's
/// constructor then builds its layers in its own body, in his order, so a seed draws PyTorch's
/// weights. Until then the layers are empty (`[0, 0]`, nothing drawn).
class AttentionSkeleton : public nn::Module {
public:
    /// The variant's class name, as repr prints it.
    std::string type_name() const override { return name_; }

    /// The input width `d_in`: `W_query`'s input features.
    /// @throws std::invalid_argument when `W_query.weight` (public) is not 2-D.
    std::size_t d_in() const { return W_query.in_features(); }
    /// The output width `d_out`: `W_query`'s output features, all heads together.
    /// @throws std::invalid_argument when `W_query.weight` (public) is not 2-D.
    std::size_t d_out() const { return W_query.out_features(); }

    std::size_t num_heads;             ///< query heads H
    std::size_t head_dim;              ///< `d_out / H`
    std::size_t context_length;        ///< the most positions `forward` and the cache accept
    nn::Linear W_query{0, 0, false};   ///< `Linear(d_in, d_out, qkv_bias)`: per-head queries
    nn::Linear out_proj{0, 0, false};  ///< `Linear(d_out, d_out)`, on the merged heads
    nn::Dropout dropout;               ///< on the attention weights

protected:
    /// Validates `config` for the variant `name` and sets `num_heads`, `head_dim = d_out /
    /// num_heads`, `context_length` and `dropout`. Every variant takes his usual arguments
    /// `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`, `qkv_bias` (and the dropout
    /// `backend`), and those it lists in `also` (`AttentionConfig::check`); `[d_out, d_in]` and
    /// `[d_out, d_out]` weights must be allocatable.
    /// @throws std::invalid_argument as `AttentionConfig::check` and `require_weight_size`.
    AttentionSkeleton(std::string name, const AttentionConfig& config, std::initializer_list<ConfigField> also = {});

    /// `LayerCheck::in`: the layer reads `x` (its width is what most such layers agree on).
    static constexpr std::size_t reads_x = std::numeric_limits<std::size_t>::max();
    /// `LayerCheck::out`: the layer gives `d_out` features (what most fields agree on).
    static constexpr std::size_t gives_d_out = std::numeric_limits<std::size_t>::max();

    /// A layer of the variant's own for `check_layers`, with the widths it must have: a
    /// number, or `reads_x` / `gives_d_out`.
    struct LayerCheck {
        const char* name;          ///< the field's name, for the message
        const nn::Linear* layer;   ///< the layer (a field of the variant)
        std::size_t in = reads_x;  ///< its input width
        std::size_t out = gives_d_out;  ///< its output width
    };

    /// The forward's check of `x` and the public fields, each compared with the widths most
    /// fields agree on (`agreed_width`), so that a replaced layer is the one named (PyTorch's
    /// error also comes from the replaced layer): `W_query` `[d_out, d_in]`, `num_heads *
    /// head_dim == d_out`, then each of `layers` in order, `out_proj` `[d_out, d_out]`, `x`
    /// `[b, T, d_in]`, `dropout`'s fields. Returns `x`'s shape.
    /// @throws std::invalid_argument naming the variant and the first field that does not fit.
    Shape check_layers(const Tensor& x, const std::vector<LayerCheck>& layers) const;

    /// The core's options of Raschka's causal variants (`attn::causal_options` with
    /// `head_dim` and `dropout`): the mask from positions, the first query at `query_start`.
    SDPAOptions core_options(std::size_t query_start, Generator& gen) const {
        return causal_options(head_dim, query_start, dropout, gen);
    }

private:
    std::string name_;
};

/// The skeleton of the variants that also project keys and values from `x` (GQA, SWA, KV
/// sharing, gated attention, DSA): `W_key` and `W_value`, his usual order of building and
/// registering the layers, and their check.
class ProjectedAttention : public AttentionSkeleton {
public:
    /// The submodules in his usual registration order: `W_query`, `W_key`, `W_value`,
    /// `out_proj`, `dropout`; a variant built in another order, or with layers of its own,
    /// lists its own.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_key", &W_key}, {"W_value", &W_value}, {"out_proj", &out_proj},
                {"dropout", &dropout}};
    }

    nn::Linear W_key{0, 0, false};    ///< `Linear(d_in, kv_heads * head_dim, qkv_bias)`
    nn::Linear W_value{0, 0, false};  ///< `Linear(d_in, kv_heads * head_dim, qkv_bias)`

protected:
    using AttentionSkeleton::AttentionSkeleton;

    /// Builds `W_query`, `W_key`, `W_value` (`Linear(d_in, d_out, qkv_bias)`) and `out_proj`
    /// (`Linear(d_out, d_out, out_bias)`) from `gen`, in his usual order; returns `gen`, so
    /// that a layer of the variant's own drawn after them can take it in its initialiser.
    /// @throws std::length_error (nothing drawn) when a weight cannot be allocated.
    Generator& build_layers(const AttentionConfig& config, Generator& gen, bool out_bias = true);

    /// `check_layers` with `extra` (layers of the variant's own reading `x`, `[d_out, d_in]`,
    /// e.g. `W_gate`), then, with `own_keys`, `W_key` and `W_value` `[kv_heads * head_dim,
    /// d_in]` (a KV-sharing consumer reads another layer's keys and has none of its own).
    /// @throws std::invalid_argument as `check_layers`.
    Shape check_projections(const Tensor& x, std::size_t kv_heads, bool own_keys = true,
                            std::initializer_list<LayerCheck> extra = {}) const;
};

}  // namespace attn
