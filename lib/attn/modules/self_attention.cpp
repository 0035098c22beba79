// SelfAttention_v1 and SelfAttention_v2 (self_attention.hpp): Raschka ch. 3.4's forwards.
#include "attn/modules/self_attention.hpp"

#include <cmath>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"

namespace attn {

namespace {
void check_tokens_2d(const char* where, const Tensor& x, std::size_t d_in) {
    const Shape s = shape_of(x);
    if (s.size() != 2 || s[1] != d_in)
        throw_shape_error(where, "[T, " + std::to_string(d_in) + "]", s);
}
}  // namespace

SelfAttention_v1::SelfAttention_v1(std::size_t d_in, std::size_t d_out, Generator& gen)
    : W_query(nn::rand_parameter(d_in, d_out, gen)),
      W_key(nn::rand_parameter(d_in, d_out, gen)),
      W_value(nn::rand_parameter(d_in, d_out, gen)) {}

Tensor SelfAttention_v1::operator()(const Tensor& x) const {
    const Shape w = shape_of(W_query);
    if (w.size() != 2) throw_shape_error("SelfAttention_v1 (W_query)", "[d_in, d_out]", w);
    check_same_shape("SelfAttention_v1 (W_key)", w, shape_of(W_key));
    check_same_shape("SelfAttention_v1 (W_value)", w, shape_of(W_value));
    check_tokens_2d("SelfAttention_v1", x, w[0]);
    const Tensor queries = attn::matmul(x, W_query);
    const Tensor keys = attn::matmul(x, W_key);
    const Tensor values = attn::matmul(x, W_value);
    // softmax(queries @ keys.T / d_k**0.5) @ values: the core, unmasked.
    const float d_k = static_cast<float>(keys.shape().back());
    return scaled_dot_product_attention(queries, keys, values,
                                        {.scale = ScoreScale::divide_by(std::sqrt(d_k))});
}

SelfAttention_v2::SelfAttention_v2(std::size_t d_in, std::size_t d_out, bool qkv_bias,
                                   Generator& gen)
    : W_query(d_in, d_out, qkv_bias, gen),
      W_key(d_in, d_out, qkv_bias, gen),
      W_value(d_in, d_out, qkv_bias, gen) {}

Tensor SelfAttention_v2::operator()(const Tensor& x) const {
    check_tokens_2d("SelfAttention_v2", x, W_query.in_features());
    const Tensor queries = W_query(x);
    const Tensor keys = W_key(x);
    const Tensor values = W_value(x);
    // softmax(queries @ keys.T / d_k**0.5) @ values: the core, unmasked.
    const float d_k = static_cast<float>(keys.shape().back());
    return scaled_dot_product_attention(queries, keys, values,
                                        {.scale = ScoreScale::divide_by(std::sqrt(d_k))});
}

}  // namespace attn
