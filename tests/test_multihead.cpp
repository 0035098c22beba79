// Tests of CausalAttention (chapter 6) and the three multi-head layouts (chapter 7).
//
// Expected values come from two places only:
// - the book (data/book/): 002 In [19], 004 In [62], 004 In [64] (numbers and printed text)
//   and notebook 003's deterministic outputs (the module repr, `True`, the shapes);
// - the oracle data/oracle/multihead.json, recorded from Debian's python3-torch 1.13 on the
//   reference BLAS by tools/oracle/multihead.py (which first checks that it reproduces the
//   book cells above byte for byte): Raschka's MultiHeadAttentionWrapper and
//   MultiHeadAttention with seed 123, notebook 003's layer with seed 123, and training-mode
//   cases with biases and dropout on other sizes.
// The layout equivalences are relations between two computations, on random sizes.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/modules/causal.hpp"
#include "attn/modules/gpt2.hpp"
#include "textbook/book.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "attn/core/ulp.hpp"

namespace test_multihead {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using json = nlohmann::json;

// Every number printed in `text` against `values` (row-major), within `ulps` or 1e-7
// absolute (the "Last bits" rule of the notes; NumPy prints at most 8 decimals, so a small
// value's printed form is itself rounded).
void check_printed_numbers(const std::string& text, const attn::Tensor& values, long long ulps) {
    const auto nums = textbook::numbers_in(text);
    REQUIRE(nums.size() == values.size());
    for (std::size_t i = 0; i < nums.size(); ++i) {
        const float ours = values.data()[i];
        const float theirs = static_cast<float>(nums[i].value);
        INFO("number " << i << ": printed " << nums[i].text << ", ours " << ours);
        const bool close = attn::ulp_distance(ours, theirs) <= ulps ||
                           std::abs(double(ours) - nums[i].value) <= 1e-7;
        CHECK(close);
    }
}

// Uniforms in [-1, 1) from the generator: inputs with both signs for the equivalences.
attn::Tensor signed_rand(const attn::Shape& shape, attn::Generator& gen) {
    return attn::Tensor(attn::rand(shape, gen) * 2.0f - 1.0f);
}

}  // namespace

// ============================================================================ the batch

TEST_CASE("the batch of 002 In [14]-[17]: stack((inputs, inputs)) as numbers and as text") {
    const attn::Tensor x = test::book_batch();
    const attn::Tensor inputs = attn::select(x, 0);
    CHECK(attn::repr(attn::shape_of(inputs)) == test::the_book().at("002-In14").text);
    REQUIRE(attn::shape_of(x) == attn::Shape{2, 6, 3});
    const std::string text = attn::repr(x) + "\n=====\n" + attn::repr(attn::shape_of(x));
    for (const char* id : {"002-In15", "002-In17-1"}) {
        const auto& entry = test::the_book().at(id);
        CHECK(text == entry.text);
        const auto nums = textbook::numbers_in(entry.text);
        REQUIRE(nums.size() == 36 + 3);  // the values, then torch.Size([2, 6, 3])
        for (std::size_t i = 0; i < 36; ++i) CHECK(x.data()[i] == static_cast<float>(nums[i].value));
    }
    CHECK(test::the_book().at("002-In17-2").text ==
          "d_in: " + std::to_string(inputs.shape().back()) + ", d_out: 2");
}

// ============================================================================ CausalAttention

TEST_CASE("CausalAttention reproduces 002 In [19]: seed 123, dropout 0, the batch of two") {
    attn::manual_seed(123);
    const attn::Tensor x = test::book_batch();
    const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = x.shape()[1], .dropout = 0.0});
    // Three bias-free Linear(3, 2) layers, 6 draws each; dropout 0 draws nothing.
    CHECK(attn::default_generator().draws_since_seed() == 18);
    const attn::Tensor context_vecs = ca(x);
    CHECK(attn::default_generator().draws_since_seed() == 18);
    REQUIRE(attn::shape_of(context_vecs) == attn::Shape{2, 6, 2});

    const auto& entry = test::the_book().at("002-In19");
    SECTION("as numbers, at the printed precision") {
        const auto nums = textbook::numbers_in(textbook::strip_grad_fn(entry.text));
        // 24 values, then the 3 sizes of `Shape: torch.Size([2, 6, 2])`.
        REQUIRE(nums.size() == 24 + 3);
        for (std::size_t i = 0; i < 24; ++i) {
            INFO("value " << i << ": book " << nums[i].text << ", ours " << context_vecs.data()[i]);
            CHECK(std::abs(context_vecs.data()[i] - nums[i].value) <= 0.5e-4 + 1e-7);
        }
    }
    SECTION("against the oracle, to the last bits") {
        const auto ref = test::oracle_tensor(test::oracle_case("multihead.json", "nb002_in19")["outputs"]["context_vecs"]);
        CHECK(test::max_ulp(context_vecs, ref) <= 4);
    }
    SECTION("as printed text") {
        const std::string text = "Context vectors:\n" + attn::repr(context_vecs) +
                                 "\n\nShape: " + attn::repr(attn::shape_of(context_vecs));
        CHECK(text == textbook::strip_grad_fn(entry.text));
        CHECK(textbook::compare(entry, text).match);
    }
}

TEST_CASE("CausalAttention reproduces 004 In [62]: seed 123, dropout 0.5, portable Bernoulli") {
    attn::manual_seed(123);
    const attn::Tensor x = test::book_batch();
    const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = x.shape()[1], .dropout = 0.5, .qkv_bias = false, .backend = attn::nn::BernoulliBackend::portable});
    const attn::Tensor context_vecs = ca(x);
    const auto& ref_case = test::oracle_case("multihead.json", "nb004_history");
    // 18 draws for the layers, 2 per element for the [2, 6, 6] weights' keep-mask.
    CHECK(attn::default_generator().draws_since_seed() == 18 + 2 * 72);
    CHECK(attn::default_generator().draws_since_seed() ==
          ref_case["draws_after"]["in62"].get<std::uint64_t>());

    const auto& entry = test::the_book().at("004-In62");
    SECTION("as numbers: within 4 ulp of the book") { check_printed_numbers(entry.text, context_vecs, 4); }
    SECTION("the dropped row: batch element 1, token 0 lost its only weight") {
        CHECK(context_vecs(1, 0, 0) == 0.0f);
        CHECK(context_vecs(1, 0, 1) == 0.0f);
    }
    SECTION("as printed text (NumPy style, ulp:4)") {
        const std::string text = "Batched Context Matrices: \n\n " + attn::numpy_str(context_vecs);
        const auto c = textbook::compare(entry, text);
        INFO(c.summary());
        for (const auto& d : c.differences) INFO(d);
        CHECK(c.match);
        WARN("004 In [62]: " << c.numbers_identical << " of " << c.numbers << " numbers print identically");
    }
}

TEST_CASE("004 In [64] is the second run of MultiHeadAtt after In [62]") {
    const auto& ref = test::oracle_case("multihead.json", "nb004_history");
    attn::manual_seed(123);
    const attn::Tensor x = test::book_batch();
    const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5});
    (void)ca(x);  // In [62]
    std::vector<attn::Tensor> runs;
    std::vector<std::uint64_t> draws;
    for (int run = 0; run < 2; ++run) {
        // MultiHeadAtt(d_in=3, d_out=2, dropout=0.2, conlen=6, num_heads=2): out bias off.
        const attn::MultiHeadAttention multi({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.2, .num_heads = 2, .qkv_bias = false, .out_bias = false});
        runs.push_back(multi(x));
        draws.push_back(attn::default_generator().draws_since_seed());
    }
    // Each run: 22 uniforms for the four layers, 288 for the [2, 2, 6, 6] keep-mask.
    CHECK(draws[0] == 162 + 22 + 288);
    CHECK(draws[1] == draws[0] + 22 + 288);
    CHECK(draws[0] == ref["draws_after"]["in64_first_run"].get<std::uint64_t>());
    CHECK(draws[1] == ref["draws_after"]["in64_second_run"].get<std::uint64_t>());
    CHECK(test::max_ulp(runs[0], test::oracle_tensor(ref["outputs"]["in64_first_run"])) <= 4);
    CHECK(test::max_ulp(runs[1], test::oracle_tensor(ref["outputs"]["in64_second_run"])) <= 4);

    const char* labels[] = {"First head Context Matrix: \n", "Second head Context Matrix: \n"};
    const char* ids[] = {"004-In64-1", "004-In64-2"};
    for (int i = 0; i < 2; ++i) {
        const auto& entry = test::the_book().at(ids[i]);
        const attn::Tensor element = attn::select(runs[1], i);
        check_printed_numbers(entry.text, element, 4);
        const auto c = textbook::compare(entry, labels[i] + attn::numpy_str(element));
        INFO(c.summary());
        CHECK(c.match);
        WARN(ids[i] << ": " << c.numbers_identical << " of " << c.numbers << " numbers print identically");
        // The first run is not what the notebook printed: the history matters.
        const auto first = textbook::compare(entry, labels[i] + attn::numpy_str(attn::select(runs[0], i)));
        CHECK_FALSE(first.match);
    }
}

TEST_CASE("CausalAttention with qkv_bias and dropout in training mode matches PyTorch") {
    const auto& c = test::oracle_case("multihead.json", "causal_train_s5");
    attn::manual_seed(5);
    const attn::CausalAttention ca({.d_in = 4, .d_out = 3, .context_length = 7, .dropout = 0.3, .qkv_bias = true});
    const attn::Tensor x = attn::rand({3, 5, 4});
    CHECK(test::max_ulp(x, test::oracle_tensor(c["outputs"]["x"])) == 0);
    CHECK(test::max_ulp(ca(x), test::oracle_tensor(c["outputs"]["context_vec"])) <= 4);
}

TEST_CASE("CausalAttention on the MKL backend: one draw for the whole dropout mask") {
    attn::manual_seed(123);
    const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5, .qkv_bias = false, .backend = attn::nn::BernoulliBackend::mkl});
    const attn::Tensor out = ca(test::book_batch());
    CHECK(attn::default_generator().draws_since_seed() == 18 + 1);
    // A different mask from the portable one: the book's In [62] is not reproduced.
    const auto c = textbook::compare(test::the_book().at("004-In62"),
                                       "Batched Context Matrices: \n\n " + attn::numpy_str(out));
    CHECK_FALSE(c.match);
}

TEST_CASE("CausalAttention in evaluation mode draws nothing and skips dropout") {
    attn::Generator gen(7);
    attn::CausalAttention ca({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.5, .qkv_bias = false, .backend = attn::nn::BernoulliBackend::portable}, gen);
    const attn::Tensor x = signed_rand({2, 5, 3}, gen);
    ca.eval();
    const auto before = gen.draws_since_seed();
    const auto st = ca.forward_steps(x, gen);
    CHECK(gen.draws_since_seed() == before);
    CHECK(test::max_abs_diff(st.dropped_weights, st.attn_weights) == 0.0);
    // Causality: weights above the diagonal are exactly 0, rows sum to 1.
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 5; ++i) {
            float row = 0;
            for (std::size_t j = 0; j < 5; ++j) {
                if (j > i) CHECK(st.attn_weights(b, i, j) == 0.0f);
                row += st.attn_weights(b, i, j);
            }
            CHECK(row == Approx(1.0f).margin(1e-6));
        }
    // A later token does not change an earlier token's output.
    const attn::Tensor shorter = attn::slice(x, 1, 0, 3);
    CHECK(test::max_abs_diff(attn::slice(ca(x, gen), 1, 0, 3), ca(shorter, gen)) == 0.0);
}

TEST_CASE("CausalAttention rejects more tokens than context_length, and bad shapes") {
    attn::manual_seed(123);
    const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5});
    const auto draws = attn::default_generator().draws_since_seed();
    attn::Generator g(1);
    const attn::Tensor seven = attn::rand({2, 7, 3}, g);
    CHECK_THROWS_AS(ca(seven), std::invalid_argument);
    CHECK_THROWS_WITH(ca(seven), Catch::Contains("7 tokens") && Catch::Contains("context_length is 6"));
    CHECK_THROWS_WITH(ca(attn::rand({2, 6, 4}, g)), Catch::Contains("[b, T, 3]") && Catch::Contains("[2, 6, 4]"));
    CHECK_THROWS_AS(ca(attn::rand({6, 3}, g)), std::invalid_argument);
    // A rejected input draws nothing.
    CHECK(attn::default_generator().draws_since_seed() == draws);
    CHECK_THROWS_AS(attn::CausalAttention({.d_in = 3, .d_out = 2, .context_length = 0, .dropout = 0.0}), std::invalid_argument);
    CHECK_THROWS_AS(attn::CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 1.5}), std::invalid_argument);
    // Exactly context_length tokens is fine.
    CHECK_NOTHROW(ca(attn::rand({1, 6, 3}, g)));
}

// ============================================================================ (a) the wrapper

TEST_CASE("MultiHeadAttentionWrapper: the book's configuration (seed 123, 2 heads of 2)") {
    const auto& c = test::oracle_case("multihead.json", "book_wrapper_s123");
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWrapper mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
    const auto st = mha.forward_steps(test::book_batch());
    REQUIRE(st.head_outputs.size() == 2);
    CHECK(attn::shape_of(st.head_outputs[0]) == attn::Shape{2, 6, 2});
    CHECK(attn::shape_of(st.context_vec) == attn::Shape{2, 6, 4});
    const auto& out = c["outputs"]["context_vecs"];
    CHECK(test::max_ulp(st.context_vec, test::oracle_tensor(out)) <= 4);
    CHECK(attn::repr(st.context_vec) == out["repr"].get<std::string>());
    // The first head is 002 In [19]'s CausalAttention: same seed, built first.
    const auto& entry = test::the_book().at("002-In19");
    CHECK(("Context vectors:\n" + attn::repr(st.head_outputs[0]) + "\n\nShape: torch.Size([2, 6, 2])") ==
          textbook::strip_grad_fn(entry.text));
}

TEST_CASE("MultiHeadAttentionWrapper with biases and dropout matches PyTorch (draw order)") {
    const auto& c = test::oracle_case("multihead.json", "wrapper_train_s11");
    attn::manual_seed(11);
    const attn::MultiHeadAttentionWrapper mha({.d_in = 5, .d_out = 2, .context_length = 4, .dropout = 0.25, .num_heads = 3, .qkv_bias = true});
    const attn::Tensor x = attn::rand({2, 4, 5});
    CHECK(test::max_ulp(x, test::oracle_tensor(c["outputs"]["x"])) == 0);
    CHECK(test::max_ulp(mha(x), test::oracle_tensor(c["outputs"]["context_vec"])) <= 4);
}

// ============================================================================ (b) weight split

TEST_CASE("MultiHeadAttention: the book's configuration (seed 123, out_proj with bias)") {
    const auto& c = test::oracle_case("multihead.json", "book_mha_s123");
    attn::manual_seed(123);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
    CHECK(mha.out_proj.bias.has_value());
    CHECK(mha.head_dim == 1);
    CHECK(attn::default_generator().draws_since_seed() == 3 * 6 + 4 + 2);
    const auto st = mha.forward_steps(test::book_batch());
    CHECK(attn::shape_of(st.queries) == attn::Shape{2, 6, 2});
    CHECK(attn::shape_of(st.queries_split) == attn::Shape{2, 6, 2, 1});
    CHECK(attn::shape_of(st.queries_heads) == attn::Shape{2, 2, 6, 1});
    CHECK(attn::shape_of(st.attn_scores) == attn::Shape{2, 2, 6, 6});
    CHECK(attn::shape_of(st.context_heads) == attn::Shape{2, 2, 6, 1});
    CHECK(attn::shape_of(st.context_transposed) == attn::Shape{2, 6, 2, 1});
    CHECK(attn::shape_of(st.context_merged) == attn::Shape{2, 6, 2});
    const auto& out = c["outputs"]["context_vecs"];
    CHECK(test::max_ulp(st.context_vec, test::oracle_tensor(out)) <= 4);
    CHECK(attn::repr(st.context_vec) == out["repr"].get<std::string>());
}

TEST_CASE("MultiHeadAttention with biases and dropout matches PyTorch") {
    const auto& c = test::oracle_case("multihead.json", "mha_train_s7");
    attn::manual_seed(7);
    const attn::MultiHeadAttention mha({.d_in = 4, .d_out = 6, .context_length = 8, .dropout = 0.3, .num_heads = 3, .qkv_bias = true, .out_bias = true});
    const attn::Tensor x = attn::rand({3, 5, 4});
    CHECK(test::max_ulp(x, test::oracle_tensor(c["outputs"]["x"])) == 0);
    CHECK(test::max_ulp(mha(x), test::oracle_tensor(c["outputs"]["context_vec"])) <= 4);
}

TEST_CASE("MultiHeadAttention: d_out not divisible by num_heads, and other bad input") {
    CHECK_THROWS_AS(attn::MultiHeadAttention({.d_in = 3, .d_out = 3, .context_length = 6, .dropout = 0.0, .num_heads = 2}), std::invalid_argument);
    CHECK_THROWS_WITH(attn::MultiHeadAttention({.d_in = 3, .d_out = 3, .context_length = 6, .dropout = 0.0, .num_heads = 2}),
                      Catch::Contains("d_out must be divisible by num_heads") && Catch::Contains("d_out = 3") &&
                      Catch::Contains("num_heads = 2"));
    CHECK_THROWS_AS(attn::MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0, .num_heads = 0}), std::invalid_argument);
    attn::Generator g(3);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0, .num_heads = 2, .qkv_bias = false, .out_bias = true, .backend = attn::nn::BernoulliBackend::portable}, g);
    CHECK_THROWS_WITH(mha(attn::rand({2, 7, 3}, g)),
                      Catch::Contains("7 tokens") && Catch::Contains("context_length is 6"));
    CHECK_THROWS_WITH(mha(attn::rand({2, 5, 2}, g)), Catch::Contains("[b, T, 3]") && Catch::Contains("[2, 5, 2]"));
    // Assembling from layers checks their shapes.
    const attn::nn::Linear q(3, 4, false, g), k(3, 4, false, g), v(3, 5, false, g), o(4, 4, false, g);
    CHECK_THROWS_AS(attn::MultiHeadAttention(q, k, v, o, 6, 2, 0.0), std::invalid_argument);
    CHECK_THROWS_AS(attn::MultiHeadAttention(q, k, k, o, 6, 3, 0.0), std::invalid_argument);
    CHECK_NOTHROW(attn::MultiHeadAttention(q, k, k, o, 6, 4, 0.0));
}

// ============================================================================ (c) GPT-2

TEST_CASE("GPT2Attention prints as notebook 003 In [2]") {
    attn::GPT2Config cfg;
    cfg.block_size = 5;
    cfg.n_embd = 12;
    cfg.n_head = 3;
    attn::GPT2Attention layer(cfg);
    layer.eval();
    CHECK(attn::repr(layer) == test::the_book().at("003-In02").text);
    CHECK(layer.head_dim == 4);
    CHECK(attn::shape_of(layer.bias) == attn::Shape{1, 1, 5, 5});
}

TEST_CASE("module reprs write p as Python writes a float") {
    attn::GPT2Config cfg;
    cfg.block_size = 2;
    cfg.n_embd = 4;
    cfg.n_head = 2;
    cfg.bias = true;
    const std::pair<double, const char*> cases[] = {
        {0.0, "p=0.0,"}, {0.25, "p=0.25,"}, {1e-05, "p=1e-05,"}, {1.0, "p=1.0,"}, {0.1, "p=0.1,"}};
    for (const auto& [p, want] : cases) {
        cfg.dropout = p;
        const std::string r = attn::repr(attn::GPT2Attention(cfg));
        INFO(r);
        CHECK_THAT(r, Catch::Contains(want));
        CHECK_THAT(r, Catch::Contains("Linear(in_features=4, out_features=12, bias=True)"));
    }
}

TEST_CASE("notebook 003's walk: shapes and relations hold for several seeds") {
    // 003's values were unseeded; its printed outputs are shapes and `True`, which must come
    // out the same for any seed.
    attn::GPT2Config cfg;
    cfg.block_size = 5;
    cfg.n_embd = 12;
    cfg.n_head = 3;
    for (std::uint64_t seed : {0ULL, 1ULL, 123ULL, 2024ULL}) {
        INFO("seed " << seed);
        attn::Generator gen(seed);
        attn::GPT2Attention layer(cfg, attn::nn::BernoulliBackend::portable, gen);
        layer.eval();
        const attn::Tensor input_tensor = signed_rand({16, 5, 12}, gen);
        const auto st = layer.forward_steps(input_tensor, gen);
        const attn::Tensor& original_output = st.output;
        CHECK(attn::repr_bool(attn::shape_of(input_tensor) == attn::shape_of(original_output)) ==
              test::the_book().at("003-In03").text);
        const auto qkv = attn::split(layer.c_attn(input_tensor), 12, 2);
        REQUIRE(qkv.size() == 3);
        const bool same = attn::shape_of(qkv[0]) == attn::shape_of(qkv[1]) &&
                          attn::shape_of(qkv[1]) == attn::shape_of(qkv[2]) &&
                          attn::shape_of(qkv[2]) == attn::shape_of(input_tensor);
        CHECK(attn::repr_bool(same) == test::the_book().at("003-In04").text);
        CHECK(attn::repr(attn::shape_of(st.q_heads)) == test::the_book().at("003-In05").text);
        CHECK(attn::repr(attn::shape_of(st.y_heads)) == test::the_book().at("003-In06").text);
        CHECK(attn::repr(attn::shape_of(st.y)) == test::the_book().at("003-In07").text);
        // c_proj_of_merged_heads_equals_output (003 In [8]).
        CHECK(attn::repr_bool(attn::allclose(layer.c_proj(st.y), original_output)) ==
              test::the_book().at("003-In08").text);
        // The split q is the first S columns of c_attn(x).
        CHECK(test::max_abs_diff(qkv[0], st.q) == 0.0);
        // Not vacuous: a different output is not close.
        CHECK_FALSE(attn::allclose(layer.c_proj(st.y), attn::Tensor(original_output + 1e-3f)));
    }
}

TEST_CASE("GPT2Attention with notebook 003's sizes and seed 123 matches PyTorch") {
    const auto& c = test::oracle_case("multihead.json", "nb003_gpt2_s123");
    attn::GPT2Config cfg;
    cfg.block_size = 5;
    cfg.n_embd = 12;
    cfg.n_head = 3;
    const attn::Tensor ref_in = test::oracle_tensor(c["outputs"]["input_tensor"]);
    const attn::Tensor ref_out = test::oracle_tensor(c["outputs"]["original_output"]);
    attn::manual_seed(123);
    attn::GPT2Attention layer(cfg);
    layer.eval();
    // 12-term dot products: the summation order of the matrix products moves the last bits
    // more than in the 2- and 3-term products of the book's cells, so 8 ulp here.
    SECTION("forward on the recorded input") { CHECK(test::max_ulp(layer(ref_in), ref_out) <= 8); }
    SECTION("the input drawn with randn after the layer") {
        const attn::Tensor input_tensor = attn::randn({16, 5, 12});
        CHECK(test::max_ulp(input_tensor, ref_in) <= 4);
        CHECK(test::max_ulp(layer(input_tensor), ref_out) <= 8);
    }
}

TEST_CASE("GPT2Attention in training mode: both dropouts, in order, match PyTorch") {
    const auto& c = test::oracle_case("multihead.json", "gpt2_train_s9");
    attn::GPT2Config cfg;
    cfg.block_size = 6;
    cfg.n_embd = 6;
    cfg.n_head = 2;
    cfg.dropout = 0.2;
    cfg.bias = true;
    attn::manual_seed(9);
    const attn::GPT2Attention layer(cfg);
    const attn::Tensor x = attn::rand({2, 4, 6});
    CHECK(test::max_ulp(x, test::oracle_tensor(c["outputs"]["x"])) == 0);
    CHECK(test::max_ulp(layer(x), test::oracle_tensor(c["outputs"]["y"])) <= 4);
}

TEST_CASE("GPT2Attention rejects bad configurations and inputs") {
    attn::GPT2Config cfg;
    cfg.block_size = 5;
    cfg.n_embd = 10;
    cfg.n_head = 3;
    CHECK_THROWS_WITH(attn::GPT2Attention(cfg), Catch::Contains("divisible"));
    cfg.n_embd = 12;
    attn::Generator g(0);
    const attn::GPT2Attention layer(cfg, attn::nn::BernoulliBackend::portable, g);
    CHECK_THROWS_WITH(layer(attn::rand({2, 6, 12}, g)),
                      Catch::Contains("6 tokens") && Catch::Contains("block_size is 5"));
    CHECK_THROWS_WITH(layer(attn::rand({2, 5, 8}, g)), Catch::Contains("[b, T, 12]") && Catch::Contains("[2, 5, 8]"));
}

// ============================================================================ split

TEST_CASE("split cuts consecutive chunks like torch.split") {
    attn::Tensor x = attn::zeros({2, 3, 7});
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i);
    const auto parts = attn::split(x, 3, -1);
    REQUIRE(parts.size() == 3);
    CHECK(attn::shape_of(parts[0]) == attn::Shape{2, 3, 3});
    CHECK(attn::shape_of(parts[2]) == attn::Shape{2, 3, 1});
    CHECK(parts[1](1, 2, 0) == x(1, 2, 3));
    CHECK(parts[2](0, 1, 0) == x(0, 1, 6));
    CHECK(test::max_abs_diff(attn::cat(parts, 2), x) == 0.0);
    CHECK_THROWS_AS(attn::split(x, 0, 0), std::invalid_argument);
    CHECK_THROWS_AS(attn::split(x, 2, 3), std::invalid_argument);
}

// ============================================================================ equivalences

namespace {
struct Sizes {
    std::size_t B, T, d_in, head_dim, num_heads, context_length;
    bool qkv_bias;
};
const Sizes random_sizes[] = {
    {1, 1, 1, 1, 1, 1, false}, {2, 6, 3, 2, 2, 6, false}, {3, 5, 4, 3, 4, 8, true},
    {4, 7, 8, 4, 2, 7, false}, {2, 9, 5, 1, 6, 12, true}, {5, 3, 16, 8, 3, 4, false},
    {1, 16, 12, 4, 3, 16, true}, {3, 11, 7, 5, 5, 11, false},
};
}  // namespace

TEST_CASE("layouts (a) and (b): the wrapper equals MultiHeadAttention with stacked weights") {
    for (const auto& s : random_sizes) {
        INFO("B=" << s.B << " T=" << s.T << " d_in=" << s.d_in << " head_dim=" << s.head_dim
                  << " num_heads=" << s.num_heads << " qkv_bias=" << s.qkv_bias);
        attn::Generator gen(1000 + s.B * 31 + s.T);
        const attn::MultiHeadAttentionWrapper wrapper({.d_in = s.d_in, .d_out = s.head_dim, .context_length = s.context_length, .dropout = 0.0, .num_heads = s.num_heads, .qkv_bias = s.qkv_bias, .backend = attn::nn::BernoulliBackend::portable}, gen);
        const attn::MultiHeadAttention mha = attn::stack_heads(wrapper);
        CHECK(mha.num_heads == s.num_heads);
        CHECK(mha.head_dim == s.head_dim);
        CHECK_FALSE(mha.out_proj.bias.has_value());
        // Head h's W_query is rows h*head_dim .. of the stacked weight.
        const std::size_t h = s.num_heads - 1;
        CHECK(test::max_abs_diff(attn::slice(mha.W_query.weight, 0, long(h * s.head_dim), long((h + 1) * s.head_dim)),
                           wrapper.heads[h].W_query.weight) == 0.0);
        const attn::Tensor x = signed_rand({s.B, s.T, s.d_in}, gen);
        const attn::Tensor a = wrapper(x, gen);
        const attn::Tensor b = mha(x, gen);
        CHECK(attn::shape_of(a) == attn::Shape{s.B, s.T, s.num_heads * s.head_dim});
        CHECK(test::max_abs_diff(a, b) <= 1e-6);
        CHECK(attn::allclose(a, b, 0.0, 1e-6));
        if (s.num_heads > 1) {
            // Not vacuous: with two heads' weights swapped the result changes.
            attn::MultiHeadAttentionWrapper swapped = wrapper;
            std::swap(swapped.heads[0], swapped.heads[1]);
            CHECK(test::max_abs_diff(attn::stack_heads(swapped)(x, gen), a) > 1e-3);
        }
    }
}

TEST_CASE("layouts (c) and (b): GPT2Attention equals MultiHeadAttention with c_attn split") {
    for (const auto& s : random_sizes) {
        const std::size_t S = s.head_dim * s.num_heads;
        INFO("B=" << s.B << " T=" << s.T << " S=" << S << " H=" << s.num_heads << " bias=" << s.qkv_bias);
        attn::GPT2Config cfg;
        cfg.block_size = s.context_length;
        cfg.n_embd = S;
        cfg.n_head = s.num_heads;
        cfg.bias = s.qkv_bias;
        attn::Generator gen(2000 + s.B * 17 + s.T);
        attn::GPT2Attention layer(cfg, attn::nn::BernoulliBackend::portable, gen);
        layer.eval();
        const attn::MultiHeadAttention mha = attn::split_c_attn(layer);
        CHECK(test::max_abs_diff(mha.W_key.weight, attn::slice(layer.c_attn.weight, 0, long(S), long(2 * S))) == 0.0);
        CHECK(mha.out_proj.bias.has_value() == s.qkv_bias);
        const attn::Tensor x = signed_rand({s.B, s.T, S}, gen);
        const attn::Tensor c = layer(x, gen);
        const attn::Tensor b = mha(x, gen);
        CHECK(attn::shape_of(c) == attn::shape_of(x));
        CHECK(test::max_abs_diff(c, b) <= 1e-6);
        CHECK(attn::allclose(c, b, 0.0, 1e-6));
        if (S > 1) {
            // Not vacuous: mixing up q and k changes the result.
            const attn::MultiHeadAttention wrong(mha.W_key, mha.W_query, mha.W_value, mha.out_proj,
                                                 s.context_length, s.num_heads, 0.0);
            if (s.T > 1) CHECK(test::max_abs_diff(wrong(x, gen), c) > 1e-6);
        }
    }
}

TEST_CASE("layouts agree in notebook 003's sizes and the book's") {
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWrapper wrapper({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
    CHECK(attn::allclose(wrapper(test::book_batch()), attn::stack_heads(wrapper)(test::book_batch()), 0.0, 1e-6));
    attn::GPT2Config cfg;
    cfg.block_size = 5;
    cfg.n_embd = 12;
    cfg.n_head = 3;
    attn::GPT2Attention layer(cfg);
    layer.eval();
    const attn::Tensor x = signed_rand({16, 5, 12}, attn::default_generator());
    CHECK(attn::allclose(layer(x), attn::split_c_attn(layer)(x), 0.0, 1e-6));
}

TEST_CASE("Raschka's exercise 3.2 solution: our shape is its shape, its values no causal average can give") {
    // rch03x-Ex32 is marked unreproducible; this test shows why, from its printed numbers.
    const auto printed = test::printed_numbers("rch03x-Ex32");
    REQUIRE(printed.size() == 2 * 6 * 2 + 3);  // 24 values, then torch.Size([2, 6, 2])
    const attn::Tensor inputs = textbook::inputs();
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWrapper mha({.d_in = 3, .d_out = 1, .context_length = 6, .num_heads = 2});
    const attn::Tensor ours = mha(attn::stack({inputs, inputs}, 0));
    CHECK(attn::repr(attn::shape_of(ours)) == "torch.Size([2, 6, 2])");
    CHECK(test::book_text("rch03x-Ex32").find("context_vecs.shape: torch.Size([2, 6, 2])") != std::string::npos);
    // Any Linear(3, 1) of PyTorch's init has |w_i| <= 1/sqrt(3); a value x . w is then at most
    // sum |x_i| / sqrt(3) in size, and a causal average of values no larger than the largest.
    double bound = 0.0;
    for (std::size_t t = 0; t < 6; ++t) {
        double row = 0.0;
        for (std::size_t i = 0; i < 3; ++i) row += std::fabs(static_cast<double>(inputs(t, i)));
        bound = std::max(bound, row / std::sqrt(3.0));
    }
    double largest_printed = 0.0;
    for (std::size_t i = 0; i < 24; ++i) largest_printed = std::max(largest_printed, std::fabs(printed[i].value));
    CHECK(bound < 1.21);
    CHECK(largest_printed > bound);  // -1.4744: not an average of such values
    // Ours: each head's rows lie between the head's smallest and largest value.
    for (std::size_t h = 0; h < 2; ++h) {
        const attn::Tensor v = mha.heads[h].W_value(inputs);  // [6, 1]
        for (std::size_t t = 0; t < 6; ++t) {
            float lo = v(0, 0), hi = v(0, 0);
            for (std::size_t s = 1; s <= t; ++s) lo = std::min(lo, v(s, 0)), hi = std::max(hi, v(s, 0));
            CHECK(ours(0, t, h) >= lo - 1e-6f);
            CHECK(ours(0, t, h) <= hi + 1e-6f);
            CHECK(std::fabs(ours(0, t, h)) <= bound);
        }
    }
}

}  // namespace test_multihead
