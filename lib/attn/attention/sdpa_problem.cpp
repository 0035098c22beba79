// The checks every call of the attention core goes through (sdpa_problem.hpp): the operands
// seen as [B, H, T, d] heads, the masks broadcast to [B, H, Tq, Tk], the scale resolved, and
// the dropout multipliers drawn once, for every backend alike.
#include "attn/attention/sdpa_problem.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/functional.hpp"

namespace attn {

namespace detail {

namespace {

// Strides that broadcast a contiguous tensor of shape `s` (rank <= 4 after the caller's rank
// was padded to 4) over [B, H, Tq, Tk]; throws when it does not broadcast.
template <class T>
Broadcast4<T> broadcast(const std::string& where, const char* name, const T* data, Shape s,
                        std::size_t call_rank, const Shape& target4) {
    const Shape original = s;
    // The caller's scores have rank call_rank; the mask may have at most 4 dimensions and
    // broadcasts against them right-aligned, as PyTorch does.
    if (s.size() > 4) throw_shape_error(where + " (" + name + ")", "at most 4-D", original);
    while (s.size() < 4) s.insert(s.begin(), 1);
    Broadcast4<T> out{data, {}};
    long stride = 1;
    for (int d = 3; d >= 0; --d) {
        const std::size_t want = target4[d];
        if (s[d] == want && want != 1) out.s[d] = stride;
        else if (s[d] == 1) out.s[d] = 0;
        else {
            Shape shown(target4.begin() + (4 - long(std::max<std::size_t>(call_rank, 2))), target4.end());
            throw_shape_error(where + " (" + name + ")", "a shape broadcastable to " + shape_str(shown), original);
        }
        stride *= long(s[d]);
    }
    return out;
}

}  // namespace

SDPAProblem make_problem(const std::string& where, const HeadsView& q, const HeadsView& k,
                         const HeadsView& v, const SDPAOptions& o, std::size_t call_rank) {
    o.validate();
    SDPAProblem p;
    p.where = where;
    p.q = q, p.k = k, p.v = v;
    p.options = &o;
    p.B = q.B, p.H = q.H, p.Tq = q.T, p.E = q.hd;
    p.Hkv = k.H, p.Tk = k.T, p.Ev = v.hd;
    // H = H_kv = 0 is an empty head set (PyTorch returns the empty result); H_kv = 0 alone
    // divides nothing.
    if (k.B != q.B || k.hd != q.hd || (k.H == 0 ? q.H != 0 : q.H % k.H != 0))
        // Built by appending (GCC 12 warns falsely on an inlined `"[" + std::string&&`).
        throw_shape_error(where + " (key)",
                          std::string("[").append(std::to_string(q.B)).append(", H_kv dividing ")
                              .append(std::to_string(q.H)).append(", Tk, ").append(std::to_string(q.hd)).append("]"),
                          Shape{k.B, k.H, k.T, k.hd});
    if (v.B != k.B || v.H != k.H || v.T != k.T)
        throw_shape_error(where + " (value)",
                          std::string("[").append(std::to_string(k.B)).append(", ").append(std::to_string(k.H))
                              .append(", ").append(std::to_string(k.T)).append(", Ev]"),
                          Shape{v.B, v.H, v.T, v.hd});
    // One query's row of scores must be a tensor this machine could hold, as PyTorch's
    // attention materialises it: 2^40 keys of width 0 are refused, not walked.
    check_allocation(where + " (one row of attn_scores, Tk keys)", Shape{p.Tk});
    const Shape target{p.B, p.H, p.Tq, p.Tk};
    if (o.attn_mask) {
        const Shape s = shape_of(*o.attn_mask);
        p.allow = broadcast<unsigned char>(where, "attn_mask",
                                           reinterpret_cast<const unsigned char*>(o.attn_mask->data()),
                                           s, call_rank, target);
    }
    if (o.attn_bias) {
        const Shape s = shape_of(*o.attn_bias);
        p.bias = broadcast<float>(where, "attn_bias", o.attn_bias->data(), s, call_rank, target);
    }
    if (o.alibi_slopes) {
        const Shape s = shape_of(*o.alibi_slopes);
        if (s != Shape{p.H}) throw_shape_error(where + " (alibi_slopes)", "[" + std::to_string(p.H) + "] (one slope per query head)", s);
        for (std::size_t h = 0; h < p.H; ++h)
            if (!std::isfinite((*o.alibi_slopes)(h)))
                throw std::invalid_argument(where + " (alibi_slopes): expected finite slopes, got " +
                                            std::to_string((*o.alibi_slopes)(h)) + " for head " + std::to_string(h));
        p.alibi = o.alibi_slopes->data();
    }
    // A window wider than any query's reach (query_start + Tq back to position 0) hides
    // nothing: dropped, so that no later difference compares with a huge window.
    p.window = o.window > o.query_start + p.Tq ? 0 : o.window;
    p.divide = o.scale.op == ScoreScale::Op::divide;
    p.scale = o.scale.op == ScoreScale::Op::default_scale ? 1.0f / std::sqrt(static_cast<float>(p.E))
                                                          : o.scale.value;
    return p;
}

fast::HeadMask SDPAProblem::head_mask() const {
    fast::HeadMask m;
    m.causal = options->is_causal;
    m.window = window;
    m.offset = long(options->query_start) - long(options->key_start);
    m.allow_si = allow.s[2], m.allow_sj = allow.s[3];
    m.bias_si = bias.s[2], m.bias_sj = bias.s[3];
    m.noise_si = long(Tk), m.noise_sj = 1;
    m.divide = divide;
    m.scale = scale;
    m.zero_fully_masked = options->fully_masked_rows == FullyMaskedRows::zero;
    m.additive = options->mask_op == MaskOp::additive;
    m.alibi = alibi != nullptr;
    return m;
}

Tensor dropout_noise(const SDPAProblem& p) {
    Tensor noise;
    dropout_noise_into(p, noise);
    return noise;
}

void dropout_noise_into(const SDPAProblem& p, Tensor& noise) {
    const double dp = p.options->dropout_p;
    const Shape shape{p.B, p.H, p.Tq, p.Tk};
    if (dp == 0.0 || numel(shape) == 0) {
        noise = Tensor();
        return;
    }
    if (dp == 1.0) {  // Dropout(p=1) is x * 0 and draws nothing
        std::fill_n(sized(noise, shape, "attend (dropout)"), numel(shape), 0.0f);
        return;
    }
    const nn::Dropout dropout(dp, p.options->dropout_backend);
    Generator& gen = p.options->generator ? *p.options->generator : default_generator();
    dropout.keep_mask_into(shape, noise, gen);
    noise *= 1.0f / static_cast<float>(1.0 - dp);  // as nn::Dropout: keep * (1 / float(1 - p))
}

}  // namespace detail

}  // namespace attn
