// Tests of the backward passes (chapter 19): the modules' `backward` and the functions under it.
//
// Expected values come from two places only:
// - the oracle data/oracle/backward.json, recorded from Debian's python3-torch 1.13 autograd on
//   the reference BLAS by tools/oracle/backward.py (which first checks that its module prints
//   the book's context vectors): the loss, every parameter's `.grad` in `named_parameters()`
//   order and the input's `.grad`, for the book's MultiHeadAttention (dropout 0 and 0.5), a
//   CausalAttention with biases and dropout, and MultiHeadAttention under `mse_loss` on 5 and
//   37 tokens; chapter 6's steps as separate functions with every intermediate's `.grad`
//   (matmul, masked_fill, the scaling, softmax, pow, mean), cross_entropy with ignore_index,
//   and Embedding;
// - central differences of an independent float64 forward written below (the modules'
//   arithmetic in double, the dropout multipliers taken from the float32 forward), which the
//   float32 gradients must approach within float32's rounding.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attn/modules/causal.hpp"
#include "attn/modules/multihead.hpp"
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
Step train_step(Module& m, const attn::Tensor& x, bool mse, attn::AttentionSaved* keep = nullptr) {
    attn::AttentionSaved local;
    attn::AttentionSaved& saved = keep ? *keep : local;
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

TEST_CASE("the functions' backward passes, chained by hand, give autograd's gradient of each step") {
    const auto& c = test::oracle_case("backward.json", "functional_chain_s6");
    const auto ref = [&](const std::string& name) { return test::oracle_tensor(c["outputs"][name]); };
    const attn::Tensor q = ref("q"), k = ref("k"), v = ref("v");
    // forward: chapter 6's steps as separate functions
    const attn::Tensor kT = attn::transpose(k, 1, 2);
    const attn::Tensor scores = attn::matmul(q, kT);
    const attn::BoolTensor mask = attn::to_bool(attn::triu(attn::ones({9, 9}), 1));
    const attn::Tensor masked = attn::masked_fill(scores, mask, -std::numeric_limits<float>::infinity());
    const attn::Tensor scaled = attn::Tensor(masked / 2.0f);
    const attn::Tensor weights = attn::softmax(scaled, -1);
    const attn::Tensor out = attn::matmul(weights, v);
    CHECK(test::max_ulp(weights, ref("weights")) <= 4);  // the forward tests' bound
    CHECK(test::max_ulp(out, ref("out")) <= 4);
    // backward, one function per step, in reverse; each fed autograd's own inputs of that step
    // (its forward values and the gradient from the step after), so each must give its bits.
    const attn::Tensor one = attn::scalar_tensor(1.0f);
    const attn::Tensor d_out = attn::pow_backward(attn::mean_backward(one, attn::shape_of(out)), ref("out"), 2.0f);
    CHECK(test::max_ulp(d_out, ref("out_grad")) == 0);
    const attn::MatmulGradients g_out = attn::matmul_backward(ref("out_grad"), ref("weights"), v);
    CHECK(test::max_ulp(g_out.grad_a, ref("weights_grad")) == 0);
    CHECK(test::max_ulp(g_out.grad_b, ref("v_grad")) == 0);
    const attn::Tensor d_scaled = attn::softmax_backward(ref("weights_grad"), ref("weights"));
    CHECK(test::max_ulp(d_scaled, ref("scaled_grad")) == 0);
    const attn::Tensor d_masked = attn::div_backward(ref("scaled_grad"), 2.0f);
    CHECK(test::max_ulp(d_masked, ref("masked_grad")) == 0);
    const attn::Tensor d_scores = attn::masked_fill_backward(ref("masked_grad"), mask);
    CHECK(test::max_ulp(d_scores, ref("scores_grad")) == 0);
    const attn::MatmulGradients g_scores = attn::matmul_backward(ref("scores_grad"), q, kT);
    CHECK(test::max_ulp(g_scores.grad_a, ref("q_grad")) == 0);
    CHECK(test::max_ulp(attn::transpose_backward(g_scores.grad_b, 1, 2), ref("k_grad")) == 0);
    // and chained on this library's own forward, within the forward's bound
    const attn::Tensor chained = attn::matmul_backward(
        attn::masked_fill_backward(attn::div_backward(attn::softmax_backward(
            attn::matmul_backward(attn::pow_backward(attn::mean_backward(one, attn::shape_of(out)), out, 2.0f), weights, v).grad_a,
            weights), 2.0f), mask), q, kT).grad_a;
    CHECK(test::max_ulp(chained, ref("q_grad")) <= 4);
}

TEST_CASE("cross_entropy's backward with ignore_index gives PyTorch's logits.grad") {
    for (const std::string name : {"cross_entropy_s3", "cross_entropy_s4"}) {
        INFO(name);
        const auto& c = test::oracle_case("backward.json", name);
        const attn::Tensor logits = test::oracle_tensor(c["outputs"]["logits"]);
        const attn::LongTensor targets = xt::adapt(c["targets"].get<std::vector<std::int64_t>>());
        const attn::Tensor loss = attn::cross_entropy(logits, targets, -100);
        CHECK(test::max_ulp(loss, test::oracle_tensor(c["outputs"]["loss"])) <= 1);
        const attn::Tensor grad = attn::cross_entropy_backward(attn::scalar_tensor(1.0f), logits, targets, -100);
        CHECK(test::max_ulp(grad, test::oracle_tensor(c["outputs"]["logits_grad"])) == 0);
        const std::size_t C = attn::shape_of(grad)[1];
        for (std::size_t i = 0; i < targets.size(); ++i)  // an ignored row has no gradient at all
            if (targets(i) == -100)
                for (std::size_t j = 0; j < C; ++j) CHECK(grad(i, j) == 0.0f);
    }
}

TEST_CASE("Embedding's backward adds the rows of a repeated id, as PyTorch") {
    const auto& c = test::oracle_case("backward.json", "embedding_s5");
    attn::manual_seed(5);
    attn::nn::Embedding emb(10, 5);
    CHECK(test::max_ulp(emb.weight, test::oracle_tensor(c["outputs"]["weight"])) == 0);
    const attn::LongTensor ids = attn::LongTensor({{1, 3, 1}, {9, 0, 3}});
    const attn::Tensor out = emb(ids);
    const attn::Tensor sq = attn::pow(out, 2.0f);
    CHECK(test::max_ulp(attn::mean(sq), test::oracle_tensor(c["outputs"]["loss"])) == 0);
    emb.backward(ids, attn::pow_backward(attn::mean_backward(attn::scalar_tensor(1.0f), attn::shape_of(sq)), out, 2.0f));
    REQUIRE(emb.weight_grad.has_value());
    CHECK(test::max_ulp(*emb.weight_grad, test::oracle_tensor(c["outputs"]["weight_grad"])) == 0);
    CHECK_THROWS_WITH(emb.backward(ids, attn::zeros({2, 3, 4})), Catch::Contains("Embedding::backward (grad_output)"));
}

TEST_CASE("bad input to the backward passes is named") {
    attn::manual_seed(1);
    attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0, .num_heads = 2});
    attn::AttentionSaved saved;
    mha.forward(attn::rand({2, 5, 3}), saved);
    CHECK_THROWS_WITH(mha.backward(saved, attn::zeros({2, 5, 3})),
                      Catch::Contains("MultiHeadAttention::backward (grad_output)"));
    attn::AttentionSaved empty;
    CHECK_THROWS_WITH(mha.backward(empty, attn::zeros({2, 5, 4})), Catch::Contains("saved.x"));
    attn::nn::Linear lin(3, 2);
    CHECK_THROWS_WITH(lin.backward(attn::zeros({4, 3}), attn::zeros({4, 3})),
                      Catch::Contains("Linear::backward (grad_output)"));
    CHECK_THROWS_WITH(attn::softmax_backward(attn::zeros({2, 3}), attn::zeros({3, 2})),
                      Catch::Contains("softmax_backward"));
    CHECK_THROWS_WITH(attn::mse_loss_backward(attn::zeros({1}), attn::zeros({2}), attn::zeros({2})),
                      Catch::Contains("a 0-d tensor"));
}

namespace {

// The modules' forward in float64, written out from Raschka's classes (ch. 3.5.3, 3.6.2):
// x [b, T, d_in]; q, k, v = x W^T + bias; per head, scores q.k masked above the diagonal,
// divided by sqrt(head_dim), softmax, times the dropout multipliers `noise [b, H, T, T]` (empty:
// none); context merged [b, T, d_out]; then out_proj (`mha`). `p` in named_parameters() order.
// Returns mean(out^2).
double loss64(const std::vector<std::vector<double>>& p, const std::vector<double>& x,
              const std::vector<std::size_t>& dims, const attn::Tensor& noise, bool mha, bool bias) {
    const std::size_t b = dims[0], T = dims[1], d_in = dims[2], d_out = dims[3], H = dims[4];
    const std::size_t hd = d_out / H;
    std::size_t i = 0;
    const auto next = [&]() -> const std::vector<double>& { return p[i++]; };
    std::vector<double> qkv[3];
    for (auto& proj : qkv) {
        const std::vector<double>& W = next();
        const std::vector<double>* bv = bias ? &next() : nullptr;
        proj.assign(b * T * d_out, 0.0);
        for (std::size_t r = 0; r < b * T; ++r)
            for (std::size_t o = 0; o < d_out; ++o) {
                double acc = bv ? (*bv)[o] : 0.0;
                for (std::size_t e = 0; e < d_in; ++e) acc += x[r * d_in + e] * W[o * d_in + e];
                proj[r * d_out + o] = acc;
            }
    }
    std::vector<double> ctx(b * T * d_out, 0.0), w(T);
    for (std::size_t n = 0; n < b; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                double m = -std::numeric_limits<double>::infinity(), l = 0.0;
                for (std::size_t j = 0; j <= t; ++j) {
                    double s = 0.0;
                    for (std::size_t e = 0; e < hd; ++e)
                        s += qkv[0][(n * T + t) * d_out + h * hd + e] * qkv[1][(n * T + j) * d_out + h * hd + e];
                    w[j] = s / std::sqrt(double(hd));
                    m = std::max(m, w[j]);
                }
                for (std::size_t j = 0; j <= t; ++j) l += (w[j] = std::exp(w[j] - m));
                for (std::size_t j = 0; j <= t; ++j) {
                    const double keep = noise.dimension() ? noise.data()[((n * H + h) * T + t) * T + j] : 1.0;
                    for (std::size_t e = 0; e < hd; ++e)
                        ctx[(n * T + t) * d_out + h * hd + e] += w[j] / l * keep * qkv[2][(n * T + j) * d_out + h * hd + e];
                }
            }
    std::vector<double> out = ctx;
    if (mha) {
        const std::vector<double>& W = next();
        const std::vector<double>& bo = next();
        for (std::size_t r = 0; r < b * T; ++r)
            for (std::size_t o = 0; o < d_out; ++o) {
                double acc = bo[o];
                for (std::size_t e = 0; e < d_out; ++e) acc += ctx[r * d_out + e] * W[o * d_out + e];
                out[r * d_out + o] = acc;
            }
    }
    double sum = 0.0;
    for (const double v : out) sum += v * v;
    return sum / double(out.size());
}

std::vector<double> to64(const attn::Tensor& t) { return {t.data(), t.data() + t.size()}; }

// Every float32 gradient of `m` (and of x) against central differences of `loss64`, step 1e-6:
// within 1e-3 relative, plus 1e-5 of the largest parameter gradient (float32 rounding).
template <class Module>
void check_against_differences(Module& m, const attn::Tensor& x, const std::vector<std::size_t>& dims,
                               bool mha, bool bias) {
    attn::AttentionSaved saved;
    const Step s = train_step(m, x, false, &saved);
    const attn::Tensor& noise = saved.attention.dropout_noise;  // the float64 forward reuses them
    std::vector<std::vector<double>> p;
    const auto params = m.named_parameters();
    for (const auto& np : params) p.push_back(to64(*np.value));
    std::vector<double> x64 = to64(x);
    const double h = 1e-6;
    // The margin's scale: the largest gradient of any tensor (a key bias's gradient is 0 in
    // exact arithmetic, a softmax row being shift-invariant; float32 leaves ~1e-9 there).
    double largest = 0.0;
    for (const auto& np : params)
        for (const float g : **np.grad) largest = std::max(largest, std::abs(double(g)));
    const auto check = [&](std::vector<double>& values, const attn::Tensor& grad, const std::string& what) {
        for (std::size_t i = 0; i < values.size(); ++i) {
            const double v = values[i];
            values[i] = v + h;
            const double up = loss64(p, x64, dims, noise, mha, bias);
            values[i] = v - h;
            const double down = loss64(p, x64, dims, noise, mha, bias);
            values[i] = v;
            const double numeric = (up - down) / (2 * h);
            INFO(what << "[" << i << "]");
            CHECK(double(grad.data()[i]) == Approx(numeric).epsilon(1e-3).margin(1e-5 * largest + 1e-9));
        }
    };
    for (std::size_t k = 0; k < params.size(); ++k) check(p[k], **params[k].grad, params[k].name);
    check(x64, s.x_grad, "x");
}

}  // namespace

TEST_CASE("every gradient equals central differences of a float64 forward") {
    SECTION("MultiHeadAttention, biases, dropout 0.3 (the forward's multipliers)") {
        attn::manual_seed(3);
        attn::MultiHeadAttention mha({.d_in = 4, .d_out = 6, .context_length = 8, .dropout = 0.3, .num_heads = 3, .qkv_bias = true});
        check_against_differences(mha, attn::rand({2, 5, 4}), {2, 5, 4, 6, 3}, true, true);
    }
    SECTION("MultiHeadAttention, the book's module") {
        attn::manual_seed(123);
        attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
        check_against_differences(mha, test::book_batch(), {2, 6, 3, 2, 2}, true, false);
    }
    SECTION("CausalAttention, biases, dropout 0.5") {
        attn::manual_seed(4);
        attn::CausalAttention ca({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.5, .qkv_bias = true});
        check_against_differences(ca, attn::rand({2, 6, 3}), {2, 6, 3, 4, 1}, false, true);
    }
}

}  // namespace test_backward
