// Unit tests for attn/functional.hpp. Expected values are worked out by hand (small integer
// inputs) or follow from definitions; none is taken from this library's output.
#include <cmath>
#include <functional>
#include <limits>

#include <catch2/catch.hpp>

#include "support.hpp"

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"

namespace test_functional {  // every test file is a namespace of its own (tests/meson.build)

namespace {
const float inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("matmul covers the notebooks' cases") {
    const attn::Tensor a = attn::tensor({{1, 2, 3}, {4, 5, 6}});      // [2, 3]
    const attn::Tensor b = attn::tensor({{1, 0}, {0, 1}, {1, 1}});    // [3, 2]
    const attn::Tensor ab = attn::matmul(a, b);
    REQUIRE(attn::shape_of(ab) == attn::Shape{2, 2});
    CHECK(ab(0, 0) == 4.0f);   // 1 + 3
    CHECK(ab(0, 1) == 5.0f);   // 2 + 3
    CHECK(ab(1, 0) == 10.0f);  // 4 + 6
    CHECK(ab(1, 1) == 11.0f);  // 5 + 6
    // vector @ vector -> 0-d; vector @ matrix -> vector; matrix @ vector -> vector
    const attn::Tensor v = attn::tensor({1, 2, 3});
    CHECK(attn::matmul(v, v)() == 14.0f);
    CHECK(attn::shape_of(attn::matmul(v, b)) == attn::Shape{2});
    CHECK(attn::matmul(v, b)(1) == 5.0f);
    CHECK(attn::matmul(a, v)(1) == 32.0f);
    // batched with broadcast: [2, 2, 3] @ [3, 2]
    const attn::Tensor batch = attn::stack({a, a * 2.0f});
    const attn::Tensor bb = attn::matmul(batch, b);
    REQUIRE(attn::shape_of(bb) == attn::Shape{2, 2, 2});
    CHECK(bb(1, 1, 1) == 22.0f);
    test::require_invalid([&] { attn::matmul(a, a); }, {"3 rows", "[2, 3]"});
    test::require_invalid([&] { attn::matmul(attn::ones({2, 2, 3}), attn::ones({3, 3, 2})); }, {"[2]", "[3]"});
}

TEST_CASE("transpose, T, view, stack, cat, select and slice move elements like PyTorch") {
    const attn::Tensor a = attn::tensor({{1, 2, 3}, {4, 5, 6}});
    const attn::Tensor t = attn::T(a);
    REQUIRE(attn::shape_of(t) == attn::Shape{3, 2});
    CHECK(t(2, 1) == 6.0f);
    CHECK(t.data()[1] == 4.0f);  // contiguous result
    attn::Tensor x = attn::zeros({2, 3, 4});
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i);
    const attn::Tensor xt12 = attn::transpose(x, 1, 2);
    REQUIRE(attn::shape_of(xt12) == attn::Shape{2, 4, 3});
    CHECK(xt12(1, 3, 2) == x(1, 2, 3));
    const attn::Tensor v = attn::view(x, {2, 3, 2, 2});
    CHECK(v(1, 2, 1, 0) == 22.0f);
    CHECK(attn::shape_of(attn::view(x, {-1, 4})) == attn::Shape{6, 4});
    test::require_invalid([&] { attn::view(x, {5, 5}); }, {"[5, 5]", "[2, 3, 4]"});
    const attn::Tensor s = attn::stack({a, a});
    REQUIRE(attn::shape_of(s) == attn::Shape{2, 2, 3});
    CHECK(s(1, 1, 2) == 6.0f);
    CHECK(attn::shape_of(attn::stack({a, a}, 2)) == attn::Shape{2, 3, 2});
    test::require_invalid([&] { attn::stack({a, t}); }, {"[2, 3]", "[3, 2]"});
    const attn::Tensor c = attn::cat({a, a}, 1);
    REQUIRE(attn::shape_of(c) == attn::Shape{2, 6});
    CHECK(c(1, 3) == 4.0f);
    CHECK(attn::select(a, -1)(0) == 4.0f);
    const attn::Tensor sl = attn::slice(x, 1, -2, 3);
    REQUIRE(attn::shape_of(sl) == attn::Shape{2, 2, 4});
    CHECK(sl(0, 0, 0) == 4.0f);
}

TEST_CASE("tril and triu keep the triangles the diagonal offset names") {
    const attn::Tensor o = attn::ones({3, 3});
    const attn::Tensor l = attn::tril(o);
    CHECK(l(0, 1) == 0.0f);
    CHECK(l(1, 0) == 1.0f);
    CHECK(l(2, 2) == 1.0f);
    const attn::Tensor u = attn::triu(o, 1);
    CHECK(u(0, 0) == 0.0f);
    CHECK(u(0, 1) == 1.0f);
    CHECK(u(2, 1) == 0.0f);
    CHECK(attn::sum(attn::tril(attn::ones({4, 4})))() == 10.0f);   // 4 * 5 / 2
    CHECK(attn::sum(attn::triu(attn::ones({4, 4}), 1))() == 6.0f);  // 3 * 4 / 2
    CHECK(attn::sum(attn::tril(attn::ones({2, 4, 4})))() == 20.0f);  // batched
    test::require_invalid([&] { attn::tril(attn::ones({3})); }, {"2-D", "[3]"});
}

TEST_CASE("masked_fill broadcasts the mask and refuses one that does not fit") {
    const attn::BoolTensor causal_mask = attn::to_bool(attn::triu(attn::ones({3, 3}), 1));
    const attn::Tensor filled = attn::masked_fill(attn::ones({2, 3, 3}), causal_mask, -inf);
    CHECK(filled(1, 0, 2) == -inf);
    CHECK(filled(1, 2, 0) == 1.0f);
    // attention_mask[:, None, :] == 0 over [B, S, S]
    attn::BoolTensor pad = xt::zeros<bool>(attn::Shape{2, 1, 3});
    pad(0, 0, 0) = true;
    const attn::Tensor p = attn::masked_fill(attn::zeros({2, 3, 3}), pad, -inf);
    CHECK(p(0, 2, 0) == -inf);
    CHECK(p(1, 2, 0) == 0.0f);
    CHECK_NOTHROW(attn::masked_fill(attn::ones({3, 3}), causal_mask, 0.0f));
}

TEST_CASE("masked_fill with a non-broadcastable mask throws naming both shapes") {
    const attn::BoolTensor m = xt::zeros<bool>(attn::Shape{4, 4});
    test::require_invalid([&] { attn::masked_fill(attn::ones({2, 3, 3}), m, 0.0f); }, {"[2, 3, 3]",
                    "[4, 4]"});
}

TEST_CASE("softmax: rows sum to 1, -inf gives 0, an all -inf row gives NaN") {
    const attn::Tensor x = attn::tensor({{0.0f, std::log(3.0f), -inf}, {-inf, -inf, -inf}});
    const attn::Tensor y = attn::softmax(x);
    CHECK(y(0, 0) == Approx(0.25f));
    CHECK(y(0, 1) == Approx(0.75f));
    CHECK(y(0, 2) == 0.0f);
    CHECK(std::isnan(y(1, 0)));
    // shift invariance: the max subtraction keeps large inputs finite
    const attn::Tensor big = attn::softmax(attn::tensor({1000.0f, 1000.0f}));
    CHECK(big(0) == 0.5f);
    CHECK(std::isnan(attn::softmax_naive(attn::tensor({1000.0f, 1000.0f}))(0)));
    // Over another dimension: PyTorch's kernel for it (its bits: test_edges.cpp).
    CHECK(attn::shape_of(attn::softmax(x, 0)) == attn::shape_of(x));
    CHECK_THROWS_AS(attn::softmax(x, 2), std::invalid_argument);
}

TEST_CASE("sum, argmax, allclose, eq") {
    const attn::Tensor a = attn::tensor({{1, 5, 3}, {7, 2, 7}});
    const attn::Tensor s = attn::sum(a, -1, true);
    REQUIRE(attn::shape_of(s) == attn::Shape{2, 1});
    CHECK(s(1, 0) == 16.0f);
    CHECK(attn::sum(a, 0)(2) == 10.0f);
    const attn::LongTensor am = attn::argmax(a, -1);
    CHECK(am(0) == 1);
    CHECK(am(1) == 0);  // first of equal maxima, as PyTorch
    CHECK(attn::allclose(a, a + 1e-9f));
    CHECK_FALSE(attn::allclose(a, a + 1.0f));
    CHECK_THROWS_AS(attn::allclose(a, attn::T(a)), std::invalid_argument);
    CHECK(attn::eq(a, 7.0f)(1, 2));
    CHECK(attn::arange(4)(3) == 3);
}

TEST_CASE("scaled_dot_product_attention equals the written-out formula") {
    // One query, two keys: scores q.k / sqrt(2) = [0, 2 / sqrt(2)], weights by hand.
    const attn::Tensor q = attn::tensor({{1, 1}});
    const attn::Tensor k = attn::tensor({{0, 0}, {1, 1}});
    const attn::Tensor v = attn::tensor({{10, 0}, {0, 10}});
    const attn::Tensor out = attn::scaled_dot_product_attention(q, k, v);
    const double w1 = std::exp(2.0 / std::sqrt(2.0)) / (1.0 + std::exp(2.0 / std::sqrt(2.0)));
    CHECK(out(0, 0) == Approx(10.0 * (1.0 - w1)));
    CHECK(out(0, 1) == Approx(10.0 * w1));
    // is_causal masks the second key for the first query (top-left aligned)
    const attn::Tensor q2 = attn::tensor({{1, 1}, {1, 1}});
    const attn::Tensor causal = attn::scaled_dot_product_attention(q2, k, v, {.is_causal = true});
    CHECK(causal(0, 0) == Approx(10.0f));
    CHECK(causal(0, 1) == Approx(0.0f));
    // Unlike PyTorch, a mask and is_causal combine: a key is visible when both allow it. Here
    // the mask hides key 0 from query 1, is_causal key 1 from query 0.
    attn::BoolTensor mask = xt::ones<bool>(attn::Shape{2, 2});
    mask(1, 0) = false;
    const attn::Tensor both = attn::scaled_dot_product_attention(q2, k, v, {.attn_mask = &mask, .is_causal = true});
    CHECK(both(0, 0) == Approx(10.0f));
    CHECK(both(1, 1) == Approx(10.0f));
    CHECK(both(1, 0) == Approx(0.0f));
    test::require_invalid([&] { attn::scaled_dot_product_attention(q2, attn::ones({2, 3}), v); }, {"[..., S, 2]", "[2, 3]"});
}

TEST_CASE("sum adds a short row in PyTorch's order (row_sum: four partial sums)") {
    // PyTorch's row_sum for 6 floats: ((((x0 + x4) + x5) + x1) + x2) + x3. With 1e8 in x0 and
    // -1e8 in x4 they cancel first and the four 1s survive: 4. Added in order, each 1 is lost
    // against 1e8 (its ulp is 8) and only the last one survives: 1.
    const attn::Tensor x = attn::tensor({1e8f, 1.0f, 1.0f, 1.0f, -1e8f, 1.0f});
    CHECK(attn::sum(x)() == 4.0f);
    CHECK(attn::sum(x, -1)() == 4.0f);
    const attn::Tensor rows = attn::stack({x, x}, 0);  // [2, 6]: each row alike
    CHECK(attn::sum(rows, -1)(1) == 4.0f);
    // Fewer than four elements: in order, as PyTorch (the partial sums start at 0).
    CHECK(attn::sum(attn::tensor({1e8f, 1.0f, -1e8f}))() == 0.0f);
}

}  // namespace test_functional
