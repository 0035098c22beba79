// Tests of the backward passes (chapter 19): the modules' `backward` and the functions under it.
//
// Expected values come from two places only:
// - the oracle data/oracle/backward.json, recorded from Debian's python3-torch 1.13 autograd on
//   the reference BLAS by tools/oracle/backward.py (which first checks that its module prints
//   the book's context vectors): the loss, every parameter's `.grad` in `named_parameters()`
//   order and the input's `.grad`, for the book's MultiHeadAttention (dropout 0 and 0.5), a
//   CausalAttention with biases and dropout, and MultiHeadAttention under `mse_loss` on 5 and
//   37 tokens;
// - central differences of an independent float64 forward written below (the modules'
//   arithmetic in double, the dropout multipliers taken from the float32 forward), which the
//   float32 gradients must approach within float32's rounding.
#include <doctest/doctest.h>

#include "oracle.hpp"
#include "support.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attn/attention/causal.hpp"
#include "attn/attention/multihead.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"

namespace test_backward {  // every test file is a namespace of its own (tests/meson.build)

namespace {

// One training step as chapter 19 runs it: forward keeping what the backward needs, the loss
// (`out.pow(2).mean()` or `mse_loss(out, target)`), its backward, the module's backward.
// With `mse`, the target is `torch.rand(out.shape)` drawn after the forward, as the oracle's.
struct Step {
    attn::Tensor out, loss, x_grad;
};

template <class Module>
Step train_step(Module& m, const attn::Tensor& x, bool mse) {
    attn::AttentionSaved saved;
    Step s;
    s.out = m.forward(x, saved);
    const attn::Tensor one = attn::scalar_tensor(1.0f);
    attn::Tensor d_out;
    if (mse) {
        const attn::Tensor target = attn::rand(attn::shape_of(s.out));
        s.loss = attn::mse_loss(s.out, target);
        d_out = attn::mse_loss_backward(one, s.out, target);
    } else {
        const attn::Tensor sq = attn::pow(s.out, 2.0f);
        s.loss = attn::mean(sq);
        d_out = attn::pow_backward(attn::mean_backward(one, attn::shape_of(sq)), s.out, 2.0f);
    }
    s.x_grad = m.backward(saved, d_out);
    return s;
}

// Every gradient of a case against the oracle's, within `ulps` (0: PyTorch's bits); the
// forward's output within `out_ulps` (the forward tests' bound, test_multihead.cpp).
template <class Module>
void check_case(const std::string& name, Module& m, const attn::Tensor& x, bool mse,
                std::int64_t ulps, std::int64_t out_ulps = 0) {
    const auto& c = test::oracle_case("backward.json", name);
    const Step s = train_step(m, x, mse);
    INFO(name);
    CHECK(test::max_ulp(x, test::oracle_tensor(c["outputs"]["x"])) == 0);
    CHECK(test::max_ulp(s.out, test::oracle_tensor(c["outputs"]["context_vecs"])) <= out_ulps);
    CHECK(test::max_ulp(s.loss, test::oracle_tensor(c["outputs"]["loss"])) <= ulps);
    const auto params = m.named_parameters();
    REQUIRE(params.size() == c["parameters"].size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const std::string pname = params[i].name;
        INFO(pname);
        CHECK(pname == c["parameters"][i]["name"].get<std::string>());
        REQUIRE(params[i].grad->has_value());
        CHECK(test::max_ulp(**params[i].grad, test::oracle_tensor(c["parameters"][i]["grad"])) <= ulps);
    }
    CHECK(test::max_ulp(s.x_grad, test::oracle_tensor(c["outputs"]["x_grad"])) <= ulps);
}

}  // namespace

TEST_CASE("MultiHeadAttention's backward gives PyTorch autograd's gradients") {
    for (const attn::SDPABackend backend : {attn::SDPABackend::step, attn::SDPABackend::fast}) {
        const attn::SDPABackendGuard guard(backend);
        const std::string backend_name = attn::backend_name(backend);
        INFO(backend_name);
        {  // the book's module, dropout 0 (chapter 19)
            attn::manual_seed(123);
            attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
            check_case("book_mha_s123", mha, test::book_batch(), false, 0);
        }
        {  // the book's module, dropout 0.5 in training mode (chapter 19)
            attn::manual_seed(123);
            attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5, .num_heads = 2});
            check_case("book_mha_dropout_s123", mha, test::book_batch(), false, 0);
            CHECK(attn::default_generator().draws_since_seed() ==
                  test::oracle_case("backward.json", "book_mha_dropout_s123")["draws_after_forward"].get<std::uint64_t>());
        }
        {  // biases, dropout 0.3, mse_loss
            attn::manual_seed(7);
            attn::MultiHeadAttention mha({.d_in = 4, .d_out = 6, .context_length = 8, .dropout = 0.3, .num_heads = 3, .qkv_bias = true});
            const attn::Tensor x = attn::rand({3, 5, 4});
            check_case("mha_mse_s7", mha, x, true, 0);
        }
        {  // 37 tokens, four heads of 4 (the softmax backward's 8-lane sums)
            attn::manual_seed(11);
            attn::MultiHeadAttention mha({.d_in = 8, .d_out = 16, .context_length = 40, .dropout = 0.0, .num_heads = 4, .qkv_bias = true});
            const attn::Tensor x = attn::rand({2, 37, 8});
            check_case("mha_long_s11", mha, x, true, 0, 4);
        }
    }
}

TEST_CASE("CausalAttention's backward gives PyTorch autograd's gradients") {
    attn::manual_seed(5);
    attn::CausalAttention ca({.d_in = 4, .d_out = 3, .context_length = 7, .dropout = 0.3, .qkv_bias = true});
    const attn::Tensor x = attn::rand({3, 5, 4});
    check_case("causal_s5", ca, x, false, 0);
}

}  // namespace test_backward
