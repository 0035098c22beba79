/// @file module.hpp
/// @brief What every attention module shares beyond `nn::Module` (train/eval, named
/// parameters, repr: attn/nn/module.hpp): the options it hands the core from its dropout and
/// generator, and the checks of the public fields a user may have changed when it runs (a
/// PyTorch user changes `m.W_key = nn.Linear(...)` or `m.num_heads`, and PyTorch raises a
/// shape error at the forward; so does this library, before any buffer is sized). A module is
/// then its config, its projections, its `children()` and its forward.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/modules/config.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/require.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

// The checks of a config's fields (require_positive, ...): attn/core/require.hpp.

// ---------------------------------------------------------------- the core's options

/// The core's options for attention weights dropped by `dropout`: `dropout_p` is its `p` in
/// training mode and 0 in evaluation mode (`nn.Dropout` is the identity then), the Bernoulli
/// backend is its own, and the mask is drawn from `gen`. Every other field keeps its default,
/// for the module to set (scale, masks, positions). The one place where a module's dropout
/// becomes the core's.
SDPAOptions dropout_options(const nn::Dropout& dropout, Generator& gen);

/// The options of Raschka's causal modules (GQA, SWA, KV sharing, DSA, gated attention): the
/// causal mask from positions, the first query at `query_start` and the cached keys from
/// position 0 (his mask from positions, since "Fix bug in masking when kv cache is used."); the
/// scores divided by `sqrt(head_dim)` (his
/// `keys.shape[-1]**0.5`, a Python float rounded to float32 as `std::sqrt` of the float
/// gives it); dropout as `dropout_options`.
SDPAOptions causal_options(std::size_t head_dim, std::size_t query_start, const nn::Dropout& dropout,
                           Generator& gen);

// ---------------------------------------------------------------- positions

/// What a module keeps for its position scheme (`AttentionConfig::positions`): public fields,
/// as Raschka's Llama modules keep `cos` and `sin` as buffers.
struct ModulePositions {
    PositionScheme scheme = PositionScheme::none;  ///< RoPE, ALiBi or none
    /// RoPE's cosines `[context_length, head_dim]` (`precompute_rope_params(head_dim,
    /// rope_base, context_length, rope_freq)`, Raschka's buffer `cos`); empty otherwise.
    Tensor cos;
    Tensor sin;  ///< RoPE's sines, likewise (his buffer `sin`); empty otherwise
    Tensor alibi_slopes;  ///< ALiBi's `[num_heads]` slopes (`attn::alibi_slopes`); empty otherwise

    /// The state of a checked config: the tables or slopes its scheme needs.
    /// @throws std::invalid_argument naming `where` when RoPE's tables cannot hold
    /// `context_length` positions (beyond 2^24, float32's exact integers); std::length_error
    /// when they cannot be allocated.
    static ModulePositions of(const std::string& where, const AttentionConfig& config, std::size_t num_heads,
                              std::size_t head_dim);

    /// Sets `o.alibi_slopes` to the slopes under ALiBi (the options then point into this
    /// object, which must outlive the call).
    void apply(SDPAOptions& o) const {
        if (scheme == PositionScheme::alibi) o.alibi_slopes = &alibi_slopes;
    }
    /// Rotates, under RoPE, the heads of `[B, T, ld]` rows in place at positions `start ..`
    /// (`apply_rope_inplace`; `transpose` for the backward); nothing otherwise.
    /// @throws std::invalid_argument as `apply_rope_inplace` (tables replaced by ones that no
    /// longer fit, naming them).
    void rotate(float* x, std::size_t B, std::size_t T, std::size_t ld, std::size_t num_heads,
                std::size_t head_dim, std::size_t start, bool transpose = false) const;
};

// ---------------------------------------------------------------- at the forward

/// Checks that `x` is `[b, T, width]` and returns its shape.
/// @throws std::invalid_argument `"<where>: expected [b, T, <width>], got [...]"`.
Shape check_tokens(const std::string& where, const Tensor& x, std::size_t width);

/// Checks a module's layer, a public field: its weight `[out, in]` and its bias, if any,
/// `[out]` (or `[1]`, broadcast as PyTorch does).
/// @throws std::invalid_argument `"<where> (<name>.weight): expected [out, in], got [...]"`
/// (or `.bias`).
void check_linear(const std::string& where, const char* name, const nn::Linear& layer,
                  std::size_t in, std::size_t out);

/// Checks a module's final projection (`out_proj`, GPT-2's `c_proj`) as `check_linear`, and
/// when only its output width differs says why it is refused: the module's output width is
/// its `d_out` (PyTorch would return the layer's width; build the module with that `d_out`).
/// @throws std::invalid_argument as `check_linear`.
void check_output_linear(const std::string& where, const char* name, const nn::Linear& layer,
                         std::size_t in, std::size_t out);

/// The width most of a module's related fields say (`W_query`'s outputs, `num_heads *
/// head_dim`, `out_proj`'s inputs, ...; the first on a tie; 0 counts as no say). The checks
/// compare every field with it, so that the one field a user replaced is the one the error
/// names, not a partner that still agrees with the others (PyTorch's error also comes from
/// the replaced layer's output). Never throws.
std::size_t agreed_width(std::initializer_list<std::size_t> widths);
/// `agreed_width` of a list built at run time (a module's own layers added to the shared ones).
std::size_t agreed_width(const std::vector<std::size_t>& widths);

/// `layer`'s output width (`in_features` with `in`), or 0 when its weight is not 2-D (the
/// layer's own check then names it): the widths `agreed_width` takes. Never throws.
std::size_t width_of(const nn::Linear& layer, bool in = false);

/// `num_heads * head_dim`, or 0 when the product overflows: `agreed_width`'s input.
std::size_t heads_width(std::size_t num_heads, std::size_t head_dim);

/// Checks a module's head fields (public): `num_heads > 0`, `head_dim > 0` and
/// `num_heads * head_dim == d_out`.
/// @throws std::invalid_argument naming the fields and their values otherwise.
void check_heads(const std::string& where, std::size_t num_heads, std::size_t head_dim,
                 std::size_t d_out);

/// Checks that positions `start .. start + T - 1` fit in `context_length`, without overflow
/// (`start` may be a cache's position, `SIZE_MAX` included).
/// @throws std::invalid_argument `"<where>: a token beyond the context: positions a..b but
/// context_length = n"`.
void check_positions(const std::string& where, std::size_t start, std::size_t T,
                     std::size_t context_length);

/// Checks a full (not sliding-window) `cache` before a cached forward of `T` tokens of `b`
/// sequences: its own consistency (`KVCache::validate`), keys `[b, num_kv_heads, cache.pos,
/// head_dim]` when it holds any, and positions `cache.pos .. cache.pos + T - 1` within
/// `context_length` (`check_positions`). Nothing is changed.
/// @throws std::invalid_argument naming `where` and what does not fit.
void check_full_cache(const std::string& where, const KVCache& cache, std::size_t b,
                      std::size_t num_kv_heads, std::size_t head_dim, std::size_t T,
                      std::size_t context_length);

/// Checks a dropout layer's public fields: `p` in [0, 1] and a known Bernoulli backend.
/// @throws std::invalid_argument naming `where` and the field.
void check_dropout(const std::string& where, const nn::Dropout& dropout);

}  // namespace attn
