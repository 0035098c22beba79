// Tests of the layouts of chapter 11 (attn/efficient.hpp). Expected values are relations to
// chapter 7's MultiHeadAttention (checked against the book and the oracle in
// test_multihead.cpp): every layout, with weights mapped from it, computes the same function.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <fstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/attention/masks.hpp"
#include "attn/modules/efficient.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/print/print.hpp"

namespace test_efficient {  // every test file is a namespace of its own (tests/meson.build)

namespace {

const attn::AttentionKernel kKernels[] = {
    attn::AttentionKernel::matmul_softmax, attn::AttentionKernel::sdpa_is_causal,
    attn::AttentionKernel::sdpa_attn_mask, attn::AttentionKernel::tiled};

}  // namespace

TEST_CASE("combined QKV with chapter 7's kernel is chapter 7's module, bit for bit") {
    attn::manual_seed(123);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .num_heads = 2});
    const attn::Tensor batch = attn::stack({textbook::inputs(), textbook::inputs()}, 0);
    const attn::Tensor expected = mha(batch);
    CHECK(test::max_abs_diff(attn::combine_qkv(mha, attn::AttentionKernel::matmul_softmax)(batch), expected) == 0.0);
    CHECK(test::max_abs_diff(attn::to_einsum(mha)(batch), expected) == 0.0);
    for (auto kernel : kKernels)
        CHECK(attn::repr(attn::combine_qkv(mha, kernel)(batch)) == attn::repr(expected));
    const attn::BoolTensor causal6 = attn::causal_attn_mask(6);
    CHECK(attn::repr(attn::to_torch_layout(mha)(batch, batch, batch, {.attn_mask = &causal6}).attn_output) ==
          attn::repr(expected));
}

TEST_CASE("every layout equals MultiHeadAttention on random sizes") {
    attn::Generator gen(99);
    for (int round = 0; round < 6; ++round) {
        const auto r = attn::randint(1, 100, {5}, gen);
        const std::size_t H = 1 + r(0) % 4, hd = 1 + r(1) % 12, d_in = 1 + r(2) % 20;
        const std::size_t T = 1 + r(3) % 40, b = 1 + r(4) % 3;
        INFO("H=" << H << " hd=" << hd << " d_in=" << d_in << " T=" << T << " b=" << b);
        const attn::MultiHeadAttention mha({.d_in = d_in, .d_out = H * hd, .context_length = 40,
                                            .num_heads = H, .qkv_bias = round % 2 == 0}, gen);
        const attn::Tensor x = attn::randn({b, T, d_in}, gen);
        const attn::Tensor expected = mha(x);
        for (auto kernel : kKernels) CHECK(test::max_abs_diff(attn::combine_qkv(mha, kernel)(x), expected) < 2e-5);
        CHECK(test::max_abs_diff(attn::to_einsum(mha)(x), expected) < 2e-5);
        const auto torch_mha = attn::to_torch_layout(mha);
        const attn::BoolTensor causal = attn::causal_attn_mask(T);
        for (bool need_weights : {true, false})
            CHECK(test::max_abs_diff(torch_mha(x, x, x, {.need_weights = need_weights, .attn_mask = &causal}).attn_output,
                                     expected) < 2e-5);
    }
}

TEST_CASE("need_weights returns the weights averaged over the heads") {
    attn::Generator gen(5);
    const attn::MultiHeadAttention mha({.d_in = 6, .d_out = 8, .context_length = 9, .num_heads = 4}, gen);
    const attn::Tensor x = attn::randn({2, 9, 6}, gen);
    const attn::BoolTensor causal9 = attn::causal_attn_mask(9);
    const auto out = attn::to_torch_layout(mha)(x, x, x, {.attn_mask = &causal9});
    REQUIRE(out.attn_output_weights.has_value());
    const attn::Tensor heads_mean = attn::sum(mha.forward_steps(x).attn_weights, 1) / 4.0f;
    CHECK(test::max_abs_diff(*out.attn_output_weights, heads_mean) < 1e-6);
    CHECK_FALSE(attn::to_torch_layout(mha)(x, x, x, {.need_weights = false, .attn_mask = &causal9}).attn_output_weights.has_value());
}

TEST_CASE("control: a layout with its key and value blocks swapped does not equal", "[!shouldfail]") {
    attn::Generator gen(8);
    const attn::MultiHeadAttention mha({.d_in = 5, .d_out = 6, .context_length = 7, .num_heads = 2}, gen);
    attn::MultiHeadAttention swapped(mha.W_query, mha.W_value, mha.W_key, mha.out_proj, 7, 2, 0.0);
    const attn::Tensor x = attn::randn({1, 7, 5}, gen);
    CHECK(test::max_abs_diff(attn::combine_qkv(swapped, attn::AttentionKernel::tiled)(x), mha(x)) < 2e-5);
}

TEST_CASE("the layouts' shape errors name what is wrong") {
    attn::Generator gen(1);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 5, .num_heads = 2}, gen);
    test::require_invalid([&] { attn::combine_qkv(mha, attn::AttentionKernel::tiled)(attn::rand({1, 6, 3})); }, {"6"});
    test::require_invalid([&] { attn::to_einsum(mha)(attn::rand({1, 4, 2})); }, {"MHAEinsum", "[b, T, 3]"});
    test::require_invalid([] { attn::MultiHeadAttentionCombinedQKVConfig{.d_in = 3, .d_out = 3, .num_heads = 2,
                                                                       .context_length = 4}.validate(); },
                          {"divisible", "d_out = 3"});
    test::require_invalid([] { attn::einsum_bnd_di(attn::rand({1, 2, 3}), attn::rand({4, 2})); }, {"bnd,di->bni"});
    const attn::Tensor x = attn::rand({1, 4, 3});
    const attn::BoolTensor causal3 = attn::causal_attn_mask(3);
    test::require_invalid([&] { attn::to_torch_layout(mha)(x, x, x, {.attn_mask = &causal3}); }, {"attn_mask"});
}

TEST_CASE("nn.MultiheadAttention's layout equals PyTorch's module (oracle, seeds 123 and 0)") {
    for (const auto& [name, seed, d, heads, bias] :
         {std::tuple{"torch_mha_seed123", 123, 2u, 2u, false}, std::tuple{"torch_mha_random", 0, 8u, 4u, true}}) {
        INFO(name);
        const auto& c = test::oracle_case("efficient.json", name)["outputs"];
        attn::manual_seed(seed);
        const attn::MultiHeadAttention mha({.d_in = d, .d_out = d, .context_length = 64, .num_heads = heads, .qkv_bias = bias});
        const attn::Tensor x = attn::rand(c["x"]["shape"].get<attn::Shape>());
        REQUIRE(test::max_abs_diff(x, test::oracle_tensor(c["x"])) == 0.0);
        const attn::BoolTensor causal = attn::causal_attn_mask(x.shape()[1]);
        const auto out = attn::to_torch_layout(mha)(x, x, x, {.attn_mask = &causal});
        CHECK(test::max_abs_diff(out.attn_output, test::oracle_tensor(c["attn_output"])) < 1e-6);
        CHECK(test::max_abs_diff(*out.attn_output_weights, test::oracle_tensor(c["attn_output_weights"])) < 1e-6);
        CHECK(test::max_abs_diff(mha(x), test::oracle_tensor(c["mha"])) == 0.0);
    }
}

TEST_CASE("MultiHeadAttentionCombinedQKV drawn after seed 123 holds PyTorch's weights and output") {
    const auto& c = test::oracle_case("efficient.json", "combined_qkv_book")["outputs"];
    attn::manual_seed(123);
    const attn::MultiHeadAttentionCombinedQKV m({.d_in = 3, .d_out = 2, .num_heads = 2, .context_length = 6});
    CHECK(test::max_abs_diff(m.qkv.weight, test::oracle_tensor(c["qkv_weight"])) == 0.0);
    CHECK(test::max_abs_diff(m.proj.weight, test::oracle_tensor(c["proj_weight"])) == 0.0);
    const attn::Tensor batch = attn::stack({textbook::inputs(), textbook::inputs()}, 0);
    CHECK(attn::repr(m(batch)) == c["output"]["repr"].get<std::string>());
}

}  // namespace test_efficient
