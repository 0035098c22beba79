// MultiHeadLatentAttention and its absorbed form (mla.hpp): Raschka's ch04/05_mla module on the
// attention core, with the latent cache as a configuration of the one KVCache.
#include "attn/modules/mla.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {

// Scratch slots: project_heads' queries take 0, attend_project's merged heads 7.
constexpr std::size_t kKeySlot = 1, kValueSlot = 2, kLatentSlot = 4;

// The absorbed form has no dropout: its options are the causal ones with p = 0.
const nn::Dropout kNoDropout(0.0);

// A latent cache for a batch of b and latents of width L: full, holding [b, pos, L] and
// [b, pos, 0] (or nothing yet).
void check_latent_cache(const std::string& where, const KVCache& cache, std::size_t b, std::size_t L) {
    if (cache.window != 0)
        throw std::invalid_argument(where + ": expected a full latent KVCache (make_cache()), got a "
                                    "sliding-window one (window = " + std::to_string(cache.window) + ")");
    cache.validate(where + " (cache)");
    if (cache.pos == 0) return;
    const std::string p = std::to_string(cache.pos), bs = std::to_string(b);
    if (shape_of(cache.key) != Shape{b, cache.pos, L})
        throw_shape_error(where + " (cache.key, the latents)", "[" + bs + ", " + p + ", " + std::to_string(L) + "]",
                          shape_of(cache.key));
    if (shape_of(cache.value) != Shape{b, cache.pos, 0})
        throw_shape_error(where + " (cache.value, empty in a latent cache)", "[" + bs + ", " + p + ", 0]",
                          shape_of(cache.value));
}

// The latents of x [b, T, d_in] in scratch: [b * T, L].
const float* latents_of(const nn::Linear& W_DKV, const Tensor& x, const Shape& s, std::size_t L) {
    const std::size_t rows = checked_mul(s[0], s[1], "latents (b * T)");
    float* c = detail::scratch(kLatentSlot, checked_mul(rows, L, "latents (b * T * latent_dim)"));
    W_DKV.forward_into(x.data(), rows, c);
    return c;
}

// Appends x's latents to a checked latent cache: [b, T, L] and an empty [b, T, 0].
void append_latents(KVCache& cache, const nn::Linear& W_DKV, const Tensor& x, const Shape& s) {
    cache.append(W_DKV(x), Tensor::from_shape({s[0], s[1], 0}));
}

long mla_long(std::size_t n) { return static_cast<long>(n); }

}  // namespace

// ------------------------------------------------------------------- the module

std::size_t resolved_latent_dim(const AttentionConfig& c) {
    return c.latent_dim ? *c.latent_dim : std::max<std::size_t>(16, c.d_out / 8);
}

std::size_t MultiHeadLatentAttention::checked_latent_dim(const AttentionConfig& c) {
    const std::string where = "MultiHeadLatentAttention";
    const std::size_t L = resolved_latent_dim(c);
    require_weight_size(where, "latent_dim", L, "d_in", c.d_in);
    require_weight_size(where, "d_out", c.d_out, "latent_dim", L);
    return L;
}

MultiHeadLatentAttention::MultiHeadLatentAttention(const MultiHeadLatentAttentionConfig& c,
                                                   Generator& gen)
    : AttentionSkeleton("MultiHeadLatentAttention", c, {ConfigField::latent_dim}),
      latent_dim(checked_latent_dim(c)) {
    W_query = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_DKV = nn::Linear(c.d_in, latent_dim, c.qkv_bias, gen);
    W_UK = nn::Linear(latent_dim, c.d_out, c.qkv_bias, gen);
    W_UV = nn::Linear(latent_dim, c.d_out, c.qkv_bias, gen);
    out_proj = nn::Linear(c.d_out, c.d_out, true, gen);
}

Shape MultiHeadLatentAttention::check(const Tensor& x) const {
    require_positive(type_name(), "latent_dim", latent_dim);
    return check_layers(x, {{"W_DKV", &W_DKV, reads_x, latent_dim},
                            {"W_UK", &W_UK, latent_dim, gives_d_out},
                            {"W_UV", &W_UV, latent_dim, gives_d_out}});
}

Tensor MultiHeadLatentAttention::attend_latents(const Tensor& x, const float* latents,
                                                std::size_t tokens, std::size_t query_start,
                                                Generator& gen) const {
    const std::size_t b = x.shape()[0], d = d_out();
    const std::size_t rows = checked_mul(b, tokens, "keys (b * S)");
    const HeadsView queries = detail::project_heads(0, W_query, x, num_heads, head_dim);  // [b, H, T, hd]
    // Keys and values of every token rebuilt from its latent: [b, S, d_out] seen as [b, H, S, hd].
    float* keys = detail::scratch(kKeySlot, checked_mul(rows, d, "keys (b * S * d_out)"));
    float* values = detail::scratch(kValueSlot, checked_mul(rows, d, "values (b * S * d_out)"));
    W_UK.forward_into(latents, rows, keys);
    W_UV.forward_into(latents, rows, values);
    return detail::attend_project(queries, HeadsView::split(keys, b, tokens, d, num_heads, head_dim),
                                  HeadsView::split(values, b, tokens, d, num_heads, head_dim), &out_proj,
                                  core_options(query_start, gen));
}

Tensor MultiHeadLatentAttention::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    check_positions(type_name(), 0, s[1], context_length);
    return attend_latents(x, latents_of(W_DKV, x, s, latent_dim), s[1], 0, gen);  // [b, T, d_out]
}

Tensor MultiHeadLatentAttention::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = type_name();
    const Shape s = check(x);
    check_latent_cache(where, cache, s[0], latent_dim);
    const std::size_t start = cache.pos;
    check_positions(where, start, s[1], context_length);
    append_latents(cache, W_DKV, x, s);  // the cache holds [b, start + T, L] latents
    return attend_latents(x, cache.key.data(), cache.pos, start, gen);
}

// ------------------------------------------------------------------- the absorbed form

AbsorbedLatentAttention absorb(const MultiHeadLatentAttention& m) {
    m.check(Tensor::from_shape({1, 1, m.d_in()}));  // every public field must still fit
    const long H = mla_long(m.num_heads), hd = mla_long(m.head_dim), L = mla_long(m.latent_dim);
    const long d_in = mla_long(m.d_in()), d = mla_long(m.d_out());
    Tensor Wq = Tensor::from_shape({m.num_heads * m.latent_dim, m.d_in()});
    Tensor Wo = Tensor::from_shape({m.d_out(), m.num_heads * m.latent_dim});
    std::optional<Tensor> bq;
    if (m.W_query.bias) bq = Tensor::from_shape({m.num_heads * m.latent_dim});
    for (long h = 0; h < H; ++h) {
        const Tensor UK_h = attn::slice(m.W_UK.weight, 0, h * hd, (h + 1) * hd);  // [hd, L]
        const Tensor UV_h = attn::slice(m.W_UV.weight, 0, h * hd, (h + 1) * hd);  // [hd, L]
        const Tensor UK_hT = attn::transpose(UK_h, 0, 1);                           // [L, hd]
        // q̃_h = W_UK_hᵀ (W_query_h x + b_query_h)
        const Tensor q_block = attn::matmul(UK_hT, attn::slice(m.W_query.weight, 0, h * hd, (h + 1) * hd));
        std::copy_n(q_block.data(), L * d_in, Wq.data() + h * L * d_in);
        if (bq) {
            const Tensor b_h = attn::view(attn::slice(*m.W_query.bias, 0, h * hd, (h + 1) * hd), {hd, 1});
            std::copy_n(attn::matmul(UK_hT, b_h).data(), L, bq->data() + h * L);
        }
        // out_proj's columns of head h times W_UV_h: [d_out, L], columns h*L .. (h+1)*L - 1.
        const Tensor o_block = attn::matmul(attn::slice(m.out_proj.weight, 1, h * hd, (h + 1) * hd), UV_h);
        for (long i = 0; i < d; ++i) std::copy_n(o_block.data() + i * L, L, Wo.data() + i * H * L + h * L);
    }
    std::optional<Tensor> bo = m.out_proj.bias;
    if (bo && m.W_UV.bias) {  // b_out + W_out b_UV (the weights of a row sum to 1)
        const Tensor folded = attn::matmul(m.out_proj.weight, attn::view(*m.W_UV.bias, {d, 1}));
        for (long i = 0; i < d; ++i) bo->data()[i] += folded.data()[i];
    }
    return {.num_heads = m.num_heads, .head_dim = m.head_dim, .latent_dim = m.latent_dim,
            .context_length = m.context_length, .W_query = nn::Linear(std::move(Wq), std::move(bq)),
            .W_DKV = m.W_DKV, .out_proj = nn::Linear(std::move(Wo), std::move(bo))};
}

Shape AbsorbedLatentAttention::check(const Tensor& x) const {
    const std::string where = "AbsorbedLatentAttention";
    const Shape s = check_tokens(where, x, W_query.in_features());
    require_positive(where, "num_heads", num_heads);
    require_positive(where, "head_dim", head_dim);
    require_positive(where, "latent_dim", latent_dim);
    const std::size_t width = checked_mul(num_heads, latent_dim, where + " (num_heads * latent_dim)");
    check_linear(where, "W_query", W_query, W_query.in_features(), width);
    check_linear(where, "W_DKV", W_DKV, W_query.in_features(), latent_dim);
    check_linear(where, "out_proj", out_proj, width, out_proj.out_features());
    return s;
}

Tensor AbsorbedLatentAttention::attend_latents(const float* latents, std::size_t tokens,
                                               const Tensor& x, std::size_t query_start) const {
    // H queries of width L against one key/value head: the latents, read as they are stored.
    const HeadsView queries = detail::project_heads(0, W_query, x, num_heads, latent_dim);
    const HeadsView c = HeadsView::split(latents, x.shape()[0], tokens, latent_dim, 1, latent_dim);
    return detail::attend_project(queries, c, c, &out_proj,
                                  causal_options(head_dim, query_start, kNoDropout, default_generator()));
}

Tensor AbsorbedLatentAttention::operator()(const Tensor& x) const {
    const Shape s = check(x);
    check_positions("AbsorbedLatentAttention", 0, s[1], context_length);
    return attend_latents(latents_of(W_DKV, x, s, latent_dim), s[1], x, 0);
}

Tensor AbsorbedLatentAttention::forward(const Tensor& x, KVCache& cache) const {
    const std::string where = "AbsorbedLatentAttention";
    const Shape s = check(x);
    check_latent_cache(where, cache, s[0], latent_dim);
    const std::size_t start = cache.pos;
    check_positions(where, start, s[1], context_length);
    append_latents(cache, W_DKV, x, s);
    return attend_latents(cache.key.data(), cache.pos, x, start);
}

}  // namespace attn
