/// @file sdpa.hpp
/// @brief One scaled-dot-product attention for every module of the book, with three
/// interchangeable backends, and its backward: the core that `CausalAttention`,
/// `MultiHeadAttention`, `GPT2Attention`, the efficient layouts, the KV-cached and padded
/// forwards, grouped-query and sliding-window attention all call.
///
/// What it computes, for each batch element `b`, query head `h`, query `i` and key `j`
/// (PyTorch's `F.scaled_dot_product_attention`, math path):
/// ```
/// s[i, j] = (q_i . k_j) * scale        (or / scale: ScoreScale)
///         + attn_bias[i, j]            (a float attn_mask, if given)
///           (+ ALiBi's -m_h |pos_i - pos_j|, summed into attn_bias: alibi_slopes)
///         = -inf where key j is hidden (attn_mask false, is_causal, window)
/// p[i, :] = softmax(s[i, :])           (a row with no visible key: NaN, or 0: FullyMaskedRows)
/// o[i, :] = dropout(p[i, :]) @ v
/// ```
/// Key/value heads may be fewer than query heads (grouped-query attention, PyTorch's
/// `enable_gqa`): query head `h` reads key/value head `h / (H / H_kv)`, as
/// `repeat_interleave(H / H_kv, dim=-3)` of the keys and values would pair them.
///
/// The backends (`SDPABackend`), one row each of a table (attention/sdpa_backends.cpp):
/// - `step`: the step-by-step path (attention/sdpa_step.cpp): every intermediate kept, as the
///   chapters print them (`scaled_dot_product_attention_steps`);
/// - `fast`: the same float operations in the same order, fused per head and block of queries,
///   without `[Tq, Tk]` intermediates (kernels/fused_attention.hpp): the step path's bits for
///   every input;
/// - `tiled`: FlashAttention's forward (kernels/tiled_attention.hpp): the online softmax over
///   tiles of keys, within a few ulp of the others.
///
/// The fast backend also computes in `Arithmetic::fma` (kernels/arithmetic.hpp:
/// `SDPAOptions::arithmetic`, or an `ArithmeticGuard`): its products, forward and backward, add
/// each term by a fused multiply-add, in the same order; the same bits at any thread count, a
/// few ulp from `exact` (tests/test_fma.cpp states the bounds). A backend and an arithmetic
/// together are one row of the table.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// Which implementation runs the attention. `automatic` is the calling thread's scoped choice
/// (`SDPABackendGuard`) or else the process default (`fast` unless changed), as PyTorch picks a
/// kernel for SDPA. Each backend is one row of a table, its forward beside its backward
/// (attention/sdpa_backends.cpp).
enum class SDPABackend {
    automatic,  ///< the thread's `SDPABackendGuard`, else `default_sdpa_backend()`
    step,       ///< every intermediate tensor, as the chapters print them
    tiled,      ///< FlashAttention's forward: online softmax over key tiles
    fast,       ///< fused per head, the step path's bits
};

/// The backend's name: `"automatic"`, `"step"`, `"tiled"` or `"fast"`.
/// @throws std::invalid_argument for a value outside the enumeration.
const char* backend_name(SDPABackend backend);

/// The backend that `SDPABackend::automatic` runs on the calling thread: the innermost
/// `SDPABackendGuard` of this thread, else the process default (`fast` unless
/// `set_default_sdpa_backend` changed it).
SDPABackend default_sdpa_backend();

/// Sets the process default of `SDPABackend::automatic` (for a program that runs everything on
/// one backend, set once at its start). Threads under an `SDPABackendGuard` keep their choice;
/// to choose for one scope of one thread, use the guard.
/// @throws std::invalid_argument for `automatic` or a value outside the enumeration.
void set_default_sdpa_backend(SDPABackend backend);

/// Runs every `automatic` attention of the calling thread on `backend` while it lives, then
/// restores the thread's previous choice: the C++ form of PyTorch's
/// `with torch.nn.attention.sdpa_kernel(backend):`. Other threads are not affected (the choice
/// is thread-local), so threads may each hold their own.
class SDPABackendGuard : detail::ThreadChoiceGuard<SDPABackend> {
public:
    /// @throws std::invalid_argument for `automatic` or a value outside the enumeration.
    explicit SDPABackendGuard(SDPABackend backend);
};

/// What a query row that may attend to no key at all becomes.
enum class FullyMaskedRows {
    nan,   ///< `torch.softmax`: NaN (`-inf - -inf`), which then spreads to the output row
    zero,  ///< `masked_softmax` (chapter 9, FlashAttention): weights 0, so the output row is 0
};

/// How a hidden key's score is masked: PyTorch writes it two ways, which agree whenever the
/// scores are finite and part where they are not.
enum class MaskOp {
    /// `attn_scores.masked_fill_(mask, -inf)` (the notebooks' and Raschka's modules): a hidden
    /// key's score becomes `-inf` whatever it was, and the masked_fill's backward gives it a
    /// gradient of 0 (so a NaN or infinity there stops at the mask).
    masked_fill,
    /// `attn_scores + attn_mask`, the mask `-inf` where hidden (`F.scaled_dot_product_attention`'s
    /// math path; `nn.MultiheadAttention` in torch 1.13, `baddbmm(attn_mask, q, k^T)`): a hidden
    /// key's score is `q . k * scale + (-inf)`, NaN when that product is `+inf` or NaN, and the
    /// softmax's gradient reaches it unmasked (`0 * inf` is NaN).
    additive,
};

/// How the scores `q . k` are scaled. PyTorch's SDPA and GPT-2 multiply by `1 / sqrt(E)`;
/// Raschka's modules divide by `sqrt(head_dim)`. The two round differently in the last bit,
/// so the core keeps both. The default (`ScoreScale{}`) is PyTorch's `scale=None`: multiply by
/// `1.0f / std::sqrt(float(E))`, `E` the query width.
struct ScoreScale {
    /// PyTorch's default, a multiplier given, or a divisor given.
    enum class Op { default_scale, multiply, divide };
    Op op = Op::default_scale;  ///< how `value` is applied
    float value = 0.0f;         ///< the multiplier or divisor (unused by `default_scale`)

    /// `s * scale` (PyTorch's `scale=`, GPT-2's `* (1.0 / math.sqrt(hs))`): any finite value,
    /// 0 (every score 0: uniform weights over the visible keys) and negatives included.
    static ScoreScale multiply_by(float scale) { return {Op::multiply, scale}; }
    /// `s / divisor` (Raschka's `attn_scores / keys.shape[-1]**0.5`): any finite value but 0.
    static ScoreScale divide_by(float divisor) { return {Op::divide, divisor}; }
};

/// The keyword arguments of `F.scaled_dot_product_attention`, plus what the book's modules
/// need beyond them. Every mask given applies: a key is visible to a query when all of them
/// allow it (unlike PyTorch, which refuses `attn_mask` together with `is_causal`).
///
/// Positions: query `i` is at position `query_start + i`, key `j` at `key_start + j`
/// (both 0 for PyTorch's `is_causal`, whose mask is top-left aligned). A KV cache holding
/// `P` tokens runs new queries at `query_start = P` against keys from `key_start = 0`.
struct SDPAOptions {
    /// `attn_mask` as booleans, true = may attend: broadcastable to `[B, H, Tq, Tk]` (or to
    /// the scores of a lower-rank call). Not owned: it must outlive the call.
    const BoolTensor* attn_mask = nullptr;
    /// `attn_mask` as floats, added to the scaled scores: broadcastable like `attn_mask`.
    const Tensor* attn_bias = nullptr;
    /// ALiBi (Press et al. 2022; attention/positions.hpp): `[H]` float32 slopes, one per query
    /// head; score `(i, j)` of head `h` gets `-(slopes[h] * |query pos - key pos|)` after its
    /// scaling (on top of `attn_bias` when both are given: `attn_bias + alibi`, as one mask).
    /// Every backend computes the term where it computes the score, without a `[H, Tq, Tk]`
    /// tensor; `attn_bias = alibi_bias(slopes, Tq, Tk, query_start, key_start)` gives the same
    /// bits. Not owned: it must outlive the call.
    const Tensor* alibi_slopes = nullptr;
    bool is_causal = false;        ///< key visible only when `key position <= query position`
    std::size_t window = 0;        ///< 0, or W: key visible only when `query pos - key pos < W`
    std::size_t query_start = 0;   ///< the first query's position
    std::size_t key_start = 0;     ///< the first key's position
    ScoreScale scale{};            ///< how the scores are scaled
    FullyMaskedRows fully_masked_rows = FullyMaskedRows::nan;  ///< a row that sees no key
    /// How hidden keys are masked (`MaskOp`). With `additive`, the fast and tiled backends run
    /// the step path whenever a hidden key's score might not be finite (a query or key that is
    /// not finite, or a product that might overflow), which they skip or set to `-inf`.
    MaskOp mask_op = MaskOp::masked_fill;
    double dropout_p = 0.0;        ///< `dropout_p`, on the weights, in [0, 1]
    /// Which of PyTorch's Bernoulli paths draws the dropout mask (nn::Dropout).
    nn::BernoulliBackend dropout_backend = nn::BernoulliBackend::portable;
    /// Where the dropout mask is drawn from: the default generator when null. Every backend
    /// draws the same `[B, H, Tq, Tk]` mask in row-major order, as the step path's
    /// `nn::Dropout` does.
    Generator* generator = nullptr;
    SDPABackend backend = SDPABackend::automatic;  ///< which implementation runs
    /// How the products add their terms: `automatic` (the thread's `ArithmeticGuard`, else
    /// `exact`), `exact`, or `fma` (the fast backend only: the step and tiled backends refuse it
    /// by name, and compute `exact` when a guard asks for it). A backward must run in its
    /// forward's arithmetic (it recomputes the forward's weights).
    Arithmetic arithmetic = Arithmetic::automatic;
    std::size_t block_q = 64;  ///< the tiled backend's query rows per tile (`B_r`)
    std::size_t block_k = 64;  ///< the tiled backend's keys per tile (`B_c`)

    /// @throws std::invalid_argument naming the field when `dropout_p` is NaN or outside
    /// [0, 1], a block size is 0, `scale.value` is NaN or infinite (or 0 for a divisor), or an enum holds a
    /// value outside its enumeration (`backend`, `arithmetic`, ...). (`alibi_slopes` is checked
    /// against the heads of the call: `[H]`, finite.)
    void validate() const;
};

/// Heads `[B, H, T, hd]` in float32 storage with any strides whose last dimension is
/// contiguous: a contiguous `[B, H, T, hd]` tensor, or PyTorch's
/// `x.view(B, T, H, hd).transpose(1, 2)` of a `[B, T, H * hd]` projection, without a copy.
/// A view: the tensor it looks at must outlive it.
struct HeadsView {
    /// Element `(b, h, t, d)` at `data[b * stride_b + h * stride_h + t * stride_t + d]`.
    const float* data = nullptr;
    std::size_t B = 0;         ///< batch size
    std::size_t H = 0;         ///< heads
    std::size_t T = 0;         ///< tokens
    std::size_t hd = 0;        ///< head width
    std::size_t stride_b = 0;  ///< elements from one batch element to the next
    std::size_t stride_h = 0;  ///< elements from one head to the next
    std::size_t stride_t = 0;  ///< elements from one token to the next

    /// A contiguous `[B, H, T, hd]` tensor.
    /// @throws std::invalid_argument when `x` is not 4-D.
    static HeadsView of(const Tensor& x);
    /// `x[:, :, column : column + num_heads * head_dim].view(B, T, num_heads, head_dim)
    /// .transpose(1, 2)` of a `[B, T, C]` tensor: a projection split into heads (column 0), or
    /// one of GPT-2's `qkv.split(S, dim=2)` (column `S` for the keys).
    /// @throws std::invalid_argument when `x` is not 3-D or the columns do not fit in `C`.
    static HeadsView split(const Tensor& x, std::size_t num_heads, std::size_t head_dim,
                           std::size_t column = 0);
    /// The same view of a contiguous row-major `[B, T, C]` float32 buffer.
    /// @throws std::invalid_argument when the columns do not fit in `C`.
    static HeadsView split(const float* data, std::size_t B, std::size_t T, std::size_t C,
                           std::size_t num_heads, std::size_t head_dim, std::size_t column = 0);
    /// A contiguous copy: `[B, H, T, hd]`.
    Tensor contiguous() const;
};

/// `F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
/// scale, enable_gqa=True)` with the options above, on contiguous tensors:
/// - `query [B, H, Tq, E]`, `key [B, H_kv, Tk, E]`, `value [B, H_kv, Tk, Ev]` (H_kv divides H)
///   -> `[B, H, Tq, Ev]`;
/// - rank 3, `[N, T, E]`: N heads of one batch element (a batch of single-head attention);
/// - rank 2, `[T, E]`: one head (notebook 001's `F.scaled_dot_product_attention(q, k, v)`).
/// Empty operands give PyTorch's empty result: no batch, no heads (`H = H_kv = 0`), no query;
/// queries with no key give zeros (an empty softmax row times no values).
/// @throws std::invalid_argument when the ranks or sizes do not fit, a mask does not
/// broadcast to the scores, or the options are invalid (`SDPAOptions::validate`), naming the
/// expected and actual shapes; std::length_error when the result cannot be allocated.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const SDPAOptions& options = {});

/// The attention of a module, from projections to merged heads, on any backend:
/// `query [B, H, Tq, hd]`, `key [B, H_kv, Tk, hd]`, `value [B, H_kv, Tk, dv]` as views ->
/// `[B, Tq, H * dv]`, i.e. `scaled_dot_product_attention(...).transpose(1, 2).contiguous()
/// .view(B, Tq, H * dv)`, written straight into the merged layout.
/// @throws std::invalid_argument as `scaled_dot_product_attention` (the masks broadcast to
/// `[B, H, Tq, Tk]`).
Tensor attend(const HeadsView& query, const HeadsView& key, const HeadsView& value,
              const SDPAOptions& options = {});

/// `attend` into given memory: `out` is a contiguous `[B, Tq, H * dv]` float32 buffer (a
/// module's workspace, reused between forwards, so that a forward allocates only its result);
/// it may be null when that shape has no elements (an empty tensor's data).
/// @throws std::invalid_argument as `attend`, or when `out` is null for an output of elements.
void attend(const HeadsView& query, const HeadsView& key, const HeadsView& value, float* out,
            const SDPAOptions& options = {});

/// What a training forward through `attend` keeps for `attend_backward`: FlashAttention's
/// log-sum-exp `L` of each query row and the dropout multipliers the forward drew.
struct AttendSaved {
    /// `L = m + log(l)` of each query row: `[B, H, Tq]` (`-inf` for a row that sees no key).
    Tensor logsumexp;
    /// The dropout multipliers `keep * (1 / (1 - p))`: `[B, H, Tq, Tk]`; a 0-d tensor when no
    /// dropout was drawn.
    Tensor dropout_noise;
};

/// `attend` into given memory, keeping what `attend_backward` needs in `saved` (the same
/// draws and the same output).
/// @throws std::invalid_argument as `attend`.
void attend(const HeadsView& query, const HeadsView& key, const HeadsView& value, float* out,
            const SDPAOptions& options, AttendSaved& saved);

/// The backward pass of `attend`, on the backend `options.backend` names, written into the
/// merged layouts the projections produced: given `grad_output = dL/d out` and the forward's
/// `output`, both seen as `[B, H, Tq, Ev]` heads (`HeadsView::split` of `[B, Tq, H * Ev]`),
/// the forward's inputs and `saved`:
/// - `grad_query`: `[B, Tq, H * E]` (head `h` in columns `h * E ..`);
/// - `grad_key`: `[B, Tk, H_kv * E]`, summed over the query heads that share a key head;
/// - `grad_value`: `[B, Tk, H_kv * Ev]`;
/// contiguous float32 buffers, overwritten (each may be null when it has no elements; with no
/// query row, `grad_key` and `grad_value` are zeros). The math is
/// `scaled_dot_product_attention_backward`'s.
/// Backends: `step` runs the step-by-step backward; `fast` gives its bits without `[Tq, Tk]`
/// tensors (kernels/attention_backward.hpp, `attend_head_backward`); `tiled` is
/// FlashAttention-2's backward, which reads `output` and `saved.logsumexp` (within a few ulp).
/// The options must be the forward's (the same masks, scale and dropout probability; nothing
/// is drawn: the saved multipliers stand for the dropout).
/// @throws std::invalid_argument as `attend`, when a gradient buffer is null, or when
/// `grad_output`, `output` or `saved` do not have the forward's shapes.
void attend_backward(const HeadsView& grad_output, const HeadsView& query, const HeadsView& key,
                     const HeadsView& value, const HeadsView& output, const AttendSaved& saved,
                     float* grad_query, float* grad_key, float* grad_value,
                     const SDPAOptions& options = {});

/// What the step-by-step path computed, shapes for rank-4 inputs (a lower-rank call gives
/// its own rank: `[N, Tq, Tk]` for `[N, T, E]`).
struct SDPASteps {
    Tensor attn_scores;      ///< `query @ key.transpose(-2, -1)`, unscaled: `[B, H, Tq, Tk]`
    /// Where a key is hidden (true): `is_causal`, the window and `!attn_mask` together,
    /// `[B, H, Tq, Tk]`.
    BoolTensor hidden;
    Tensor scaled_scores;    ///< `attn_scores` scaled, plus `attn_bias`: before the mask
    Tensor masked_scores;    ///< `scaled_scores`, `-inf` where hidden: the softmax's input
    Tensor attn_weights;     ///< `softmax(masked_scores, dim=-1)` (or masked_softmax)
    Tensor dropped_weights;  ///< `dropout(attn_weights)`
    Tensor output;           ///< `dropped_weights @ value`: `[B, H, Tq, Ev]`

    /// `attn_scores` with `-inf` where hidden: the notebooks' scores, masked (`masked_fill_`)
    /// before they are divided by `sqrt(d_k)` (Raschka ch. 3.5.1); the softmax's input is the
    /// same either way, as `-inf / sqrt(d_k)` is `-inf`.
    Tensor masked_attn_scores() const;
};

/// `scaled_dot_product_attention` on the step backend, keeping every intermediate (the same
/// draws, the same result). `options.backend` is ignored.
/// @throws std::invalid_argument as `scaled_dot_product_attention`.
SDPASteps scaled_dot_product_attention_steps(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const SDPAOptions& options = {});

/// What a forward keeps for its backward (FlashAttention's `O` and `L`, and the dropout mask).
struct SDPAForward {
    Tensor output;     ///< `[B, H, Tq, Ev]`, as `scaled_dot_product_attention` returns it
    /// `L = m + log(l)` of each query row, `m` its largest score and `l = sum exp(s - m)`:
    /// `[B, H, Tq]` (`-inf` for a row that sees no key).
    Tensor logsumexp;
    /// The dropout multipliers `keep * (1 / (1 - p))` the forward drew: `[B, H, Tq, Tk]`;
    /// a default-constructed (0-d) tensor when no dropout was drawn (`dropout_p == 0`).
    Tensor dropout_noise;
};

/// `scaled_dot_product_attention` keeping what the backward needs (same draws, same output).
/// @throws std::invalid_argument as `scaled_dot_product_attention`.
SDPAForward scaled_dot_product_attention_forward(const Tensor& query, const Tensor& key,
                                                 const Tensor& value,
                                                 const SDPAOptions& options = {});

/// The gradients of `scaled_dot_product_attention` with respect to its inputs.
struct SDPAGradients {
    Tensor grad_query;  ///< `[B, H, Tq, E]`
    Tensor grad_key;    ///< `[B, H_kv, Tk, E]`: summed over the query heads that share it
    Tensor grad_value;  ///< `[B, H_kv, Tk, Ev]`
};

/// The backward pass, without autograd: given `grad_output = dL/d output` (`[B, H, Tq, Ev]`),
/// the forward's inputs and what it saved, the gradients of the loss with respect to query,
/// key and value. With `P` the weights, `N` the dropout multipliers (1 without dropout) and
/// `scale` applied as the forward applied it:
/// `dV = (P ⊙ N)ᵀ dO`, `dP = (dO Vᵀ) ⊙ N`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))`,
/// `dQ = dS K · scale`, `dK = dSᵀ Q · scale` (the softmax's Jacobian-vector product: the
/// `[Tk, Tk]` Jacobian of each row is never formed). Source: Dao 2023, FlashAttention-2,
/// Algorithm 2, which writes the same with `D = rowsum(dO ⊙ O)` in place of the row sum.
/// The backend is `options.backend`'s, as for `attend_backward`: `step` (the float order of
/// PyTorch's autograd over the same steps), `fast` (the same bits), `tiled` (FlashAttention-2,
/// reading `saved.output` and `saved.logsumexp`, within a few ulp).
/// @throws std::invalid_argument as `scaled_dot_product_attention`, or when `grad_output` or
/// the saved tensors do not have the forward's shapes.
SDPAGradients scaled_dot_product_attention_backward(const Tensor& grad_output,
                                                   const Tensor& query, const Tensor& key,
                                                   const Tensor& value, const SDPAForward& saved,
                                                   const SDPAOptions& options = {});

}  // namespace attn
