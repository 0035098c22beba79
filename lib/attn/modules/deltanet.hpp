/// @file deltanet.hpp
/// @brief Linear attention with a recurrent state: the gated delta rule (recurrent and
/// chunked forms) and Qwen3-Next's Gated DeltaNet layer, whose per-head state of constant
/// size replaces a KV cache that grows.
///
/// The rule, for one head, with the state `S` a `[head_dim, head_dim]` matrix (`S[i][j]`: key
/// dimension `i`, value dimension `j`), keys and queries L2-normalised (queries also divided
/// by `sqrt(head_dim)`), a decay `alpha_t` in (0, 1] per head and an update gate `beta_t` per
/// value channel:
/// ```
/// S      = alpha_t * S                    (forget: the gate of Mamba2)
/// kv_mem = k_t^T S                        (what the memory predicts for k_t)
/// delta  = (v_t - kv_mem) * beta_t        (the delta rule: write only the error)
/// S      = S + k_t delta^T
/// y_t    = q_t^T S
/// ```
/// Linear attention is `S = S + k_t v_t^T` alone; the delta rule replaces what `k_t` already
/// retrieves instead of adding on top of it.
///
/// Source: rasbt/LLMs-from-scratch, ch04/08_deltanet/README.md (`GatedDeltaNet`, last changed
/// at 57430d2a "Gated DeltaNet updates", with its later fix: the output gate is not
/// transposed); Yang, Kautz and
/// Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with Delta Rule" (2024), for the rule
/// and its chunkwise form; Yang et al., "Parallelizing Linear Transformers with the Delta Rule
/// over Sequence Length" (2024), for the chunked algorithm.
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/config.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The state a Gated DeltaNet layer carries from token to token: its "KV cache", whose size
/// does not grow with the tokens seen.
struct DeltaNetState {
    /// `[b, num_heads, head_dim, head_dim]` float32 (`S[..., i, j]`: key dimension `i`,
    /// value dimension `j`); empty (0-d) before the first token.
    Tensor S;
    std::size_t pos = 0;  ///< tokens seen

    /// Bytes of `S`: `b * num_heads * head_dim * head_dim * 4`, whatever `pos` is.
    /// @throws std::invalid_argument as `validate`.
    std::size_t bytes() const;
    /// Back to no tokens: `S` emptied, `pos = 0`.
    void reset();
    /// Checks the public fields: `S` empty with `pos == 0`, or 4-D with its last two
    /// dimensions equal.
    /// @throws std::invalid_argument naming `where` and what does not fit.
    void validate(const std::string& where = "DeltaNetState") const;
};

/// The gated delta rule run token by token (the recurrent form, his loop): `queries`, `keys`
/// `[b, H, T, dk]`, `values` and `beta` `[b, H, T, dv]`, `alpha_log` `[b, H, T]`
/// (`alpha = exp(alpha_log)`), all contiguous float32; `state` `[b, H, dk, dv]` is read and
/// replaced by the state after the last token (a 0-d `state` starts from zeros). Returns the
/// outputs `y [b, H, T, dv]`. Every product and sum in PyTorch's order for his code (the sums
/// over `dk` as `sum_rows_torch`), so with his inputs it gives his bits.
/// @throws std::invalid_argument when the shapes do not fit, naming them.
Tensor gated_delta_rule(const Tensor& queries, const Tensor& keys, const Tensor& values,
                        const Tensor& alpha_log, const Tensor& beta, Tensor& state);

/// The same rule in chunks of `chunk_size` tokens (the chunkwise-parallel form): within a
/// chunk, with `g_t` the running sum of `alpha_log` from the chunk's start and `S0` the state
/// before it,
/// ```
/// delta_t = beta_t * (v_t - e^{g_t} k_t^T S0 - sum_{i<t} e^{g_t - g_i} (k_t . k_i) delta_i)
/// y_t     = e^{g_t} q_t^T S0 + sum_{i<=t} e^{g_t - g_i} (q_t . k_i) delta_i
/// S       = e^{g_C} S0 + sum_i e^{g_C - g_i} k_i delta_i^T
/// ```
/// the products `K K^T`, `Q K^T`, `K S0`, `Q S0` are matrix products over the whole chunk; the
/// only sequential work left inside a chunk is the triangular solve for `delta` (one row per
/// token, all value channels at once), and only the state crosses chunks. Same arguments and
/// result as `gated_delta_rule`, equal to it within rounding (a few ulp times the chunk
/// length), not bit for bit: the decay is applied as `exp` of sums instead of products.
/// @throws std::invalid_argument as `gated_delta_rule`, or when `chunk_size` is 0.
Tensor gated_delta_rule_chunked(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const Tensor& alpha_log, const Tensor& beta, Tensor& state,
                                std::size_t chunk_size);

/// The arguments of his `GatedDeltaNet(d_in, d_out, dropout, num_heads, qkv_bias=False)`:
/// `GatedDeltaNet({.d_in = 3, .d_out = 4, .dropout = 0.0, .num_heads = 2})`. No
/// `context_length`: the state has no positions.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `dropout`, `num_heads`, `qkv_bias`, `backend`
/// (config.hpp); every other field keeps its default.
using GatedDeltaNetConfig = AttentionConfig;

/// His `GatedDeltaNet` (Qwen3-Next's linear-attention layer without the convolution): the
/// gated delta rule per head, then RMSNorm over each head, a SiLU output gate, dropout and
/// `out_proj`. Parameters in his order: `W_query`, `W_key`, `W_value`
/// (`Linear(d_in, d_out, qkv_bias)`), `W_gate`, `W_beta` (`Linear(d_in, d_out, bias=False)`),
/// `W_alpha` (`Linear(d_in, num_heads, bias=False)`), `dt_bias = ones(num_heads)`,
/// `A_log = log(empty(num_heads).uniform_(0, 16))` (2 draws), `norm = RMSNorm(head_dim,
/// eps=1e-6)`, `out_proj` (`Linear(d_out, d_out)`, with bias), `Dropout(dropout)`.
/// The gates: `beta = sigmoid(W_beta(x))` (one per value channel),
/// `alpha_log = -exp(A_log) * softplus(W_alpha(x) + dt_bias)` (one per head),
/// `gate = W_gate(x)`, applied as `norm(context) * silu(gate)`.
class GatedDeltaNet : public nn::Module {
public:
    /// `"GatedDeltaNet"`, as repr prints it.
    std::string type_name() const override { return "GatedDeltaNet"; }
    /// The submodules in PyTorch's registration order: `W_query`, `W_key`, `W_value`, `W_gate`, `W_beta`, `W_alpha`, `norm`, `out_proj`, `dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_key", &W_key}, {"W_value", &W_value}, {"W_gate", &W_gate}, {"W_beta", &W_beta}, {"W_alpha", &W_alpha}, {"norm", &norm}, {"out_proj", &out_proj}, {"dropout", &dropout}};
    }

    /// Builds the parameters from `gen`: `(5 * d_out + num_heads) * d_in + num_heads + d_out *
    /// d_out + d_out` 32-bit draws (plus `3 * d_out` with `qkv_bias`). Nothing is drawn when
    /// the config is invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit GatedDeltaNet(const GatedDeltaNetConfig& config, Generator& gen = default_generator());

    /// `forward(x)`: `[b, T, d_in] -> [b, T, d_out]`, float32, from a zero state.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]` or a public field no longer
    /// fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// The forward continued from `state` (tokens at positions `state.pos ..`), leaving in it
    /// the state after the last token: feeding a sequence in pieces gives the rows of one
    /// forward over the whole (within the last bit of the gates, see elementwise.hpp).
    /// @throws std::invalid_argument as `operator()`, or when `state` holds another shape.
    Tensor forward(const Tensor& x, DeltaNetState& state, Generator& gen = default_generator()) const;

    /// The forward's inputs to the rule, for the chapter: each `[b, H, T, *]` contiguous.
    struct Gates {
        Tensor queries;    ///< `l2norm(W_query(x)) / sqrt(head_dim)`: `[b, H, T, hd]`
        Tensor keys;       ///< `l2norm(W_key(x))`: `[b, H, T, hd]`
        Tensor values;     ///< `W_value(x)`: `[b, H, T, hd]`
        Tensor beta;       ///< `sigmoid(W_beta(x))`: `[b, H, T, hd]`
        Tensor alpha_log;  ///< `-exp(A_log) * softplus(W_alpha(x) + dt_bias)`: `[b, H, T]`
    };
    /// The rule's inputs the forward computes for `x`.
    /// @throws std::invalid_argument as `operator()`.
    Gates gates(const Tensor& x) const;

    std::size_t d_in() const { return W_query.in_features(); }   ///< input width
    std::size_t d_out() const { return W_query.out_features(); }  ///< output width

    std::size_t num_heads;  ///< heads H
    std::size_t head_dim;   ///< `d_out / H`
    nn::Linear W_query;     ///< `Linear(d_in, d_out, qkv_bias)`
    nn::Linear W_key;       ///< `Linear(d_in, d_out, qkv_bias)`
    nn::Linear W_value;     ///< `Linear(d_in, d_out, qkv_bias)`
    nn::Linear W_gate;      ///< `Linear(d_in, d_out, bias=False)`: the output gate
    nn::Linear W_beta;      ///< `Linear(d_in, d_out, bias=False)`: the update gate
    nn::Linear W_alpha;     ///< `Linear(d_in, num_heads, bias=False)`: the decay gate
    Tensor dt_bias;         ///< `[num_heads]`, ones
    Tensor A_log;           ///< `[num_heads]`, `log(uniform(0, 16))`
    nn::RMSNorm norm;       ///< `RMSNorm(head_dim, eps=1e-6)` over each head
    nn::Linear out_proj;    ///< `Linear(d_out, d_out)`
    nn::Dropout dropout;    ///< on the gated context

private:
    // Checks a config for this module before anything is drawn (AttentionConfig::check, then
    // that its weights can be allocated).
    static void validate(const AttentionConfig& config);
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The forward from `S` ([b, H, hd, hd], updated in place).
    Tensor run(const Tensor& x, float* S, Generator& gen) const;
};

}  // namespace attn
