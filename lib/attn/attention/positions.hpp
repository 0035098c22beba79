/// @file positions.hpp
/// @brief Where position comes from: the pure functions behind the library's position
/// schemes. Attention itself is blind to order (permute the tokens and its outputs permute with
/// them); these put position back, in three ways:
/// - absolute encodings added to the input: the sinusoidal table of Vaswani et al. (2017,
///   §3.5), as the Annotated Transformer computes it (`sinusoidal_encoding`);
/// - rotary position embeddings (RoPE, Su et al. 2021), which rotate queries and keys by an
///   angle proportional to their position, so that `q_m . k_n` depends on `m - n` only
///   (`precompute_rope_params`, `compute_rope`), as Raschka writes them in
///   *Build a Large Language Model (From Scratch)*, ch05/07_gpt_to_llama, with Llama 3.1's
///   frequency smoothing (`RopeFreqConfig`);
/// - ALiBi (Press et al. 2022), a bias `-m_h |i - j|` on the scores, one slope `m_h` per head
///   (`alibi_slopes`, `alibi_bias`); the attention core applies it without a `[H, Tq, Tk]`
///   tensor (`SDPAOptions::alibi_slopes`).
///
/// Bits: each function makes PyTorch 1.13's float32 operations in PyTorch's order (products and
/// sums rounded separately). `exp` is SLEEF's `expf_u10`; `cos` and `sin` are SLEEF's `u10`
/// kernels taken 8 elements at a time, as PyTorch's AVX2 kernel takes them (SLEEF's vector
/// `cosf`/`sinf` chooses its argument reduction for all 8 lanes at once: the slower, exact one
/// as soon as one lane reaches 125 in magnitude); `pow` is the C library's `powf`. On a machine
/// without AVX2 and FMA the trigonometric functions fall back to SLEEF's scalar kernel, which
/// may differ from PyTorch's in the last bit for positions of 125 and more.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

#include "attn/core/tensor.hpp"

namespace attn {

// ---------------------------------------------------------------- sinusoidal

/// The sinusoidal position encoding of Vaswani et al. (2017), §3.5:
/// `PE[pos, 2i] = sin(pos / 10000^(2i / d_model))`, `PE[pos, 2i + 1] = cos(...)`, computed as
/// the Annotated Transformer's `PositionalEncoding` computes its buffer `pe` (harvardnlp,
/// "The Annotated Transformer", 2022 edition): `div_term = exp(arange(0, d_model, 2) *
/// -(log(10000.0) / d_model))`, then `sin` and `cos` of `position * div_term` into the even
/// and odd columns. Returns `[max_len, d_model]` float32 (`pe[0]` of his `[1, max_len,
/// d_model]` buffer).
/// @throws std::invalid_argument when `d_model` is 0 or odd (his code fails then: the odd
/// columns are one fewer than the frequencies); std::length_error when the table cannot be
/// allocated.
Tensor sinusoidal_encoding(std::size_t max_len, std::size_t d_model);

// ---------------------------------------------------------------- RoPE

/// Llama 3.1's and 3.2's smoothing of RoPE's frequencies (Raschka's `freq_config`, from
/// Meta's `apply_scaling`): frequencies whose wavelength `2 pi / inv_freq` exceeds
/// `original_context_length / low_freq_factor` are divided by `factor`; those shorter than
/// `original_context_length / high_freq_factor` are kept; those between are interpolated
/// linearly in `original_context_length / wavelength`.
struct RopeFreqConfig {
    double factor = 8.0;                     ///< how much the low frequencies are slowed
    double low_freq_factor = 1.0;            ///< the long-wavelength threshold's divisor
    double high_freq_factor = 4.0;           ///< the short-wavelength threshold's divisor
    double original_context_length = 8192;   ///< the context the model was pretrained on

    /// Llama 3.1's (Raschka's `LLAMA31_CONFIG_8B["rope_freq"]`): factor 8.
    static RopeFreqConfig llama3_1() { return {8.0, 1.0, 4.0, 8192}; }
    /// Llama 3.2's (`LLAMA32_CONFIG_1B["rope_freq"]`): factor 32.
    static RopeFreqConfig llama3_2() { return {32.0, 1.0, 4.0, 8192}; }

    /// @throws std::invalid_argument naming `where` and the field when a value is not finite,
    /// `factor` or `original_context_length` is not positive, or `high_freq_factor` does not
    /// exceed `low_freq_factor` (his smoothing divides by their difference).
    void validate(const char* where) const;
};

/// RoPE's inverse frequencies `inv_freq[i] = 1 / theta_base^(2i / head_dim)`, `i < head_dim /
/// 2`, then smoothed by `freq_config` when given: the first lines of Raschka's
/// `precompute_rope_params` (converting-llama2-to-llama3.ipynb, cell 5), in float32.
/// Returns `[head_dim / 2]`.
/// @throws std::invalid_argument when `head_dim` is 0 or odd ("Embedding dimension must be
/// even", his assert), `theta_base` is not finite and positive, or `freq_config` is invalid.
Tensor rope_inv_freq(std::size_t head_dim, double theta_base = 10000.0,
                     const std::optional<RopeFreqConfig>& freq_config = std::nullopt);

/// Raschka's `precompute_rope_params(head_dim, theta_base, context_length, freq_config)`:
/// `angles[p, i] = p * inv_freq[i]`, repeated for the two halves of the head
/// (`torch.cat([angles, angles], dim=1)`), and their cosines and sines:
/// `{cos, sin}`, each `[context_length, head_dim]` float32. Read as
/// `const auto [cos, sin] = attn::precompute_rope_params(16, 10000.0, 5);`.
/// @throws std::invalid_argument as `rope_inv_freq`, or when `context_length` is 0 or beyond
/// 2^24 (positions are float32); std::length_error when the tables cannot be allocated.
std::pair<Tensor, Tensor> precompute_rope_params(std::size_t head_dim, double theta_base = 10000.0,
                                                 std::size_t context_length = 4096,
                                                 const std::optional<RopeFreqConfig>& freq_config = std::nullopt);

/// Raschka's `compute_rope(x, cos, sin)`: the halves `x1 = x[..., :hd/2]`, `x2 = x[..., hd/2:]`,
/// `rotated = cat(-x2, x1)`, `x * cos + rotated * sin`, with the token at index `t` taking
/// row `offset + t` of the tables (his function takes `offset = 0`; a KV cache rotates new
/// tokens at their own positions). Pair `(x[i], x[i + hd/2])` is rotated by angle
/// `position * inv_freq[i]` (the "split halves" of Hugging Face's Llama, not the interleaved
/// pairs of Meta's checkpoints, whose query and key weights are permuted on conversion).
/// `x`: `[B, H, T, head_dim]` (any rank >= 2: `[..., T, head_dim]`); `cos`, `sin`:
/// `[context_length, head_dim]`. Returns `x`'s shape.
/// @throws std::invalid_argument when `x` has fewer than 2 dimensions, `head_dim` is odd
/// (his assert "Head dimension must be even"), the tables' shapes differ or their width is not
/// `head_dim`, or positions `offset .. offset + T - 1` are beyond the tables' rows ("RoPE:
/// positions 4..7 are beyond the precomputed table of 6 positions").
Tensor compute_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, std::size_t offset = 0);

/// The backward of `compute_rope`: given `grad = dL/d(compute_rope(x))`, `dL/dx`, the
/// rotation's transpose: `grad * cos + cat(grad2 * sin2, -(grad1 * sin1))` (with `grad1`,
/// `grad2` the halves, likewise `sin1`, `sin2`), the sums PyTorch's autograd forms through
/// `MulBackward0`, `CatBackward0`, `NegBackward0` and `SliceBackward0`. Shapes and errors as
/// `compute_rope`.
Tensor compute_rope_backward(const Tensor& grad, const Tensor& cos, const Tensor& sin,
                             std::size_t offset = 0);

/// RoPE in place on heads stored as a projection's `[B, T, ld]` buffer: head `h` of token
/// `t` of sequence `b` is `x[(b * T + t) * ld + column + h * head_dim ..]` (PyTorch's
/// `.view(B, T, H, head_dim)` of `x[..., column:]`), rotated as `compute_rope` rotates it at
/// position `start + t`; with `transpose`, by the backward's transposed rotation
/// (`compute_rope_backward`). The same bits as `compute_rope` on the heads.
/// @throws std::invalid_argument as `compute_rope` (odd `head_dim`, tables that do not fit,
/// positions beyond them), or when the heads do not fit in `ld`.
void apply_rope_inplace(float* x, std::size_t B, std::size_t T, std::size_t ld, std::size_t num_heads,
                        std::size_t head_dim, const Tensor& cos, const Tensor& sin, std::size_t start,
                        bool transpose = false, std::size_t column = 0);

// ---------------------------------------------------------------- ALiBi

/// ALiBi's head slopes (Press, Smith and Lewis 2022, "Train Short, Test Long", §3 and their
/// `get_slopes`): for `n` a power of 2, the geometric sequence starting at and multiplied by
/// `2^(-8 / n)`; otherwise the slopes of the closest smaller power of 2, `p`, followed by every
/// other slope of `2p` (the first `n - p` of them). Computed in double as their Python code
/// computes it, then rounded to float32 (`torch.tensor(get_slopes(n))`). Returns `[n]`.
/// @throws std::invalid_argument when `num_heads` is 0.
Tensor alibi_slopes(std::size_t num_heads);

/// ALiBi's bias as a dense additive mask: `bias[h, i, j] = -(slopes[h] * |(query_start + i) -
/// (key_start + j)|)`, float32, for `slopes` `[H]`: `[H, Tq, Tk]`. Causal attention only
/// looks at `j <= i`, where this is Press et al.'s `-m (i - j)`; for keys after the query it
/// is the symmetric form (MosaicML's MPT). Passed as `SDPAOptions::attn_bias` it gives the
/// bits of the core's own `alibi_slopes` option, which computes the same numbers tile by tile.
/// @throws std::invalid_argument when `slopes` is not 1-D or a position reaches 2^62 (as
/// `SDPAOptions`); std::length_error when the tensor cannot be allocated.
Tensor alibi_bias(const Tensor& slopes, std::size_t Tq, std::size_t Tk, std::size_t query_start = 0,
                  std::size_t key_start = 0);

namespace detail {
/// `cos(x[i])` and `sin(x[i])` for `i < n`, float32, as PyTorch's AVX2 kernels compute them
/// (see the file comment): into `c` and `s` (either may be null).
void torch_cos_sin(const float* x, std::size_t n, float* c, float* s);
}  // namespace detail

}  // namespace attn
