#include "attn/attention.hpp"

#include <cmath>

#include "attn/functional.hpp"

namespace attn {

namespace {
void check_tokens(const char* where, const Tensor& x, std::size_t d_in) {
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
    check_tokens("SelfAttention_v1", x, W_query.shape()[0]);
    const Tensor queries = attn::matmul(x, W_query);
    const Tensor keys = attn::matmul(x, W_key);
    const Tensor values = attn::matmul(x, W_value);
    const Tensor attn_scores = attn::matmul(queries, attn::T(keys));
    const float d_k = static_cast<float>(keys.shape().back());
    const Tensor attn_weights = attn::softmax(Tensor(attn_scores / std::sqrt(d_k)));
    return attn::matmul(attn_weights, values);
}

SelfAttention_v2::SelfAttention_v2(std::size_t d_in, std::size_t d_out, bool qkv_bias,
                                   Generator& gen)
    : W_query(d_in, d_out, qkv_bias, gen),
      W_key(d_in, d_out, qkv_bias, gen),
      W_value(d_in, d_out, qkv_bias, gen) {}

Tensor SelfAttention_v2::operator()(const Tensor& x) const {
    check_tokens("SelfAttention_v2", x, W_query.in_features());
    const Tensor queries = W_query(x);
    const Tensor keys = W_key(x);
    const Tensor values = W_value(x);
    const Tensor attn_scores = attn::matmul(queries, attn::T(keys));
    const float d_k = static_cast<float>(keys.shape().back());
    const Tensor attn_weights = attn::softmax(Tensor(attn_scores / std::sqrt(d_k)));
    return attn::matmul(attn_weights, values);
}

}  // namespace attn
