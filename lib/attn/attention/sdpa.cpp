// attn::scaled_dot_product_attention, attn::attend and their backward (sdpa.hpp): the checks
// every call goes through, the dropout multipliers drawn once, and the row of the backend the
// call resolves to (sdpa_backends.cpp), forward or backward.
#include "attn/attention/sdpa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "attn/attention/sdpa_problem.hpp"
#include "attn/core/functional.hpp"

namespace attn {

void SDPAOptions::validate() const {
    const std::string where = "SDPAOptions";
    if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
        throw std::invalid_argument(where + ": expected dropout_p in [0, 1], got " +
                                    std::to_string(dropout_p));
    if (block_q == 0 || block_k == 0)
        throw std::invalid_argument(where + ": expected block_q and block_k > 0, got " +
                                    std::to_string(block_q) + " and " + std::to_string(block_k));
    if (scale.op != ScoreScale::Op::default_scale &&
        !(std::isfinite(scale.value) && (scale.op != ScoreScale::Op::divide || scale.value != 0.0f))) {
        std::ostringstream value;  // %g: 1e-30 is not shown as 0.000000
        value << scale.value;
        throw std::invalid_argument(
            where + (scale.op == ScoreScale::Op::divide
                         ? ": expected a finite divisor other than 0 (scale = divide_by(d)), got " + value.str() +
                               " (multiply_by(0) is the scale that makes every score 0)"
                         : ": expected a finite multiplier (scale = multiply_by(s)), got " + value.str()));
    }
    if (scale.op != ScoreScale::Op::default_scale && scale.op != ScoreScale::Op::multiply &&
        scale.op != ScoreScale::Op::divide)
        throw std::invalid_argument(where + ": scale.op holds " +
                                    std::to_string(static_cast<int>(scale.op)) +
                                    ", not default_scale, multiply or divide");
    if (mask_op != MaskOp::masked_fill && mask_op != MaskOp::additive)
        throw std::invalid_argument(where + ": mask_op holds " + std::to_string(static_cast<int>(mask_op)) +
                                    ", not masked_fill or additive");
    if (fully_masked_rows != FullyMaskedRows::nan && fully_masked_rows != FullyMaskedRows::zero)
        throw std::invalid_argument(where + ": fully_masked_rows holds " +
                                    std::to_string(static_cast<int>(fully_masked_rows)) +
                                    ", not nan or zero");
    // Positions take part in signed differences (query pos - key pos): kept below 2^62.
    constexpr std::size_t max_position = std::size_t{1} << 62;
    if (query_start >= max_position || key_start >= max_position)
        throw std::invalid_argument(where + ": expected query_start and key_start < 2^62, got " +
                                    std::to_string(query_start) + " and " + std::to_string(key_start));
    if (!detail::known_backend(backend))
        throw std::invalid_argument(where + ": backend holds " +
                                    std::to_string(static_cast<int>(backend)) +
                                    ", not automatic, step, tiled or fast");
    if (arithmetic != Arithmetic::automatic && arithmetic != Arithmetic::exact && arithmetic != Arithmetic::fma)
        throw std::invalid_argument(where + ": arithmetic holds " +
                                    std::to_string(static_cast<int>(arithmetic)) +
                                    ", not automatic, exact or fma");
    nn::check_backend(dropout_backend, "SDPAOptions (dropout_backend)");
}

// ------------------------------------------------------------------------- views

HeadsView HeadsView::of(const Tensor& x) {
    const Shape s = shape_of(x);
    if (s.size() != 4) throw_shape_error("HeadsView::of", "[B, H, T, hd]", s);
    return {x.data(), s[0], s[1], s[2], s[3], s[1] * s[2] * s[3], s[2] * s[3], s[3]};
}

HeadsView HeadsView::split(const Tensor& x, std::size_t num_heads, std::size_t head_dim,
                           std::size_t column) {
    const Shape s = shape_of(x);
    if (s.size() != 3)
        throw_shape_error("HeadsView::split (" + std::to_string(num_heads) + " heads of " +
                              std::to_string(head_dim) + ")",
                          "[B, T, C]", s);
    return split(x.data(), s[0], s[1], s[2], num_heads, head_dim, column);
}

HeadsView HeadsView::split(const float* data, std::size_t B, std::size_t T, std::size_t C,
                           std::size_t num_heads, std::size_t head_dim, std::size_t column) {
    std::size_t width = 0, end = 0;
    if (__builtin_mul_overflow(num_heads, head_dim, &width) ||
        __builtin_add_overflow(column, width, &end) || end > C)
        throw_shape_error("HeadsView::split (" + std::to_string(num_heads) + " heads of " +
                              std::to_string(head_dim) + " from column " + std::to_string(column) + ")",
                          "[B, T, C] with C >= column + num_heads * head_dim", Shape{B, T, C});
    // An empty tensor's data may be null: no offset applied to it.
    return {data ? data + column : data, B, num_heads, T, head_dim, T * C, head_dim, C};
}

Tensor HeadsView::contiguous() const {
    Tensor out = attn::zeros({B, H, T, hd});
    if (out.size() == 0) return out;  // [2^40, H, T, 0]: no rows to walk
    float* o = out.data();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t, o += hd)
                std::copy_n(data + b * stride_b + h * stride_h + t * stride_t, hd, o);
    return out;
}

// ------------------------------------------------------------------------- calls

namespace {

using detail::SDPAProblem;

// The 4-D views of a call on tensors of rank 2, 3 or 4, and that rank.
struct Views {
    HeadsView q, k, v;
    std::size_t rank;
};

HeadsView as_heads(const std::string& where, const char* name, const Tensor& x, std::size_t rank) {
    const Shape s = shape_of(x);
    if (s.size() != rank)
        throw_shape_error(where + " (" + name + ")", "a tensor of the query's rank " + std::to_string(rank), s);
    switch (rank) {
        case 2: return {x.data(), 1, 1, s[0], s[1], s[0] * s[1], s[0] * s[1], s[1]};
        case 3: return {x.data(), 1, s[0], s[1], s[2], s[0] * s[1] * s[2], s[1] * s[2], s[2]};
        default: return HeadsView::of(x);
    }
}

Views views(const std::string& where, const Tensor& q, const Tensor& k, const Tensor& v) {
    const Shape sq = shape_of(q), sk = shape_of(k), sv = shape_of(v);
    const std::size_t rank = sq.size();
    if (rank < 2 || rank > 4)
        throw_shape_error(where + " (query)", "[Tq, E], [N, Tq, E] or [B, H, Tq, E]", sq);
    // The key: the query's rank, width and leading dimensions, and a number of heads (dim -3)
    // that divides the query's (grouped-query attention, PyTorch's enable_gqa).
    // (0 key heads fit 0 query heads only: the empty head set.)
    const bool heads_fit = rank < 3 || (sk.size() == rank && (sk[rank - 3] != 0
                                                                  ? sq[rank - 3] % sk[rank - 3] == 0
                                                                  : sq[rank - 3] == 0));
    if (sk.size() != rank || sk.back() != sq.back() || (rank == 4 && sk[0] != sq[0]) || !heads_fit) {
        // Built by appending (GCC 12 warns falsely on an inlined `"[" + std::string&&`).
        std::string expected("[");
        expected.append(rank == 4 ? std::to_string(sq[0]) : std::string("..."));
        expected.append(", ");
        if (rank >= 3) expected.append("H_kv dividing ").append(std::to_string(sq[rank - 3])).append(", ");
        expected.append("S, ").append(std::to_string(sq.back())).append("]");
        throw_shape_error(where + " (key)", expected, sk);
    }
    Shape want_v = sk;
    want_v.back() = sv.empty() ? 0 : sv.back();
    if (sv != want_v) {
        std::string e = "[";
        for (std::size_t i = 0; i + 1 < sk.size(); ++i) e += std::to_string(sk[i]) + ", ";
        throw_shape_error(where + " (value)", e + "Ev]", sv);
    }
    return {as_heads(where, "query", q, rank), as_heads(where, "key", k, rank),
            as_heads(where, "value", v, rank), rank};
}

// [B, H, ...] results back to the caller's rank.
template <class T>
void to_rank(T& t, std::size_t rank) {
    if (rank == 4 || t.dimension() != 4) return;
    Shape s(t.shape().begin() + long(4 - rank), t.shape().end());
    t.reshape(s);
}

}  // namespace

namespace {

// The forward of both entry points; the log-sum-exp `[B, H, Tq]` only when it is kept (the plain
// call has no use for it: allocated anyway, 2^32 queries of empty heads would ask for 16 GiB).
SDPAForward sdpa_forward(const Tensor& query, const Tensor& key, const Tensor& value, const SDPAOptions& options,
                         bool keep_logsumexp) {
    const std::string where = "scaled_dot_product_attention";
    const Views w = views(where, query, key, value);
    const SDPAProblem p = detail::make_problem(where, w.q, w.k, w.v, options, w.rank);
    check_allocation(where, Shape{p.B, p.H, p.Tq, p.Ev});
    if (keep_logsumexp) check_allocation(where + " (logsumexp)", Shape{p.B, p.H, p.Tq});
    const detail::Backend& backend = detail::backend_for(options, p);
    SDPAForward f;
    f.dropout_noise = detail::dropout_noise(p);
    f.output = Tensor::from_shape({p.B, p.H, p.Tq, p.Ev});
    if (keep_logsumexp) f.logsumexp = Tensor::from_shape({p.B, p.H, p.Tq});
    if (f.output.size() != 0 || (keep_logsumexp && f.logsumexp.size() != 0))  // (a 0-d Tensor() holds 1)
        backend.forward(p, {f.output.data(), false}, f.dropout_noise, keep_logsumexp ? f.logsumexp.data() : nullptr);
    to_rank(f.output, w.rank);
    return f;
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const SDPAOptions& options) {
    return sdpa_forward(query, key, value, options, false).output;
}

SDPAForward scaled_dot_product_attention_forward(const Tensor& query, const Tensor& key,
                                                 const Tensor& value, const SDPAOptions& options) {
    return sdpa_forward(query, key, value, options, true);
}

namespace {

// attend's body: checks, then the backend, writing merged [B, Tq, H * Ev] into `out` (with
// `allocate`, into a tensor it allocates after the checks, which it returns). `out` may be
// null when the output has no elements (an empty tensor's data).
Tensor attend_merged(const HeadsView& query, const HeadsView& key, const HeadsView& value,
                     float* out, bool allocate, const SDPAOptions& options, AttendSaved* saved = nullptr) {
    const SDPAProblem p = detail::make_problem("attend", query, key, value, options);
    const Shape shape{p.B, p.Tq, checked_mul(p.H, p.Ev, "attend (H * Ev)")};
    check_allocation("attend", shape);
    Tensor result, kept_noise;
    if (allocate) {
        result = Tensor::from_shape(shape);
        out = result.data();
    } else if (!out && numel(shape) != 0) {
        throw std::invalid_argument("attend: expected an output buffer of " + shape_str(shape) +
                                    " floats, got null");
    }
    if (saved) {
        check_allocation("attend (logsumexp)", Shape{p.B, p.H, p.Tq});
        sized(saved->logsumexp, Shape{p.B, p.H, p.Tq}, "attend (logsumexp)");
        kept_noise = std::move(saved->dropout_noise);
        saved->dropout_noise = Tensor();
    }
    // Nothing to compute (an empty batch, head set or query; or an empty value width with no
    // log-sum-exp to keep) and no dropout draw to make: return at once, not after walking
    // 2^40 empty rows.
    const bool no_rows = p.B == 0 || p.H == 0 || p.Tq == 0;
    if (no_rows || (numel(shape) == 0 && !saved && (options.dropout_p == 0.0 || p.Tk == 0)))
        return result;
    const detail::Backend& backend = detail::backend_for(options, p);
    // A training step's multipliers drawn into the last step's memory (saved's, when kept).
    Tensor noise = std::move(kept_noise);
    detail::dropout_noise_into(p, noise);
    backend.forward(p, {out, true}, noise, saved ? saved->logsumexp.data() : nullptr);
    if (saved) saved->dropout_noise = std::move(noise);
    return result;
}

}  // namespace

Tensor attend(const HeadsView& query, const HeadsView& key, const HeadsView& value,
              const SDPAOptions& options) {
    return attend_merged(query, key, value, nullptr, true, options);
}

void attend(const HeadsView& query, const HeadsView& key, const HeadsView& value, float* out,
            const SDPAOptions& options) {
    attend_merged(query, key, value, out, false, options);
}

void attend(const HeadsView& query, const HeadsView& key, const HeadsView& value, float* out,
            const SDPAOptions& options, AttendSaved& saved) {
    attend_merged(query, key, value, out, false, options, &saved);
}

Tensor SDPASteps::masked_attn_scores() const {
    return masked_fill(attn_scores, hidden, -std::numeric_limits<float>::infinity());
}

SDPASteps scaled_dot_product_attention_steps(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const SDPAOptions& options) {
    const std::string where = "scaled_dot_product_attention_steps";
    const Views w = views(where, query, key, value);
    const SDPAProblem p = detail::make_problem(where, w.q, w.k, w.v, options, w.rank);
    SDPASteps st = detail::step_attention(p, detail::dropout_noise(p));
    to_rank(st.attn_scores, w.rank);
    to_rank(st.hidden, w.rank);
    to_rank(st.scaled_scores, w.rank);
    to_rank(st.masked_scores, w.rank);
    to_rank(st.attn_weights, w.rank);
    to_rank(st.dropped_weights, w.rank);
    to_rank(st.output, w.rank);
    return st;
}

SDPAGradients scaled_dot_product_attention_backward(const Tensor& grad_output,
                                                   const Tensor& query, const Tensor& key,
                                                   const Tensor& value, const SDPAForward& saved,
                                                   const SDPAOptions& options) {
    const std::string where = "scaled_dot_product_attention_backward";
    const Views w = views(where, query, key, value);
    const SDPAProblem p = detail::make_problem(where, w.q, w.k, w.v, options, w.rank);
    // grad_output has the output's shape in the caller's rank; the step arithmetic is 4-D.
    Shape out{p.B, p.H, p.Tq, p.Ev};
    const Shape want(out.begin() + long(4 - w.rank), out.end());
    check_same_shape(where + " (grad_output)", want, shape_of(grad_output));
    Tensor dO = grad_output;
    dO.reshape(out);
    Tensor noise = saved.dropout_noise;
    if (noise.dimension() != 0) {
        const Shape n{p.B, p.H, p.Tq, p.Tk};
        if (numel(shape_of(noise)) != numel(n))
            throw_shape_error(where + " (saved.dropout_noise)", shape_str(n), shape_of(noise));
        noise.reshape(n);
    }
    const detail::Backend& backend = detail::backend_for(options, p);
    detail::BackwardArgs args{.grad_output = HeadsView::of(dO), .noise = &noise};
    if (backend.backward_reads_output) {  // FlashAttention-2 reads the forward's O and L
        check_same_shape(where + " (saved.output)", want, shape_of(saved.output));
        if (numel(shape_of(saved.logsumexp)) != p.B * p.H * p.Tq)  // [B, H, Tq], as the forward gave it
            throw_shape_error(where + " (saved.logsumexp)", shape_str(Shape{p.B, p.H, p.Tq}),
                              shape_of(saved.logsumexp));
        args.output = {saved.output.data(), p.B, p.H, p.Tq, p.Ev, p.H * p.Tq * p.Ev, p.Tq * p.Ev, p.Ev};
        args.logsumexp = saved.logsumexp.data();
    }
    check_allocation(where + " (grad_query)", Shape{p.B, p.H, p.Tq, p.E});
    check_allocation(where + " (grad_key)", Shape{p.B, p.Hkv, p.Tk, std::max(p.E, p.Ev)});
    SDPAGradients g{Tensor::from_shape({p.B, p.H, p.Tq, p.E}), Tensor::from_shape({p.B, p.Hkv, p.Tk, p.E}),
                    Tensor::from_shape({p.B, p.Hkv, p.Tk, p.Ev})};
    const auto heads = [](Tensor& t) {
        const Shape s = shape_of(t);
        return detail::GradHeads{t.data(), s[1] * s[2] * s[3], s[2] * s[3], s[3]};
    };
    args.dq = heads(g.grad_query), args.dk = heads(g.grad_key), args.dv = heads(g.grad_value);
    if (p.B == 0 || p.Hkv == 0 || p.Tq == 0 || p.H == 0) {  // no query saw a key: zeros (every backend)
        g.grad_key.fill(0.0f);
        g.grad_value.fill(0.0f);
    } else {
        backend.backward(p, args);
    }
    to_rank(g.grad_query, w.rank);
    to_rank(g.grad_key, w.rank);
    to_rank(g.grad_value, w.rank);
    return g;
}

void attend_backward(const HeadsView& grad_output, const HeadsView& query, const HeadsView& key,
                     const HeadsView& value, const HeadsView& output, const AttendSaved& saved,
                     float* grad_query, float* grad_key, float* grad_value,
                     const SDPAOptions& options) {
    const std::string where = "attend_backward";
    const detail::SDPAProblem p = detail::make_problem(where, query, key, value, options);
    // A buffer of no elements may be null (an empty tensor's data); the others may not.
    const auto empty = [](const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); };
    if ((!grad_query && !empty({p.B, p.H, p.Tq, p.E})) || (!grad_key && !empty({p.B, p.Hkv, p.Tk, p.E})) ||
        (!grad_value && !empty({p.B, p.Hkv, p.Tk, p.Ev})))
        throw std::invalid_argument(where + ": expected three gradient buffers, got a null one");
    const Shape heads{p.B, p.H, p.Tq, p.Ev};
    check_same_shape(where + " (grad_output)", heads, Shape{grad_output.B, grad_output.H, grad_output.T, grad_output.hd});
    if (grad_output.stride_t < p.Ev)
        throw std::invalid_argument(where + ": grad_output's rows overlap (stride_t < Ev)");
    const Tensor& noise = saved.dropout_noise;
    if (noise.dimension() != 0)
        check_same_shape(where + " (saved.dropout_noise)", Shape{p.B, p.H, p.Tq, p.Tk}, shape_of(noise));
    else if (options.dropout_p != 0.0 && !empty({p.B, p.H, p.Tq, p.Tk}))
        throw std::invalid_argument(where + ": the options ask for dropout, but saved.dropout_noise is empty");
    const detail::Backend& backend = detail::backend_for(options, p);
    detail::BackwardArgs args{.grad_output = grad_output, .noise = &noise};
    if (backend.backward_reads_output) {  // FlashAttention-2 reads the forward's O and L
        check_same_shape(where + " (output)", heads, Shape{output.B, output.H, output.T, output.hd});
        check_same_shape(where + " (saved.logsumexp)", Shape{p.B, p.H, p.Tq}, shape_of(saved.logsumexp));
        args.output = output;
        args.logsumexp = saved.logsumexp.data();
    }
    // Merged layouts: [B, T, heads * width], head h in columns h * width ..
    const std::size_t wq = checked_mul(p.H, p.E, where + " (H * E)");
    const std::size_t wk = checked_mul(p.Hkv, p.E, where + " (H_kv * E)");
    const std::size_t wv = checked_mul(p.Hkv, p.Ev, where + " (H_kv * Ev)");
    args.dq = {grad_query, p.Tq * wq, p.E, wq};
    args.dk = {grad_key, p.Tk * wk, p.E, wk};
    args.dv = {grad_value, p.Tk * wv, p.Ev, wv};
    if (p.B == 0 || p.Hkv == 0) return;
    if (p.Tq == 0 || p.H == 0) {  // no query saw a key: their gradients are zeros (every backend)
        std::fill_n(grad_key, checked_mul(checked_mul(p.B, p.Tk, where), wk, where), 0.0f);
        std::fill_n(grad_value, checked_mul(checked_mul(p.B, p.Tk, where), wv, where), 0.0f);
        return;
    }
    backend.backward(p, args);
}

}  // namespace attn
