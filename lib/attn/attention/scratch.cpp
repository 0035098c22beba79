#include "attn/attention/scratch.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::detail {

float* scratch(std::size_t slot, std::size_t floats) {
    thread_local std::array<std::vector<float>, 8> buffers;
    std::vector<float>& b = buffers.at(slot);
    if (b.size() < floats) b.resize(floats);
    return b.data();
}

HeadsView project_heads(std::size_t slot, const nn::Linear& layer, const Tensor& x,
                        std::size_t num_heads, std::size_t head_dim) {
    const Shape s = shape_of(x);
    const std::size_t out = layer.out_features();
    if (s.size() != 3 || s[2] != layer.in_features())
        throw_shape_error("project_heads (x)", "[B, T, " + std::to_string(layer.in_features()) + "]", s);
    const std::size_t rows = checked_mul(s[0], s[1], "project_heads (B * T)");
    float* y = scratch(slot, checked_mul(rows, out, "project_heads (B * T * out_features)"));
    layer.forward_into(x.data(), rows, y);
    return HeadsView::split(y, s[0], s[1], out, num_heads, head_dim);
}

Tensor attend_project(const HeadsView& q, const HeadsView& k, const HeadsView& v,
                      const nn::Linear* out_proj, const SDPAOptions& options) {
    const std::size_t rows = checked_mul(q.B, q.T, "attend (B * Tq)");
    const std::size_t width = checked_mul(q.H, v.hd, "attend (H * dv)");
    if (!out_proj) {
        Tensor y = Tensor::from_shape({q.B, q.T, width});
        attend(q, k, v, y.data(), options);
        return y;
    }
    if (out_proj->in_features() != width)
        throw std::invalid_argument("attend: the merged heads are " + std::to_string(width) +
                                    " wide, but out_proj takes " + std::to_string(out_proj->in_features()));
    check_allocation("attend (output)", Shape{q.B, q.T, out_proj->out_features()});
    float* merged = scratch(7, checked_mul(rows, width, "attend (B * Tq * H * dv)"));
    attend(q, k, v, merged, options);
    Tensor y = Tensor::from_shape({q.B, q.T, out_proj->out_features()});
    out_proj->forward_into(merged, rows, y.data());
    return y;
}

}  // namespace attn::detail
