// Tests for chapter 10 (notebook 001): nn::Embedding (lib/attn/nn/embedding.cpp), log_softmax and
// cross_entropy (lib/attn/nn/loss.cpp), the precision-2 printer on 001's shapes, and the
// relations between notebook 001's printed blocks.
//
// Expected values come from
// - the book: notebook 001's printed blocks (data/book/001/), whose values are unseeded and
//   so are checked through relations (TEST_CASE names "relation:<name>", as in the manifest);
// - the oracle: Debian's python3-torch 1.13.1, recorded by tools/oracle/ch10_print_cases.py
//   under data/oracle/ch10/ (print strings at precision 2 / linewidth 200, notebook 001 run
//   after torch.manual_seed(123), F.cross_entropy on crafted inputs);
// - independent computations written here in double precision (log-sum-exp).
#include <algorithm>
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

#include <doctest/doctest.h>

#include "support.hpp"
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "textbook/book.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"

namespace test_loss {  // every test file is a namespace of its own (tests/meson.build)

using json = nlohmann::json;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

json load_oracle(const std::string& name) {
    const auto path = textbook::data_dir() / "oracle" / "ch10" / name;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    return json::parse(in);
}

attn::Shape shape_from(const json& j) {
    attn::Shape s;
    for (const auto& v : j) s.push_back(v.get<std::size_t>());
    return s;
}

float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

std::uint32_t to_bits(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

attn::Tensor float_from(const attn::Shape& shape, const json& bits) {
    attn::Tensor t = xt::empty<float>(shape);
    REQUIRE(bits.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = from_bits(bits[i].get<std::uint32_t>());
    return t;
}

attn::Tensor float_case(const json& c) { return float_from(shape_from(c["shape"]), c["bits"]); }

attn::LongTensor long_case(const json& c) {
    attn::LongTensor t = xt::empty<std::int64_t>(shape_from(c["shape"]));
    REQUIRE(c["values"].size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = c["values"][i].get<std::int64_t>();
    return t;
}

attn::BoolTensor bool_case(const json& c) {
    attn::BoolTensor t = xt::empty<bool>(shape_from(c["shape"]));
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = c["values"][i].get<int>() != 0;
    return t;
}

// Remakes a case recorded as a recipe: (rand(shape) - 0.5) * scale after manual_seed(seed),
// then single elements set; checks the sum of the bit patterns PyTorch's values had.
attn::Tensor recipe_case(const json& c) {
    const json& r = c["recipe"];
    attn::Generator gen(r["seed"].get<std::uint64_t>());
    attn::Tensor t = attn::rand(shape_from(r["shape"]), gen);
    const float scale = from_bits(r["scale_bits"].get<std::uint32_t>());
    for (auto& x : t) x = (x - 0.5f) * scale;
    for (const auto& s : r["set"]) {
        const std::string v = s[1].get<std::string>();
        t.data()[s[0].get<std::size_t>()] =
            v == "-inf" ? -inf : v == "inf" ? inf : v == "nan" ? std::nanf("") : std::stof(v);
    }
    std::uint64_t sum = 0;
    for (const float x : t) sum += to_bits(x);
    REQUIRE(sum == c["bits_sum"].get<std::uint64_t>());
    return t;
}

// The numbers a book block printed, in order (tensor values, then torch.Size entries).
std::vector<double> printed_values(const std::string& id) {
    std::vector<double> out;
    for (const auto& n : textbook::numbers_in(test::book_text(id))) out.push_back(n.value);
    return out;
}

// The first rows * cols printed numbers of a block as a [rows, cols] tensor.
attn::Tensor printed_matrix(const std::string& id, std::size_t rows, std::size_t cols) {
    return textbook::printed_matrix(test::the_book().at(id), rows, cols);
}

// Independent reference for the mean cross-entropy: log-sum-exp in double, per row.
double reference_cross_entropy(const attn::Tensor& logits, const attn::LongTensor& targets,
                               std::int64_t ignore_index) {
    const std::size_t N = logits.shape()[0], C = logits.shape()[1];
    double total = 0.0;
    std::size_t count = 0;
    for (std::size_t i = 0; i < N; ++i) {
        if (targets(i) == ignore_index) continue;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < C; ++j) mx = std::max(mx, static_cast<double>(logits(i, j)));
        double s = 0.0;
        for (std::size_t j = 0; j < C; ++j) s += std::exp(static_cast<double>(logits(i, j)) - mx);
        total += mx + std::log(s) - static_cast<double>(logits(i, static_cast<std::size_t>(targets(i))));
        ++count;
    }
    return total / static_cast<double>(count);  // 0 / 0 = NaN when all are ignored
}

// Notebook 001 after manual_seed(seed), up to the logits.
struct Pipeline {
    attn::LongTensor tokens;
    attn::Tensor x, q, k, v, raw_att, tril_att, masked_att, weights, new_v, logits;
    attn::nn::Linear clf;
    explicit Pipeline(attn::nn::Linear head) : clf(std::move(head)) {}
};

Pipeline run_001(std::uint64_t seed, std::size_t V = 100, std::size_t d = 768, std::size_t T = 5) {
    attn::Generator gen(seed);
    const attn::nn::Embedding emb(V, d, gen);
    Pipeline p(attn::nn::Linear(d, V, true, gen));
    const attn::nn::Linear q_proj(d, d, true, gen), k_proj(d, d, true, gen), v_proj(d, d, true, gen);
    p.tokens = attn::randint(static_cast<std::int64_t>(V), {T}, gen);
    p.x = emb(p.tokens);
    p.q = q_proj(p.x);
    p.k = k_proj(p.x);
    p.v = v_proj(p.x);
    p.raw_att = attn::matmul(p.q, attn::T(p.k)) / std::sqrt(static_cast<float>(d));
    p.tril_att = attn::tril(p.raw_att);
    p.masked_att = attn::masked_fill(p.tril_att, attn::eq(p.tril_att, 0.0f), -inf);
    p.weights = attn::softmax(p.masked_att, -1);
    p.new_v = attn::matmul(p.weights, p.v);
    p.logits = p.clf(p.new_v);
    return p;
}

const Pipeline& seeded_pipeline() {
    static const Pipeline p = run_001(123);
    return p;
}

}  // namespace

// ============================================================================ nn::Embedding

TEST_CASE("Embedding(100, 768) after manual_seed(123) holds PyTorch's normal_ table") {
    const json o = load_oracle("pipeline.json");
    REQUIRE(o["seed"].get<int>() == 123);
    attn::Generator gen(123);
    const attn::nn::Embedding emb(100, 768, gen);
    REQUIRE(attn::shape_of(emb.weight) == attn::Shape{100, 768});
    const json& w = o["embedding_weight"];
    // The vectorised normal_ of PyTorch's AVX2 build may differ in the last bit or two.
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < 32; ++i) {
        worst = std::max(worst, attn::ulp_distance(emb.weight.data()[i],
                                                         from_bits(w["first_32_bits"][i].get<std::uint32_t>())));
        worst = std::max(worst, attn::ulp_distance(emb.weight.data()[emb.weight.size() - 32 + i],
                                                         from_bits(w["last_32_bits"][i].get<std::uint32_t>())));
    }
    CHECK(worst <= 4);
    double sum = 0.0, sum_abs = 0.0;
    for (const float x : emb.weight) {
        sum += x;
        sum_abs += std::abs(x);
    }
    CHECK(sum == test::Approx(w["sum_float64"].get<double>()).margin(1e-3));
    CHECK(sum_abs == test::Approx(w["sum_abs_float64"].get<double>()).epsilon(1e-9));
    // the layers drawn after it start where PyTorch's did: same generator position
    const attn::nn::Linear clf(768, 100, true, gen);
    const attn::Tensor clf_bias_tail = float_from({4}, o["linear_bias_last_bits"]["clf"]);
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
    CHECK_THROWS_CONTAINING(emb(attn::LongTensor{3, 12}), "12", "[0, 10)");
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
    const json o = load_oracle("cross_entropy.json");
    REQUIRE(o["cases"].size() >= 10);
    attn::set_printoptions(2, 200);
    for (const auto& c : o["cases"]) {
        const std::string name = c["name"];
        INFO("case " << name);
        const attn::Tensor logits = float_case(c["logits"]);
        attn::LongTensor targets = xt::empty<std::int64_t>(attn::Shape{c["targets"].size()});
        for (std::size_t i = 0; i < targets.size(); ++i) targets(i) = c["targets"][i].get<std::int64_t>();
        const std::int64_t ignore_index = c["ignore_index"];

        const attn::Tensor logp = attn::log_softmax(logits, -1);
        const attn::Tensor logp_torch = float_case(c["log_softmax"]);
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
        const float ours = loss(), torch_loss = from_bits(c["loss_bits"][0].get<std::uint32_t>());
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
            CHECK(attn::cross_entropy(logits, targets)() == test::Approx(expected).epsilon(1e-5));
            // log_softmax rows: exp sums to 1, and equal to logits - logsumexp
            const attn::Tensor logp = attn::log_softmax(logits);
            for (std::size_t i = 0; i < N; ++i) {
                double s = 0.0;
                for (std::size_t j = 0; j < C; ++j) s += std::exp(static_cast<double>(logp(i, j)));
                CHECK(s == test::Approx(1.0).epsilon(1e-5));
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
    CHECK(four == test::Approx((l[0] + l[1] + l[2] + l[3]) / 4.0).epsilon(1e-6));
    CHECK(all == test::Approx((l[0] + l[1] + l[2] + l[3] + l[4]) / 5.0).epsilon(1e-6));
    // the mean over five = (4 * mean over four + the fifth) / 5: the ignored one is not a 0
    CHECK(all == test::Approx((4.0 * four + l[4]) / 5.0).epsilon(1e-6));
    CHECK(four != test::Approx(4.0 * four / 5.0).epsilon(1e-3));
    // ignoring with the default -100 works the same way
    attn::LongTensor pad100 = targets;
    pad100(4) = -100;
    CHECK(attn::cross_entropy(p.logits, pad100)() == four);
    // an ignore_index inside [0, C) ignores that class
    CHECK(attn::cross_entropy(p.logits, targets, /*ignore_index=*/0)() ==
          test::Approx((l[1] + l[2] + l[3] + l[4]) / 4.0).epsilon(1e-6));
    // with ignore_index=-1, the default padding value -100 is NOT ignored: an error
    CHECK_THROWS_AS(attn::cross_entropy(p.logits, pad100, -1), std::invalid_argument);
}

TEST_CASE("cross_entropy is NaN when every target is ignored, as PyTorch") {
    const attn::Tensor logits = attn::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
    CHECK(std::isnan(attn::cross_entropy(logits, attn::LongTensor{-1, -1}, -1)()));
    CHECK(std::isnan(attn::cross_entropy(logits, attn::LongTensor{-100, -100})()));
    const attn::Tensor none = xt::empty<float>(attn::Shape{0, 3});
    CHECK(std::isnan(attn::cross_entropy(none, attn::LongTensor(xt::empty<std::int64_t>(attn::Shape{0})))()));
    const json o = load_oracle("pipeline.json");
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
    CHECK_THROWS_CONTAINING(attn::cross_entropy(logits, attn::LongTensor{0, 3}, -1),
                            "target 3", "[0, 3)");
    CHECK_NOTHROW(attn::cross_entropy(logits, attn::LongTensor{0, -1}, -1));
    // shapes
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{0}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{0, 1, 2}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(logits, attn::LongTensor{{0, 1}}), std::invalid_argument);
    CHECK_THROWS_AS(attn::cross_entropy(attn::tensor({1.0f, 2.0f}), attn::LongTensor{0}),
                    std::invalid_argument);
    CHECK_THROWS_CONTAINING(attn::cross_entropy(logits, attn::LongTensor{0, 1, 2}), "[2]", "[3]");
    CHECK_THROWS_AS(attn::log_softmax(attn::scalar_tensor(1.0f)), std::invalid_argument);
    CHECK_THROWS_AS(attn::log_softmax(logits, 0), std::invalid_argument);
    CHECK_THROWS_AS(attn::log_softmax(logits, 2), std::invalid_argument);
}

// ============================================================================ the printer at precision 2

TEST_CASE("precision-2 / linewidth-200 printing matches PyTorch (oracle strings)") {
    const json o = load_oracle("print_cases.json");
    REQUIRE(o["cases"].size() >= 20);
    attn::set_printoptions(2, 200);
    std::size_t checked = 0;
    for (const auto& c : o["cases"]) {
        const std::string name = c["name"], dtype = c["dtype"];
        INFO("case " << name << ": " << c["python"].get<std::string>());
        std::string ours;
        if (dtype == "float32") ours = attn::repr(c.contains("recipe") ? recipe_case(c) : float_case(c));
        else if (dtype == "int64") ours = attn::repr(long_case(c));
        else ours = attn::repr(bool_case(c));
        CHECK(ours == c["torch"].get<std::string>());
        ++checked;
    }
    attn::set_printoptions(4, 80);
    CHECK(checked == o["cases"].size());
}

// ============================================================================ 001 under a fixed seed

TEST_CASE("notebook 001 after manual_seed(123) reproduces PyTorch's run (oracle)") {
    const json o = load_oracle("pipeline.json");
    const json& s = o["steps"];
    const Pipeline& p = seeded_pipeline();
    attn::set_printoptions(2, 200);

    CHECK((p.tokens == long_case(s["tokens"])));
    CHECK(attn::repr(p.tokens) == s["tokens"]["torch"].get<std::string>());

    // the embedded rows: few-ulp agreement (vectorised normal_)
    for (std::size_t i = 0; i < 5; ++i) {
        std::int64_t worst = 0;
        for (std::size_t j = 0; j < 8; ++j) {
            worst = std::max(worst, attn::ulp_distance(
                                        p.x(i, j), from_bits(s["x"]["row_heads_bits"][i][j].get<std::uint32_t>())));
            worst = std::max(worst, attn::ulp_distance(
                                        p.x(i, 760 + j), from_bits(s["x"]["row_tails_bits"][i][j].get<std::uint32_t>())));
        }
        CHECK(worst <= 4);
        double row_sum = 0.0;
        for (std::size_t j = 0; j < 768; ++j) row_sum += p.x(i, j);
        CHECK(row_sum == test::Approx(s["x"]["row_sums_float64"][i].get<double>()).margin(1e-4));
    }

    // numbers: float32 sums in another order (BLAS, vectorised exp) differ in the last bits
    CHECK(test::max_abs_diff(p.raw_att, float_case(s["raw_att"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.tril_att, float_case(s["tril_att"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.masked_att, float_case(s["masked_att"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.weights, float_case(s["weights"])) <= 1e-6);
    CHECK(test::max_abs_diff(p.new_v, float_case(s["new_v"])) <= 1e-5);
    CHECK(test::max_abs_diff(p.logits, float_case(s["logits"])) <= 1e-5);
    CHECK((attn::argmax(p.logits, -1) == long_case(s["argmax"])));

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
    CHECK((targets == long_case(s["targets"])));
    CHECK(attn::repr(targets) == s["targets"]["torch"].get<std::string>());
    const attn::Tensor loss = attn::cross_entropy(p.logits, targets, -1);
    CHECK(loss() == test::Approx(from_bits(s["loss"]["bits"][0].get<std::uint32_t>())).epsilon(2e-6));
    CHECK(attn::repr(loss) == s["loss"]["torch"].get<std::string>());
    const attn::LongTensor pad = long_case(s["targets_pad"]);
    CHECK(attn::repr(pad) == s["targets_pad"]["torch"].get<std::string>());
    const attn::Tensor loss_pad = attn::cross_entropy(p.logits, pad, -1);
    CHECK(loss_pad() == test::Approx(from_bits(s["loss_pad"]["bits"][0].get<std::uint32_t>())).epsilon(2e-6));
    CHECK(attn::repr(loss_pad) == s["loss_pad"]["torch"].get<std::string>());
    const attn::LongTensor none = long_case(s["targets_none"]);
    CHECK(attn::repr(attn::cross_entropy(p.logits, none, -1)) == s["loss_none"]["torch"].get<std::string>());
    // PyTorch raises IndexError("Target 100 is out of bounds."); the library throws instead
    CHECK(o["error_target_out_of_range"].get<std::string>() == "IndexError: Target 100 is out of bounds.");
    attn::LongTensor bad = targets;
    bad(4) = 100;
    CHECK_THROWS_AS(attn::cross_entropy(p.logits, bad, -1), std::invalid_argument);
    attn::set_printoptions(4, 80);
}

TEST_CASE("001's fragile step: masking where tril(scores) == 0 also masks a genuine 0 score") {
    const json o = load_oracle("print_cases.json");
    auto oracle = [&](const std::string& name) -> const json& {
        for (const auto& c : o["cases"])
            if (c["name"] == name) return c;
        throw std::runtime_error("no oracle case " + name);
    };
    const attn::Tensor queries = float_case(oracle("fragile_queries"));
    const attn::Tensor keys = float_case(oracle("fragile_keys"));
    const attn::Tensor values = float_case(oracle("fragile_values"));
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

// ============================================================================ relations of notebook 001

TEST_CASE("relation:tokens_in_vocab_range") {
    // 001 In [5]: five ids in [0, 100) and torch.Size([5])
    const auto n = printed_values("001-In05");
    REQUIRE(n.size() == 6);
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(n[i] >= 0);
        CHECK(n[i] < 100);
        CHECK(n[i] == std::floor(n[i]));
    }
    CHECK(n[5] == 5);
    // the same printed form from the library: randint(V, (T,)) of any seed, in range
    attn::set_printoptions(2, 200);
    attn::LongTensor book_tokens = {95, 11, 75, 30, 31};
    CHECK(attn::repr_tuple({attn::repr(book_tokens), attn::repr(attn::shape_of(book_tokens))}) ==
          test::book_text("001-In05"));
    attn::set_printoptions(4, 80);
    attn::Generator gen(2024);
    for (int trial = 0; trial < 200; ++trial) {
        const attn::LongTensor t = attn::randint(100, {5}, gen);
        CHECK(attn::shape_of(t) == attn::Shape{5});
        CHECK(xt::amin(t)() >= 0);
        CHECK(xt::amax(t)() < 100);
    }
}

TEST_CASE("relation:input_of_masking_chain") {
    // 001 In [8] is what In [9], [10] and [11] are derived from: a [5, 5] matrix whose lower
    // triangle reappears unchanged in In [9] and In [10], with no score printed as 0.00 on
    // or below the diagonal (so the == 0 fill of In [10] only hits the zeros tril wrote).
    const auto n8 = printed_values("001-In08");
    REQUIRE(n8.size() == 27);
    CHECK(n8[25] == 5);
    CHECK(n8[26] == 5);
    const attn::Tensor s8 = printed_matrix("001-In08", 5, 5);
    const attn::Tensor s9 = printed_matrix("001-In09", 5, 5);
    const attn::Tensor s10 = printed_matrix("001-In10", 5, 5);
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j <= i; ++j) {
            CHECK(s8(i, j) != 0.0f);
            CHECK(s9(i, j) == s8(i, j));
            CHECK(s10(i, j) == s8(i, j));
        }
    // scaled scores q.k / sqrt(d) of this size are O(1): here all within (-1, 1)
    CHECK(xt::amax(xt::abs(s8))() < 1.0f);
    // our seeded chain starts the same way: In [8]'s shape and format, PyTorch's numbers
    const Pipeline& p = seeded_pipeline();
    attn::set_printoptions(2, 200);
    std::string skel_book, skel_ours;
    textbook::numbers_in(test::book_text("001-In08"), &skel_book);
    textbook::numbers_in(attn::repr_tuple({attn::repr(p.raw_att), attn::repr(attn::shape_of(p.raw_att))}),
                           &skel_ours);
    CHECK(skel_ours == skel_book);
    attn::set_printoptions(4, 80);
}

TEST_CASE("relation:tril_of_printed_scores") {
    // 001 In [9] = tril(In [8]), printed exactly as PyTorch would
    const attn::Tensor s8 = printed_matrix("001-In08", 5, 5);
    attn::set_printoptions(2, 200);
    const attn::Tensor t = attn::tril(s8);
    CHECK(attn::repr_tuple({attn::repr(t), attn::repr(attn::shape_of(t))}) == test::book_text("001-In09"));
    CHECK((t == printed_matrix("001-In09", 5, 5)));
    // not just any triangle: tril with diagonal -1 or triu does not give In [9]
    CHECK_FALSE((attn::tril(s8, -1) == printed_matrix("001-In09", 5, 5)));
    CHECK_FALSE((attn::triu(s8) == printed_matrix("001-In09", 5, 5)));
    attn::set_printoptions(4, 80);
    // and for the seeded chain: 0 exactly above the diagonal, unchanged below
    const Pipeline& p = seeded_pipeline();
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j < 5; ++j)
            CHECK(p.tril_att(i, j) == (j <= i ? p.raw_att(i, j) : 0.0f));
}

TEST_CASE("relation:neg_inf_where_zero") {
    // 001 In [10] = In [9] with every 0 replaced by -inf (masked_fill(x == 0, -inf))
    const attn::Tensor s9 = printed_matrix("001-In09", 5, 5);
    const attn::Tensor filled = attn::masked_fill(s9, attn::eq(s9, 0.0f), -inf);
    attn::set_printoptions(2, 200);
    CHECK(attn::repr_tuple({attn::repr(filled), attn::repr(attn::shape_of(filled))}) == test::book_text("001-In10"));
    // here it equals the robust boolean mask, because In [8] has no genuine 0
    const attn::BoolTensor future = attn::eq(attn::triu(attn::ones({5, 5}), 1), 1.0f);
    CHECK((attn::masked_fill(printed_matrix("001-In08", 5, 5), future, -inf) == filled));
    // In [9] itself is not In [10]
    CHECK(attn::repr_tuple({attn::repr(s9), attn::repr(attn::shape_of(s9))}) != test::book_text("001-In10"));
    attn::set_printoptions(4, 80);
    // -inf exactly above the diagonal in the seeded chain
    const Pipeline& p = seeded_pipeline();
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j < 5; ++j) CHECK((p.masked_att(i, j) == -inf) == (j > i));
}

namespace {

// Whether the printed weights `w` (2 decimals) can be the softmax of scores `s` known only to
// 2 printed decimals: for each entry, the interval softmax can take when every finite score
// moves by at most half a unit of the last printed digit (p_i grows with s_i and falls with
// the others) must meet [w - 0.005, w + 0.005].
bool softmax_within_print_rounding(const attn::Tensor& s, const attn::Tensor& w, std::string* why) {
    const double h = 0.005 + 1e-9;  // half a printed unit (plus float32 slack)
    const std::size_t rows = s.shape()[0], cols = s.shape()[1];
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) {
            auto p_at = [&](double own, double others) {
                double num = 0.0, den = 0.0;
                for (std::size_t c = 0; c < cols; ++c) {
                    if (std::isinf(s(i, c))) continue;  // -inf stays -inf: exp = 0
                    const double e = std::exp(static_cast<double>(s(i, c)) + (c == j ? own : others));
                    den += e;
                    if (c == j) num = e;
                }
                return num / den;
            };
            const double lo = p_at(-h, +h), hi = p_at(+h, -h);
            if (hi < w(i, j) - h || lo > w(i, j) + h) {
                if (why) {
                    std::ostringstream msg;
                    msg << "[" << i << ", " << j << "]: softmax in [" << lo << ", " << hi
                        << "], printed " << w(i, j);
                    *why = msg.str();
                }
                return false;
            }
        }
    return true;
}

}  // namespace

TEST_CASE("relation:softmax_of_printed_scores") {
    // 001 In [11] = softmax(In [10]) within the rounding of 2 printed decimals
    const attn::Tensor s10 = printed_matrix("001-In10", 5, 5);
    const attn::Tensor w11 = printed_matrix("001-In11", 5, 5);
    std::string why;
    const bool fits = softmax_within_print_rounding(s10, w11, &why);
    INFO(why);
    CHECK(fits);
    // the relation can fail: In [9]'s zeros are real numbers to softmax, not -inf
    CHECK_FALSE(softmax_within_print_rounding(printed_matrix("001-In09", 5, 5), w11, nullptr));
    // nor does In [11] fit other weights: swap two printed rows
    attn::Tensor swapped = w11;
    xt::row(swapped, 3) = xt::row(w11, 4);
    xt::row(swapped, 4) = xt::row(w11, 3);
    CHECK_FALSE(softmax_within_print_rounding(s10, swapped, nullptr));
    // here the library's softmax of the printed scores even prints In [11] digit for digit
    attn::set_printoptions(2, 200);
    const attn::Tensor w = attn::softmax(s10, -1);
    CHECK(attn::repr_tuple({attn::repr(w), attn::repr(attn::shape_of(w))}) == test::book_text("001-In11"));
    attn::set_printoptions(4, 80);
    // the weights' own relations, on the seeded chain: rows sum to 1, 0 above the diagonal
    const Pipeline& p = seeded_pipeline();
    for (std::size_t i = 0; i < 5; ++i) {
        double row = 0.0;
        for (std::size_t j = 0; j < 5; ++j) {
            row += p.weights(i, j);
            if (j > i) CHECK(p.weights(i, j) == 0.0f);
            else CHECK(p.weights(i, j) > 0.0f);
        }
        CHECK(row == test::Approx(1.0).epsilon(1e-6));
    }
    // ... and in the book's In [11]: rows sum to 1 within 5 x 0.005
    for (std::size_t i = 0; i < 5; ++i) {
        double row = 0.0;
        for (std::size_t j = 0; j < 5; ++j) {
            row += w11(i, j);
            if (j > i) CHECK(w11(i, j) == 0.0f);
        }
        CHECK(std::abs(row - 1.0) <= 5 * 0.005 + 1e-6);
    }
}

TEST_CASE("relation:sdpa_equals_manual") {
    // the book: In [14] and In [16] print the same tensor as In [12]; In [15], In [17] say True
    CHECK(test::book_text("001-In14") == test::book_text("001-In16"));
    std::string in12 = test::book_text("001-In12");
    // In [12] is a tuple: "(" + tensor lines indented by one more space + ",\n torch.Size(...))"
    const std::string size_part = ",\n torch.Size([5, 768]))";
    REQUIRE(in12.size() > size_part.size());
    REQUIRE(in12.substr(in12.size() - size_part.size()) == size_part);
    std::string tensor_part = in12.substr(1, in12.size() - 1 - size_part.size());
    for (std::size_t pos = 0; (pos = tensor_part.find("\n ", pos)) != std::string::npos;)
        tensor_part.erase(pos + 1, 1), ++pos;
    CHECK(tensor_part == test::book_text("001-In14"));
    CHECK(test::book_text("001-In15") == "True");
    CHECK(test::book_text("001-In17") == "True");

    // the library, on the seeded chain: both forms of SDPA equal the manual path
    const Pipeline& p = seeded_pipeline();
    const attn::BoolTensor attn_mask = attn::eq(attn::tril(attn::ones({5, 5})), 1.0f);
    const attn::Tensor with_mask = attn::scaled_dot_product_attention(p.q, p.k, p.v, {.attn_mask = &attn_mask});
    const attn::Tensor causal = attn::scaled_dot_product_attention(p.q, p.k, p.v, {.is_causal = true});
    CHECK(attn::repr_bool(attn::allclose(with_mask, p.new_v, 1e-5, 1e-5)) == test::book_text("001-In15"));
    CHECK(attn::repr_bool(attn::allclose(causal, p.new_v, 1e-5, 1e-5)) == test::book_text("001-In17"));
    attn::set_printoptions(2, 200);
    CHECK(attn::repr(with_mask) == attn::repr(p.new_v));
    CHECK(attn::repr(causal) == attn::repr(p.new_v));
    attn::set_printoptions(4, 80);
    // In [13]'s mask, printed
    CHECK(attn::repr(attn_mask) == test::book_text("001-In13"));
    // more seeds and a smaller d: still equal; a wrong mask (anti-causal) is not
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
        const Pipeline r = run_001(seed, 20, 16, 6);
        const attn::BoolTensor m = attn::eq(attn::tril(attn::ones({6, 6})), 1.0f);
        CHECK(attn::allclose(attn::scaled_dot_product_attention(r.q, r.k, r.v, {.attn_mask = &m}), r.new_v, 1e-5, 1e-5));
        CHECK(attn::allclose(attn::scaled_dot_product_attention(r.q, r.k, r.v, {.is_causal = true}), r.new_v,
                             1e-5, 1e-5));
        const attn::BoolTensor wrong = attn::eq(attn::triu(attn::ones({6, 6})), 1.0f);
        CHECK_FALSE(attn::allclose(attn::scaled_dot_product_attention(r.q, r.k, r.v, {.attn_mask = &wrong}), r.new_v, 1e-5, 1e-5));
    }
}

TEST_CASE("relation:argmax_in_vocab_range") {
    // 001 In [19]: five predictions in [0, 100), then torch.Size([5, 100]), torch.Size([5])
    const auto n = printed_values("001-In19");
    REQUIRE(n.size() == 8);
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(n[i] >= 0);
        CHECK(n[i] < 100);
    }
    CHECK(n[5] == 5);
    CHECK(n[6] == 100);
    CHECK(n[7] == 5);
    // the shapes print exactly like the book's
    const Pipeline& p = seeded_pipeline();
    const attn::LongTensor predicted = attn::argmax(p.logits, -1);
    const std::string text = test::book_text("001-In19");
    const std::string shapes = attn::repr(attn::shape_of(p.logits)) + ", " + attn::repr(attn::shape_of(predicted));
    CHECK(text.substr(text.size() - shapes.size() - 1) == shapes + ")");
    for (const auto id : predicted) {
        CHECK(id >= 0);
        CHECK(id < 100);
    }
    // argmax is the first maximum of each row
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j < 100; ++j) CHECK(p.logits(i, j) <= p.logits(i, static_cast<std::size_t>(predicted(i))));
}

TEST_CASE("relation:cross_entropy_near_log_vocab") {
    // 001 In [21]: the loss of untrained logits is about ln 100 = 4.605
    const auto n = printed_values("001-In21");
    REQUIRE(n.size() == 1);
    const double ln_v = std::log(100.0);
    CHECK(std::abs(n[0] - ln_v) < 0.1);
    // Why: loss_i = logsumexp(z_i) - z_i[t] lies in [ln V + mean(z_i) - z_i[t], ln V + max(z_i) - z_i[t]]
    // (Jensen and the max bound), and untrained logits are all close together.
    const Pipeline& p = seeded_pipeline();
    const attn::LongTensor targets = attn::arange(5);
    const double loss = attn::cross_entropy(p.logits, targets, -1)();
    double lo = 0.0, hi = 0.0;
    for (std::size_t i = 0; i < 5; ++i) {
        double mean = 0.0, mx = -1e30;
        for (std::size_t j = 0; j < 100; ++j) {
            mean += p.logits(i, j) / 100.0;
            mx = std::max(mx, static_cast<double>(p.logits(i, j)));
        }
        const double zt = p.logits(i, i);
        lo += (ln_v + mean - zt) / 5.0;
        hi += (ln_v + mx - zt) / 5.0;
    }
    CHECK(loss >= lo - 1e-5);
    CHECK(loss <= hi + 1e-5);
    CHECK(loss == test::Approx(reference_cross_entropy(p.logits, targets, -1)).epsilon(1e-6));
    CHECK(std::abs(loss - ln_v) < 0.25);
    for (const std::uint64_t seed : {7u, 8u, 9u}) {
        const Pipeline r = run_001(seed);
        CHECK(std::abs(attn::cross_entropy(r.logits, targets, -1)() - ln_v) < 0.25);
    }
}

}  // namespace test_loss
