/// @file masks.hpp
/// @brief The masks of the book, as tensors a reader can print, and the step from a module's
/// mask buffer to the options of the attention core (sdpa.hpp).
///
/// Two conventions meet here, as in PyTorch: `masked_fill` masks are true (or 1) where a key
/// is *hidden* (Raschka's `mask.bool()`, `nn.MultiheadAttention`'s `attn_mask`); the core's
/// `attn_mask`, like `F.scaled_dot_product_attention`'s, is true where a key *may be
/// attended*. Each function says which it returns.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

/// `mask.bool()[:T, :T]` (true = hidden): the top-left `[T, T]` corner of a
/// `[context_length, context_length]` 0/1 buffer, as booleans. Used by the modules that keep
/// Raschka's `mask` buffer.
/// @throws std::invalid_argument naming `where` when `T > context_length` (the book's
/// modules cannot attend over more tokens than their mask has rows), or when `mask` (a public
/// member) is not square 2-D.
BoolTensor causal_mask_for(const std::string& where, const Tensor& mask, std::size_t T);

/// The causal mask for `Sq` new queries against `Sk` keys (the last `Sq` of which are the
/// new tokens): `tril(ones(Sk, Sk))[-Sq:, :]` (notebook 000 In [37], In [41]). `[Sq, Sk]`
/// float32, 1 = may attend, 0 = future. `Sq == Sk` is the usual square mask; `Sq == 1` is all
/// ones (the newest token sees everything).
/// @throws std::invalid_argument when `Sq > Sk` (more new queries than keys).
Tensor causal_mask(std::size_t Sq, std::size_t Sk);

/// The window mask of Raschka's `MultiHeadAttentionWithSWA.forward` (true = hidden): `[Tq, Tk]`,
/// true where `diff = q_pos - k_pos` is `< 0` or `>= window`, with `q_pos = q_start + i`,
/// `k_pos = k_start + j`. A key is visible when `0 <= q_pos - k_pos < window`;
/// `window >= Tk + q_start` gives the causal mask.
/// @throws std::invalid_argument when `window` is 0; std::length_error when `[Tq, Tk]` cannot
/// be allocated.
BoolTensor sliding_window_mask(std::size_t q_start, std::size_t Tq, std::size_t k_start,
                               std::size_t Tk, std::size_t window);

/// `triu(ones(T, T), 1).bool()` (true = hidden): the causal mask `nn.MultiheadAttention`
/// takes as its `attn_mask`. `[T, T]`.
/// @throws std::length_error when `[T, T]` cannot be allocated.
BoolTensor causal_attn_mask(std::size_t T);

/// `attention_mask[:, None, None, :] != 0` (true = may attend): a `[B, Tk]` int64 padding mask
/// (1 = real token, Hugging Face's convention) as the `[B, 1, 1, Tk]` `attn_mask` of the core,
/// which hides the padded keys from every query.
/// @throws std::invalid_argument when `attention_mask` is not 2-D.
BoolTensor key_padding_mask(const LongTensor& attention_mask);

/// The core's view of a module's causal buffer for `T` tokens: `is_causal` when the buffer's
/// top-left `[T, T]` corner is exactly the causal pattern the constructors build (so the fast
/// kernels skip the future), else an explicit `attn_mask` (true = may attend), which keeps a
/// user's changed buffer meaningful. `hidden_value` is the buffer's entry for a hidden key:
/// 1 for Raschka's `triu(ones, 1)`, 0 for GPT-2's `tril(ones)`.
struct BufferMask {
    bool is_causal = false;  ///< the buffer is the causal triangle
    BoolTensor allow;        ///< otherwise: `[T, T]` (`[T, P + T]` cached), true = may attend
    /// Sets `options.is_causal` or `options.attn_mask` (pointing into this object, which must
    /// outlive the call).
    void apply(SDPAOptions& options) const;
};

/// Reads the `[T, T]` corner of a module's mask buffer (2-D, or `[1, 1, n, n]` as GPT-2's
/// `bias`) as a `BufferMask`. With `query_start = P` (a KV-cached forward: `T` new queries at
/// positions `P .. P + T - 1` over `P + T` keys), rows `P .. P + T - 1` and columns
/// `0 .. P + T - 1`, as Raschka's `self.mask.bool()[ptr:ptr + T, :T_k]`: `is_causal` (from
/// positions: the caller sets `SDPAOptions::query_start = P`) or an `allow` of `[T, P + T]`.
/// @throws std::invalid_argument as `causal_mask_for` (a buffer that is not square or has
/// fewer than `P + T` rows); std::length_error when `P + T` overflows.
BufferMask read_buffer(const std::string& where, const Tensor& buffer, std::size_t T,
                       float hidden_value, std::size_t query_start = 0);

}  // namespace attn
