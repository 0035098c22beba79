// The backward pass of torch.nn.MultiheadAttention (torch_mha.hpp), in the order of float
// operations of PyTorch 1.13's autograd over F.multi_head_attention_forward.
//
// PyTorch works sequence-first: a batch-first input is transposed, and every linear layer
// sees its rows in the order [L, B] (token-major). Row order does not change a forward, but a
// weight's gradient sums over the rows in that order, so the backward gathers its operands
// token-major ("_l" below) before the products. Shapes: B batch, L queries, S source tokens,
// S' = S + the appended keys, E = embed_dim.
//   1. out_proj:  d_context_l = dO_l W_o;  W_o.grad += dO_l^T context_l;  b_o.grad += colsum(dO_l)
//   2. the core:  dq_scaled, dk, dv  (attend_backward, scores multiplied by 1);  dq = dq_scaled / sqrt(hd)
//   3. the in-projection, grouped as the forward grouped it (one, two or three products)
#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/reduce.hpp"
#include "attn/kernels/gemm.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/torch_mha.hpp"
#include "attn/modules/torch_mha_detail.hpp"

namespace attn {

namespace {

// [B, T, W] batch-major -> [T * B, W] token-major (or back, `inverse`).
// (Empty: nothing, without a walk over 2^40 empty rows; so below.)
void swap_major(const float* src, std::size_t B, std::size_t T, std::size_t W, float* dst, bool inverse = false) {
    if (B == 0 || T == 0 || W == 0) return;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const std::size_t bm = (b * T + t) * W, tm = (t * B + b) * W;
            std::copy_n(src + (inverse ? tm : bm), W, dst + (inverse ? bm : tm));
        }
}

// The first S tokens of each sequence of [B, S', W] (the source's keys without the appended
// ones), token-major: [S * B, W].
std::vector<float> source_rows_l(const Tensor& x, std::size_t S) {
    const std::size_t B = x.shape()[0], Sp = x.shape()[1], W = x.shape()[2];
    std::vector<float> out(S * B * W);
    if (out.empty()) return out;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) std::copy_n(x.data() + (b * Sp + t) * W, W, out.data() + (t * B + b) * W);
    return out;
}

// An input gradient of the module's layout from a token-major [T * B, W] buffer.
Tensor to_input_layout(const std::vector<float>& g_l, std::size_t B, std::size_t T, std::size_t W,
                       bool batch_first, bool batched) {
    if (!batched) {
        Tensor out = Tensor::from_shape({T, W});
        std::copy(g_l.begin(), g_l.end(), out.data());
        return out;
    }
    if (!batch_first) {
        Tensor out = Tensor::from_shape({T, B, W});
        std::copy(g_l.begin(), g_l.end(), out.data());
        return out;
    }
    Tensor out = Tensor::from_shape({B, T, W});
    swap_major(g_l.data(), B, T, W, out.data(), /*inverse=*/true);
    return out;
}

// The gradients of one group of in-projection blocks that read one input (blocks `first` ..
// `first + count - 1`, contiguous rows of the packed weight, or one separate weight):
// g_l [rows, count * E] (token-major, the blocks side by side), x_l [rows, in].
// Writes dW [count * E, in] into `dW` (row offset first * E of a [3E, in] buffer, or a
// separate weight's own), the bias sums into `db` at first * E, and returns dx = g W.
std::vector<float> group_backward(const float* g_l, std::size_t rows, std::size_t count, std::size_t E,
                                  const float* x_l, std::size_t in, const float* W, float* dW, float* db,
                                  const std::function<void(float*)>& bias_sum = {}) {
    const std::size_t n = count * E;
    // weight.grad = g^T x: [n, rows] @ [rows, in], summed over the rows in order
    fast::gemm(n, in, rows, g_l, n, /*trans_a=*/true, x_l, in, false, dW, in);
    if (db && bias_sum) bias_sum(db);
    else if (db) detail::column_sums(g_l, rows, n, db);  // sum_to over [L, B, n], PyTorch's order
    std::vector<float> dx(rows * in);
    // grad_input = g W: [rows, n] @ [n, in], summed over the n outputs in order
    fast::gemm(rows, in, n, g_l, n, false, W, in, false, dx.data(), in);
    return dx;
}

// dk [B, S', E] as PyTorch holds the keys' gradient when it reaches the key projection: the
// transpose of `q_scaled^T @ dS` per head, element (s, b, e) at s + (b * E + e) * S'
// (`[B, E, S']` contiguous).
std::vector<float> keys_grad_torch_layout(const Tensor& dk) {
    const std::size_t B = dk.shape()[0], Sp = dk.shape()[1], E = dk.shape()[2];
    std::vector<float> out(B * E * Sp);
    if (out.empty()) return out;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t s = 0; s < Sp; ++s)
            for (std::size_t e = 0; e < E; ++e) out[(b * E + e) * Sp + s] = dk.data()[(b * Sp + s) * E + e];
    return out;
}

void add_vectors_into(std::vector<float>& a, const std::vector<float>& b) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = a[i] + b[i];
}

}  // namespace

MultiheadAttentionGrads MultiheadAttention::backward(const MultiheadAttentionSaved& s, const Tensor& grad_output) {
    const std::string where = "MultiheadAttention::backward";
    detail::mha_check_parameters(*this, where);
    const std::size_t E = embed_dim, H = num_heads, hd = head_dim;
    const Shape sq = shape_of(s.q_scaled), sk = shape_of(s.keys);
    if (sq.size() != 3 || sq[2] != E || sk.size() != 3 || sk[0] != sq[0] || sk[2] != E ||
        shape_of(s.values) != sk || shape_of(s.context) != sq || shape_of(s.query).size() != 3)
        throw_shape_error(where + " (saved)", "a forward of this module ([B, L, E] queries, [B, S', E] keys)", sq);
    const std::size_t B = sq[0], L = sq[1], Sp = sk[1], S = s.source_len;
    const std::size_t extra = (bias_k ? 1 : 0) + (add_zero_attn ? 1 : 0);
    if (S + extra != Sp) throw_shape_error(where + " (saved.keys)", "[B, S + appended keys, E]", sk);
    const Shape want = !s.batched ? Shape{L, E} : batch_first ? Shape{B, L, E} : Shape{L, B, E};
    check_same_shape(where + " (grad_output)", want, shape_of(grad_output));
    const std::size_t rows_q = B * L, rows_k = B * S;

    // 1. out_proj, its rows token-major
    std::vector<float> dO_l(rows_q * E), ctx_l(rows_q * E), dctx_l(rows_q * E);
    if (batch_first || !s.batched) swap_major(grad_output.data(), B, L, E, dO_l.data());
    else std::copy_n(grad_output.data(), rows_q * E, dO_l.data());
    swap_major(s.context.data(), B, L, E, ctx_l.data());
    out_proj.backward_into(ctx_l.data(), rows_q, dO_l.data(), dctx_l.data());

    // 2. the core, batch-major
    Tensor d_context = Tensor::from_shape({B, L, E});
    swap_major(dctx_l.data(), B, L, E, d_context.data(), /*inverse=*/true);
    Tensor dq = Tensor::from_shape({B, L, E}), dk = Tensor::from_shape({B, Sp, E}), dv = Tensor::from_shape({B, Sp, E});
    attend_backward(HeadsView::split(d_context, H, hd), HeadsView::split(s.q_scaled, H, hd),
                    HeadsView::split(s.keys, H, hd), HeadsView::split(s.values, H, hd),
                    HeadsView::split(s.context, H, hd), s.attention, detail::mha_nonnull(dq.data()),
                    detail::mha_nonnull(dk.data()), detail::mha_nonnull(dv.data()),
                    detail::mha_saved_options(s));
    // q_scaled = q / sqrt(hd): DivBackward0, grad / other
    const float divisor = detail::mha_divisor(hd);
    for (std::size_t i = 0; i < dq.size(); ++i) dq.data()[i] = dq.data()[i] / divisor;
    // The keys' gradient reaches the key projection as a transposed view (the values' and the
    // queries' as contiguous copies); a bias's sum over it follows its strides.
    const std::vector<float> dk_t = keys_grad_torch_layout(dk);
    // bias_k, bias_v: the batch's sum of their keys' gradients (repeat's backward)
    if (bias_k) {
        std::vector<float> gv(B * E);
        for (std::size_t b = 0; b < B; ++b) std::copy_n(dv.data() + (b * Sp + S) * E, E, gv.data() + b * E);
        Tensor gbk = Tensor::from_shape({1, 1, E}), gbv = Tensor::from_shape({1, 1, E});
        // (no offset into the keys' gradient when it is empty: its data may be null)
        detail::strided_sum(dk_t.empty() ? nullptr : dk_t.data() + S, {{B, E * Sp, true}, {E, Sp, false}}, gbk.data());
        detail::column_sums(gv.data(), B, E, gbv.data());
        nn::accumulate_grad(bias_k_grad, std::move(gbk), where + " (bias_k)");
        nn::accumulate_grad(bias_v_grad, std::move(gbv), where + " (bias_v)");
    }

    // 3. the in-projection, token-major, grouped as the forward grouped it
    std::vector<float> dq_l(rows_q * E);
    swap_major(dq.data(), B, L, E, dq_l.data());
    const std::vector<float> dk_l = source_rows_l(dk, S), dv_l = source_rows_l(dv, S);
    std::vector<float> xq_l(s.query.size());
    swap_major(s.query.data(), B, L, s.query.shape()[2], xq_l.data());
    const auto input_l = [&](const Tensor& x) {
        std::vector<float> out(x.size());
        swap_major(x.data(), B, S, x.shape()[2], out.data());
        return out;
    };
    const detail::MhaBlock bq = detail::mha_block(*this, 0), bk = detail::mha_block(*this, 1),
                           bv = detail::mha_block(*this, 2);
    std::vector<float> db(in_proj_bias ? 3 * E : 0);
    float* dbq = in_proj_bias ? db.data() : nullptr;
    float* dbk = in_proj_bias ? db.data() + E : nullptr;
    float* dbv = in_proj_bias ? db.data() + 2 * E : nullptr;
    // The key projection's bias alone (in the paths with a linear of its own): PyTorch sums
    // the strided view, unless its linear flattened a contiguous sequence-first key and had to
    // copy the gradient into [S * B, E] rows (B > 1 and S > 1).
    const bool k_rows_copied = s.batched && !batch_first && B > 1 && S > 1;
    const auto key_bias_sum = [&](float* db_k) {
        if (k_rows_copied) detail::column_sums(dk_l.data(), rows_k, E, db_k);
        else detail::strided_sum(dk_t.data(), {{S, 1, true}, {B, E * Sp, true}, {E, Sp, false}}, db_k);
    };
    MultiheadAttentionGrads out;
    // Token-major input gradients: the key's and the value's when a product of their own made
    // one (they may hold 0 floats: an empty source still has a gradient, of 0 elements).
    std::vector<float> gx_q;
    std::optional<std::vector<float>> gx_k, gx_v;
    const std::size_t in_q = bq.in, in_k = bk.in, in_v = bv.in;
    if (in_proj_weight) {
        Tensor dW = Tensor::from_shape({3 * E, in_q});
        if (s.key_is_query && s.value_is_key) {  // self-attention: linear(q, w, b).chunk(3)
            std::vector<float> g(rows_q * 3 * E);
            for (std::size_t r = 0; r < rows_q; ++r) {
                std::copy_n(dq_l.data() + r * E, E, g.data() + r * 3 * E);
                std::copy_n(dk_l.data() + r * E, E, g.data() + r * 3 * E + E);
                std::copy_n(dv_l.data() + r * E, E, g.data() + r * 3 * E + 2 * E);
            }
            gx_q = group_backward(g.data(), rows_q, 3, E, xq_l.data(), in_q, bq.W, dW.data(), dbq);
        } else if (s.value_is_key) {  // encoder-decoder: linear(q, w_q), linear(k, w_kv).chunk(2)
            std::vector<float> g(rows_k * 2 * E);
            for (std::size_t r = 0; r < rows_k; ++r) {
                std::copy_n(dk_l.data() + r * E, E, g.data() + r * 2 * E);
                std::copy_n(dv_l.data() + r * E, E, g.data() + r * 2 * E + E);
            }
            gx_q = group_backward(dq_l.data(), rows_q, 1, E, xq_l.data(), in_q, bq.W, dW.data(), dbq);
            const std::vector<float> xk_l = input_l(s.key);
            gx_k = group_backward(g.data(), rows_k, 2, E, xk_l.data(), in_k, bk.W, dW.data() + E * in_q, dbk);
        } else {  // w.chunk(3): three linears
            gx_q = group_backward(dq_l.data(), rows_q, 1, E, xq_l.data(), in_q, bq.W, dW.data(), dbq);
            const std::vector<float> xk_l = s.key_is_query ? xq_l : input_l(s.key);
            gx_k = group_backward(dk_l.data(), rows_k, 1, E, xk_l.data(), in_k, bk.W, dW.data() + E * in_q, dbk,
                                  key_bias_sum);
            const std::vector<float> xv_l = input_l(s.value);
            gx_v = group_backward(dv_l.data(), rows_k, 1, E, xv_l.data(), in_v, bv.W, dW.data() + 2 * E * in_q, dbv);
        }
        nn::accumulate_grad(in_proj_weight_grad, std::move(dW), where + " (in_proj_weight)");
    } else {  // _in_projection: three linears with their own weights
        Tensor dWq = Tensor::from_shape({E, in_q}), dWk = Tensor::from_shape({E, in_k}), dWv = Tensor::from_shape({E, in_v});
        gx_q = group_backward(dq_l.data(), rows_q, 1, E, xq_l.data(), in_q, bq.W, dWq.data(), dbq);
        const std::vector<float> xk_l = s.key_is_query ? xq_l : input_l(s.key);
        gx_k = group_backward(dk_l.data(), rows_k, 1, E, xk_l.data(), in_k, bk.W, dWk.data(), dbk, key_bias_sum);
        const std::vector<float> xv_l = s.value_is_key ? xk_l : input_l(s.value);
        gx_v = group_backward(dv_l.data(), rows_k, 1, E, xv_l.data(), in_v, bv.W, dWv.data(), dbv);
        nn::accumulate_grad(q_proj_weight_grad, std::move(dWq), where + " (q_proj_weight)");
        nn::accumulate_grad(k_proj_weight_grad, std::move(dWk), where + " (k_proj_weight)");
        nn::accumulate_grad(v_proj_weight_grad, std::move(dWv), where + " (v_proj_weight)");
    }
    if (in_proj_bias) {
        Tensor dbt = Tensor::from_shape({3 * E});
        std::copy(db.begin(), db.end(), dbt.data());
        nn::accumulate_grad(in_proj_bias_grad, std::move(dbt), where + " (in_proj_bias)");
    }
    // One gradient per input tensor: the shares of a tensor read twice added (two terms, so
    // autograd's order of arrival does not matter).
    if (gx_v && s.value_is_key) {
        add_vectors_into(*gx_k, *gx_v);
        gx_v.reset();
    }
    if (gx_k && s.key_is_query) {
        add_vectors_into(gx_q, *gx_k);
        gx_k.reset();
    }
    const std::size_t wq = s.query.shape()[2];
    out.query = to_input_layout(gx_q, B, L, wq, batch_first, s.batched);
    if (gx_k) out.key = to_input_layout(*gx_k, B, S, in_k, batch_first, s.batched);
    if (gx_v) out.value = to_input_layout(*gx_v, B, S, in_v, batch_first, s.batched);
    return out;
}

}  // namespace attn
