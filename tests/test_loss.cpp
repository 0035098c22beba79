// Tests for chapter 10 (notebook 001): nn::Embedding (lib/attn/nn/embedding.cpp), log_softmax and
// cross_entropy (lib/attn/nn/loss.cpp), the precision-2 printer on 001's shapes, and 001's
// run under a fixed seed. The relations between 001's printed blocks are in
// test_loss_relations.cpp.
//
// Expected values come from
// - the oracle: Debian's python3-torch 1.13.1, recorded by tools/oracle/ch10_print_cases.py
//   under data/oracle/ch10/ (print strings at precision 2 / linewidth 200, notebook 001 run
//   after torch.manual_seed(123), F.cross_entropy on crafted inputs);
// - independent computations written here in double precision (log-sum-exp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "loss_pipeline.hpp"
#include "oracle.hpp"
#include "support.hpp"
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "textbook/book.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "attn/core/ulp.hpp"

namespace test_loss {  // every test file is a namespace of its own (tests/meson.build)

using json = nlohmann::json;
using test::Pipeline;
using test::reference_cross_entropy;
using test::seeded_pipeline;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

// Remakes a case recorded as a recipe: (rand(shape) - 0.5) * scale after manual_seed(seed),
// then single elements set; checks the sum of the bit patterns PyTorch's values had.
attn::Tensor recipe_case(const json& c) {
    const json& r = c["recipe"];
    attn::Generator gen(r["seed"].get<std::uint64_t>());
    attn::Tensor t = attn::rand(r["shape"].get<attn::Shape>(), gen);
    const float scale = std::bit_cast<float>(r["scale_bits"].get<std::uint32_t>());
    for (auto& x : t) x = (x - 0.5f) * scale;
    for (const auto& s : r["set"]) {
        const std::string v = s[1].get<std::string>();
        t.data()[s[0].get<std::size_t>()] =
            v == "-inf" ? -inf : v == "inf" ? inf : v == "nan" ? std::nanf("") : std::stof(v);
    }
    std::uint64_t sum = 0;
    for (const float x : t) sum += std::bit_cast<std::uint32_t>(x);
    REQUIRE(sum == c["bits_sum"].get<std::uint64_t>());
    return t;
}

}  // namespace

// ============================================================================ nn::Embedding

TEST_CASE("Embedding(100, 768) after manual_seed(123) holds PyTorch's normal_ table") {
    const json& o = test::oracle_file("ch10/pipeline.json");
    REQUIRE(o["seed"].get<int>() == 123);
    attn::Generator gen(123);
    const attn::nn::Embedding emb(100, 768, gen);
    REQUIRE(attn::shape_of(emb.weight) == attn::Shape{100, 768});
    const json& w = o["embedding_weight"];
    // The vectorised normal_ of PyTorch's AVX2 build may differ in the last bit or two.
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < 32; ++i) {
        worst = std::max(worst, attn::ulp_distance(emb.weight.data()[i],
                                                         std::bit_cast<float>(w["first_32_bits"][i].get<std::uint32_t>())));
        worst = std::max(worst, attn::ulp_distance(emb.weight.data()[emb.weight.size() - 32 + i],
                                                         std::bit_cast<float>(w["last_32_bits"][i].get<std::uint32_t>())));
    }
    CHECK(worst <= 4);
    double sum = 0.0, sum_abs = 0.0;
    for (const float x : emb.weight) {
        sum += x;
        sum_abs += std::abs(x);
    }
    CHECK(sum == Approx(w["sum_float64"].get<double>()).margin(1e-3));
    CHECK(sum_abs == Approx(w["sum_abs_float64"].get<double>()).epsilon(1e-9));
    // the layers drawn after it start where PyTorch's did: same generator position
    const attn::nn::Linear clf(768, 100, true, gen);
    const attn::Tensor clf_bias_tail = test::oracle_bits_tensor({4}, o["linear_bias_last_bits"]["clf"]);
    for (std::size_t i = 0; i < 4; ++i) CHECK((*clf.bias)(96 + i) == clf_bias_tail(i));
}

TEST_CASE("Embedding gathers rows: ids of any shape -> [..., embedding_dim]") {
    attn::Generator gen(7);
    const attn::nn::Embedding emb(10, 3, gen);
    const attn::LongTensor ids = {{4, 0, 9}, {4, 4, 1}};
    const attn::Tensor out = emb(ids);
    REQUIRE(attn::shape_of(out) == attn::Shape{2, 3, 3});
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j)
            for (std::size_t c = 0; c < 3; ++c)
                CHECK(out(i, j, c) == emb.weight(static_cast<std::size_t>(ids(i, j)), c));
    const attn::LongTensor scalar_id = attn::LongTensor(std::int64_t{2});
    CHECK(attn::shape_of(emb(scalar_id)) == attn::Shape{3});
    // a table of fewer than 16 values takes normal_'s scalar path: same as normal_ itself
    attn::Generator g1(11), g2(11);
    const attn::nn::Embedding small(3, 5, g1);
    attn::Tensor expected = xt::empty<float>(attn::Shape{3, 5});
    attn::normal_(expected, 0.0, 1.0, g2);
    CHECK((small.weight == expected));
}

TEST_CASE("Embedding refuses ids outside [0, num_embeddings); empty tables as PyTorch") {
    attn::Generator gen(7);
    const attn::nn::Embedding emb(10, 3, gen);
    CHECK_THROWS_AS(emb(attn::LongTensor{10}), std::invalid_argument);
    CHECK_THROWS_AS(emb(attn::LongTensor{0, -1}), std::invalid_argument);
    CHECK_THROWS_WITH(emb(attn::LongTensor{3, 12}), Catch::Contains("12") && Catch::Contains("[0, 10)"));
    // PyTorch builds nn.Embedding(0, 3) and nn.Embedding(3, 0); the first accepts no id.
    CHECK_THROWS_AS(attn::nn::Embedding(0, 3, gen)(attn::LongTensor{0}), std::invalid_argument);
    CHECK(attn::shape_of(attn::nn::Embedding(3, 0, gen)(attn::LongTensor{2})) == attn::Shape{1, 0});
}

TEST_CASE("repr of a Linear layer is PyTorch's module repr (001 In [18])") {
    attn::Generator gen(1);
    CHECK(attn::nn::repr(attn::nn::Linear(768, 100, true, gen)) ==
          "Linear(in_features=768, out_features=100, bias=True)");
    CHECK(attn::nn::repr(attn::nn::Linear(12, 36, false, gen)) ==
          "Linear(in_features=12, out_features=36, bias=False)");
    attn::set_printoptions(2, 200);
    CHECK(attn::repr_tuple({attn::repr(attn::Shape{5, 768}),
                            attn::nn::repr(attn::nn::Linear(768, 100, true, gen))}) ==
          test::book_text("001-In18"));
    attn::set_printoptions(4, 80);
}

// ============================================================================ log_softmax, cross_entropy

TEST_CASE("cross_entropy and log_softmax match PyTorch on crafted inputs") {
    const json& o = test::oracle_file("ch10/cross_entropy.json");
    REQUIRE(o["cases"].size() >= 10);
    attn::set_printoptions(2, 200);
    for (const auto& c : o["cases"]) {
        const std::string name = c["name"];
        INFO("case " << name);
        const attn::Tensor logits = test::oracle_bits_tensor(c["logits"]);
        attn::LongTensor targets = xt::empty<std::int64_t>(attn::Shape{c["targets"].size()});
        for (std::size_t i = 0; i < targets.size(); ++i) targets(i) = c["targets"][i].get<std::int64_t>();
        const std::int64_t ignore_index = c["ignore_index"];

        const attn::Tensor logp = attn::log_softmax(logits, -1);
        const attn::Tensor logp_torch = test::oracle_bits_tensor(c["log_softmax"]);
        REQUIRE(attn::shape_of(logp) == attn::shape_of(logp_torch));
        for (std::size_t i = 0; i < logp.size(); ++i) {
            const float a = logp.data()[i], b = logp_torch.data()[i];
            INFO("log_softmax element " << i << ": " << a << " vs torch " << b);
            // exp/log and the order of the sum differ from PyTorch's vectorised kernel in
            // the last bits; -inf and NaN must agree exactly.
            if (!std::isfinite(b)) CHECK(attn::ulp_distance(a, b) == 0);
            else CHECK(std::abs(a - b) <= 2e-6 * std::max(1.0f, std::abs(b)));
        }

        const attn::Tensor loss = attn::cross_entropy(logits, targets, ignore_index);
        REQUIRE(attn::shape_of(loss).empty());
        const float ours = loss(), torch_loss = std::bit_cast<float>(c["loss_bits"][0].get<std::uint32_t>());
        INFO("loss " << ours << " vs torch " << torch_loss);
        if (std::isnan(torch_loss)) CHECK(std::isnan(ours));
        else CHECK(std::abs(ours - torch_loss) <= 2e-6 * std::max(1.0f, std::abs(torch_loss)));
        CHECK(attn::repr(loss) == c["torch"].get<std::string>());
    }
    attn::set_printoptions(4, 80);
}

TEST_CASE("cross_entropy equals an independent log-sum-exp computation") {
    attn::Generator gen(5);
    for (const std::size_t N : {1u, 5u, 17u, 40u}) {
        for (const std::size_t C : {2u, 7u, 100u}) {
            attn::Tensor logits = attn::rand({N, C}, gen);
            logits = (logits - 0.5f) * 6.0f;
            const attn::LongTensor targets = attn::randint(0, static_cast<std::int64_t>(C), {N}, gen);
            const double expected = reference_cross_entropy(logits, targets, -100);
            INFO("N=" << N << " C=" << C);
            CHECK(attn::cross_entropy(logits, targets)() == Approx(expected).epsilon(1e-5));
            // log_softmax rows: exp sums to 1, and equal to logits - logsumexp
            const attn::Tensor logp = attn::log_softmax(logits);
            for (std::size_t i = 0; i < N; ++i) {
                double s = 0.0;
                for (std::size_t j = 0; j < C; ++j) s += std::exp(static_cast<double>(logp(i, j)));
                CHECK(s == Approx(1.0).epsilon(1e-5));
            }
        }
    }
    // large logits: log_softmax never forms exp(1000)
    const attn::Tensor big = attn::tensor({{1000.0f, 0.0f, -1000.0f}});
    CHECK(attn::cross_entropy(big, attn::LongTensor{0})() == 0.0f);
    CHECK(attn::cross_entropy(big, attn::LongTensor{1})() == 1000.0f);
    CHECK(attn::log_softmax(attn::tensor({{0.0f, -inf}}))(0, 1) == -inf);
    CHECK(std::isnan(attn::log_softmax(attn::tensor({{-inf, -inf}}))(0, 0)));
}

TEST_CASE("ignore_index drops a position from both the sum and the count") {
    const Pipeline& p = seeded_pipeline();
    const attn::Tensor logp = attn::log_softmax(p.logits);
    // per-position losses in double from the log-probabilities
    std::vector<double> l;
    for (std::size_t i = 0; i < 5; ++i) l.push_back(-static_cast<double>(logp(i, i)));
    const attn::LongTensor targets = attn::arange(5);
    attn::LongTensor pad = targets;
    pad(4) = -1;
    const float all = attn::cross_entropy(p.logits, targets, -1)();
    const float four = attn::cross_entropy(p.logits, pad, -1)();
    CHECK(four == Approx((l[0] + l[1] + l[2] + l[3]) / 4.0).epsilon(1e-6));
    CHECK(all == Approx((l[0] + l[1] + l[2] + l[3] + l[4]) / 5.0).epsilon(1e-6));
    // the mean over five = (4 * mean over four + the fifth) / 5: the ignored one is not a 0
    CHECK(all == Approx((4.0 * four + l[4]) / 5.0).epsilon(1e-6));
    CHECK(four != Approx(4.0 * four / 5.0).epsilon(1e-3));
    // ignoring with the default -100 works the same way
    attn::LongTensor pad100 = targets;
    pad100(4) = -100;
    CHECK(attn::cross_entropy(p.logits, pad100)() == four);
    // an ignore_index inside [0, C) ignores that class
    CHECK(attn::cross_entropy(p.logits, targets, /*ignore_index=*/0)() ==
          Approx((l[1] + l[2] + l[3] + l[4]) / 4.0).epsilon(1e-6));
    // with ignore_index=-1, the default padding value -100 is NOT ignored: an error
    CHECK_THROWS_AS(attn::cross_entropy(p.logits, pad100, -1), std::invalid_argument);
}

TEST_CASE("cross_entropy is NaN when every target is ignored, as PyTorch") {
    const attn::Tensor logits = attn::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
    CHECK(std::isnan(attn::cross_entropy(logits, attn::LongTensor{-1, -1}, -1)()));
    CHECK(std::isnan(attn::cross_entropy(logits, attn::LongTensor{-100, -100})()));
    const attn::Tensor none = xt::empty<float>(attn::Shape{0, 3});
    CHECK(std::isnan(attn::cross_entropy(none, attn::LongTensor(xt::empty<std::int64_t>(attn::Shape{0})))()));
    const json& o = test::oracle_file("ch10/pipeline.json");
    attn::set_printoptions(2, 200);
    CHECK(attn::repr(attn::cross_entropy(logits, attn::LongTensor{-1, -1}, -1)) ==
          o["steps"]["loss_none"]["torch"].get<std::string>());
    attn::set_printoptions(4, 80);
}

TEST_CASE("cross_entropy error cases: targets out of range, shapes that do not fit") {
    const attn::Tensor logits = attn::tensor({{1.0f, 2.0f, 3.0f}, {3.0f, 4.0f, 5.0f}});
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{0, 3}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{-2, 0}, -1), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{-1, 0}), std::invalid_argument);
    CHECK_THROWS_WITH(attn::cross_entropy(logits, attn::LongTensor{0, 3}, -1),
                      Catch::Contains("target 3") && Catch::Contains("[0, 3)"));
    CHECK_NOTHROW(attn::cross_entropy(logits, attn::LongTensor{0, -1}, -1));
    // shapes
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{0}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{0, 1, 2}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{{0, 1}}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(attn::tensor({1.0f, 2.0f}), attn::LongTensor{0}),
                    std::invalid_argument);
    CHECK_THROWS_WITH(attn::cross_entropy(logits, attn::LongTensor{0, 1, 2}),
                      Catch::Contains("[2]") && Catch::Contains("[3]"));
    CHECK_THROWS_AS(attn::log_softmax(attn::scalar_tensor(1.0f)), std::invalid_argument);
    CHECK(attn::shape_of(attn::log_softmax(logits, 0)) == attn::shape_of(logits));  // its bits: test_edges.cpp
    CHECK_THROWS_AS(attn::log_softmax(logits, 2), std::invalid_argument);
}

// ============================================================================ the printer at precision 2

TEST_CASE("precision-2 / linewidth-200 printing matches PyTorch (oracle strings)") {
    const json& o = test::oracle_file("ch10/print_cases.json");
    REQUIRE(o["cases"].size() >= 20);
    attn::set_printoptions(2, 200);
    std::size_t checked = 0;
    for (const auto& c : o["cases"]) {
        const std::string name = c["name"], dtype = c["dtype"];
        INFO("case " << name << ": " << c["python"].get<std::string>());
        std::string ours;
        if (dtype == "float32") ours = attn::repr(c.contains("recipe") ? recipe_case(c) : test::oracle_bits_tensor(c));
        else if (dtype == "int64") ours = attn::repr(test::oracle_long_tensor(c));
        else ours = attn::repr(test::oracle_bool_tensor(c));
        CHECK(ours == c["torch"].get<std::string>());
        ++checked;
    }
    attn::set_printoptions(4, 80);
    CHECK(checked == o["cases"].size());
}

// ============================================================================ 001 under a fixed seed

TEST_CASE("notebook 001 after manual_seed(123) reproduces PyTorch's run (oracle)") {
    const json& o = test::oracle_file("ch10/pipeline.json");
    const json& s = o["steps"];
    const Pipeline& p = seeded_pipeline();
    attn::set_printoptions(2, 200);

    CHECK((p.tokens == test::oracle_long_tensor(s["tokens"])));
    CHECK(attn::repr(p.tokens) == s["tokens"]["torch"].get<std::string>());

    // the embedded rows: few-ulp agreement (vectorised normal_)
    for (std::size_t i = 0; i < 5; ++i) {
        std::int64_t worst = 0;
        for (std::size_t j = 0; j < 8; ++j) {
            worst = std::max(worst, attn::ulp_distance(
                                        p.x(i, j), std::bit_cast<float>(s["x"]["row_heads_bits"][i][j].get<std::uint32_t>())));
            worst = std::max(worst, attn::ulp_distance(
                                        p.x(i, 760 + j), std::bit_cast<float>(s["x"]["row_tails_bits"][i][j].get<std::uint32_t>())));
        }
        CHECK(worst <= 4);
        double row_sum = 0.0;
        for (std::size_t j = 0; j < 768; ++j) row_sum += p.x(i, j);
        CHECK(row_sum == Approx(s["x"]["row_sums_float64"][i].get<double>()).margin(1e-4));
    }

    // numbers: float32 sums in another order (BLAS, vectorised exp) differ in the last bits
    CHECK(test::max_abs_diff(p.raw_att, test::oracle_bits_tensor(s["raw_att"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.tril_att, test::oracle_bits_tensor(s["tril_att"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.masked_att, test::oracle_bits_tensor(s["masked_att"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.weights, test::oracle_bits_tensor(s["weights"])) <= 1e-6);
    CHECK(test::max_abs_diff(p.new_v, test::oracle_bits_tensor(s["new_v"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.logits, test::oracle_bits_tensor(s["logits"])) <= 1e-5);
    CHECK((attn::argmax(p.logits, -1) == test::oracle_long_tensor(s["argmax"])));

    // printed strings, as the chapter prints them
    CHECK(attn::repr(p.raw_att) == s["raw_att"]["torch"].get<std::string>());
    CHECK(attn::repr(p.tril_att) == s["tril_att"]["torch"].get<std::string>());
    CHECK(attn::repr(p.masked_att) == s["masked_att"]["torch"].get<std::string>());
    CHECK(attn::repr(p.weights) == s["weights"]["torch"].get<std::string>());
    CHECK(attn::repr(p.new_v) == s["new_v"]["torch"].get<std::string>());
    CHECK(attn::repr(attn::argmax(p.logits, -1)) == s["argmax"]["torch"].get<std::string>());

    const attn::BoolTensor future = attn::eq(attn::triu(attn::ones({5, 5}), 1), 1.0f);
    const attn::Tensor weights_bool = attn::softmax(attn::masked_fill(p.raw_att, future, -inf), -1);
    CHECK(attn::repr(weights_bool) == s["weights_bool"]["torch"].get<std::string>());

    const attn::LongTensor targets = attn::arange(5);
    CHECK((targets == test::oracle_long_tensor(s["targets"])));
    CHECK(attn::repr(targets) == s["targets"]["torch"].get<std::string>());
    const attn::Tensor loss = attn::cross_entropy(p.logits, targets, -1);
    CHECK(loss() == Approx(std::bit_cast<float>(s["loss"]["bits"][0].get<std::uint32_t>())).epsilon(2e-6));
    CHECK(attn::repr(loss) == s["loss"]["torch"].get<std::string>());
    const attn::LongTensor pad = test::oracle_long_tensor(s["targets_pad"]);
    CHECK(attn::repr(pad) == s["targets_pad"]["torch"].get<std::string>());
    const attn::Tensor loss_pad = attn::cross_entropy(p.logits, pad, -1);
    CHECK(loss_pad() == Approx(std::bit_cast<float>(s["loss_pad"]["bits"][0].get<std::uint32_t>())).epsilon(2e-6));
    CHECK(attn::repr(loss_pad) == s["loss_pad"]["torch"].get<std::string>());
    const attn::LongTensor none = test::oracle_long_tensor(s["targets_none"]);
    CHECK(attn::repr(attn::cross_entropy(p.logits, none, -1)) == s["loss_none"]["torch"].get<std::string>());
    // PyTorch raises IndexError("Target 100 is out of bounds."); the library throws instead
    CHECK(o["error_target_out_of_range"].get<std::string>() == "IndexError: Target 100 is out of bounds.");
    attn::LongTensor bad = targets;
    bad(4) = 100;
    CHECK_THROWS_AS(attn::cross_entropy(p.logits, bad, -1), std::invalid_argument);
    attn::set_printoptions(4, 80);
}

TEST_CASE("001's fragile step: masking where tril(scores) == 0 also masks a genuine 0 score") {
    const json& o = test::oracle_file("ch10/print_cases.json");
    auto oracle = [&](const std::string& name) -> const json& {
        for (const auto& c : o["cases"])
            if (c["name"] == name) return c;
        throw std::runtime_error("no oracle case " + name);
    };
    const attn::Tensor queries = test::oracle_bits_tensor(oracle("fragile_queries"));
    const attn::Tensor keys = test::oracle_bits_tensor(oracle("fragile_keys"));
    const attn::Tensor values = test::oracle_bits_tensor(oracle("fragile_values"));
    const attn::Tensor scores = attn::matmul(queries, attn::T(keys)) / 2.0f;
    REQUIRE(scores(2, 1) == 0.0f);  // a genuine score of exactly 0 below the diagonal
    const attn::Tensor tril_scores = attn::tril(scores);
    const attn::Tensor masked_eq0 = attn::masked_fill(tril_scores, attn::eq(tril_scores, 0.0f), -inf);
    const attn::BoolTensor future = attn::eq(attn::triu(attn::ones({4, 4}), 1), 1.0f);
    const attn::Tensor masked_bool = attn::masked_fill(scores, future, -inf);
    const attn::Tensor w_eq0 = attn::softmax(masked_eq0, -1), w_bool = attn::softmax(masked_bool, -1);

    CHECK(masked_eq0(2, 1) == -inf);   // the genuine 0 is masked: wrong
    CHECK(masked_bool(2, 1) == 0.0f);  // kept
    CHECK(w_eq0(2, 1) == 0.0f);
    CHECK(w_bool(2, 1) > 0.2f);
    // rows without a genuine 0 agree; row 2 does not
    for (std::size_t i : {0u, 1u, 3u})
        for (std::size_t j = 0; j < 4; ++j) CHECK(w_eq0(i, j) == w_bool(i, j));
    CHECK_FALSE(attn::allclose(w_eq0, w_bool, 1e-5, 1e-5));
    // scaled_dot_product_attention, with either mask, agrees with the boolean mask only
    const attn::Tensor sdpa = attn::scaled_dot_product_attention(queries, keys, values, {.is_causal = true});
    CHECK(attn::allclose(sdpa, attn::matmul(w_bool, values), 1e-5, 1e-5));
    CHECK_FALSE(attn::allclose(sdpa, attn::matmul(w_eq0, values), 1e-5, 1e-5));

    attn::set_printoptions(2, 200);
    CHECK(attn::repr(scores) == oracle("fragile_scores")["torch"].get<std::string>());
    CHECK(attn::repr(tril_scores) == oracle("fragile_tril")["torch"].get<std::string>());
    CHECK(attn::repr(masked_eq0) == oracle("fragile_masked_eq0")["torch"].get<std::string>());
    CHECK(attn::repr(w_eq0) == oracle("fragile_weights_eq0")["torch"].get<std::string>());
    CHECK(attn::repr(masked_bool) == oracle("fragile_masked_bool")["torch"].get<std::string>());
    CHECK(attn::repr(w_bool) == oracle("fragile_weights_bool")["torch"].get<std::string>());
    CHECK(attn::repr(attn::matmul(w_eq0, values)) == oracle("fragile_context_eq0")["torch"].get<std::string>());
    CHECK(attn::repr(attn::matmul(w_bool, values)) == oracle("fragile_context_bool")["torch"].get<std::string>());
    attn::set_printoptions(4, 80);
}

}  // namespace test_loss
