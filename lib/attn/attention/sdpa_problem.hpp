// Internal to lib/attn/attention: one attention call after its checks (sdpa_problem.cpp), and
// the backends that run it, one row per backend and arithmetic in a table (sdpa_backends.cpp):
// the step path (sdpa_step.cpp), the fast and the tiled kernels (sdpa_kernels.cpp), each with
// its forward and its backward beside each other. The public functions (sdpa.cpp) check, draw the dropout
// multipliers once, and call the row of the backend the call resolves to.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/kernels/fused_attention.hpp"

namespace attn::detail {

/// A dense mask seen as `[B, H, Tq, Tk]`: element `(b, h, i, j)` at
/// `data[b * s[0] + h * s[1] + i * s[2] + j * s[3]]` (a stride of 0 broadcasts).
template <class T>
struct Broadcast4 {
    const T* data = nullptr;
    std::array<long, 4> s{};
    const T& at(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
        return data[long(b) * s[0] + long(h) * s[1] + long(i) * s[2] + long(j) * s[3]];
    }
};

/// `base + offset`, or null when `base` is null: an empty operand's data may be null (no keys,
/// a width of 0), and even an offset nothing will read is undefined on a null pointer.
template <class T>
T* at_offset(T* base, std::size_t offset) {
    return base ? base + offset : base;
}

/// Everything a backend needs, checked: 4-D views of the operands, the masks broadcast to
/// `[B, H, Tq, Tk]`, the scale resolved.
struct SDPAProblem {
    std::string where;       // the public function's name, for messages
    HeadsView q, k, v;       // [B, H, Tq, E], [B, Hkv, Tk, E], [B, Hkv, Tk, Ev]
    std::size_t B = 0, H = 0, Hkv = 0, Tq = 0, Tk = 0, E = 0, Ev = 0;
    Broadcast4<unsigned char> allow;  // attn_mask (1 = may attend), data null when none
    Broadcast4<float> bias;           // attn_bias, data null when none
    const float* alibi = nullptr;     // ALiBi's slopes [H], null when none
    bool divide = false;              // scores / scale instead of * scale
    float scale = 1.0f;
    std::size_t window = 0;           // options->window, 0 when no key can be that far back
    const SDPAOptions* options = nullptr;
    std::size_t group() const { return Hkv ? H / Hkv : 1; }  // query heads per key/value head

    /// Whether query `i` may see key `j` under the band masks (is_causal, window).
    bool band_visible(std::size_t i, std::size_t j) const {
        const long lag = long(options->query_start + i) - long(options->key_start + j);
        return !(options->is_causal && lag < 0) && !(window && lag >= long(window));
    }
    /// The kernels' view of the masks and scaling of head `(b, h)` (strides only).
    fast::HeadMask head_mask() const;
    /// What score `(b, h, i, j)` has added after its scaling (attn_bias, ALiBi, or their sum);
    /// `has` false when neither is given.
    float score_bias(std::size_t b, std::size_t h, std::size_t i, std::size_t j, bool& has) const {
        const float* bias_ij = bias.data ? &bias.at(b, h, i, j) : nullptr;
        return fast::score_bias(bias_ij, 0, 0, alibi != nullptr, alibi ? alibi[h] : 0.0f,
                                long(options->query_start) - long(options->key_start), long(i), long(j), has);
    }
};

/// Checks and builds the problem of a call on 4-D views. `call_rank` is the caller's rank (2,
/// 3 or 4), for the messages about masks that do not broadcast.
SDPAProblem make_problem(const std::string& where, const HeadsView& q, const HeadsView& k,
                         const HeadsView& v, const SDPAOptions& options, std::size_t call_rank = 4);

/// The dropout multipliers of a call, `[B, H, Tq, Tk]` (`keep * (1 / (1 - p))`), drawn as the
/// step path's `nn::Dropout` draws them; empty when the call draws no dropout.
Tensor dropout_noise(const SDPAProblem& p);

/// `dropout_noise(p)` into `noise`, its memory reused when it already holds that many floats.
void dropout_noise_into(const SDPAProblem& p, Tensor& noise);

/// The step path: every intermediate, shapes `[B, H, Tq, Tk]` and `[B, H, Tq, Ev]`, with the
/// dropout multipliers `noise` (`[B, H, Tq, Tk]`, or 0-d: no dropout) drawn by the caller.
SDPASteps step_attention(const SDPAProblem& p, const Tensor& noise);

/// `L = m + log(sum exp(s - m))` of each row of the step path's masked scores, in order:
/// `[B, H, Tq]` (`-inf` for a row that sees no key).
Tensor step_logsumexp(const SDPAProblem& p, const SDPASteps& steps);

/// A writable `[B, H, T, d]` view: where a backward writes a gradient (strides in elements).
struct GradHeads {
    float* data = nullptr;
    std::size_t stride_b = 0, stride_h = 0, stride_t = 0;
};

/// Where a forward writes head `(b, h)`: the merged layout `[B, Tq, H * Ev]` (a module's) or
/// the heads' `[B, H, Tq, Ev]` (`scaled_dot_product_attention`'s).
struct OutLayout {
    float* data = nullptr;
    bool merged = false;
    float* head(const SDPAProblem& p, std::size_t b, std::size_t h) const {
        return at_offset(data, merged ? (b * p.Tq * p.H + h) * p.Ev : (b * p.H + h) * p.Tq * p.Ev);
    }
    std::size_t ld(const SDPAProblem& p) const { return merged ? p.H * p.Ev : p.Ev; }
};

/// What a backward reads and writes: `grad_output` `[B, H, Tq, Ev]`, the forward's `output`
/// (same shape) and `logsumexp` (`[B, H, Tq]` contiguous; both read only by a backend whose
/// `backward_reads_output`), the saved dropout multipliers (`[B, H, Tq, Tk]` or 0-d); it writes
/// `dq [B, H, Tq, E]`, `dk [B, Hkv, Tk, E]`, `dv [B, Hkv, Tk, Ev]`.
struct BackwardArgs {
    HeadsView grad_output{};
    HeadsView output{};
    const float* logsumexp = nullptr;
    const Tensor* noise = nullptr;
    GradHeads dq{}, dk{}, dv{};
};

/// One backend of the core in one arithmetic: its forward and its backward, on a checked
/// problem.
struct Backend {
    SDPABackend id;         ///< its enumerator
    Arithmetic arithmetic;  ///< how its products add their terms: exact or fma
    const char* name;       ///< `"step"`, `"tiled"`, `"fast"`
    /// Writes the output into `out` (every element) and, when `logsumexp` is not null, each
    /// query row's `L = m + log(l)` (`[B, H, Tq]`), with the dropout multipliers `noise`.
    void (*forward)(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp);
    /// Writes the gradients (`BackwardArgs`).
    void (*backward)(const SDPAProblem& p, const BackwardArgs& args);
    /// FlashAttention-2's backward recomputes the weights from `output` and `logsumexp`.
    bool backward_reads_output;
};

/// The row a call on problem `p` runs: its backend (`options.backend`, or for `automatic` the
/// calling thread's `SDPABackendGuard`, else the process default) in its arithmetic
/// (`options.arithmetic`, or for `automatic` the thread's `ArithmeticGuard`, else exact). A
/// backend without a row in the arithmetic a guard asks for runs its exact row. The step row
/// instead when `options.mask_op` is `MaskOp::additive`, a key is hidden and a score might not
/// be finite (the other backends skip hidden keys or set their scores to -inf; PyTorch's
/// `+ (-inf)` then gives NaN); a backward calls it with its forward's operands, so both run on
/// the same row.
/// @throws std::invalid_argument for a value outside `SDPABackend` or `Arithmetic`, or when
/// `options.arithmetic` names an arithmetic the backend does not have.
const Backend& backend_for(const SDPAOptions& options, const SDPAProblem& p);

/// Whether `b` is `automatic` or a backend of the table (`SDPAOptions::validate`).
bool known_backend(SDPABackend b);

/// The rows' functions. The step path (sdpa_step.cpp):
void step_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp);
void step_backward(const SDPAProblem& p, const BackwardArgs& args);
/// The fused kernels, head by head on OpenMP threads (sdpa_kernels.cpp), exact and fma:
void fast_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp);
void fast_backward(const SDPAProblem& p, const BackwardArgs& args);
void fast_fma_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp);
void fast_fma_backward(const SDPAProblem& p, const BackwardArgs& args);
/// FlashAttention's tiles (sdpa_kernels.cpp):
void tiled_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp);
void tiled_backward(const SDPAProblem& p, const BackwardArgs& args);

}  // namespace attn::detail
