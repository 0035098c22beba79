// DeepSpeed-Ulysses, forward and backward (ulysses.hpp).
#include "attn/dist/ulysses.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::dist {

namespace {

Shape four_d(const char* where, const Tensor& x) {
    const Shape s = shape_of(x);
    check_rank(where, s, 4);
    return s;
}

void check_divides(const char* where, std::size_t n, const char* what, std::size_t P) {
    if (n % P != 0)
        throw std::invalid_argument(std::string(where) + ": " + std::to_string(n) + " " + what +
                                    " do not split over " + std::to_string(P) +
                                    " ranks (Ulysses gives each rank the same number of heads: they must be "
                                    "divisible by the ranks)");
}

}  // namespace

Tensor sequence_to_heads(const Communicator& comm, const Tensor& x) {
    const std::size_t P = std::size_t(comm.size());
    Shape s;
    comm.all_or_none([&] {
        s = four_d("sequence_to_heads", x);
        check_divides("sequence_to_heads", s[1], "heads", P);
    });
    comm.require_same(x.size(), "sequence_to_heads: the numbers each rank holds");
    const std::size_t B = s[0], H = s[1], c = s[2], E = s[3];
    const std::size_t Hp = H / P, block = B * Hp * c * E;
    std::vector<float> send(block * P), recv(block * P);
    for (std::size_t j = 0; j < P; ++j)  // block j: heads [j Hp, (j + 1) Hp) of every batch element
        for (std::size_t b = 0; b < B; ++b)
            std::copy_n(x.data() + (b * H + j * Hp) * c * E, Hp * c * E, send.data() + j * block + b * Hp * c * E);
    comm.all_to_all(send.data(), recv.data(), block);
    Tensor out = Tensor::from_shape({B, Hp, c * P, E});
    for (std::size_t i = 0; i < P; ++i)  // from rank i: its tokens [i c, (i + 1) c) of this rank's heads
        for (std::size_t bh = 0; bh < B * Hp; ++bh)
            std::copy_n(recv.data() + i * block + bh * c * E, c * E, out.data() + (bh * P * c + i * c) * E);
    return out;
}

Tensor heads_to_sequence(const Communicator& comm, const Tensor& x) {
    const std::size_t P = std::size_t(comm.size());
    Shape s;
    comm.all_or_none([&] {
        s = four_d("heads_to_sequence", x);
        check_divides("heads_to_sequence", s[2], "tokens", P);
    });
    comm.require_same(x.size(), "heads_to_sequence: the numbers each rank holds");
    const std::size_t B = s[0], Hp = s[1], T = s[2], E = s[3];
    const std::size_t c = T / P, block = B * Hp * c * E;
    std::vector<float> send(block * P), recv(block * P);
    for (std::size_t j = 0; j < P; ++j)  // block j: tokens [j c, (j + 1) c) of this rank's heads
        for (std::size_t bh = 0; bh < B * Hp; ++bh)
            std::copy_n(x.data() + (bh * T + j * c) * E, c * E, send.data() + j * block + bh * c * E);
    comm.all_to_all(send.data(), recv.data(), block);
    Tensor out = Tensor::from_shape({B, Hp * P, c, E});
    for (std::size_t i = 0; i < P; ++i)  // from rank i: its heads [i Hp, (i + 1) Hp) of this rank's tokens
        for (std::size_t b = 0; b < B; ++b)
            std::copy_n(recv.data() + i * block + b * Hp * c * E, Hp * c * E, out.data() + (b * Hp * P + i * Hp) * c * E);
    return out;
}

UlyssesForward ulysses_attention_forward(const Communicator& comm, const Tensor& query,
                                         const Tensor& key, const Tensor& value,
                                         const SDPAOptions& options) {
    const std::size_t P = std::size_t(comm.size());
    comm.all_or_none([&] {
        const Shape sq = four_d("ulysses_attention_forward (query)", query);
        const Shape sk = four_d("ulysses_attention_forward (key)", key);
        const Shape sv = four_d("ulysses_attention_forward (value)", value);
        check_divides("ulysses_attention_forward", sq[1], "query heads", P);
        check_divides("ulysses_attention_forward", sk[1], "key/value heads", P);
        if (sk[0] != sq[0] || sk[2] != sq[2] || sk[3] != sq[3])
            throw_shape_error("ulysses_attention_forward (key)",
                              shape_str({sq[0], sk[1], sq[2], sq[3]}) + " (the query's batch, tokens and width)", sk);
        if (sv[0] != sk[0] || sv[1] != sk[1] || sv[2] != sk[2])
            throw_shape_error("ulysses_attention_forward (value)",
                              shape_str({sk[0], sk[1], sk[2], sv[3]}) + " (the key's batch, heads and tokens)", sv);
    });
    UlyssesForward f;
    f.query = sequence_to_heads(comm, query);
    f.key = sequence_to_heads(comm, key);
    f.value = sequence_to_heads(comm, value);
    f.heads = scaled_dot_product_attention_forward(f.query, f.key, f.value, options);
    f.output = heads_to_sequence(comm, f.heads.output);
    return f;
}

UlyssesGradients ulysses_attention_backward(const Communicator& comm, const Tensor& grad_output,
                                            const UlyssesForward& forward,
                                            const SDPAOptions& options) {
    comm.all_or_none([&] {
        check_same_shape("ulysses_attention_backward (grad_output)", shape_of(forward.output), shape_of(grad_output));
    });
    const Tensor heads_grad = sequence_to_heads(comm, grad_output);
    const SDPAGradients g = scaled_dot_product_attention_backward(heads_grad, forward.query, forward.key,
                                                                  forward.value, forward.heads, options);
    return {heads_to_sequence(comm, g.grad_query), heads_to_sequence(comm, g.grad_key),
            heads_to_sequence(comm, g.grad_value)};
}

}  // namespace attn::dist
