// BaseSelfAttention (base_self_attention.hpp): notebook 000 In [26] and In [41], and decoding
// token by token with and without the cache.
#include "attn/modules/base_self_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/attention/masks.hpp"
#include "attn/attention/padding.hpp"
#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"

namespace attn {

namespace {

// The width check every input of the attention goes through: [B, S, E] with the module's E.
void check_input(const std::string& where, const Tensor& x, std::size_t E) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != E) throw_shape_error(where, "[B, S, " + std::to_string(E) + "]", s);
}

// `a` and `b` both [B, *, E] with the same B (b's length named `len` in the message).
void check_pair(const std::string& fn, const char* a_name, const Tensor& a, const char* b_name, const Tensor& b,
                std::size_t E, const char* len) {
    check_input(fn + " (" + a_name + ")", a, E);
    check_input(fn + " (" + b_name + ")", b, E);
    if (b.shape()[0] != a.shape()[0])
        throw_shape_error(fn + " (" + b_name + ", the batch size of the " + a_name + ")",
                          "[" + std::to_string(a.shape()[0]) + ", " + len + ", " + std::to_string(E) + "]",
                          shape_of(b));
}

// torch.concat([past, new], dim=1) for contiguous [B, S_past, E] and [B, Sq, E]: per batch
// element, two blocks of memory one after the other (what attn::cat computes, without its
// general index arithmetic: this runs at every decoding step).
Tensor concat_tokens(const Tensor& past, const Tensor& now) {
    const std::size_t B = past.shape()[0], Sp = past.shape()[1], Sn = now.shape()[1], E = past.shape()[2];
    check_allocation("BaseSelfAttention (the cache and the new tokens)", Shape{B, Sp + Sn, E});
    Tensor out = Tensor::from_shape({B, Sp + Sn, E});
    // An empty tensor's data may be null: memcpy from null is undefined even for 0 bytes.
    if (out.size() == 0) return out;
    for (std::size_t b = 0; b < B; ++b) {
        float* dst = out.data() + b * (Sp + Sn) * E;
        if (Sp != 0) std::memcpy(dst, past.data() + b * Sp * E, Sp * E * sizeof(float));
        if (Sn != 0) std::memcpy(dst + Sp * E, now.data() + b * Sn * E, Sn * E * sizeof(float));
    }
    return out;
}

// [B, S, E] as one head, [B, 1, S, E] (a copy: the step backend reads contiguous heads).
Tensor one_head(const Tensor& x) {
    Tensor y = x;
    y.reshape({x.shape()[0], std::size_t{1}, x.shape()[1], x.shape()[2]});
    return y;
}

}  // namespace

void BaseSelfAttentionConfig::validate() const {
    require_positive("BaseSelfAttention", "embed_dim", embed_dim);
    require_weight_size("BaseSelfAttention", "embed_dim", embed_dim, "embed_dim", embed_dim);
}

BaseSelfAttention::BaseSelfAttention(const BaseSelfAttentionConfig& config, Generator& gen)
    : embed_dim((config.validate(), config.embed_dim)),
      query_proj(embed_dim, embed_dim, true, gen),
      key_proj(embed_dim, embed_dim, true, gen),
      value_proj(embed_dim, embed_dim, true, gen),
      output_proj(embed_dim, embed_dim, true, gen),
      fully_masked_rows(config.fully_masked_rows) {}

BaseSelfAttention::QueryKeyValue BaseSelfAttention::construct_query_key_value(
    const Tensor& x, const KVCache* kv_cache) const {
    check_input("BaseSelfAttention (x)", x, embed_dim);
    QueryKeyValue qkv{query_proj(x), key_proj(x), value_proj(x)};
    if (kv_cache) {
        // key and value are public: a caller may have replaced either since the cache was
        // made, so both are checked here, before anything is read.
        kv_cache->validate("BaseSelfAttention (kv_cache)");
        const Shape sc = shape_of(kv_cache->key);
        if (sc.size() != 3 || sc[0] != x.shape()[0] || sc[2] != embed_dim)
            throw_shape_error("BaseSelfAttention (kv_cache.key for x " + shape_str(shape_of(x)) + ")",
                              "[" + std::to_string(x.shape()[0]) + ", S_past, " +
                                  std::to_string(embed_dim) + "]",
                              sc);
        // The cached tokens come first: they are the earlier positions (of a preallocated
        // cache, the slots that hold tokens).
        const bool slots = kv_cache->capacity != 0;
        qkv.key = concat_tokens(slots ? kv_cache->recent_keys(kv_cache->pos) : kv_cache->key, qkv.key);
        qkv.value = concat_tokens(slots ? kv_cache->recent_values(kv_cache->pos) : kv_cache->value, qkv.value);
    }
    return qkv;
}

Tensor BaseSelfAttention::calculate_unmasked_attention_logits(const Tensor& query,
                                                             const Tensor& key) const {
    check_pair("calculate_unmasked_attention_logits", "query", query, "key", key, embed_dim, "Sk");
    // One sgemm per batch element reading key as transposed (CblasTrans), as PyTorch's matmul
    // does for the view key.transpose(1, 2): no [B, E, Sk] copy at every decoding step.
    const std::size_t B = query.shape()[0], Sq = query.shape()[1], Sk = key.shape()[1], E = embed_dim;
    check_allocation("calculate_unmasked_attention_logits", Shape{B, Sq, Sk});
    Tensor logits = xt::zeros<float>(Shape{B, Sq, Sk});
    if (Sq && Sk) {
        for (std::size_t b = 0; b < B; ++b)
            attn::gemm_rowmajor(query.data() + b * Sq * E, key.data() + b * Sk * E,
                                logits.data() + b * Sq * Sk, Sq, E, Sk, /*transpose_b=*/true);
    }
    // Then divided by the Python float math.sqrt(E), which PyTorch's kernel casts to float32.
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(embed_dim)));
    float* v = logits.data();
    for (std::size_t i = 0; i < logits.size(); ++i) v[i] /= scale;
    return logits;
}

Tensor BaseSelfAttention::apply_causal_mask(const Tensor& attention_logits, float mask_value) const {
    const Shape s = shape_of(attention_logits);
    check_rank("apply_causal_mask (attention_logits)", s, 3);
    // masked_fill(causal_mask(Sq, Sk) == 0, mask_value) broadcast over B, written as the loop
    // it amounts to: in row i, the columns after Sk - Sq + i are the future.
    const std::size_t B = s[0], Sq = s[1], Sk = s[2];
    if (Sq > Sk) causal_mask(Sq, Sk);  // throws, naming Sq and Sk
    Tensor masked = attention_logits;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Sq; ++i) {
            float* row = masked.data() + (b * Sq + i) * Sk;
            std::fill(row + (Sk - Sq + i + 1), row + Sk, mask_value);
        }
    return masked;
}

Tensor& BaseSelfAttention::apply_causal_mask_square_(Tensor& attention_logits, float mask_value) const {
    const Shape s = shape_of(attention_logits);
    check_rank("apply_causal_mask_square_ (attention_logits)", s, 3);
    // `B,S,S = attention_logits.shape`: the second S overwrites the first, so S = Sk.
    const std::size_t B = s[0], S = s[2];
    const Tensor mask = attn::tril(attn::ones({B, S, S}));
    return masked_fill_(attention_logits, attn::eq(mask, 0.0f), mask_value);
}

Tensor BaseSelfAttention::apply_attention_mask(const LongTensor& attention_mask,
                                               const Tensor& masked_attention_logits) const {
    return attn::apply_attention_mask(masked_attention_logits, attention_mask);
}

Tensor BaseSelfAttention::calculate_attention_weights(const Tensor& masked_attention_logits) const {
    return fully_masked_rows == FullyMaskedRows::zero ? attn::masked_softmax(masked_attention_logits)
                                                      : attn::softmax(masked_attention_logits, -1);
}

Tensor BaseSelfAttention::calculate_final_output(const Tensor& attention_weights,
                                                 const Tensor& value) const {
    const Shape sw = shape_of(attention_weights), sv = shape_of(value);
    check_rank("calculate_final_output (attention_weights)", sw, 3);
    if (sv.size() != 3 || sv[0] != sw[0] || sv[1] != sw[2] || sv[2] != embed_dim)
        throw_shape_error("calculate_final_output (value for weights " + shape_str(sw) + ")",
                          "[" + std::to_string(sw[0]) + ", " + std::to_string(sw[2]) + ", " +
                              std::to_string(embed_dim) + "]",
                          sv);
    return output_proj(attn::matmul(attention_weights, value));
}

BaseOutput BaseSelfAttention::forward(const Tensor& x, const std::optional<LongTensor>& attention_mask,
                                      const KVCache* kv_cache) const {
    const std::string where = "BaseSelfAttention";
    check_linear(where, "query_proj", query_proj, embed_dim, embed_dim);
    check_linear(where, "key_proj", key_proj, embed_dim, embed_dim);
    check_linear(where, "value_proj", value_proj, embed_dim, embed_dim);
    check_linear(where, "output_proj", output_proj, embed_dim, embed_dim);
    auto [query, key, value] = construct_query_key_value(x, kv_cache);
    const std::size_t B = x.shape()[0], Sq = x.shape()[1], Sk = key.shape()[1];
    BoolTensor padding;
    if (attention_mask) {
        // Check before any work, so the message names x and the cache, not an inner step.
        const Shape want{B, Sk};
        if (shape_of(*attention_mask) != want)
            throw_shape_error("BaseSelfAttention (attention_mask [B, S_past + Sq] for x " +
                                  shape_str(shape_of(x)) + " and a cache of " +
                                  std::to_string(kv_cache ? kv_cache->length() : 0) + " tokens)",
                              shape_str(want), shape_of(*attention_mask));
        padding = key_padding_mask(*attention_mask);  // [B, 1, 1, Sk]
    }
    // The notebook divides the logits by the Python float math.sqrt(E), which PyTorch's
    // kernel casts to float32; its causal mask puts the Sq new queries at positions
    // S_past .. Sk - 1 among the keys.
    SDPAOptions o{.attn_mask = attention_mask ? &padding : nullptr,
                  .is_causal = true,
                  .query_start = Sk - Sq,
                  .scale = ScoreScale::divide_by(static_cast<float>(std::sqrt(static_cast<double>(embed_dim)))),
                  .fully_masked_rows = fully_masked_rows};
    SDPASteps st = scaled_dot_product_attention_steps(one_head(query), one_head(key), one_head(value), o);
    st.output.reshape({B, Sq, embed_dim});
    st.attn_weights.reshape({B, Sq, Sk});
    Tensor output = output_proj(st.output);
    return BaseOutput{std::move(output), std::move(st.attn_weights), std::move(key), std::move(value)};
}

namespace {

void check_decode_args(const BaseSelfAttention& attention, const Tensor& prompt,
                       const Tensor& tokens, std::size_t chunk) {
    const std::size_t E = attention.embed_dim;
    check_pair("decode", "prompt", prompt, "tokens", tokens, E, "N");
    if (prompt.shape()[1] == 0)
        throw_shape_error("decode (prompt)", "[B, S0 >= 1, " + std::to_string(E) + "]", shape_of(prompt));
    if (chunk == 0) throw std::invalid_argument("decode: expected chunk >= 1, got 0");
}

}  // namespace

Tensor decode_with_cache(const BaseSelfAttention& attention, const Tensor& prompt,
                         const Tensor& tokens, std::size_t chunk) {
    check_decode_args(attention, prompt, tokens, chunk);
    const std::size_t N = tokens.shape()[1];
    const BaseOutput first = attention(prompt);
    KVCache cache(first.key, first.value);
    std::vector<Tensor> outputs;
    // Chunks by size_t arithmetic: a chunk of SIZE_MAX is one chunk, never a negative step.
    for (std::size_t start = 0; start < N; start += std::min(chunk, N - start)) {
        const std::size_t stop = start + std::min(chunk, N - start);
        const BaseOutput out = attention(attn::slice(tokens, 1, long(start), long(stop)), std::nullopt, &cache);
        outputs.push_back(out.attention_output);
        cache = KVCache(out.key, out.value);  // the returned keys/values are the next cache
    }
    if (outputs.empty()) return xt::empty<float>(Shape{prompt.shape()[0], 0, attention.embed_dim});
    return attn::cat(outputs, 1);
}

Tensor decode_without_cache(const BaseSelfAttention& attention, const Tensor& prompt,
                            const Tensor& tokens, std::size_t chunk) {
    check_decode_args(attention, prompt, tokens, chunk);
    const std::size_t N = tokens.shape()[1];
    const long S0 = static_cast<long>(prompt.shape()[1]);
    std::vector<Tensor> outputs;
    for (std::size_t start = 0; start < N; start += std::min(chunk, N - start)) {
        const std::size_t stop = start + std::min(chunk, N - start);
        const Tensor prefix = attn::cat({prompt, attn::slice(tokens, 1, 0, long(stop))}, 1);
        const BaseOutput out = attention(prefix);
        outputs.push_back(attn::slice(out.attention_output, 1, S0 + long(start), S0 + long(stop)));
    }
    if (outputs.empty()) return xt::empty<float>(Shape{prompt.shape()[0], 0, attention.embed_dim});
    return attn::cat(outputs, 1);
}

}  // namespace attn
