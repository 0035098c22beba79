// Internal to lib/attn/attention: one attention call after its checks, as the backends read
// it (sdpa.cpp builds it; sdpa.cpp runs the fast and tiled kernels, sdpa_step.cpp the steps).
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

/// Everything a backend needs, checked: 4-D views of the operands, the masks broadcast to
/// `[B, H, Tq, Tk]`, the scale resolved.
struct SDPAProblem {
    std::string where;       // the public function's name, for messages
    HeadsView q, k, v;       // [B, H, Tq, E], [B, Hkv, Tk, E], [B, Hkv, Tk, Ev]
    std::size_t B = 0, H = 0, Hkv = 0, Tq = 0, Tk = 0, E = 0, Ev = 0;
    Broadcast4<unsigned char> allow;  // attn_mask (1 = may attend), data null when none
    Broadcast4<float> bias;           // attn_bias, data null when none
    bool divide = false;              // scores / scale instead of * scale
    float scale = 1.0f;
    std::size_t window = 0;           // options->window, 0 when no key can be that far back
    const SDPAOptions* options = nullptr;
    std::size_t group() const { return H / Hkv; }  // query heads per key/value head

    /// Whether query `i` may see key `j` under the band masks (is_causal, window).
    bool band_visible(std::size_t i, std::size_t j) const {
        const long lag = long(options->query_start + i) - long(options->key_start + j);
        return !(options->is_causal && lag < 0) && !(window && lag >= long(window));
    }
    /// The kernels' view of the masks and scaling of head `(b, h)` (strides only).
    fast::HeadMask head_mask() const;
};

/// Checks and builds the problem of a call on 4-D views. `call_rank` is the caller's rank (2,
/// 3 or 4), for the messages about masks that do not broadcast.
SDPAProblem make_problem(const std::string& where, const HeadsView& q, const HeadsView& k,
                         const HeadsView& v, const SDPAOptions& options, std::size_t call_rank = 4);

/// The dropout multipliers of a call, `[B, H, Tq, Tk]` (`keep * (1 / (1 - p))`), drawn as the
/// step path's `nn::Dropout` draws them; empty when the call draws no dropout.
Tensor dropout_noise(const SDPAProblem& p);

/// The step backend: every intermediate, shapes `[B, H, Tq, Tk]` and `[B, H, Tq, Ev]`. The
/// dropout multipliers it drew (`dropout_noise`) go to `noise` when not null.
SDPASteps step_attention(const SDPAProblem& p, Tensor* noise = nullptr);

/// The backward in step arithmetic (sdpa_step.cpp), 4-D.
SDPAGradients step_backward(const SDPAProblem& p, const Tensor& grad_output,
                            const Tensor& dropout_noise);

}  // namespace attn::detail
