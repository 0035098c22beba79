#include "attn/attention/efficient.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <xtensor/xmanipulation.hpp>

#include "attn/attention/attention.hpp"
#include "attn/core/functional.hpp"

namespace attn {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

long to_long(std::size_t n) { return static_cast<long>(n); }

std::size_t heads_of(const std::string& where, std::size_t d_out, std::size_t num_heads) {
    require_divisible(where, "d_out", d_out, "num_heads", num_heads);
    return d_out / num_heads;
}

Shape check_x(const std::string& where, const Tensor& x, std::size_t d_in) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != d_in)
        throw_shape_error(where, "[b, T, " + std::to_string(d_in) + "]", s);
    return s;
}

// [b, T, H * hd] -> [b, H, T, hd]
Tensor split_heads(const Tensor& y, long b, long T, long H, long hd) {
    return attn::transpose(attn::view(y, {b, T, H, hd}), 1, 2);
}

// [b, H, T, hd] -> [b, T, H * hd]
Tensor merge_heads(const Tensor& y, long b, long T, long d) {
    return attn::view(attn::transpose(y, 1, 2), {b, T, d});
}

Tensor rows(const Tensor& w, std::size_t begin, std::size_t end) {
    return attn::slice(w, 0, to_long(begin), to_long(end));
}

void check_b(const std::string& where, const Tensor& A, const Tensor& B, std::size_t a_dim,
             std::size_t b_dim) {
    const Shape sa = shape_of(A), sb = shape_of(B);
    if (sa.size() != 4 || sb.size() != 4 || sa[0] != sb[0] || sa[1] != sb[1] ||
        sa[a_dim] != sb[b_dim])
        throw std::invalid_argument(where + ": shapes " + shape_str(sa) + " and " +
                                    shape_str(sb) + " do not fit");
}

}  // namespace

// ------------------------------------------------------------------------- combined QKV

void MultiHeadAttentionCombinedQKVConfig::validate() const {
    const std::string where = "MultiHeadAttentionCombinedQKV";
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    heads_of(where, d_out, num_heads);
    require_positive(where, "context_length", context_length);
}

MultiHeadAttentionCombinedQKV::MultiHeadAttentionCombinedQKV(
    const MultiHeadAttentionCombinedQKVConfig& config, Generator& gen)
    : num_heads((config.validate(), config.num_heads)),
      head_dim(config.d_out / config.num_heads),
      qkv(config.d_in, 3 * config.d_out, config.qkv_bias, gen),
      proj(config.d_out, config.d_out, true, gen),
      mask(attn::triu(attn::ones({config.context_length, config.context_length}), 1)),
      kernel(config.kernel) {}

MultiHeadAttentionCombinedQKV::MultiHeadAttentionCombinedQKV(nn::Linear qkv_, nn::Linear proj_,
                                                             std::size_t context_length,
                                                             std::size_t num_heads_,
                                                             AttentionKernel kernel_)
    : num_heads(num_heads_), head_dim(0), qkv(std::move(qkv_)), proj(std::move(proj_)),
      kernel(kernel_) {
    const std::size_t d_out = proj.out_features();
    check_same_shape("MultiHeadAttentionCombinedQKV (proj)", Shape{d_out, d_out},
                     shape_of(proj.weight));
    if (qkv.out_features() != 3 * d_out)
        throw_shape_error("MultiHeadAttentionCombinedQKV (qkv)",
                          "[" + std::to_string(3 * d_out) + ", d_in]", shape_of(qkv.weight));
    head_dim = heads_of("MultiHeadAttentionCombinedQKV", d_out, num_heads);
    require_positive("MultiHeadAttentionCombinedQKV", "context_length", context_length);
    mask = attn::triu(attn::ones({context_length, context_length}), 1);
}

Tensor MultiHeadAttentionCombinedQKV::operator()(const Tensor& x) const {
    const std::string where = "MultiHeadAttentionCombinedQKV";
    const Shape s = check_x(where, x, qkv.in_features());
    const BoolTensor causal = causal_mask_for(where, mask, s[1]);
    const long b = to_long(s[0]), T = to_long(s[1]), H = to_long(num_heads), hd = to_long(head_dim);
    // [b, T, 3 d_out] -> [b, T, 3, H, hd] -> permute(2, 0, 3, 1, 4) -> [3, b, H, T, hd]
    const Tensor qkv5 = attn::view(qkv(x), {b, T, 3, H, hd});
    const Tensor permuted = xt::transpose(qkv5, {2, 0, 3, 1, 4});
    const Tensor q = attn::select(permuted, 0), k = attn::select(permuted, 1),
                 v = attn::select(permuted, 2);
    Tensor context;  // [b, H, T, hd]
    switch (kernel) {
        case AttentionKernel::matmul_softmax: {
            Tensor scores = attn::masked_fill(attn::matmul(q, attn::transpose(k, -2, -1)), causal, neg_inf);
            const float root = static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
            context = attn::matmul(attn::softmax(Tensor(scores / root), -1), v);
            break;
        }
        case AttentionKernel::sdpa_is_causal:
            context = attn::scaled_dot_product_attention(q, k, v, std::nullopt, true);
            break;
        case AttentionKernel::sdpa_attn_mask:
            context = attn::scaled_dot_product_attention(q, k, v, BoolTensor(!causal), false);
            break;
        case AttentionKernel::tiled:
            context = flash::attention(q, k, v, {.block_q = 64, .block_k = 64, .is_causal = true});
            break;
    }
    return proj(merge_heads(context, b, T, to_long(proj.out_features())));
}

// ------------------------------------------------------------------------- einsum

Tensor einsum_bnd_di(const Tensor& x, const Tensor& W) {
    const Shape sx = shape_of(x), sw = shape_of(W);
    if (sx.size() != 3 || sw.size() != 2 || sx[2] != sw[0])
        throw std::invalid_argument("einsum(\"bnd,di->bni\"): shapes " + shape_str(sx) + " and " +
                                    shape_str(sw) + " do not fit");
    const std::size_t rows = sx[0] * sx[1], D = sx[2], I = sw[1];
    Tensor y = xt::zeros<float>(Shape{sx[0], sx[1], I});
    // Each output is the sum over d in order; the loop over i inside runs the I sums side
    // by side (the same additions in the same order, vectorised across outputs).
    for (std::size_t r = 0; r < rows; ++r) {
        float* yr = y.data() + r * I;
        for (std::size_t d = 0; d < D; ++d) {
            const float a = x.data()[r * D + d];
            const float* w = W.data() + d * I;
            for (std::size_t i = 0; i < I; ++i) yr[i] += a * w[i];
        }
    }
    return y;
}

Tensor einsum_bhnd_bhmd(const Tensor& Q, const Tensor& K) {
    check_b("einsum(\"bhnd,bhmd->bhnm\")", Q, K, 3, 3);
    const Shape sq = shape_of(Q), sk = shape_of(K);
    const std::size_t BH = sq[0] * sq[1], n = sq[2], m = sk[2], D = sq[3];
    Tensor y = xt::zeros<float>(Shape{sq[0], sq[1], n, m});
    for (std::size_t g = 0; g < BH; ++g)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < m; ++j) {
                float acc = 0.0f;  // sum over d, in order
                for (std::size_t d = 0; d < D; ++d)
                    acc += Q.data()[(g * n + i) * D + d] * K.data()[(g * m + j) * D + d];
                y.data()[(g * n + i) * m + j] = acc;
            }
    return y;
}

Tensor einsum_bhnm_bhmd(const Tensor& A, const Tensor& V) {
    check_b("einsum(\"bhnm,bhmd->bhnd\")", A, V, 3, 2);
    const Shape sa = shape_of(A), sv = shape_of(V);
    const std::size_t BH = sa[0] * sa[1], n = sa[2], m = sa[3], D = sv[3];
    Tensor y = xt::zeros<float>(Shape{sa[0], sa[1], n, D});
    for (std::size_t g = 0; g < BH; ++g)
        for (std::size_t i = 0; i < n; ++i) {
            float* yi = y.data() + (g * n + i) * D;  // sums over m in order, side by side over d
            for (std::size_t j = 0; j < m; ++j) {
                const float a = A.data()[(g * n + i) * m + j];
                const float* vj = V.data() + (g * m + j) * D;
                for (std::size_t d = 0; d < D; ++d) yi[d] += a * vj[d];
            }
        }
    return y;
}

MHAEinsum::MHAEinsum(Tensor Wq, Tensor Wk, Tensor Wv, std::optional<Tensor> bq,
                     std::optional<Tensor> bk, std::optional<Tensor> bv, nn::Linear out,
                     std::size_t context_length, std::size_t num_heads_)
    : num_heads(num_heads_), head_dim(0), W_query(std::move(Wq)), W_key(std::move(Wk)),
      W_value(std::move(Wv)), bias_q(std::move(bq)), bias_k(std::move(bk)),
      bias_v(std::move(bv)), out_proj(std::move(out)) {
    check_rank("MHAEinsum (W_query)", shape_of(W_query), 2);
    check_same_shape("MHAEinsum (W_key)", shape_of(W_query), shape_of(W_key));
    check_same_shape("MHAEinsum (W_value)", shape_of(W_query), shape_of(W_value));
    const std::size_t d_out = W_query.shape()[1];
    for (const auto* b : {&bias_q, &bias_k, &bias_v})
        if (*b) check_same_shape("MHAEinsum (bias)", Shape{d_out}, shape_of(**b));
    check_same_shape("MHAEinsum (out_proj)", Shape{d_out, d_out}, shape_of(out_proj.weight));
    head_dim = heads_of("MHAEinsum", d_out, num_heads);
    require_positive("MHAEinsum", "context_length", context_length);
    mask = attn::triu(attn::ones({context_length, context_length}), 1);
}

Tensor MHAEinsum::operator()(const Tensor& x) const {
    const Shape s = check_x("MHAEinsum", x, W_query.shape()[0]);
    const BoolTensor causal = causal_mask_for("MHAEinsum", mask, s[1]);
    const long b = to_long(s[0]), T = to_long(s[1]), H = to_long(num_heads), hd = to_long(head_dim);
    auto project = [&](const Tensor& W, const std::optional<Tensor>& bias) {
        Tensor y = einsum_bnd_di(x, W);  // [b, T, d_out]
        if (bias) y += *bias;
        return split_heads(y, b, T, H, hd);  // [b, H, T, hd]
    };
    const Tensor Q = project(W_query, bias_q), K = project(W_key, bias_k), V = project(W_value, bias_v);
    const float root = static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
    Tensor scores = einsum_bhnd_bhmd(Q, K) / root;  // [b, H, T, T]
    scores = attn::masked_fill(scores, causal, neg_inf);
    const Tensor context = einsum_bhnm_bhmd(attn::softmax(scores, -1), V);  // [b, H, T, hd]
    return out_proj(merge_heads(context, b, T, to_long(W_query.shape()[1])));
}

// ------------------------------------------------------------------------- nn.MultiheadAttention

MultiheadAttention::MultiheadAttention(Tensor w, std::optional<Tensor> b, nn::Linear out,
                                       std::size_t num_heads_)
    : embed_dim(0), num_heads(num_heads_), in_proj_weight(std::move(w)),
      in_proj_bias(std::move(b)), out_proj(std::move(out)) {
    embed_dim = out_proj.out_features();
    const std::size_t E = embed_dim;
    check_same_shape("MultiheadAttention (out_proj)", Shape{E, E}, shape_of(out_proj.weight));
    check_rank("MultiheadAttention (in_proj_weight)", shape_of(in_proj_weight), 2);
    check_same_shape("MultiheadAttention (in_proj_weight)", Shape{3 * E, in_proj_weight.shape()[1]},
                     shape_of(in_proj_weight));
    if (in_proj_bias)
        check_same_shape("MultiheadAttention (in_proj_bias)", Shape{3 * E}, shape_of(*in_proj_bias));
    heads_of("MultiheadAttention", E, num_heads);
}

MultiheadAttentionOutput MultiheadAttention::operator()(const Tensor& query, const Tensor& key,
                                                        const Tensor& value,
                                                        const std::optional<BoolTensor>& attn_mask,
                                                        bool need_weights) const {
    const std::size_t E = embed_dim, d_in = in_proj_weight.shape()[1];
    const Shape sq = check_x("MultiheadAttention (query)", query, d_in);
    const Shape sk = check_x("MultiheadAttention (key)", key, d_in);
    check_same_shape("MultiheadAttention (value)", sk, shape_of(value));
    if (sk[0] != sq[0]) throw_shape_error("MultiheadAttention (key)", "[" + std::to_string(sq[0]) + ", S, E]", sk);
    if (attn_mask) check_same_shape("MultiheadAttention (attn_mask)", Shape{sq[1], sk[1]}, shape_of(*attn_mask));
    const long b = to_long(sq[0]), L = to_long(sq[1]), S = to_long(sk[1]);
    const long H = to_long(num_heads), hd = to_long(E / num_heads);
    auto in_proj = [&](const Tensor& x, std::size_t block) {  // rows block*E .. (block+1)*E-1
        std::optional<Tensor> bias;
        if (in_proj_bias) bias = rows(*in_proj_bias, block * E, (block + 1) * E);
        return nn::Linear(rows(in_proj_weight, block * E, (block + 1) * E), std::move(bias))(x);
    };
    const Tensor q = split_heads(in_proj(query, 0), b, L, H, hd);  // [b, H, L, hd]
    const Tensor k = split_heads(in_proj(key, 1), b, S, H, hd);    // [b, H, S, hd]
    const Tensor v = split_heads(in_proj(value, 2), b, S, H, hd);
    MultiheadAttentionOutput out;
    Tensor context;  // [b, H, L, hd]
    if (need_weights) {
        // q_scaled = q * math.sqrt(1.0 / float(E_head)); baddbmm(mask, q_scaled, k^T); softmax
        const float scale = static_cast<float>(std::sqrt(1.0 / static_cast<double>(hd)));
        Tensor scores = attn::matmul(Tensor(q * scale), attn::transpose(k, -2, -1));
        if (attn_mask) scores = attn::masked_fill(scores, *attn_mask, neg_inf);
        const Tensor weights = attn::softmax(scores, -1);  // [b, H, L, S]
        context = attn::matmul(weights, v);
        out.attn_output_weights = Tensor(attn::sum(weights, 1) / static_cast<float>(H));  // mean(dim=1)
    } else {
        std::optional<BoolTensor> allowed;
        if (attn_mask) allowed = BoolTensor(!*attn_mask);
        context = attn::scaled_dot_product_attention(q, k, v, allowed, false);
    }
    out.attn_output = out_proj(merge_heads(context, b, L, to_long(E)));
    return out;
}

// ------------------------------------------------------------------------- maps

MultiHeadAttentionCombinedQKV combine_qkv(const MultiHeadAttention& m, AttentionKernel kernel) {
    std::optional<Tensor> bias;
    if (m.W_query.bias) bias = attn::cat({*m.W_query.bias, *m.W_key.bias, *m.W_value.bias}, 0);
    nn::Linear qkv(attn::cat({m.W_query.weight, m.W_key.weight, m.W_value.weight}, 0), bias);
    return MultiHeadAttentionCombinedQKV(std::move(qkv), m.out_proj, m.context_length(),
                                         m.num_heads, kernel);
}

MHAEinsum to_einsum(const MultiHeadAttention& m) {
    return MHAEinsum(attn::T(m.W_query.weight), attn::T(m.W_key.weight), attn::T(m.W_value.weight),
                     m.W_query.bias, m.W_key.bias, m.W_value.bias, m.out_proj, m.context_length(),
                     m.num_heads);
}

MultiheadAttention to_torch_layout(const MultiHeadAttention& m) {
    std::optional<Tensor> bias;
    if (m.W_query.bias)
        bias = attn::cat({*m.W_query.bias, *m.W_key.bias, *m.W_value.bias}, 0);
    else if (m.out_proj.bias)
        bias = attn::zeros({3 * m.d_out()});
    return MultiheadAttention(attn::cat({m.W_query.weight, m.W_key.weight, m.W_value.weight}, 0),
                              bias, m.out_proj, m.num_heads);
}

BoolTensor causal_attn_mask(std::size_t T) {
    return attn::to_bool(attn::triu(attn::ones({T, T}), 1));
}

}  // namespace attn
