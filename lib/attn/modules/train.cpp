// The training forward and backward of the attention modules (train.hpp).
//
// Shapes: x [b, T, d_in]; projections, context, their gradients [b, T, H * hd] (merged heads,
// seen as [b, H, T, hd] without a copy).
//   forward:  q, k, v = W(x)  ->  context = attend(q, k, v)  ->  y = out_proj(context)
//   backward: 1. d_context = out_proj.backward(context, dy)       (+ out_proj's .grad)
//             2. dq, dk, dv = attend_backward(d_context, q, k, v, context, L, N)
//             3. dx = (W_value.backward(x, dv) + W_key.backward(x, dk)) + W_query.backward(x, dq)
#include "attn/modules/train.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/core/reduce.hpp"
#include "attn/modules/scratch.hpp"

namespace attn::detail {

namespace {

float* sized_saved(Tensor& t, const Shape& shape) { return attn::sized(t, shape, "AttentionSaved"); }

}  // namespace

SDPAOptions saved_options(const AttentionSaved& saved) {
    SDPAOptions o{.scale = ScoreScale::divide_by(std::sqrt(static_cast<float>(saved.head_dim))),
                  .dropout_p = saved.dropout_p};
    saved.mask.apply(o);
    if (saved.positions == PositionScheme::alibi) o.alibi_slopes = &saved.alibi_slopes;
    return o;
}

const Tensor& train_forward(const nn::Linear& W_query, const nn::Linear& W_key, const nn::Linear& W_value,
                     const nn::Linear* out_proj, const Tensor& x, std::size_t num_heads,
                     std::size_t head_dim, double dropout_p, const SDPAOptions& options,
                     AttentionSaved& saved, const ModulePositions* positions) {
    const Shape s = shape_of(x);
    const std::size_t rows = checked_mul(s[0], s[1], "attention (b * T)");
    const std::size_t width = checked_mul(num_heads, head_dim, "attention (num_heads * head_dim)");
    const Shape merged{s[0], s[1], width};
    std::copy_n(x.data(), x.size(), sized_saved(saved.x, s));
    W_query.forward_into(x.data(), rows, sized_saved(saved.queries, merged));
    W_key.forward_into(x.data(), rows, sized_saved(saved.keys, merged));
    W_value.forward_into(x.data(), rows, sized_saved(saved.values, merged));
    saved.num_heads = num_heads;
    saved.head_dim = head_dim;
    saved.dropout_p = dropout_p;
    saved.positions = positions ? positions->scheme : PositionScheme::none;
    if (positions) {
        positions->rotate(saved.queries.data(), s[0], s[1], width, num_heads, head_dim, 0);
        positions->rotate(saved.keys.data(), s[0], s[1], width, num_heads, head_dim, 0);
    }
    if (options.alibi_slopes) saved.alibi_slopes = *options.alibi_slopes;
    else saved.alibi_slopes = Tensor();
    if (saved.positions == PositionScheme::alibi && !options.alibi_slopes)
        throw std::invalid_argument("attention: ALiBi without slopes in the core's options");
    const HeadsView q = HeadsView::split(saved.queries, num_heads, head_dim);
    const HeadsView k = HeadsView::split(saved.keys, num_heads, head_dim);
    const HeadsView v = HeadsView::split(saved.values, num_heads, head_dim);
    attend(q, k, v, sized_saved(saved.context, merged), options, saved.attention);
    if (!out_proj) return saved.context;
    check_allocation("attention (output)", Shape{s[0], s[1], out_proj->out_features()});
    out_proj->forward_into(saved.context.data(), rows, sized_saved(saved.output, {s[0], s[1], out_proj->out_features()}));
    return saved.output;
}

Tensor train_backward(nn::Linear& W_query, nn::Linear& W_key, nn::Linear& W_value,
                      nn::Linear* out_proj, const AttentionSaved& saved, const Tensor& grad_output,
                      const std::string& where, const Tensor* grad_x_before,
                      const ModulePositions* positions, ProjectionOrder order) {
    Tensor dx;
    train_backward_into(W_query, W_key, W_value, out_proj, saved, grad_output, where, grad_x_before, positions,
                        order, dx);
    return dx;
}

void train_backward_into(nn::Linear& W_query, nn::Linear& W_key, nn::Linear& W_value,
                         nn::Linear* out_proj, const AttentionSaved& saved, const Tensor& grad_output,
                         const std::string& where, const Tensor* grad_x_before,
                         const ModulePositions* positions, ProjectionOrder order, Tensor& grad_x) {
    const Shape sx = shape_of(saved.x);
    if (sx.size() != 3) throw_shape_error(where + " (saved.x)", "[b, T, d_in] (a forward's)", sx);
    if (grad_x_before) check_same_shape(where + " (the gradient x received before)", sx, shape_of(*grad_x_before));
    const std::size_t width = checked_mul(saved.num_heads, saved.head_dim, where + " (num_heads * head_dim)");
    const Shape merged{sx[0], sx[1], width};
    for (const Tensor* t : {&saved.queries, &saved.keys, &saved.values, &saved.context})
        check_same_shape(where + " (saved projections)", merged, shape_of(*t));
    for (nn::Linear* layer : {&W_query, &W_key, &W_value}) {
        layer->check_parameters();
        if (layer->in_features() != sx[2] || layer->out_features() != width) {
            // Built by appending (GCC 12 warns falsely on an inlined `"[" + std::string&&`).
            std::string expected("[");
            expected.append(std::to_string(width)).append(", ").append(std::to_string(sx[2])).append("], as in the forward");
            throw_shape_error(where + " (a projection's weight)", expected, shape_of(layer->weight));
        }
    }
    const bool rope = saved.positions == PositionScheme::rope;
    if (rope && (!positions || positions->scheme != PositionScheme::rope))
        throw std::invalid_argument(where + ": the forward rotated queries and keys (RoPE), but the module no "
                                            "longer holds RoPE's tables");
    if (rope) {  // the tables must still fit the forward's positions (checked before any .grad)
        const Shape c = shape_of(positions->cos);
        if (c.size() != 2 || c[1] != saved.head_dim || c[0] < sx[1] || shape_of(positions->sin) != c)
            throw_shape_error(where + " (positions.cos, positions.sin)",
                              std::string("[context_length >= ").append(std::to_string(sx[1])).append(", ")
                                  .append(std::to_string(saved.head_dim)).append("], both"), c);
    }
    if (order != ProjectionOrder::query_key_value && order != ProjectionOrder::key_query_value)
        throw std::invalid_argument(where + ": projection_order is not a ProjectionOrder value (" +
                                    std::to_string(static_cast<int>(order)) + ")");
    const std::size_t rows = sx[0] * sx[1];
    const std::size_t n = checked_mul(rows, width, where + " (b * T * d_out)");
    // 1. out_proj: its .grad, and dL/d(merged heads)
    const float* d_context = grad_output.data();
    if (out_proj) {
        out_proj->check_parameters();
        if (out_proj->in_features() != width)
            throw_shape_error(where + " (out_proj.weight)", std::string("[d_out, ").append(std::to_string(width)).append("]"),
                              shape_of(out_proj->weight));
        check_same_shape(where + " (grad_output)", Shape{sx[0], sx[1], out_proj->out_features()},
                         shape_of(grad_output));
        float* dc = scratch(3, n);
        out_proj->backward_into(saved.context.data(), rows, grad_output.data(), dc);
        d_context = dc;
    } else {
        check_same_shape(where + " (grad_output)", merged, shape_of(grad_output));
    }
    // 2. the core: dQ, dK, dV in the projections' merged layout
    const std::size_t H = saved.num_heads, hd = saved.head_dim;
    float* dq = scratch(4, n);
    float* dk = scratch(5, n);
    float* dv = scratch(6, n);
    attend_backward(HeadsView::split(d_context, sx[0], sx[1], width, H, hd),
                    HeadsView::split(saved.queries, H, hd), HeadsView::split(saved.keys, H, hd),
                    HeadsView::split(saved.values, H, hd), HeadsView::split(saved.context, H, hd),
                    saved.attention, dq, dk, dv, saved_options(saved));
    if (rope) {  // the rotation's backward: dL/d(W_query(x)) from dL/d(rotated queries), likewise keys
        positions->rotate(dq, sx[0], sx[1], width, H, hd, 0, /*transpose=*/true);
        positions->rotate(dk, sx[0], sx[1], width, H, hd, 0, /*transpose=*/true);
    }
    // 3. the projections: .grad, and dx = (dx_value + dx_key) + dx_query, autograd's order
    // (after what x received before, when given)
    const std::size_t m = checked_mul(rows, sx[2], where + " (b * T * d_in)");
    float* part = scratch(0, m);
    float* dx = sized(grad_x, sx, where + " (grad_x)");
    if (grad_x_before) {
        std::copy_n(grad_x_before->data(), m, dx);
        W_value.backward_into(saved.x.data(), rows, dv, part);
        detail::add_into(dx, part, m);
    } else {
        W_value.backward_into(saved.x.data(), rows, dv, dx);
    }
    const bool keys_first = order == ProjectionOrder::key_query_value;  // then the query's share comes second
    (keys_first ? W_query : W_key).backward_into(saved.x.data(), rows, keys_first ? dq : dk, part);
    detail::add_into(dx, part, m);
    (keys_first ? W_key : W_query).backward_into(saved.x.data(), rows, keys_first ? dk : dq, part);
    detail::add_into(dx, part, m);
}

}  // namespace attn::detail
