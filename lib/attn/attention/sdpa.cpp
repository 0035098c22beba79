// attn::scaled_dot_product_attention and attn::attend (sdpa.hpp): the checks every call goes
// through, the choice of backend, and the fast and tiled kernels run head by head on OpenMP
// threads. The step backend is in sdpa_step.cpp.
#include "attn/attention/sdpa.hpp"

#include <atomic>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <omp.h>

#include "attn/attention/sdpa_problem.hpp"
#include "attn/core/functional.hpp"
#include "attn/kernels/fused_attention.hpp"
#include "attn/kernels/tiled_attention.hpp"

namespace attn {

// ------------------------------------------------------------------------- backends

namespace {

std::atomic<SDPABackend>& default_backend() {
    static std::atomic<SDPABackend> backend{SDPABackend::fast};
    return backend;
}

bool valid(SDPABackend b) {
    return b == SDPABackend::automatic || b == SDPABackend::step || b == SDPABackend::tiled ||
           b == SDPABackend::fast;
}

}  // namespace

const char* backend_name(SDPABackend backend) {
    switch (backend) {
        case SDPABackend::automatic: return "automatic";
        case SDPABackend::step: return "step";
        case SDPABackend::tiled: return "tiled";
        case SDPABackend::fast: return "fast";
    }
    throw std::invalid_argument("backend_name: SDPABackend value " +
                                std::to_string(static_cast<int>(backend)) + " is not a backend");
}

SDPABackend default_sdpa_backend() { return default_backend().load(); }

void set_default_sdpa_backend(SDPABackend backend) {
    if (!valid(backend) || backend == SDPABackend::automatic)
        throw std::invalid_argument(
            "set_default_sdpa_backend: expected step, tiled or fast, got SDPABackend value " +
            std::to_string(static_cast<int>(backend)));
    default_backend().store(backend);
}

SDPABackendGuard::SDPABackendGuard(SDPABackend backend) : previous_(default_sdpa_backend()) {
    set_default_sdpa_backend(backend);
}

SDPABackendGuard::~SDPABackendGuard() { default_backend().store(previous_); }

void SDPAOptions::validate() const {
    const std::string where = "SDPAOptions";
    if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
        throw std::invalid_argument(where + ": expected dropout_p in [0, 1], got " +
                                    std::to_string(dropout_p));
    if (block_q == 0 || block_k == 0)
        throw std::invalid_argument(where + ": expected block_q and block_k > 0, got " +
                                    std::to_string(block_q) + " and " + std::to_string(block_k));
    if (!(std::isfinite(scale.value) && scale.value >= 0.0f))
        throw std::invalid_argument(where + ": expected scale.value finite and >= 0 (0: 1/sqrt(E)), got " +
                                    std::to_string(scale.value));
    if (scale.op != ScoreScale::Op::multiply && scale.op != ScoreScale::Op::divide)
        throw std::invalid_argument(where + ": scale.op holds " +
                                    std::to_string(static_cast<int>(scale.op)) +
                                    ", not multiply or divide");
    if (fully_masked_rows != FullyMaskedRows::nan && fully_masked_rows != FullyMaskedRows::zero)
        throw std::invalid_argument(where + ": fully_masked_rows holds " +
                                    std::to_string(static_cast<int>(fully_masked_rows)) +
                                    ", not nan or zero");
    // Positions take part in signed differences (query pos - key pos): kept below 2^62.
    constexpr std::size_t max_position = std::size_t{1} << 62;
    if (query_start >= max_position || key_start >= max_position)
        throw std::invalid_argument(where + ": expected query_start and key_start < 2^62, got " +
                                    std::to_string(query_start) + " and " + std::to_string(key_start));
    if (!valid(backend))
        throw std::invalid_argument(where + ": backend holds " +
                                    std::to_string(static_cast<int>(backend)) +
                                    ", not automatic, step, tiled or fast");
    if (dropout_backend != nn::BernoulliBackend::portable && dropout_backend != nn::BernoulliBackend::mkl)
        throw std::invalid_argument(where + ": dropout_backend holds " +
                                    std::to_string(static_cast<int>(dropout_backend)) +
                                    ", not portable or mkl");
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

// ------------------------------------------------------------------------- checks

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
    if (k.B != q.B || k.hd != q.hd || k.H == 0 || q.H % k.H != 0)
        throw_shape_error(where + " (key)",
                          "[" + std::to_string(q.B) + ", H_kv dividing " + std::to_string(q.H) +
                              ", Tk, " + std::to_string(q.hd) + "]",
                          Shape{k.B, k.H, k.T, k.hd});
    if (v.B != k.B || v.H != k.H || v.T != k.T)
        throw_shape_error(where + " (value)",
                          "[" + std::to_string(k.B) + ", " + std::to_string(k.H) + ", " +
                              std::to_string(k.T) + ", Ev]",
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
    // A window wider than any query's reach (query_start + Tq back to position 0) hides
    // nothing: dropped, so that no later difference compares with a huge window.
    p.window = o.window > o.query_start + p.Tq ? 0 : o.window;
    p.divide = o.scale.op == ScoreScale::Op::divide;
    p.scale = o.scale.value != 0.0f ? o.scale.value
              : p.divide            ? std::sqrt(static_cast<float>(p.E))
                                    : 1.0f / std::sqrt(static_cast<float>(p.E));
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
    return m;
}

Tensor dropout_noise(const SDPAProblem& p) {
    const double dp = p.options->dropout_p;
    const Shape shape{p.B, p.H, p.Tq, p.Tk};
    if (dp == 0.0 || numel(shape) == 0) return Tensor();
    if (dp == 1.0) return attn::zeros(shape);  // Dropout(p=1) is x * 0 and draws nothing
    const nn::Dropout dropout(dp, p.options->dropout_backend);
    Generator& gen = p.options->generator ? *p.options->generator : default_generator();
    Tensor noise = dropout.keep_mask(shape, gen);
    noise *= 1.0f / static_cast<float>(1.0 - dp);  // as nn::Dropout: keep * (1 / float(1 - p))
    return noise;
}

}  // namespace detail

// ------------------------------------------------------------------------- the kernels

namespace {

using detail::SDPAProblem;

// The output of head (b, h) and its row stride: merged [B, Tq, H * Ev] or [B, H, Tq, Ev].
struct OutLayout {
    float* data;
    bool merged;
    float* head(const SDPAProblem& p, std::size_t b, std::size_t h) const {
        return merged ? data + (b * p.Tq * p.H + h) * p.Ev : data + (b * p.H + h) * p.Tq * p.Ev;
    }
    std::size_t ld(const SDPAProblem& p) const { return merged ? p.H * p.Ev : p.Ev; }
};

// Runs the fast or tiled kernel over every (batch, key/value head), each with the group of
// query heads that shares it. `lse` ([B, H, Tq]) is filled when not null.
void run_kernels(const SDPAProblem& p, SDPABackend backend, const OutLayout& out,
                 const Tensor& noise, float* lse) {
    if ((p.Ev == 0 && !lse) || p.B == 0 || p.H == 0 || p.Tq == 0) return;  // nothing to write
    const fast::HeadMask mask = p.head_mask();
    const std::size_t tasks = p.B * p.Hkv, group = p.group();
    const double flops = 2.0 * double(p.B * p.H) * double(p.Tq) * double(p.Tk) * double(p.E + p.Ev);
    const bool large = flops >= 8e6 && tasks > 1 && !omp_in_parallel();
    std::exception_ptr error;
#pragma omp parallel if (large)
    {
        thread_local fast::HeadWorkspace ws;
        thread_local fast::TiledWorkspace tws;
        std::vector<fast::QueryHead> heads;
#pragma omp for schedule(dynamic, 1)
        for (std::size_t t = 0; t < tasks; ++t) {
            try {  // no exception may leave an OpenMP region: it is carried out and rethrown
                heads.resize(group);
                const std::size_t b = t / p.Hkv, g = t % p.Hkv;
                const fast::HeadArgs args{
                    .K = p.k.data + b * p.k.stride_b + g * p.k.stride_h, .ldk = p.k.stride_t,
                    .V = p.v.data + b * p.v.stride_b + g * p.v.stride_h, .ldv = p.v.stride_t,
                    .ldq = p.q.stride_t, .ldo = out.ld(p), .Tq = p.Tq, .Tk = p.Tk, .hd = p.E,
                    .dv = p.Ev};
                for (std::size_t r = 0; r < group; ++r) {
                    const std::size_t h = g * group + r;
                    fast::QueryHead& q = heads[r];
                    q.Q = p.q.data + b * p.q.stride_b + h * p.q.stride_h;
                    q.O = out.head(p, b, h);
                    q.allow = p.allow.data ? &p.allow.at(b, h, 0, 0) : nullptr;
                    q.bias = p.bias.data ? &p.bias.at(b, h, 0, 0) : nullptr;
                    q.noise = noise.dimension() != 0 ? noise.data() + (b * p.H + h) * p.Tq * p.Tk : nullptr;
                    q.logsumexp = lse ? lse + (b * p.H + h) * p.Tq : nullptr;
                }
                if (backend == SDPABackend::tiled)
                    fast::tiled_attend_head(args, mask, heads.data(), group,
                                            {p.options->block_q, p.options->block_k}, tws);
                else
                    fast::attend_head(args, mask, heads.data(), group, ws);
            } catch (...) {
#pragma omp critical
                if (!error) error = std::current_exception();
            }
        }
    }
    if (error) std::rethrow_exception(error);
}

SDPABackend resolve(SDPABackend b) { return b == SDPABackend::automatic ? default_sdpa_backend() : b; }

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
    const bool heads_fit = rank < 3 || (sk.size() == rank && sk[rank - 3] != 0 &&
                                        sq[rank - 3] % sk[rank - 3] == 0);
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

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const SDPAOptions& options) {
    return scaled_dot_product_attention_forward(query, key, value, options).output;
}

SDPAForward scaled_dot_product_attention_forward(const Tensor& query, const Tensor& key,
                                                 const Tensor& value, const SDPAOptions& options) {
    const std::string where = "scaled_dot_product_attention";
    const Views w = views(where, query, key, value);
    const SDPAProblem p = detail::make_problem(where, w.q, w.k, w.v, options, w.rank);
    check_allocation(where, Shape{p.B, p.H, p.Tq, p.Ev});
    check_allocation(where + " (logsumexp)", Shape{p.B, p.H, p.Tq});
    SDPAForward f;
    const SDPABackend backend = resolve(options.backend);
    if (backend == SDPABackend::step) {
        SDPASteps st = detail::step_attention(p, &f.dropout_noise);
        f.logsumexp = detail::step_logsumexp(p, st);
        f.output = std::move(st.output);
    } else {
        f.dropout_noise = detail::dropout_noise(p);
        f.output = Tensor::from_shape({p.B, p.H, p.Tq, p.Ev});
        f.logsumexp = Tensor::from_shape({p.B, p.H, p.Tq});
        run_kernels(p, backend, {f.output.data(), false}, f.dropout_noise, f.logsumexp.data());
    }
    to_rank(f.output, w.rank);
    return f;
}

namespace {

// attend's body: checks, then the backend, writing merged [B, Tq, H * Ev] into `out` (when
// null, into a tensor it allocates after the checks, which it returns).
Tensor attend_merged(const HeadsView& query, const HeadsView& key, const HeadsView& value,
                     float* out, const SDPAOptions& options, AttendSaved* saved = nullptr) {
    const SDPAProblem p = detail::make_problem("attend", query, key, value, options);
    const Shape shape{p.B, p.Tq, checked_mul(p.H, p.Ev, "attend (H * Ev)")};
    check_allocation("attend", shape);
    Tensor result;
    if (!out) {
        result = Tensor::from_shape(shape);
        out = result.data();
    }
    // Nothing to compute (an empty batch, head set, query or value width) and no dropout draw
    // to make: return at once, not after walking 2^40 empty rows.
    if (numel(shape) == 0 && (options.dropout_p == 0.0 || p.B == 0 || p.H == 0 || p.Tq == 0 || p.Tk == 0))
        return result;
    const SDPABackend backend = resolve(options.backend);
    if (backend == SDPABackend::step) {
        const SDPASteps st = detail::step_attention(p, saved ? &saved->dropout_noise : nullptr);
        if (saved) saved->logsumexp = detail::step_logsumexp(p, st);
        const Tensor& o = st.output;  // [B, H, Tq, Ev]
        const HeadsView heads = HeadsView::of(o);
        for (std::size_t b = 0; b < p.B; ++b)  // .transpose(1, 2).contiguous()
            for (std::size_t t = 0; t < p.Tq; ++t)
                for (std::size_t h = 0; h < p.H; ++h)
                    std::copy_n(heads.data + b * heads.stride_b + h * heads.stride_h + t * heads.stride_t,
                                p.Ev, out + ((b * p.Tq + t) * p.H + h) * p.Ev);
        return result;
    }
    Tensor noise = detail::dropout_noise(p);
    float* lse = nullptr;
    if (saved) {
        check_allocation("attend (logsumexp)", Shape{p.B, p.H, p.Tq});
        saved->logsumexp = Tensor::from_shape({p.B, p.H, p.Tq});
        lse = saved->logsumexp.data();
    }
    run_kernels(p, backend, {out, true}, noise, lse);
    if (saved) saved->dropout_noise = std::move(noise);
    return result;
}

}  // namespace

Tensor attend(const HeadsView& query, const HeadsView& key, const HeadsView& value,
              const SDPAOptions& options) {
    return attend_merged(query, key, value, nullptr, options);
}

void attend(const HeadsView& query, const HeadsView& key, const HeadsView& value, float* out,
            const SDPAOptions& options) {
    if (!out) throw std::invalid_argument("attend: expected an output buffer, got null");
    attend_merged(query, key, value, out, options);
}

void attend(const HeadsView& query, const HeadsView& key, const HeadsView& value, float* out,
            const SDPAOptions& options, AttendSaved& saved) {
    if (!out) throw std::invalid_argument("attend: expected an output buffer, got null");
    attend_merged(query, key, value, out, options, &saved);
}

SDPASteps scaled_dot_product_attention_steps(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const SDPAOptions& options) {
    const std::string where = "scaled_dot_product_attention_steps";
    const Views w = views(where, query, key, value);
    SDPASteps st = detail::step_attention(detail::make_problem(where, w.q, w.k, w.v, options, w.rank));
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
    const SDPABackend backend = resolve(options.backend);
    // What the tiled backward reads: the forward's output and log-sum-exp, as 4-D views.
    HeadsView O{};
    const float* lse = nullptr;
    if (backend == SDPABackend::tiled) {
        check_same_shape(where + " (saved.output)", want, shape_of(saved.output));
        if (numel(shape_of(saved.logsumexp)) != p.B * p.H * p.Tq)  // [B, H, Tq], as the forward gave it
            throw_shape_error(where + " (saved.logsumexp)", shape_str(Shape{p.B, p.H, p.Tq}),
                              shape_of(saved.logsumexp));
        O = {saved.output.data(), p.B, p.H, p.Tq, p.Ev, p.H * p.Tq * p.Ev, p.Tq * p.Ev, p.Ev};
        lse = saved.logsumexp.data();
    }
    check_allocation(where + " (grad_query)", Shape{p.B, p.H, p.Tq, p.E});
    check_allocation(where + " (grad_key)", Shape{p.B, p.Hkv, p.Tk, std::max(p.E, p.Ev)});
    SDPAGradients g{Tensor::from_shape({p.B, p.H, p.Tq, p.E}), Tensor::from_shape({p.B, p.Hkv, p.Tk, p.E}),
                    Tensor::from_shape({p.B, p.Hkv, p.Tk, p.Ev})};
    const auto heads = [](Tensor& t) {
        const Shape s = shape_of(t);
        return detail::GradHeads{t.data(), s[1] * s[2] * s[3], s[2] * s[3], s[3]};
    };
    detail::run_backward(p, backend, HeadsView::of(dO), O, lse, noise, heads(g.grad_query),
                         heads(g.grad_key), heads(g.grad_value));
    to_rank(g.grad_query, w.rank);
    to_rank(g.grad_key, w.rank);
    to_rank(g.grad_value, w.rank);
    return g;
}

}  // namespace attn
