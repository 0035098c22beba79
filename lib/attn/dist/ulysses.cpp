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

// Slice j of P equal slices along `axis` of a row-major tensor of shape `s`, as runs: for each
// index of the dimensions before `axis`, one contiguous run of the slice. f(start in the tensor,
// start in the packed block, length) for each run, in order.
template <class F>
void for_each_run(const Shape& s, std::size_t axis, std::size_t j, std::size_t P, F&& f) {
    std::size_t outer = 1, inner = 1;
    for (std::size_t a = 0; a < axis; ++a) outer *= s[a];
    for (std::size_t a = axis + 1; a < s.size(); ++a) inner *= s[a];
    const std::size_t n = s[axis] / P, run = n * inner;
    for (std::size_t o = 0; o < outer; ++o) f((o * s[axis] + j * n) * inner, o * run, run);
}

// The all-to-all both directions make: block j of `x` (slice j along `send_axis`) goes to rank
// j; the block from rank i becomes slice i along `recv_axis` of the result, of shape `out_shape`.
Tensor exchange(const Communicator& comm, const Tensor& x, std::size_t send_axis, const Shape& out_shape,
                std::size_t recv_axis) {
    const std::size_t P = std::size_t(comm.size()), block = x.size() / P;
    std::vector<float> send(x.size()), recv(x.size());
    for (std::size_t j = 0; j < P; ++j)
        for_each_run(shape_of(x), send_axis, j, P, [&](std::size_t at, std::size_t to, std::size_t len) {
            std::copy_n(x.data() + at, len, send.data() + j * block + to);
        });
    comm.all_to_all(send.data(), recv.data(), block);
    Tensor out = Tensor::from_shape(out_shape);
    for (std::size_t i = 0; i < P; ++i)
        for_each_run(out_shape, recv_axis, i, P, [&](std::size_t at, std::size_t from, std::size_t len) {
            std::copy_n(recv.data() + i * block + from, len, out.data() + at);
        });
    return out;
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
    // Block j: heads [j H / P, (j + 1) H / P); from rank i: its tokens, slice i of the sequence.
    return exchange(comm, x, 1, {s[0], s[1] / P, s[2] * P, s[3]}, 2);
}

Tensor heads_to_sequence(const Communicator& comm, const Tensor& x) {
    const std::size_t P = std::size_t(comm.size());
    Shape s;
    comm.all_or_none([&] {
        s = four_d("heads_to_sequence", x);
        check_divides("heads_to_sequence", s[2], "tokens", P);
    });
    comm.require_same(x.size(), "heads_to_sequence: the numbers each rank holds");
    // Block j: tokens [j T / P, (j + 1) T / P) of this rank's heads; from rank i: its heads.
    return exchange(comm, x, 2, {s[0], s[1] * P, s[2] / P, s[3]}, 1);
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
