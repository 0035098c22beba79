#include "attn/modules/module.hpp"

#include <cmath>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace attn {

ModulePositions ModulePositions::of(const std::string& where, const AttentionConfig& c, std::size_t num_heads,
                                    std::size_t head_dim) {
    ModulePositions p;
    p.scheme = c.positions;
    if (c.positions == PositionScheme::rope) {
        if (c.context_length > (std::size_t{1} << 24))
            throw std::invalid_argument(where + ": RoPE's tables hold positions as float32, exact up to 2^24 = "
                                                "16777216, got context_length = " + std::to_string(c.context_length));
        std::tie(p.cos, p.sin) = precompute_rope_params(head_dim, c.rope_base, c.context_length, c.rope_freq);
    }
    if (c.positions == PositionScheme::alibi) p.alibi_slopes = attn::alibi_slopes(num_heads);
    return p;
}

void ModulePositions::rotate(float* x, std::size_t B, std::size_t T, std::size_t ld, std::size_t num_heads,
                             std::size_t head_dim, std::size_t start, bool transpose) const {
    if (scheme == PositionScheme::rope) apply_rope_inplace(x, B, T, ld, num_heads, head_dim, cos, sin, start, transpose);
}

Shape check_tokens(const std::string& where, const Tensor& x, std::size_t width) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != width)
        throw_shape_error(where, "[b, T, " + std::to_string(width) + "]", s);
    return s;
}

void check_linear(const std::string& where, const char* name, const nn::Linear& layer,
                  std::size_t in, std::size_t out) {
    const Shape w = shape_of(layer.weight);
    if (w != Shape{out, in})
        throw_shape_error(where + " (" + name + ".weight)",
                          "[" + std::to_string(out) + ", " + std::to_string(in) + "]", w);
    // [1] broadcasts over the outputs (nn::Linear, as PyTorch's addmm).
    if (layer.bias && shape_of(*layer.bias) != Shape{out} && shape_of(*layer.bias) != Shape{1})
        throw_shape_error(where + " (" + name + ".bias)", "[" + std::to_string(out) + "] (or [1], broadcast)",
                          shape_of(*layer.bias));
}

void check_output_linear(const std::string& where, const char* name, const nn::Linear& layer,
                         std::size_t in, std::size_t out) {
    const Shape w = shape_of(layer.weight);
    if (w.size() == 2 && w[1] == in && w[0] != out)
        throw std::invalid_argument(where + " (" + name + ".weight): expected [" + std::to_string(out) + ", " +
                                    std::to_string(in) + "], got " + shape_str(w) +
                                    ": a layer of another output width is refused, the module's output width is d_out = " +
                                    std::to_string(out) + " (PyTorch would return " + std::to_string(w[0]) +
                                    " columns: build the module with d_out = " + std::to_string(w[0]) + ")");
    check_linear(where, name, layer, in, out);
}

std::size_t agreed_width(std::initializer_list<std::size_t> widths) {
    return agreed_width(std::vector<std::size_t>(widths));
}

std::size_t agreed_width(const std::vector<std::size_t>& widths) {
    std::size_t best = 0, best_count = 0;
    for (const std::size_t w : widths) {
        if (w == 0) continue;
        std::size_t count = 0;
        for (const std::size_t v : widths) count += v == w;
        if (count > best_count) best = w, best_count = count;
    }
    return best;
}

std::size_t width_of(const nn::Linear& layer, bool in) {
    if (layer.weight.dimension() != 2) return 0;
    return layer.weight.shape()[in ? 1 : 0];
}

std::size_t heads_width(std::size_t num_heads, std::size_t head_dim) {
    std::size_t width = 0;
    return __builtin_mul_overflow(num_heads, head_dim, &width) ? 0 : width;
}

void check_heads(const std::string& where, std::size_t num_heads, std::size_t head_dim,
                 std::size_t d_out) {
    std::size_t width = 0;
    if (num_heads == 0 || head_dim == 0 || __builtin_mul_overflow(num_heads, head_dim, &width) ||
        width != d_out)
        throw std::invalid_argument(where + ": expected num_heads * head_dim = d_out = " +
                                    std::to_string(d_out) + " with both > 0, got num_heads = " +
                                    std::to_string(num_heads) + ", head_dim = " +
                                    std::to_string(head_dim));
}

void check_positions(const std::string& where, std::size_t start, std::size_t T,
                     std::size_t context_length) {
    std::size_t end = 0;  // one past the last position
    const bool overflow = __builtin_add_overflow(start, T, &end);
    if (overflow || end > context_length)
        throw std::invalid_argument(where + ": a token beyond the context: positions " +
                                    std::to_string(start) + ".." +
                                    (overflow ? "(beyond 2^64)" : std::to_string(end - 1)) +
                                    " but context_length = " + std::to_string(context_length));
}

void check_full_cache(const std::string& where, const KVCache& cache, std::size_t b,
                      std::size_t num_kv_heads, std::size_t head_dim, std::size_t T,
                      std::size_t context_length) {
    if (cache.window != 0)
        throw std::invalid_argument(where + ": expected a full KVCache, got a sliding-window one (window = " +
                                    std::to_string(cache.window) + ")");
    cache.validate(where + " (cache)");
    const Shape keys{b, num_kv_heads, cache.capacity ? cache.capacity : cache.pos, head_dim};
    if (cache.key.dimension() != 0 && shape_of(cache.key) != keys)
        throw_shape_error(where + " (cache.key)", shape_str(keys), shape_of(cache.key));
    check_positions(where, cache.pos, T, context_length);
    if (cache.capacity && cache.pos + T > cache.capacity)  // no overflow: pos + T <= context_length
        throw std::invalid_argument(where + ": positions " + std::to_string(cache.pos) + ".." +
                                    std::to_string(cache.pos + T - 1) + " beyond the cache's capacity = " +
                                    std::to_string(cache.capacity) + " tokens");
}

void check_dropout(const std::string& where, const nn::Dropout& dropout) {
    require_probability(where + " (dropout)", "p", dropout.p);
    nn::check_backend(dropout.backend, (where + " (dropout)").c_str());
}

SDPAOptions dropout_options(const nn::Dropout& dropout, Generator& gen) {
    SDPAOptions o;
    o.dropout_p = dropout.training ? dropout.p : 0.0;
    o.dropout_backend = dropout.backend;
    o.generator = &gen;
    return o;
}

SDPAOptions causal_options(std::size_t head_dim, std::size_t query_start, const nn::Dropout& dropout,
                           Generator& gen) {
    SDPAOptions o = dropout_options(dropout, gen);
    o.is_causal = true;
    o.query_start = query_start;
    o.scale = ScoreScale::divide_by(std::sqrt(static_cast<float>(head_dim)));
    return o;
}

}  // namespace attn
