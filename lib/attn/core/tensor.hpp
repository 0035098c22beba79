/// @file tensor.hpp
/// @brief The tensor types of the book and the shape checks every library function uses.
///
/// PyTorch's default dtype is float32, its index dtype int64 and its mask dtype bool; the book
/// uses these three, so the library does too. All three are dynamic-rank xtensor arrays in
/// row-major (C) order, like a contiguous PyTorch tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <xtensor/xarray.hpp>

namespace attn {

/// A float32 tensor of any rank, row-major: `torch.float32`, PyTorch's default dtype.
using Tensor = xt::xarray<float>;
/// A boolean tensor (`torch.bool`): masks such as `causal_mask` or `mask.bool()`.
using BoolTensor = xt::xarray<bool>;
/// An int64 tensor (`torch.int64`): token ids, `attention_mask`, class targets.
using LongTensor = xt::xarray<std::int64_t>;
/// A shape, outermost dimension first, as `torch.Size` lists it.
using Shape = std::vector<std::size_t>;

/// Formats a shape as the book writes it: `[2, 6, 3]` (`[]` for a 0-d tensor).
std::string shape_str(const Shape& shape);

/// The number of elements of a tensor of this shape (`Tensor.numel()`): the product of the
/// dimensions, 1 for `[]`. The product is taken left to right with an overflow check, as
/// PyTorch's: `[0, 2^62, 2^62]` has 0 elements, `[2^62, 2^62, 0]` overflows.
/// @throws std::length_error naming the shape when a step of the product does not fit in
/// `std::size_t` (PyTorch: "Storage size calculation overflowed").
std::size_t numel(const Shape& shape);

/// Throws `std::length_error("<what>: <a> <op> <b> overflows std::size_t (size calculation
/// overflowed)")`: the one message of every size overflow (`checked_mul`, `checked_add`).
[[noreturn]] void throw_size_overflow(std::string_view what, std::size_t a, char op,
                                      std::size_t b);

/// `a * b` for a size computed from user input (a shape's dimensions, a block or chunk size,
/// a count of heads or tokens), checked: every such size in the library goes through here or
/// `checked_add`, so a product that wraps around is refused instead of sizing a buffer too
/// small. `what` names the quantity and its terms, as the message should show them, e.g.
/// `"flash::attention (scratch [block_q, head_dim])"` or `"GPT2Attention (3 * n_embd)"`.
/// PyTorch raises "Storage size calculation overflowed" for the same sizes.
/// @throws std::length_error `"<what>: <a> * <b> overflows std::size_t (size calculation
/// overflowed)"` when the product does not fit in `std::size_t`.
inline std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view what) {
    std::size_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
        throw_size_overflow(what, a, '*', b);
    return r;
}

/// `a + b` for a size computed from user input (an offset plus a length, a cache position
/// plus new tokens), checked as `checked_mul`.
/// @throws std::length_error `"<what>: <a> + <b> overflows std::size_t (size calculation
/// overflowed)"` when the sum does not fit in `std::size_t`.
inline std::size_t checked_add(std::size_t a, std::size_t b, std::string_view what) {
    std::size_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
        throw_size_overflow(what, a, '+', b);
    return r;
}

/// A size as PyTorch's signed 64-bit sizes and as `long` loop bounds hold it (a `chunk`, a
/// `window`, a step count): sizes at or above 2^63 would turn negative in a
/// `static_cast<long>`.
/// @throws std::length_error `"<what>: <n> does not fit in a signed 64-bit size (at most
/// 9223372036854775807)"` when `n >= 2^63`.
std::int64_t checked_signed(std::size_t n, std::string_view what);

/// The most bytes one tensor may hold: this machine's physical memory, and at most 2^40
/// (1 TiB, the largest block AddressSanitizer's allocator hands out). A larger tensor could
/// not be filled anyway, so the library refuses it up front instead of failing mid-way.
std::size_t max_tensor_bytes();

/// Checks, before anything is allocated, that a tensor of `shape` with elements of
/// `element_size` bytes can exist: its element count and byte count fit in `std::size_t`,
/// its strides (products of the later sizes, a 0 counted as 1) in a signed 64-bit integer,
/// and the bytes are at most `max_tensor_bytes()`. Every library function that makes a
/// tensor from a size it was given (factories, modules, masks) calls it.
/// @throws std::length_error `"<where>: cannot allocate a tensor of shape [...]: ..."` saying
/// whether the size calculation overflowed or how many bytes exceed the limit.
void check_allocation(const std::string& where, const Shape& shape,
                      std::size_t element_size = sizeof(float));

/// Gives `t` the shape `shape` and returns its data: the storage is reused when `t` already
/// has that shape (a saved activation refilled at every training step, without allocating),
/// else `t` is resized (its values then unspecified).
/// @throws std::length_error as `check_allocation(where, shape)`.
float* sized(Tensor& t, const Shape& shape, const std::string& where);

/// Checks that a tensor's storage holds as many elements as its shape multiplies out to.
/// xtensor computes sizes without an overflow check, so an array made directly with a shape
/// such as `[2^32, 2^32]` gets that shape and 0 elements; the library refuses to read it.
/// @throws std::length_error naming the shape when its element count overflows or differs
/// from `size`.
void check_storage(const Shape& shape, std::size_t size);

/// The shape of any of the three tensor types, as a `Shape`. Every library function reads
/// shapes through here, so a tensor whose shape does not match its storage is refused before
/// any element is read.
/// @throws std::length_error as `check_storage` (only for arrays made outside the library
/// with an overflowing shape).
template <class E>
Shape shape_of(const E& t) {
    Shape s(t.shape().begin(), t.shape().end());
    check_storage(s, t.size());
    return s;
}

/// Throws `std::invalid_argument("<where>: expected <expected>, got <actual>")`.
///
/// Every shape mismatch in the library goes through here, so the message always names the
/// function, the expected shape (or rule) and the actual shape.
[[noreturn]] void throw_shape_error(const std::string& where, const std::string& expected,
                                    const Shape& actual);

/// Checks that `t` has exactly `rank` dimensions; throws `std::invalid_argument` otherwise,
/// naming `where`, the expected rank (as `[*, *, *]`) and the actual shape.
void check_rank(const std::string& where, const Shape& actual, std::size_t rank);

/// Checks that two shapes are equal; throws `std::invalid_argument` naming both otherwise.
void check_same_shape(const std::string& where, const Shape& expected, const Shape& actual);

/// Resolves a possibly negative dimension index like PyTorch (`-1` is the last dimension).
/// @throws std::invalid_argument when `dim` is outside `[-rank, rank)`.
std::size_t wrap_dim(const std::string& where, long dim, std::size_t rank);

/// `torch.tensor(data)` for a 2-D float32 tensor written row by row, e.g. the book's `inputs`.
/// @throws std::invalid_argument when the rows have different lengths.
Tensor tensor(std::initializer_list<std::initializer_list<float>> rows);

/// `torch.tensor(data)` for a 1-D float32 tensor.
Tensor tensor(std::initializer_list<float> values);

/// A 0-d float32 tensor holding `value` (what `torch.tensor(4.54)` or a reduction gives).
Tensor scalar_tensor(float value);

}  // namespace attn
