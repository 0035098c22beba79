#include "attn/modules/config.hpp"

#include <stdexcept>

namespace attn {

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
    if (layer.bias && shape_of(*layer.bias) != Shape{out})
        throw_shape_error(where + " (" + name + ".bias)", "[" + std::to_string(out) + "]",
                          shape_of(*layer.bias));
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

void check_dropout(const std::string& where, const nn::Dropout& dropout) {
    require_probability(where + " (dropout)", "p", dropout.p);
    if (dropout.backend != nn::BernoulliBackend::portable && dropout.backend != nn::BernoulliBackend::mkl)
        throw std::invalid_argument(where + " (dropout): backend holds " +
                                    std::to_string(static_cast<int>(dropout.backend)) +
                                    ", not portable or mkl");
}

}  // namespace attn
