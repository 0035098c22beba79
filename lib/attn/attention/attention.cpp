#include "attn/attention/attention.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "attn/core/functional.hpp"

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

BoolTensor causal_mask_for(const std::string& where, const Tensor& mask, std::size_t T) {
    // The mask is a public member: it may have been replaced, so all of it is checked.
    const Shape sm = shape_of(mask);
    if (sm.size() != 2 || sm[0] != sm[1])
        throw_shape_error(where + " (mask)", "a square [context_length, context_length]", sm);
    const std::size_t context_length = mask.shape()[0];
    if (T > context_length) {
        throw std::invalid_argument(
            where + ": got " + std::to_string(T) + " tokens, but context_length is " +
            std::to_string(context_length) +
            " (the causal mask has only that many rows; PyTorch fails here too)");
    }
    const long t = static_cast<long>(T);
    return attn::to_bool(attn::slice(attn::slice(mask, 0, 0, t), 1, 0, t));
}

void require_positive(const std::string& where, const char* field, std::size_t value) {
    if (value == 0)
        throw std::invalid_argument(where + ": expected " + field + " > 0, got 0");
}

void require_probability(const std::string& where, const char* field, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        throw std::invalid_argument(where + ": expected " + field +
                                    " in [0, 1], got " + std::to_string(p));
}

void require_mask_size(const std::string& where, const char* field, std::size_t n) {
    check_allocation(where + " (mask [" + field + ", " + field + "])", Shape{n, n});
}

void require_weight_size(const std::string& where, const char* rows, std::size_t r,
                         const char* cols, std::size_t c) {
    check_allocation(where + " (weight [" + rows + ", " + cols + "])", Shape{r, c});
}

void require_divisible(const std::string& where, const char* field, std::size_t value,
                       const char* divisor_field, std::size_t divisor) {
    if (divisor == 0 || value % divisor != 0)
        throw std::invalid_argument(where + ": " + field + " must be divisible by " + divisor_field +
                                    ", got " + field + " = " + std::to_string(value) + ", " +
                                    divisor_field + " = " + std::to_string(divisor));
}

void CausalAttentionConfig::validate() const {
    const std::string where = "CausalAttention";
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    require_positive(where, "context_length", context_length);
    require_probability(where, "dropout", dropout);
    require_weight_size(where, "d_out", d_out, "d_in", d_in);
    require_mask_size(where, "context_length", context_length);
}

CausalAttention::CausalAttention(const CausalAttentionConfig& config, Generator& gen)
    : W_query((config.validate(), config.d_in), config.d_out, config.qkv_bias, gen),
      W_key(config.d_in, config.d_out, config.qkv_bias, gen),
      W_value(config.d_in, config.d_out, config.qkv_bias, gen),
      dropout(config.dropout, config.backend),
      mask(attn::triu(attn::ones({config.context_length, config.context_length}), 1)) {}

CausalAttention::Steps CausalAttention::forward_steps(const Tensor& x, Generator& gen) const {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != d_in())
        throw_shape_error("CausalAttention", "[b, T, " + std::to_string(d_in()) + "]", s);
    // Checked before any work, so a bad input draws nothing from the generator.
    const BoolTensor causal_mask = causal_mask_for("CausalAttention", mask, s[1]);
    Steps st;
    st.queries = W_query(x);
    st.keys = W_key(x);
    st.values = W_value(x);
    // keys.transpose(1, 2): [b, T, d_out] -> [b, d_out, T], so the product is [b, T, T].
    st.attn_scores = attn::masked_fill(attn::matmul(st.queries, attn::transpose(st.keys, 1, 2)),
                                       causal_mask, -std::numeric_limits<float>::infinity());
    // keys.shape[-1]**0.5 is a Python float; dividing a float32 tensor by it rounds it to
    // float32 first, as std::sqrt of the float d_k does.
    const float d_k = static_cast<float>(st.keys.shape().back());
    st.attn_weights = attn::softmax(Tensor(st.attn_scores / std::sqrt(d_k)), -1);
    st.dropped_weights = dropout(st.attn_weights, gen);
    st.context_vec = attn::matmul(st.dropped_weights, st.values);
    return st;
}

Tensor CausalAttention::operator()(const Tensor& x, Generator& gen) const {
    return forward_steps(x, gen).context_vec;
}

}  // namespace attn
