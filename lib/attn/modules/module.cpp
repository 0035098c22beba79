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
    const Shape keys{b, num_kv_heads, cache.pos, head_dim};
    if (cache.pos > 0 && shape_of(cache.key) != keys)
        throw_shape_error(where + " (cache.key)", shape_str(keys), shape_of(cache.key));
    check_positions(where, cache.pos, T, context_length);
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

ProjectedAttention::ProjectedAttention(std::string name, const AttentionConfig& c,
                                       std::initializer_list<ConfigField> takes)
    : num_heads((c.check(name, takes), require_weight_size(name, "d_out", c.d_out, "d_in", c.d_in),
                 require_weight_size(name, "d_out", c.d_out, "d_out", c.d_out), c.num_heads)),
      head_dim(c.d_out / c.num_heads),
      context_length(c.context_length),
      dropout(c.dropout, c.backend),
      name_(std::move(name)) {}

Generator& ProjectedAttention::build_layers(const AttentionConfig& c, Generator& gen, bool out_bias) {
    W_query = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_key = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_value = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    out_proj = nn::Linear(c.d_out, c.d_out, out_bias, gen);
    return gen;
}

Shape ProjectedAttention::check_projections(const Tensor& x, std::size_t kv_heads, bool own_keys,
                                            std::initializer_list<NamedLayer> extra) const {
    const std::string& where = name_;
    const bool keys_full = own_keys && kv_heads == num_heads;  // W_key's outputs are d_out wide
    std::vector<std::size_t> ins{width_of(W_query, true)}, outs{width_of(W_query), heads_width(num_heads, head_dim)};
    for (const NamedLayer& l : extra) {
        ins.push_back(width_of(*l.layer, true));
        outs.push_back(width_of(*l.layer));
    }
    if (own_keys) ins.insert(ins.end(), {width_of(W_key, true), width_of(W_value, true)});
    if (keys_full) outs.insert(outs.end(), {width_of(W_key), width_of(W_value)});
    outs.push_back(width_of(out_proj, true));
    const std::size_t in = agreed_width(ins), d = agreed_width(outs);
    check_linear(where, "W_query", W_query, in, d);
    check_heads(where, num_heads, head_dim, d);
    for (const NamedLayer& l : extra) check_linear(where, l.name, *l.layer, in, d);
    if (own_keys) {
        check_linear(where, "W_key", W_key, in, kv_heads * head_dim);
        check_linear(where, "W_value", W_value, in, kv_heads * head_dim);
    }
    check_output_linear(where, "out_proj", out_proj, d, d);
    const Shape s = check_tokens(where, x, in);
    check_dropout(where, dropout);
    return s;
}

}  // namespace attn
