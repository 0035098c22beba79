// The gated delta rule (recurrent and chunked) and the Gated DeltaNet layer (deltanet.hpp).
#include "attn/modules/deltanet.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "attn/core/elementwise.hpp"
#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {

const char* const kDeltaNetModule = "GatedDeltaNet";

// One head's sequence, as pointers and token strides (in floats): q and k rows of dk, v and
// beta rows of dv, alpha_log one float per token, the outputs rows of dv.
struct HeadSequence {
    const float* q;
    const float* k;
    const float* v;
    const float* beta;
    const float* alpha_log;
    float* y;
    std::size_t qk_stride, v_stride, alpha_stride, y_stride;
};

// His loop over the tokens of one head, S [dk, dv] updated in place. Each line is one of his
// tensor operations, with PyTorch's order for the two sums over the key dimension.
void recurrent_head(const HeadSequence& h, std::size_t T, std::size_t dk, std::size_t dv, float* S) {
    thread_local std::vector<float> prod, kv_mem, delta;
    prod.resize(dk * dv);
    kv_mem.resize(dv);
    delta.resize(dv);
    for (std::size_t t = 0; t < T; ++t) {
        const float* k = h.k + t * h.qk_stride;
        const float* q = h.q + t * h.qk_stride;
        const float* v = h.v + t * h.v_stride;
        const float* b = h.beta + t * h.v_stride;
        const float a = exp_torch(h.alpha_log[t * h.alpha_stride]);  // alpha = alpha_log.exp()
        for (std::size_t i = 0; i < dk * dv; ++i) S[i] = S[i] * a;   // S = S * a_t
        for (std::size_t i = 0; i < dk; ++i)                          // (S * k_t.unsqueeze(-1))
            for (std::size_t j = 0; j < dv; ++j) prod[i * dv + j] = S[i * dv + j] * k[i];
        sum_rows_torch(prod.data(), dk, dv, kv_mem.data());             // .sum(dim=-2)
        for (std::size_t j = 0; j < dv; ++j) delta[j] = (v[j] - kv_mem[j]) * b[j];
        for (std::size_t i = 0; i < dk; ++i)                          // S + k_t delta^T
            for (std::size_t j = 0; j < dv; ++j) S[i * dv + j] = S[i * dv + j] + k[i] * delta[j];
        for (std::size_t i = 0; i < dk; ++i)                          // (S * q_t.unsqueeze(-1))
            for (std::size_t j = 0; j < dv; ++j) prod[i * dv + j] = S[i * dv + j] * q[i];
        sum_rows_torch(prod.data(), dk, dv, h.y + t * h.y_stride);      // .sum(dim=-2)
    }
}

// The chunkwise form of one head (deltanet.hpp), inputs contiguous per token (strides dk, dv).
void chunked_head(const HeadSequence& h, std::size_t T, std::size_t dk, std::size_t dv, float* S,
                  std::size_t C) {
    std::vector<float> g(C), KK(C * C), QK(C * C), KS(C * dv), QS(C * dv), delta(C * dv), decay(C);
    for (std::size_t c0 = 0; c0 < T; c0 += C) {
        const std::size_t n = std::min(C, T - c0);
        const float* K = h.k + c0 * dk;
        const float* Q = h.q + c0 * dk;
        for (std::size_t t = 0; t < n; ++t) g[t] = (t ? g[t - 1] : 0.0f) + h.alpha_log[c0 + t];
        // the parallel part: K K^T, Q K^T, K S0, Q S0 over the whole chunk
        gemm_rowmajor(K, K, KK.data(), n, dk, n, true);
        gemm_rowmajor(Q, K, QK.data(), n, dk, n, true);
        gemm_rowmajor(K, S, KS.data(), n, dk, dv, false);
        gemm_rowmajor(Q, S, QS.data(), n, dk, dv, false);
        // the triangular solve: delta_t needs delta_i for i < t
        for (std::size_t t = 0; t < n; ++t) {
            const float* v = h.v + (c0 + t) * dv;
            const float* b = h.beta + (c0 + t) * dv;
            float* d = delta.data() + t * dv;
            const float et = std::exp(g[t]);
            for (std::size_t j = 0; j < dv; ++j) d[j] = v[j] - et * KS[t * dv + j];
            for (std::size_t i = 0; i < t; ++i) {
                const float w = std::exp(g[t] - g[i]) * KK[t * n + i];
                for (std::size_t j = 0; j < dv; ++j) d[j] -= w * delta[i * dv + j];
            }
            for (std::size_t j = 0; j < dv; ++j) d[j] *= b[j];
        }
        // the outputs, again a product over the chunk (lower triangle of Q K^T)
        for (std::size_t t = 0; t < n; ++t) {
            float* y = h.y + (c0 + t) * dv;
            const float et = std::exp(g[t]);
            for (std::size_t j = 0; j < dv; ++j) y[j] = et * QS[t * dv + j];
            for (std::size_t i = 0; i <= t; ++i) {
                const float w = std::exp(g[t] - g[i]) * QK[t * n + i];
                for (std::size_t j = 0; j < dv; ++j) y[j] += w * delta[i * dv + j];
            }
        }
        // the state handed to the next chunk
        const float last = g[n - 1];
        for (std::size_t t = 0; t < n; ++t) decay[t] = std::exp(last - g[t]);
        const float eC = std::exp(last);
        for (std::size_t i = 0; i < dk; ++i)
            for (std::size_t j = 0; j < dv; ++j) {
                float s = eC * S[i * dv + j];
                for (std::size_t t = 0; t < n; ++t) s += decay[t] * K[t * dk + i] * delta[t * dv + j];
                S[i * dv + j] = s;
            }
    }
}

// Checks the rule's tensors; returns {b, H, T, dk, dv} and prepares `state`.
std::array<std::size_t, 5> rule_shapes(const char* where, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& alpha_log, const Tensor& beta,
                                       Tensor& state) {
    const Shape sq = shape_of(q);
    if (sq.size() != 4) throw_shape_error(std::string(where) + " (queries)", "[b, H, T, dk]", sq);
    const std::size_t b = sq[0], H = sq[1], T = sq[2], dk = sq[3];
    check_same_shape(std::string(where) + " (keys)", sq, shape_of(k));
    const Shape sv = shape_of(v);
    if (sv.size() != 4 || sv[0] != b || sv[1] != H || sv[2] != T)
        throw_shape_error(std::string(where) + " (values)", shape_str(Shape{b, H, T, sv.empty() ? 0 : sv.back()}), sv);
    const std::size_t dv = sv[3];
    check_same_shape(std::string(where) + " (beta)", sv, shape_of(beta));
    check_same_shape(std::string(where) + " (alpha_log)", Shape{b, H, T}, shape_of(alpha_log));
    const Shape state_shape{b, H, dk, dv};
    if (state.dimension() == 0) {
        check_allocation(std::string(where) + " (state)", state_shape);
        state = attn::zeros(state_shape);
    } else {
        check_same_shape(std::string(where) + " (state)", state_shape, shape_of(state));
    }
    return {b, H, T, dk, dv};
}

template <class Head>
Tensor run_rule(const char* where, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& alpha_log,
                const Tensor& beta, Tensor& state, Head head) {
    const auto [b, H, T, dk, dv] = rule_shapes(where, q, k, v, alpha_log, beta, state);
    Tensor y = attn::zeros({b, H, T, dv});
    for (std::size_t bh = 0; bh < b * H; ++bh) {
        const HeadSequence s{q.data() + bh * T * dk, k.data() + bh * T * dk, v.data() + bh * T * dv,
                             beta.data() + bh * T * dv, alpha_log.data() + bh * T, y.data() + bh * T * dv,
                             dk, dv, 1, dv};
        head(s, T, dk, dv, state.data() + bh * dk * dv);
    }
    return y;
}

}  // namespace

Tensor gated_delta_rule(const Tensor& queries, const Tensor& keys, const Tensor& values,
                        const Tensor& alpha_log, const Tensor& beta, Tensor& state) {
    return run_rule("gated_delta_rule", queries, keys, values, alpha_log, beta, state, recurrent_head);
}

Tensor gated_delta_rule_chunked(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const Tensor& alpha_log, const Tensor& beta, Tensor& state,
                                std::size_t chunk_size) {
    if (chunk_size == 0) throw std::invalid_argument("gated_delta_rule_chunked: expected chunk_size > 0, got 0");
    return run_rule("gated_delta_rule_chunked", queries, keys, values, alpha_log, beta, state,
                    [&](const HeadSequence& h, std::size_t T, std::size_t dk, std::size_t dv, float* S) {
                        chunked_head(h, T, dk, dv, S, std::min(chunk_size, std::max<std::size_t>(T, 1)));
                    });
}

// ---------------------------------------------------------------- the state

void DeltaNetState::validate(const std::string& where) const {
    if (S.dimension() == 0) {
        if (pos != 0)
            throw std::invalid_argument(where + ": no state S but pos = " + std::to_string(pos));
        return;
    }
    const Shape s = shape_of(S);
    if (s.size() != 4 || s[2] != s[3]) throw_shape_error(where + " (S)", "[b, num_heads, head_dim, head_dim]", s);
}

std::size_t DeltaNetState::bytes() const {
    validate();
    return S.dimension() == 0 ? 0 : S.size() * sizeof(float);
}

void DeltaNetState::reset() {
    S = Tensor();
    pos = 0;
}

// ---------------------------------------------------------------- the layer

void GatedDeltaNet::validate(const AttentionConfig& c) {
    const std::string where = kDeltaNetModule;
    c.check(where, {ConfigField::d_in, ConfigField::d_out, ConfigField::dropout,
                    ConfigField::num_heads, ConfigField::qkv_bias, ConfigField::backend});
    require_weight_size(where, "d_out", c.d_out, "d_in", c.d_in);
    require_weight_size(where, "d_out", c.d_out, "d_out", c.d_out);
}

namespace {
// `torch.log(torch.empty(n).uniform_(0, 16))`: n draws.
Tensor a_log_init(std::size_t n, Generator& gen) {
    Tensor a = Tensor::from_shape({n});
    uniform_(a, 0.0, 16.0, gen);
    return attn::log(a);
}
}  // namespace

GatedDeltaNet::GatedDeltaNet(const GatedDeltaNetConfig& c, Generator& gen)
    : num_heads((validate(c), c.num_heads)),
      head_dim(c.d_out / c.num_heads),
      W_query(c.d_in, c.d_out, c.qkv_bias, gen),
      W_key(c.d_in, c.d_out, c.qkv_bias, gen),
      W_value(c.d_in, c.d_out, c.qkv_bias, gen),
      W_gate(c.d_in, c.d_out, false, gen),
      W_beta(c.d_in, c.d_out, false, gen),
      W_alpha(c.d_in, c.num_heads, false, gen),
      dt_bias(attn::ones({c.num_heads})),
      A_log(a_log_init(c.num_heads, gen)),
      norm(c.d_out / c.num_heads, 1e-6),
      out_proj(c.d_out, c.d_out, true, gen),
      dropout(c.dropout, c.backend) {}

Shape GatedDeltaNet::check(const Tensor& x) const {
    const std::string where = kDeltaNetModule;
    // The widths most fields agree on: a replaced layer (or head field) is the one named.
    const std::size_t in = agreed_width({width_of(W_query, true), width_of(W_key, true), width_of(W_value, true),
                                         width_of(W_gate, true), width_of(W_beta, true), width_of(W_alpha, true)});
    const std::size_t d = agreed_width({width_of(W_query), heads_width(num_heads, head_dim), width_of(W_key),
                                        width_of(W_value), width_of(W_gate), width_of(W_beta), width_of(out_proj, true)});
    check_linear(where, "W_query", W_query, in, d);
    check_heads(where, num_heads, head_dim, d);
    check_linear(where, "W_key", W_key, in, d);
    check_linear(where, "W_value", W_value, in, d);
    check_linear(where, "W_gate", W_gate, in, d);
    check_linear(where, "W_beta", W_beta, in, d);
    check_linear(where, "W_alpha", W_alpha, in, num_heads);
    check_output_linear(where, "out_proj", out_proj, d, d);
    const Shape s = check_tokens(where, x, in);
    if (shape_of(dt_bias) != Shape{num_heads})
        throw_shape_error(where + " (dt_bias)", "[" + std::to_string(num_heads) + "]", shape_of(dt_bias));
    if (shape_of(A_log) != Shape{num_heads})
        throw_shape_error(where + " (A_log)", "[" + std::to_string(num_heads) + "]", shape_of(A_log));
    norm.check_parameters();
    if (norm.normalized_shape() != head_dim)
        throw_shape_error(where + " (norm.weight)", "[" + std::to_string(head_dim) + "]", shape_of(norm.weight));
    check_dropout(where, dropout);
    return s;
}

namespace {

// The gates and normalised queries/keys of `rows` tokens, in the projections' layout
// [rows, H, hd] (alpha_log [rows, H]), into scratch slots 0..5.
struct Projected {
    float *q, *k, *v, *beta, *alpha_log, *gate;
};

Projected project(const GatedDeltaNet& m, const Tensor& x, std::size_t rows) {
    const std::size_t d = m.d_out(), H = m.num_heads, hd = m.head_dim;
    const std::size_t n = checked_mul(rows, d, "GatedDeltaNet (b * T * d_out)");
    Projected p{detail::scratch(0, n), detail::scratch(1, n), detail::scratch(2, n), detail::scratch(3, n),
                detail::scratch(4, rows * H), detail::scratch(5, n)};
    m.W_query.forward_into(x.data(), rows, p.q);
    m.W_key.forward_into(x.data(), rows, p.k);
    m.W_value.forward_into(x.data(), rows, p.v);
    m.W_beta.forward_into(x.data(), rows, p.beta);
    sigmoid_into(p.beta, n, p.beta);  // beta = torch.sigmoid(self.W_beta(x))
    // alpha_log = -self.A_log.exp().view(1, 1, -1) * F.softplus(self.W_alpha(x) + self.dt_bias)
    m.W_alpha.forward_into(x.data(), rows, p.alpha_log);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t h = 0; h < H; ++h) p.alpha_log[r * H + h] = p.alpha_log[r * H + h] + m.dt_bias.data()[h];
    softplus_into(p.alpha_log, rows * H, p.alpha_log);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t h = 0; h < H; ++h)
            p.alpha_log[r * H + h] = -exp_torch(m.A_log.data()[h]) * p.alpha_log[r * H + h];
    m.W_gate.forward_into(x.data(), rows, p.gate);
    // queries = l2norm(queries) / sqrt(head_dim); keys = l2norm(keys)
    float* squares = detail::scratch(6, hd);
    const float root = std::sqrt(static_cast<float>(hd));
    for (std::size_t r = 0; r < rows * H; ++r)
        for (float* row : {p.q + r * hd, p.k + r * hd}) {
            for (std::size_t i = 0; i < hd; ++i) squares[i] = row[i] * row[i];
            const float inv = 1.0f / std::sqrt(sum_torch(squares, hd) + 1e-6f);
            for (std::size_t i = 0; i < hd; ++i) row[i] = row[i] * inv;
            if (row == p.q + r * hd)
                for (std::size_t i = 0; i < hd; ++i) row[i] = row[i] / root;
        }
    return p;
}

}  // namespace

Tensor GatedDeltaNet::run(const Tensor& x, float* S, Generator& gen) const {
    const Shape s = shape_of(x);
    const std::size_t b = s[0], T = s[1], rows = b * T, d = d_out(), H = num_heads, hd = head_dim;
    const Projected p = project(*this, x, rows);
    float* context = detail::scratch(7, rows * d);  // [b, T, H, hd]
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t off = i * T * d + h * hd;
            const HeadSequence seq{p.q + off, p.k + off, p.v + off, p.beta + off, p.alpha_log + i * T * H + h,
                                   context + off, d, d, H, d};
            recurrent_head(seq, T, hd, hd, S + (i * H + h) * hd * hd);
        }
    norm.forward_into(context, rows * H, context);                         // self.norm(context)
    silu_into(p.gate, rows * d, p.gate);                                   // F.silu(gate)
    for (std::size_t i = 0; i < rows * d; ++i) context[i] = context[i] * p.gate[i];
    Tensor y = Tensor::from_shape({b, T, d});
    if (dropout.training && dropout.p > 0.0) {
        Tensor c = Tensor::from_shape({b, T, d});
        std::copy_n(context, rows * d, c.data());
        c = dropout(c, gen);
        out_proj.forward_into(c.data(), rows, y.data());
    } else {
        out_proj.forward_into(context, rows, y.data());
    }
    return y;
}

Tensor GatedDeltaNet::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    const std::size_t n = checked_mul(checked_mul(s[0], num_heads, "GatedDeltaNet (state)"),
                                      checked_mul(head_dim, head_dim, "GatedDeltaNet (state)"), "GatedDeltaNet (state)");
    // The zero state lives in a workspace of its own (not a scratch slot the forward uses).
    thread_local std::vector<float> state;
    state.assign(n, 0.0f);
    return run(x, state.data(), gen);
}

Tensor GatedDeltaNet::forward(const Tensor& x, DeltaNetState& state, Generator& gen) const {
    const std::string where = kDeltaNetModule;
    const Shape s = check(x);
    state.validate(where + " (state)");
    const Shape state_shape{s[0], num_heads, head_dim, head_dim};
    if (state.S.dimension() != 0 && shape_of(state.S) != state_shape)
        throw_shape_error(where + " (state.S)", shape_str(state_shape), shape_of(state.S));
    const std::size_t end = checked_add(state.pos, s[1], "GatedDeltaNet (state.pos + T)");
    if (state.S.dimension() == 0) {
        check_allocation(where + " (state)", state_shape);
        state.S = attn::zeros(state_shape);
    }
    Tensor y = run(x, state.S.data(), gen);
    state.pos = end;
    return y;
}

GatedDeltaNet::Gates GatedDeltaNet::gates(const Tensor& x) const {
    const Shape s = check(x);
    const std::size_t b = s[0], T = s[1], H = num_heads, hd = head_dim;
    const Projected p = project(*this, x, b * T);
    // [b, T, H, w] -> [b, H, T, w]
    const auto heads = [&](const float* src, std::size_t w) {
        Tensor t = Tensor::from_shape({b, H, T, w});
        for (std::size_t i = 0; i < b; ++i)
            for (std::size_t tok = 0; tok < T; ++tok)
                for (std::size_t h = 0; h < H; ++h)
                    std::copy_n(src + ((i * T + tok) * H + h) * w, w, t.data() + ((i * H + h) * T + tok) * w);
        return t;
    };
    Gates g{heads(p.q, hd), heads(p.k, hd), heads(p.v, hd), heads(p.beta, hd), heads(p.alpha_log, 1)};
    g.alpha_log = attn::view(g.alpha_log, {static_cast<long>(b), static_cast<long>(H), static_cast<long>(T)});
    return g;
}

}  // namespace attn
