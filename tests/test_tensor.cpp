// Unit tests for attn/tensor.hpp: shape formatting and the shape errors every function uses.
#include <limits>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "attn/core/tensor.hpp"

namespace test_tensor {  // every test file is a namespace of its own (tests/meson.build)

TEST_CASE("shape_str writes shapes as the book does") {
    CHECK(attn::shape_str({2, 6, 3}) == "[2, 6, 3]");
    CHECK(attn::shape_str({}) == "[]");
    CHECK(attn::shape_str({16}) == "[16]");
}

TEST_CASE("shape errors name the function, the expected and the actual shape") {
    try {
        attn::check_rank("Linear", {2, 6}, 3);
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == "Linear: expected [*, *, *] (3-D), got [2, 6]");
    }
    CHECK_THROWS_WITH(attn::check_same_shape("stack", {6, 3}, {6, 2}),
                      "stack: expected [6, 3], got [6, 2]");
    CHECK_NOTHROW(attn::check_same_shape("stack", {6, 3}, {6, 3}));
}

TEST_CASE("wrap_dim resolves negative dimensions like PyTorch and rejects the rest") {
    CHECK(attn::wrap_dim("f", -1, 3) == 2);
    CHECK(attn::wrap_dim("f", 0, 3) == 0);
    CHECK(attn::wrap_dim("f", -3, 3) == 0);
    CHECK_THROWS_AS(attn::wrap_dim("f", 3, 3), std::invalid_argument);
    CHECK_THROWS_AS(attn::wrap_dim("f", -4, 3), std::invalid_argument);
}

TEST_CASE("tensor() builds row-major float32 tensors and rejects ragged rows") {
    const attn::Tensor t = attn::tensor({{0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}});
    REQUIRE(attn::shape_of(t) == attn::Shape{2, 3});
    CHECK(t(1, 0) == 0.55f);
    CHECK(t.data()[4] == 0.87f);  // row-major, as a contiguous PyTorch tensor
    CHECK_THROWS_AS(attn::tensor({{1.0f, 2.0f}, {3.0f}}), std::invalid_argument);
    CHECK(attn::shape_of(attn::scalar_tensor(1.5f)).empty());
}

TEST_CASE("checked_mul and checked_add refuse sizes that wrap around, naming the quantity") {
    constexpr std::size_t K = std::size_t{1} << 32;
    constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
    // (2^32 - 1) * (2^32 + 1) = 2^64 - 1 is the largest product that fits.
    CHECK(attn::checked_mul(K - 1, K + 1, "x") == max);
    CHECK(attn::checked_mul(0, max, "x") == 0);
    CHECK(attn::checked_mul(6, 7, "x") == 42);
    CHECK_THROWS_AS(attn::checked_mul(K, K, "x"), std::length_error);
    CHECK_THROWS_WITH(attn::checked_mul(K, K, "flash::attention (scratch [block_q, block_k])"),
                      "flash::attention (scratch [block_q, block_k]): 4294967296 * 4294967296 "
                      "overflows std::size_t (size calculation overflowed)");
    CHECK_THROWS_WITH(attn::checked_mul(3, std::size_t{1} << 63, "GPT2Attention (3 * n_embd)"),
                      "GPT2Attention (3 * n_embd): 3 * 9223372036854775808 overflows std::size_t "
                      "(size calculation overflowed)");
    CHECK(attn::checked_add(max - 1, 1, "x") == max);
    CHECK_THROWS_WITH(attn::checked_add(max, 1, "KVCache (pos + T)"),
                      "KVCache (pos + T): 18446744073709551615 + 1 overflows std::size_t "
                      "(size calculation overflowed)");
    CHECK(attn::checked_signed((std::size_t{1} << 63) - 1, "chunk") == 9223372036854775807LL);
    CHECK_THROWS_WITH(attn::checked_signed(std::size_t{1} << 63, "decode_with_cache (chunk)"),
                      "decode_with_cache (chunk): 9223372036854775808 does not fit in a signed "
                      "64-bit size (at most 9223372036854775807)");
}

}  // namespace test_tensor
