// torch.nn.MultiheadAttention (torch_mha.hpp): construction, the checks of PyTorch 1.13's
// forward, the forward on the one core, and the cross-attention cache.
//
// Layout: every input is read batch-major ([B, T, W]: a copy when the module is sequence-first
// or the input unbatched); projections, scaled queries and the merged heads are [B, T, E]
// buffers, seen as heads [B, H, T, head_dim] without a copy; the output is put back into the
// module's layout at the end. A row's bits do not depend on the order of the rows.
#include "attn/modules/torch_mha.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/core/require.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/modules/torch_mha_detail.hpp"

namespace attn {

namespace {

const std::string kMhaWhere = "MultiheadAttention";

std::string dims(std::initializer_list<std::size_t> d) { return shape_str(Shape(d)); }

// xavier_uniform_(t): bound sqrt(3) * sqrt(2 / (fan_in + fan_out)) in double (nn.init), for a
// 2-D weight fan_in = columns, fan_out = rows.
void xavier_uniform(Tensor& t, Generator& gen) {
    const double fan_in = static_cast<double>(t.shape()[1]), fan_out = static_cast<double>(t.shape()[0]);
    const double a = std::sqrt(3.0) * std::sqrt(2.0 / (fan_in + fan_out));
    attn::uniform_(t, -a, a, gen);
}

// xavier_normal_ of a [1, 1, E] tensor: fan_in = fan_out = E (the receptive field), std
// sqrt(2 / (2E)).
Tensor xavier_normal_kv(std::size_t E, Generator& gen) {
    Tensor t = attn::zeros({1, 1, E});
    const double std_ = std::sqrt(2.0 / (2.0 * static_cast<double>(E)));
    attn::normal_(t, 0.0, std_, gen);
    return t;
}

const MultiheadAttentionConfig& validated_mha(const MultiheadAttentionConfig& c) {
    c.validate();
    return c;
}

// What a call is about, after the checks.
struct Dims {
    std::size_t B = 0, L = 0, S = 0;  // batch, queries, source tokens
    std::size_t extra = 0;            // keys appended: bias_k, the zero key
    bool batched = true;
};

// The input as a batch-major [B, T, W] tensor: `x` itself, or a copy in `holder`.
const Tensor& batch_major(const Tensor& x, bool batch_first, bool batched, Tensor& holder) {
    if (!batched) {
        holder = x;
        holder.reshape({1, x.shape()[0], x.shape()[1]});
        return holder;
    }
    if (batch_first) return x;
    holder = attn::transpose(x, 0, 1);
    return holder;
}

// PyTorch's checks of forward (_mha_shape_check, multi_head_attention_forward) and the widths.
Dims check_call(const MultiheadAttention& m, const Shape& q, const Shape& k, const Shape& v,
                const MultiheadAttentionArgs& args, const std::string& where) {
    detail::mha_check_parameters(m, where);
    Dims d;
    if (q.size() == 3) {
        if (k.size() != 3 || v.size() != 3)
            throw std::invalid_argument(where + ": for batched (3-D) query, expected key and value to be 3-D, got key " +
                                        shape_str(k) + " and value " + shape_str(v));
    } else if (q.size() == 2) {
        d.batched = false;
        if (k.size() != 2 || v.size() != 2)
            throw std::invalid_argument(where + ": for unbatched (2-D) query, expected key and value to be 2-D, got key " +
                                        shape_str(k) + " and value " + shape_str(v));
    } else {
        throw_shape_error(where + " (query)", "unbatched 2-D [L, E] or batched 3-D [B, L, E]", q);
    }
    // (L, B) and (S, B) in the module's layout; unbatched: B = 1.
    const bool bf = m.batch_first && d.batched;
    d.B = d.batched ? (bf ? q[0] : q[1]) : 1;
    d.L = d.batched ? (bf ? q[1] : q[0]) : q[0];
    d.S = d.batched ? (bf ? k[1] : k[0]) : k[0];
    const std::size_t kB = d.batched ? (bf ? k[0] : k[1]) : 1;
    const std::size_t q_width = m.in_proj_weight ? m.in_proj_weight->shape()[1] : m.embed_dim;
    if (q.back() != q_width)
        throw std::invalid_argument(where + ": was expecting embedding dimension of " + std::to_string(q_width) +
                                    ", but got " + std::to_string(q.back()) + " (query " + shape_str(q) + ")");
    const std::size_t k_width = m.in_proj_weight ? q_width : m.kdim, v_width = m.in_proj_weight ? q_width : m.vdim;
    if (k.back() != k_width)
        throw std::invalid_argument(where + ": expected the key's last dimension kdim = " + std::to_string(k_width) +
                                    ", got key " + shape_str(k));
    if (v.back() != v_width)
        throw std::invalid_argument(where + ": expected the value's last dimension vdim = " + std::to_string(v_width) +
                                    ", got value " + shape_str(v));
    if (!std::equal(k.begin(), k.end() - 1, v.begin()))
        throw std::invalid_argument(where + ": key's sequence and batch dims " + shape_str(k) +
                                    " do not match value's " + shape_str(v));
    if (kB != d.B)
        throw std::invalid_argument(where + ": query and key have different batch sizes, query " + shape_str(q) +
                                    ", key " + shape_str(k) + (m.batch_first ? " (batch_first)" : " (sequence first)"));
    d.extra = (m.bias_k ? 1 : 0) + (m.add_zero_attn ? 1 : 0);
    if (args.key_padding_mask) {
        const Shape want = d.batched ? Shape{d.B, d.S} : Shape{d.S};
        if (shape_of(*args.key_padding_mask) != want)
            throw_shape_error(where + " (key_padding_mask)", shape_str(want) + " ([batch, source tokens])",
                              shape_of(*args.key_padding_mask));
    }
    if (args.attn_mask && args.attn_bias)
        throw std::invalid_argument(where + ": attn_mask is either boolean or float: got both attn_mask and attn_bias");
    const auto check_mask = [&](const Shape& s, const char* name) {
        const Shape two{d.L, d.S}, three{d.B * m.num_heads, d.L, d.S};
        if (s != two && s != three)
            throw_shape_error(where + " (" + name + ")",
                              shape_str(two) + " or " + shape_str(three) + " ([L, S] or [batch * num_heads, L, S])", s);
    };
    if (args.attn_mask) check_mask(shape_of(*args.attn_mask), "attn_mask");
    if (args.attn_bias) check_mask(shape_of(*args.attn_bias), "attn_bias");
    return d;
}

// The core's masks for a call: `is_causal` when the boolean attn_mask is exactly the causal
// triangle (the fast kernels then skip the future), else an explicit `allow` (true = may
// attend) that merges attn_mask and key_padding_mask, and `bias` from a float attn_mask; the
// appended keys are visible to every query, as PyTorch pads its masks with False / 0.
struct CoreMasks {
    bool is_causal = false;
    BoolTensor allow;  // [B or 1, H or 1, L, S'], 0-d when none
    Tensor bias;       // [B or 1, H or 1, L, S'], 0-d when none
};

bool is_causal_triangle(const BoolTensor& mask) {
    if (mask.size() == 0) return true;  // no element (and no walk over 2^40 empty rows)
    const std::size_t L = mask.shape()[0], S = mask.shape()[1];
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j)
            if (mask.data()[i * S + j] != (j > i)) return false;
    return true;
}

CoreMasks core_masks(const MultiheadAttentionArgs& args, const Dims& d, std::size_t H) {
    CoreMasks c;
    const std::size_t Sp = d.S + d.extra;
    const BoolTensor* am = args.attn_mask;
    if (am && am->dimension() == 2 && d.extra == 0 && is_causal_triangle(*am)) {
        c.is_causal = true;
        am = nullptr;
    }
    const std::size_t mb = am && am->dimension() == 3 ? d.B : 1, mh = am && am->dimension() == 3 ? H : 1;
    if (am || args.key_padding_mask) {
        // The padding's batch (B, 0 included), else the mask's (B for a 3-D one, else 1).
        const std::size_t b_n = args.key_padding_mask ? d.B : mb;
        check_allocation(kMhaWhere + " (the merged masks)", Shape{b_n, mh, d.L, Sp}, sizeof(bool));
        c.allow = xt::empty<bool>(Shape{b_n, mh, d.L, Sp});
        bool* a = c.allow.data();
        for (std::size_t b = 0; b < (c.allow.size() ? b_n : 0); ++b)
            for (std::size_t h = 0; h < mh; ++h)
                for (std::size_t i = 0; i < d.L; ++i)
                    for (std::size_t j = 0; j < Sp; ++j, ++a) {
                        bool hidden = false;
                        if (j < d.S) {
                            if (am) hidden = am->data()[((b % mb) * mh + h) * d.L * d.S + i * d.S + j];
                            if (args.key_padding_mask) hidden = hidden || args.key_padding_mask->data()[b * d.S + j];
                        }
                        *a = !hidden;
                    }
    }
    if (args.attn_bias) {
        const Tensor& f = *args.attn_bias;
        const std::size_t fb = f.dimension() == 3 ? d.B : 1, fh = f.dimension() == 3 ? H : 1;
        c.bias = attn::zeros({fb, fh, d.L, Sp});  // (checks the allocation)
        for (std::size_t bh = 0; bh < (c.bias.size() ? fb * fh : 0); ++bh)
            for (std::size_t i = 0; i < d.L; ++i)
                std::copy_n(f.data() + (bh * d.L + i) * d.S, d.S, c.bias.data() + (bh * d.L + i) * Sp);
    }
    return c;
}

SDPAOptions core_options(const CoreMasks& c, double p, nn::BernoulliBackend backend, Generator* gen) {
    SDPAOptions o;
    o.is_causal = c.is_causal;
    o.attn_mask = c.allow.dimension() ? &c.allow : nullptr;
    o.attn_bias = c.bias.dimension() ? &c.bias : nullptr;
    o.scale = ScoreScale::multiply_by(1.0f);  // the queries are scaled before the product
    // torch 1.13 turns a boolean mask into a float one (-inf where hidden) and adds it:
    // baddbmm(attn_mask, q_scaled, k^T) (F.multi_head_attention_forward).
    o.mask_op = MaskOp::additive;
    o.dropout_p = p;
    o.dropout_backend = backend;
    o.generator = gen;
    return o;
}

// The keys (or values) of the source [B, S, E] with the appended rows: [B, S', E].
void append_rows(const MultiheadAttention& m, const float* proj, const Dims& d, const Tensor* appended,
                 float* out) {
    const std::size_t E = m.embed_dim, Sp = d.S + d.extra;
    for (std::size_t b = 0; b < d.B; ++b) {
        float* dst = out + b * Sp * E;
        std::copy_n(proj + b * d.S * E, d.S * E, dst);
        std::size_t t = d.S;
        if (appended) std::copy_n(appended->data(), E, dst + (t++) * E);
        if (m.add_zero_attn) std::fill_n(dst + t * E, E, 0.0f);
    }
}

// The result in the module's layout: [B, L, E] -> [L, B, E] (sequence first) or [L, E].
Tensor to_layout(Tensor y, const MultiheadAttention& m, const Dims& d) {
    if (!d.batched) {
        y.reshape({d.L, y.shape()[2]});
        return y;
    }
    return m.batch_first ? y : attn::transpose(y, 0, 1);
}

// Weights [B, H, L, S'] (the dropped ones) as forward returns them.
Tensor weights_out(const Tensor& w, const MultiheadAttentionArgs& args, const Dims& d, std::size_t H) {
    Tensor out;
    if (!args.average_attn_weights) {
        out = w;
    } else if (w.size() == 0) {  // [B, L, S'] of nothing, without a walk over 2^40 empty rows
        out = Tensor::from_shape({w.shape()[0], w.shape()[2], w.shape()[3]});
    } else {
        out = attn::sum(w, 1) / static_cast<float>(H);
    }
    if (!d.batched) out.reshape(Shape(out.shape().begin() + 1, out.shape().end()));
    return out;
}

}  // namespace

// ------------------------------------------------------------------------- shared (detail)

namespace detail {

void mha_check_parameters(const MultiheadAttention& m, const std::string& where) {
    const std::size_t E = m.embed_dim;
    check_heads(where, m.num_heads, m.head_dim, E);
    require_probability(where, "dropout", m.dropout);
    nn::check_backend(m.backend, where.c_str());
    const bool packed = m.in_proj_weight.has_value();
    if (packed == (m.q_proj_weight || m.k_proj_weight || m.v_proj_weight))
        throw std::invalid_argument(where + ": expected either in_proj_weight or q_proj_weight, k_proj_weight and "
                                            "v_proj_weight, got " + (packed ? "both" : "neither"));
    if (packed) {
        const Shape s = shape_of(*m.in_proj_weight);
        if (s.size() != 2 || s[0] != 3 * E) throw_shape_error(where + " (in_proj_weight)", "[3 * embed_dim, E] = " + dims({3 * E, E}), s);
    } else {
        if (!m.q_proj_weight || !m.k_proj_weight || !m.v_proj_weight)
            throw std::invalid_argument(where + ": q_proj_weight, k_proj_weight and v_proj_weight go together");
        check_same_shape(where + " (q_proj_weight)", Shape{E, E}, shape_of(*m.q_proj_weight));
        check_same_shape(where + " (k_proj_weight)", Shape{E, m.kdim}, shape_of(*m.k_proj_weight));
        check_same_shape(where + " (v_proj_weight)", Shape{E, m.vdim}, shape_of(*m.v_proj_weight));
    }
    if (m.in_proj_bias) check_same_shape(where + " (in_proj_bias)", Shape{3 * E}, shape_of(*m.in_proj_bias));
    if (m.bias_k.has_value() != m.bias_v.has_value())
        throw std::invalid_argument(where + ": bias_k and bias_v go together (add_bias_kv), got only " +
                                    (m.bias_k ? "bias_k" : "bias_v"));
    if (m.bias_k) {
        check_same_shape(where + " (bias_k)", Shape{1, 1, E}, shape_of(*m.bias_k));
        check_same_shape(where + " (bias_v)", Shape{1, 1, E}, shape_of(*m.bias_v));
    }
    check_linear(where, "out_proj", m.out_proj, E, E);
}

MhaBlock mha_block(const MultiheadAttention& m, int which) {
    const std::size_t E = m.embed_dim;
    MhaBlock b;
    if (m.in_proj_weight) {
        b.in = m.in_proj_weight->shape()[1];
        b.W = m.in_proj_weight->data() + static_cast<std::size_t>(which) * E * b.in;
    } else {
        const Tensor& w = which == 0 ? *m.q_proj_weight : which == 1 ? *m.k_proj_weight : *m.v_proj_weight;
        b.in = w.shape()[1];
        b.W = w.data();
    }
    if (m.in_proj_bias) b.b = m.in_proj_bias->data() + static_cast<std::size_t>(which) * E;
    return b;
}

float* mha_nonnull(float* data) {
    thread_local float placeholder = 0.0f;
    return data ? data : &placeholder;
}

float mha_divisor(std::size_t head_dim) { return static_cast<float>(std::sqrt(static_cast<double>(head_dim))); }

void mha_project(const float* x, std::size_t rows, const MhaBlock& block, std::size_t E, float* y) {
    attn::gemm_rowmajor(x, block.W, y, rows, block.in, E, /*transpose_b=*/true);
    if (block.b)
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < E; ++j) y[i * E + j] += block.b[j];
}

SDPAOptions mha_saved_options(const MultiheadAttentionSaved& s) {
    SDPAOptions o;  // pointers into `s`, which outlives the call
    o.is_causal = s.is_causal;
    o.attn_mask = s.allow.dimension() ? &s.allow : nullptr;
    o.attn_bias = s.bias.dimension() ? &s.bias : nullptr;
    o.scale = ScoreScale::multiply_by(1.0f);
    o.mask_op = MaskOp::additive;  // as core_options
    o.dropout_p = s.dropout_p;
    return o;
}

}  // namespace detail

// ------------------------------------------------------------------------- construction

void MultiheadAttentionConfig::validate() const {
    require_positive(kMhaWhere, "embed_dim", embed_dim);
    require_positive(kMhaWhere, "num_heads", num_heads);
    require_divisible(kMhaWhere, "embed_dim", embed_dim, "num_heads", num_heads);
    if (kdim) require_positive(kMhaWhere, "kdim", *kdim);
    if (vdim) require_positive(kMhaWhere, "vdim", *vdim);
    require_probability(kMhaWhere, "dropout", dropout);
    nn::check_backend(backend, kMhaWhere.c_str());
    require_weight_size(kMhaWhere, "3 * embed_dim", checked_mul(3, embed_dim, "3 * embed_dim"), "embed_dim", embed_dim);
    require_weight_size(kMhaWhere, "embed_dim", embed_dim, "kdim", kdim.value_or(embed_dim));
    require_weight_size(kMhaWhere, "embed_dim", embed_dim, "vdim", vdim.value_or(embed_dim));
}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionConfig& config, Generator& gen)
    : embed_dim(validated_mha(config).embed_dim),
      kdim(config.kdim.value_or(config.embed_dim)),
      vdim(config.vdim.value_or(config.embed_dim)),
      num_heads(config.num_heads),
      head_dim(config.embed_dim / config.num_heads),
      dropout(config.dropout),
      batch_first(config.batch_first),
      add_zero_attn(config.add_zero_attn),
      backend(config.backend),
      // out_proj is built (and draws) before _reset_parameters
      out_proj(config.embed_dim, config.embed_dim, config.bias, gen) {
    const std::size_t E = embed_dim;
    if (kdim == E && vdim == E) {  // _qkv_same_embed_dim
        in_proj_weight = attn::zeros({3 * E, E});
        xavier_uniform(*in_proj_weight, gen);
    } else {
        q_proj_weight = attn::zeros({E, E});
        k_proj_weight = attn::zeros({E, kdim});
        v_proj_weight = attn::zeros({E, vdim});
        xavier_uniform(*q_proj_weight, gen);
        xavier_uniform(*k_proj_weight, gen);
        xavier_uniform(*v_proj_weight, gen);
    }
    if (config.bias) {  // constant_(in_proj_bias, 0.), constant_(out_proj.bias, 0.)
        in_proj_bias = attn::zeros({3 * E});
        std::fill_n(out_proj.bias->data(), E, 0.0f);
    }
    if (config.add_bias_kv) {
        bias_k = xavier_normal_kv(E, gen);
        bias_v = xavier_normal_kv(E, gen);
    }
}

MultiheadAttention::MultiheadAttention(Tensor w, std::optional<Tensor> b, nn::Linear out, std::size_t num_heads_)
    : embed_dim(0), kdim(0), vdim(0), num_heads(num_heads_), head_dim(0), dropout(0.0), batch_first(true),
      add_zero_attn(false), backend(nn::BernoulliBackend::portable), in_proj_weight(std::move(w)),
      in_proj_bias(std::move(b)), out_proj(std::move(out)) {
    embed_dim = out_proj.out_features();
    const std::size_t E = embed_dim;
    check_same_shape(kMhaWhere + " (out_proj)", Shape{E, E}, shape_of(out_proj.weight));
    check_rank(kMhaWhere + " (in_proj_weight)", shape_of(*in_proj_weight), 2);
    kdim = vdim = in_proj_weight->shape()[1];
    check_same_shape(kMhaWhere + " (in_proj_weight)", Shape{3 * E, kdim}, shape_of(*in_proj_weight));
    if (in_proj_bias) check_same_shape(kMhaWhere + " (in_proj_bias)", Shape{3 * E}, shape_of(*in_proj_bias));
    require_divisible(kMhaWhere, "embed_dim", E, "num_heads", num_heads);
    head_dim = E / num_heads;
}

std::vector<nn::NamedParameter> MultiheadAttention::own_parameters() {
    std::vector<nn::NamedParameter> out;
    if (in_proj_weight) out.push_back({"in_proj_weight", &*in_proj_weight, &in_proj_weight_grad});
    if (q_proj_weight) out.push_back({"q_proj_weight", &*q_proj_weight, &q_proj_weight_grad});
    if (k_proj_weight) out.push_back({"k_proj_weight", &*k_proj_weight, &k_proj_weight_grad});
    if (v_proj_weight) out.push_back({"v_proj_weight", &*v_proj_weight, &v_proj_weight_grad});
    if (in_proj_bias) out.push_back({"in_proj_bias", &*in_proj_bias, &in_proj_bias_grad});
    if (bias_k) out.push_back({"bias_k", &*bias_k, &bias_k_grad});
    if (bias_v) out.push_back({"bias_v", &*bias_v, &bias_v_grad});
    return out;
}

// ------------------------------------------------------------------------- forward

namespace {

// The attention between scaled queries [B, L, E] and key and value heads [B, H, S', hd], the
// heads merged into `context` [B, L, E], out_proj; the weights when asked. `saved` (nullable)
// receives what the core keeps for the backward.
MultiheadAttentionOutput attend_out(const MultiheadAttention& m, const float* q_scaled, const HeadsView& k,
                                    const HeadsView& v, const Dims& d, const MultiheadAttentionArgs& args,
                                    const SDPAOptions& o, float* context, MultiheadAttentionSaved* saved) {
    const std::size_t E = m.embed_dim, H = m.num_heads, hd = m.head_dim;
    const HeadsView q = HeadsView::split(q_scaled, d.B, d.L, E, H, hd);
    MultiheadAttentionOutput out;
    if (args.need_weights) {
        // The step path keeps the (dropped) weights. A training forward then runs the core's
        // saved forward from a copy of the generator as it was: one dropout mask for both.
        Generator replay = *o.generator;
        const SDPASteps st = scaled_dot_product_attention_steps(q.contiguous(), k.contiguous(), v.contiguous(), o);
        const HeadsView oh = HeadsView::of(st.output);
        for (std::size_t b = 0; b < (st.output.size() ? d.B : 0); ++b)  // (no walk over empty rows)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t t = 0; t < d.L; ++t)
                    std::copy_n(oh.data + b * oh.stride_b + h * oh.stride_h + t * oh.stride_t, hd,
                                context + (b * d.L + t) * E + h * hd);
        out.attn_output_weights = weights_out(st.dropped_weights, args, d, H);
        if (saved) {
            SDPAOptions again = o;
            again.generator = &replay;
            attend(q, k, v, context, again, saved->attention);
        }
    } else if (saved) {
        attend(q, k, v, context, o, saved->attention);
    } else {
        attend(q, k, v, context, o);
    }
    check_allocation(kMhaWhere + " (attn_output)", Shape{d.B, d.L, E});
    Tensor y = Tensor::from_shape({d.B, d.L, E});
    m.out_proj.forward_into(context, d.B * d.L, y.data());
    out.attn_output = to_layout(std::move(y), m, d);
    return out;
}

// q / math.sqrt(head_dim) of the query's projection into `q_scaled` [B * L, E].
void scaled_queries(const MultiheadAttention& m, const Tensor& xq, const Dims& d, float* q_scaled) {
    detail::mha_project(xq.data(), d.B * d.L, detail::mha_block(m, 0), m.embed_dim, q_scaled);
    const float divisor = detail::mha_divisor(m.head_dim);
    for (std::size_t i = 0; i < d.B * d.L * m.embed_dim; ++i) q_scaled[i] = q_scaled[i] / divisor;
}

// The keys (which = 1) or values (2) of the source with the appended ones into `out` [B, S', E].
void source_projection(const MultiheadAttention& m, const Tensor& x, const Dims& d, int which, float* out) {
    const std::size_t E = m.embed_dim;
    float* p = d.extra ? detail::mha_nonnull(detail::scratch(0, checked_mul(d.B * d.S, E, kMhaWhere + " (B * S * E)"))) : out;
    detail::mha_project(x.data(), d.B * d.S, detail::mha_block(m, which), E, p);
    const std::optional<Tensor>& appended = which == 1 ? m.bias_k : m.bias_v;
    if (d.extra) append_rows(m, p, d, appended ? &*appended : nullptr, out);
}

// The forward, keeping what the backward needs when `saved` is not null (else its buffers are
// the thread's scratch: a forward then allocates its result only).
MultiheadAttentionOutput run(const MultiheadAttention& m, const Tensor& query, const Tensor& key,
                             const Tensor& value, const MultiheadAttentionArgs& args,
                             MultiheadAttentionSaved* saved, Generator& gen) {
    const Dims d = check_call(m, shape_of(query), shape_of(key), shape_of(value), args, kMhaWhere);
    const std::size_t E = m.embed_dim, Sp = d.S + d.extra;
    const std::size_t nq = checked_mul(d.B * d.L, E, kMhaWhere + " (B * L * E)");
    const std::size_t nk = checked_mul(checked_mul(d.B, Sp, kMhaWhere + " (B * S)"), E, kMhaWhere + " (B * S * E)");
    check_allocation(kMhaWhere + " (queries [B, L, E])", Shape{d.B, d.L, E});
    check_allocation(kMhaWhere + " (keys [B, S, E])", Shape{d.B, Sp, E});
    Tensor hq, hk, hv;
    const Tensor& xq = batch_major(query, m.batch_first, d.batched, hq);
    const Tensor& xk = &key == &query ? xq : batch_major(key, m.batch_first, d.batched, hk);
    const Tensor& xv = &value == &key ? xk : batch_major(value, m.batch_first, d.batched, hv);
    float *q_scaled, *keys, *values, *context;
    if (saved) {
        saved->q_scaled = Tensor::from_shape({d.B, d.L, E});
        saved->keys = Tensor::from_shape({d.B, Sp, E});
        saved->values = Tensor::from_shape({d.B, Sp, E});
        saved->context = Tensor::from_shape({d.B, d.L, E});
        q_scaled = detail::mha_nonnull(saved->q_scaled.data());
        keys = detail::mha_nonnull(saved->keys.data());
        values = detail::mha_nonnull(saved->values.data());
        context = detail::mha_nonnull(saved->context.data());
    } else {  // (a buffer of 0 floats may be null: never handed on as such)
        q_scaled = detail::mha_nonnull(detail::scratch(1, nq));
        keys = detail::mha_nonnull(detail::scratch(2, nk));
        values = detail::mha_nonnull(detail::scratch(3, nk));
        context = detail::mha_nonnull(detail::scratch(4, nq));
    }
    scaled_queries(m, xq, d, q_scaled);
    source_projection(m, xk, d, 1, keys);
    source_projection(m, xv, d, 2, values);
    CoreMasks masks = core_masks(args, d, m.num_heads);
    const double p = m.training ? m.dropout : 0.0;
    const SDPAOptions o = core_options(masks, p, m.backend, &gen);
    MultiheadAttentionOutput out = attend_out(m, q_scaled, HeadsView::split(keys, d.B, Sp, E, m.num_heads, m.head_dim),
                                              HeadsView::split(values, d.B, Sp, E, m.num_heads, m.head_dim), d,
                                              args, o, context, saved);
    if (saved) {
        saved->key_is_query = &key == &query;
        saved->value_is_key = &value == &key;
        saved->batched = d.batched;
        saved->source_len = d.S;
        saved->dropout_p = p;
        saved->is_causal = masks.is_causal;
        saved->allow = std::move(masks.allow);
        saved->bias = std::move(masks.bias);
        saved->query = &xq == &query ? query : std::move(hq);
        saved->key = saved->key_is_query ? Tensor() : &xk == &key ? key : std::move(hk);
        saved->value = saved->value_is_key ? Tensor() : &xv == &value ? value : std::move(hv);
    }
    return out;
}

}  // namespace

MultiheadAttentionOutput MultiheadAttention::operator()(const Tensor& query, const Tensor& key,
                                                        const Tensor& value, const MultiheadAttentionArgs& args,
                                                        Generator& gen) const {
    return run(*this, query, key, value, args, nullptr, gen);
}

MultiheadAttentionOutput MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                     const MultiheadAttentionArgs& args,
                                                     MultiheadAttentionSaved& saved, Generator& gen) const {
    return run(*this, query, key, value, args, &saved, gen);
}

// ------------------------------------------------------------------------- the memory's cache

KVCache MultiheadAttention::memory_cache(const Tensor& key, const Tensor& value) const {
    const Shape sk = shape_of(key);
    // The checks of a call whose query has the key's batch and an E-wide token.
    Shape q = sk;
    if (!q.empty()) q.back() = in_proj_weight ? in_proj_weight->shape()[1] : embed_dim;
    const Dims d = check_call(*this, q, sk, shape_of(value), {}, kMhaWhere + "::memory_cache");
    const std::size_t Sp = d.S + d.extra;
    Tensor hk, hv;
    const Tensor& xk = batch_major(key, batch_first, d.batched, hk);
    const Tensor& xv = &value == &key ? xk : batch_major(value, batch_first, d.batched, hv);
    check_allocation(kMhaWhere + "::memory_cache (keys [B, S, E])", Shape{d.B, Sp, embed_dim});
    Tensor k = Tensor::from_shape({d.B, Sp, embed_dim}), v = Tensor::from_shape({d.B, Sp, embed_dim});
    source_projection(*this, xk, d, 1, k.data());
    source_projection(*this, xv, d, 2, v.data());
    return KVCache(HeadsView::split(k, num_heads, head_dim).contiguous(),
                   HeadsView::split(v, num_heads, head_dim).contiguous());
}

MultiheadAttentionOutput MultiheadAttention::operator()(const Tensor& query, const KVCache& memory,
                                                        const MultiheadAttentionArgs& args, Generator& gen) const {
    const std::string where = kMhaWhere + " (cross-attention cache)";
    if (memory.window != 0)
        throw std::invalid_argument(where + ": expected a full KVCache from memory_cache, got a sliding-window one");
    memory.validate(where);
    const Shape q = shape_of(query), ck = shape_of(memory.key);
    if (ck.size() != 4 || ck[1] != num_heads || ck[3] != head_dim || shape_of(memory.value) != ck)
        throw_shape_error(where + " (memory.key)", "[B, num_heads = " + std::to_string(num_heads) + ", S, head_dim = " +
                          std::to_string(head_dim) + "] keys and values (memory_cache)", ck);
    const std::size_t extra = (bias_k ? 1 : 0) + (add_zero_attn ? 1 : 0);
    if (ck[2] < extra) throw_shape_error(where + " (memory.key)", "at least the appended keys", ck);
    // Check the call as with a key and value of the memory's batch and source length.
    const bool bf = batch_first && q.size() == 3;
    const std::size_t S = ck[2] - extra;
    Shape k = q.size() == 3 ? (bf ? Shape{ck[0], S, kdim} : Shape{S, ck[0], kdim}) : Shape{S, kdim};
    Shape v = k;
    v.back() = vdim;
    if (in_proj_weight) k.back() = v.back() = in_proj_weight->shape()[1];
    const Dims d = check_call(*this, q, k, v, args, where);
    Tensor hq;
    const Tensor& xq = batch_major(query, batch_first, d.batched, hq);
    const std::size_t nq = checked_mul(d.B * d.L, embed_dim, kMhaWhere + " (B * L * E)");
    float* q_scaled = detail::mha_nonnull(detail::scratch(1, nq));
    scaled_queries(*this, xq, d, q_scaled);
    // The cache holds the heads [B, H, S', hd] themselves.
    const CoreMasks masks = core_masks(args, d, num_heads);
    const SDPAOptions o = core_options(masks, training ? dropout : 0.0, backend, &gen);
    return attend_out(*this, q_scaled, HeadsView::of(memory.key), HeadsView::of(memory.value), d, args, o,
                      detail::mha_nonnull(detail::scratch(4, nq)), nullptr);
}

}  // namespace attn
