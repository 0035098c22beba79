// GPT2Attention (gpt2.hpp): notebook 003's layer, nanoGPT's CausalSelfAttention.
#include "attn/modules/gpt2.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {

long gpt2_long(std::size_t n) { return static_cast<long>(n); }

// Rows [begin, end) of a Linear's weight (and bias): the layer that computes those outputs.
nn::Linear linear_rows(const nn::Linear& l, std::size_t begin, std::size_t end) {
    Tensor w = attn::slice(l.weight, 0, gpt2_long(begin), gpt2_long(end));
    std::optional<Tensor> b;
    if (l.bias) b = attn::slice(l.bias_vector(), 0, gpt2_long(begin), gpt2_long(end));
    return nn::Linear(std::move(w), std::move(b));
}

// Every check of a GPT2Config, before the layer draws anything.
const GPT2Config& checked(const GPT2Config& config) {
    const std::string where = "GPT2Attention";
    require_divisible(where + " (n_embd, n_head)", "d_out", config.n_embd, "num_heads", config.n_head);
    require_positive(where, "block_size", config.block_size);
    require_probability(where, "dropout", config.dropout);
    std::size_t three = 0;
    if (__builtin_mul_overflow(config.n_embd, std::size_t{3}, &three))
        throw std::length_error(where + " (c_attn weight [3 * n_embd, n_embd]): 3 * n_embd = 3 * " +
                                std::to_string(config.n_embd) + " overflows");
    require_weight_size(where + " (c_attn)", "3 * n_embd", three, "n_embd", config.n_embd);
    require_mask_size(where, "block_size", config.block_size);
    return config;
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, std::size_t split_size, long dim) {
    if (split_size == 0) throw std::invalid_argument("split: expected split_size > 0, got 0");
    if (x.dimension() == 0) throw_shape_error("split", "at least 1-D", shape_of(x));
    const std::size_t d = wrap_dim("split", dim, x.dimension());
    const std::size_t n = x.shape()[d];
    std::vector<Tensor> parts;
    for (std::size_t start = 0; start < n; start += split_size)
        parts.push_back(attn::slice(x, gpt2_long(d), gpt2_long(start),
                                    gpt2_long(std::min(n, start + split_size))));
    if (parts.empty()) parts.push_back(x);  // torch.split of an empty dim gives one empty chunk
    return parts;
}

GPT2Attention::GPT2Attention(const GPT2Config& config, nn::BernoulliBackend backend,
                             Generator& gen)
    : max_positions(checked(config).block_size),
      embed_dim(config.n_embd),
      num_heads(config.n_head),
      head_dim(config.n_embd / config.n_head),
      c_attn(config.n_embd, 3 * config.n_embd, config.bias, gen),
      c_proj(config.n_embd, config.n_embd, config.bias, gen),
      attn_dropout(config.dropout, backend),
      resid_dropout(config.dropout, backend) {
    const long n = gpt2_long(config.block_size);
    bias = attn::view(attn::tril(attn::ones({config.block_size, config.block_size})),
                      {1, 1, n, n});
}

Shape GPT2Attention::check(const Tensor& x) const {
    const std::string where = "GPT2Attention";
    const Shape s = check_tokens(where, x, embed_dim);
    std::size_t three = 0;
    if (__builtin_mul_overflow(embed_dim, std::size_t{3}, &three))
        throw std::invalid_argument(where + ": embed_dim = " + std::to_string(embed_dim) + " is too large");
    check_linear(where, "c_attn", c_attn, embed_dim, three);
    check_output_linear(where, "c_proj", c_proj, embed_dim, embed_dim);
    check_heads(where, num_heads, head_dim, embed_dim);
    // nanoGPT reads bias[:, :, :T, :T]: a buffer of another rank fails there in PyTorch.
    const Shape sb = shape_of(bias);
    if (sb.size() != 4 || sb[0] != 1 || sb[1] != 1)
        throw_shape_error(where + " (bias)", "[1, 1, block_size, block_size] (read as bias[:, :, :T, :T])", sb);
    check_dropout(where, attn_dropout);
    check_dropout(where, resid_dropout);
    if (s[1] > max_positions) {
        throw std::invalid_argument("GPT2Attention: got " + std::to_string(s[1]) +
                                    " tokens, but block_size is " +
                                    std::to_string(max_positions) +
                                    " (the causal buffer has only that many rows)");
    }
    return s;
}

SDPAOptions GPT2Attention::options(const BufferMask& causal, Generator& gen) const {
    // `* (1.0 / math.sqrt(k.size(-1)))`: a Python double, rounded to float32 by the multiply.
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    SDPAOptions o = dropout_options(attn_dropout, gen);
    o.scale = ScoreScale::multiply_by(scale);
    causal.apply(o);
    return o;
}

GPT2Attention::Steps GPT2Attention::forward_steps(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    const long B = gpt2_long(s[0]), T = gpt2_long(s[1]), S = gpt2_long(s[2]);
    const long H = gpt2_long(num_heads), hs = gpt2_long(head_dim);
    // bias[:, :, :T, :T] == 0 marks the future; [1, 1, T, T] broadcasts over B and H.
    const BufferMask causal = read_buffer("GPT2Attention", bias, s[1], 0.0f);
    Steps st;
    st.qkv = c_attn(x);
    const auto parts = attn::split(st.qkv, embed_dim, 2);
    st.q = parts[0];
    st.k = parts[1];
    st.v = parts[2];
    st.q_heads = attn::transpose(attn::view(st.q, {B, T, H, hs}), 1, 2);
    st.k_heads = attn::transpose(attn::view(st.k, {B, T, H, hs}), 1, 2);
    st.v_heads = attn::transpose(attn::view(st.v, {B, T, H, hs}), 1, 2);
    // (q @ k^T) * (1 / sqrt(hs)), masked, softmax, attn_dropout, @ v: the core's steps.
    const SDPASteps core = scaled_dot_product_attention_steps(st.q_heads, st.k_heads, st.v_heads,
                                                              options(causal, gen));
    st.att_scores = core.scaled_scores;
    st.att_masked = core.masked_scores;
    st.att = core.attn_weights;
    st.att_dropped = core.dropped_weights;
    st.y_heads = core.output;
    st.y = attn::view(attn::transpose(st.y_heads, 1, 2), {B, T, S});
    st.proj = c_proj(st.y);
    st.output = resid_dropout(st.proj, gen);
    return st;
}

Tensor GPT2Attention::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    const BufferMask causal = read_buffer("GPT2Attention", bias, s[1], 0.0f);
    // c_attn(x): [B, T, 3S], q, k, v side by side, in a reused workspace; each read as heads
    // where it lies (qkv.split(S, dim=2) and .view(B, T, H, hs).transpose(1, 2), no copies).
    const std::size_t S = embed_dim;
    const HeadsView q = detail::project_heads(0, c_attn, x, num_heads, head_dim);
    const HeadsView k = HeadsView::split(q.data, s[0], s[1], 3 * S, num_heads, head_dim, S);
    const HeadsView v = HeadsView::split(q.data, s[0], s[1], 3 * S, num_heads, head_dim, 2 * S);
    return resid_dropout(detail::attend_project(q, k, v, &c_proj, options(causal, gen)), gen);
}

MultiHeadAttention split_c_attn(const GPT2Attention& layer) {
    const std::size_t S = layer.embed_dim;
    check_linear("split_c_attn", "c_attn", layer.c_attn, S, checked_mul(S, 3, "split_c_attn (3 * embed_dim)"));
    MultiHeadAttention m(linear_rows(layer.c_attn, 0, S), linear_rows(layer.c_attn, S, 2 * S),
                         linear_rows(layer.c_attn, 2 * S, 3 * S), layer.c_proj,
                         layer.max_positions, layer.num_heads, layer.attn_dropout.p,
                         layer.attn_dropout.backend);
    m.train(layer.attn_dropout.training);
    return m;
}

}  // namespace attn
