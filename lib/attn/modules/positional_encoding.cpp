// PositionalEncoding (positional_encoding.hpp): the Annotated Transformer's module.
#include "attn/modules/positional_encoding.hpp"

#include <stdexcept>
#include <string>

#include "attn/attention/positions.hpp"
#include "attn/core/require.hpp"
#include "attn/modules/module.hpp"

namespace attn {

PositionalEncoding::PositionalEncoding(std::size_t d_model, double p, std::size_t max_len,
                                       nn::BernoulliBackend backend)
    : dropout((require_probability("PositionalEncoding", "dropout", p), p), backend) {
    require_positive("PositionalEncoding", "max_len", max_len);
    Tensor table = sinusoidal_encoding(max_len, d_model);
    pe = Tensor::from_shape({1, max_len, d_model});
    std::copy_n(table.data(), table.size(), pe.data());
}

namespace {

// `pe`'s shape, which a caller may have replaced: `[1, max_len, d_model]` or an error naming it.
Shape pe_shape(const Tensor& pe, const std::string& where) {
    const Shape p = shape_of(pe);
    if (p.size() != 3 || p[0] != 1) throw_shape_error(where + " (pe)", "[1, max_len, d_model]", p);
    return p;
}

}  // namespace

std::size_t PositionalEncoding::d_model() const { return pe_shape(pe, "PositionalEncoding::d_model")[2]; }

std::size_t PositionalEncoding::max_len() const { return pe_shape(pe, "PositionalEncoding::max_len")[1]; }

Tensor PositionalEncoding::operator()(const Tensor& x, std::size_t start, Generator& gen) const {
    const std::string where = "PositionalEncoding";
    const Shape p = pe_shape(pe, where);
    const Shape s = check_tokens(where, x, p[2]);
    check_positions(where, start, s[1], p[1]);
    Tensor y = Tensor::from_shape(s);
    const std::size_t row = s[1] * p[2];
    // x + pe[:, start : start + T], broadcast over b (no walk over empty rows: B may be 2^40)
    for (std::size_t b = 0; b < (row ? s[0] : 0); ++b)
        for (std::size_t i = 0; i < row; ++i)
            y.data()[b * row + i] = x.data()[b * row + i] + pe.data()[start * p[2] + i];
    return dropout(y, gen);
}

}  // namespace attn
