// Tests for nn::Dropout (lib/attn/nn/dropout.cpp), both Bernoulli backends.
//
// Expected values come from
// - the book: notebook 002 In [12], In [13] (MKL backend) and 004 In [51] (portable backend),
//   read from data/book/;
// - the oracle: Debian's python3-torch 1.13.1 (no MKL: portable backend), recorded by
//   tools/oracle/dropout_streams.py under data/oracle/dropout/, and the generator streams of
//   tools/oracle/generator_streams.py under data/oracle/generator/.
// The MKL backend has no oracle on this machine (AMD CPU, no MKL build); beyond the 36
// elements the book pins, it is checked against the MCG31m1 recurrence as Intel documents it.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"
#include <nlohmann/json.hpp>

#include "attn/modules/self_attention.hpp"
#include "textbook/book.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "attn/core/ulp.hpp"

namespace test_dropout {  // every test file is a namespace of its own (tests/meson.build)

using attn::nn::BernoulliBackend;
using attn::nn::Dropout;

namespace {

// Unpacks numpy.packbits(bitorder='little'): bit i of the mask is bit i % 8 of byte i / 8.
std::vector<bool> read_bits(const std::string& file, std::size_t bits) {
    const std::vector<std::uint8_t> bytes = test::oracle_npy<std::uint8_t>(file);
    REQUIRE(bytes.size() * 8 >= bits);
    std::vector<bool> out(bits);
    for (std::size_t i = 0; i < bits; ++i) out[i] = (bytes[i / 8] >> (i % 8)) & 1U;
    return out;
}

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

// Bitwise equal (so -0.0 != 0.0), except that any NaN equals any NaN.
bool same_float(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return bits_of(a) == bits_of(b);
}

// The dropout input of tools/oracle/dropout_streams.py (see its manifest's "input").
attn::Tensor pattern(const attn::Shape& shape) {
    attn::Tensor x = xt::empty<float>(shape);
    for (std::size_t i = 0; i < x.size(); ++i)
        x.flat(i) = static_cast<float>((static_cast<double>(i % 2001) - 1000.0) / 256.0);
    const float specials[] = {std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), -0.0f,
                              std::numeric_limits<float>::quiet_NaN()};
    for (std::size_t k = 1; k <= 4 && k < x.size(); ++k) x.flat(k) = specials[k - 1];
    return x;
}

// The book's printed numbers: the last `n` of the block (labels such as "-inf" come first).
std::vector<double> book_numbers(const std::string& id, std::size_t n) {
    const auto numbers = textbook::numbers_in(textbook::strip_grad_fn(test::the_book().at(id).text));
    REQUIRE(numbers.size() >= n);
    std::vector<double> out;
    for (std::size_t i = numbers.size() - n; i < numbers.size(); ++i) out.push_back(numbers[i].value);
    return out;
}

// Chapter 4's -inf-masked softmax weights (SelfAttention_v2 after manual_seed(789)).
attn::Tensor causal_attn_weights() {
    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
    attn::Generator gen(789);
    const attn::SelfAttention_v2 sa_v2(3, 2, false, gen);
    const attn::Tensor queries = sa_v2.W_query(inputs);
    const attn::Tensor keys = sa_v2.W_key(inputs);
    const attn::Tensor attn_scores = attn::matmul(queries, attn::T(keys));
    const attn::BoolTensor causal_mask = attn::to_bool(attn::triu(attn::ones({6, 6}), 1));
    const attn::Tensor masked =
        attn::masked_fill(attn_scores, causal_mask, -std::numeric_limits<float>::infinity());
    return attn::softmax(attn::Tensor(masked / std::sqrt(2.0f)), -1);
}

// The generator oracle's torch.rand(10000) after torch.manual_seed(123).
const std::vector<float>& rand_s123() {
    static const auto v = test::oracle_npy<float>("generator/rand_s123.npy");
    return v;
}

}  // namespace

// ---- argument checks ----------------------------------------------------------------------

TEST_CASE("Dropout rejects p outside [0, 1] and NaN with std::invalid_argument") {
    for (const auto backend : {BernoulliBackend::portable, BernoulliBackend::mkl}) {
        CHECK_THROWS_AS(Dropout(-0.01, backend), std::invalid_argument);
        CHECK_THROWS_AS(Dropout(1.0001, backend), std::invalid_argument);
        CHECK_THROWS_AS(Dropout(std::nan(""), backend), std::invalid_argument);
        CHECK_THROWS_AS(Dropout(std::numeric_limits<double>::infinity(), backend),
                        std::invalid_argument);
        CHECK_NOTHROW(Dropout(0.0, backend));
        CHECK_NOTHROW(Dropout(1.0, backend));
        // p is a public field: a bad value set after construction is caught when used.
        Dropout d(0.5, backend);
        d.p = 2.0;
        attn::Generator gen(0);
        CHECK_THROWS_AS(d(attn::ones({2, 2}), gen), std::invalid_argument);
        CHECK_THROWS_AS(d.keep_mask({2, 2}, gen), std::invalid_argument);
        CHECK(gen.draws_since_seed() == 0);
    }
    try {
        Dropout(1.5);
        FAIL("no throw");
    } catch (const std::invalid_argument& e) {
        CHECK_THAT(e.what(), Catch::Contains("between 0 and 1"));
    }
}

TEST_CASE("p == 0, evaluation mode and empty tensors return the input and draw nothing; "
          "p == 1 returns zeros and draws nothing") {
    const attn::Tensor x = pattern({4, 9});
    for (const auto backend : {BernoulliBackend::portable, BernoulliBackend::mkl}) {
        attn::Generator gen(123);
        const attn::Tensor y0 = Dropout(0.0, backend)(x, gen);
        Dropout eval(0.5, backend);
        eval.training = false;
        const attn::Tensor y_eval = eval(x, gen);
        const attn::Tensor empty = xt::empty<float>(attn::Shape{0, 3});
        const attn::Tensor y_empty = Dropout(0.5, backend)(empty, gen);
        const attn::Tensor y1 = Dropout(1.0, backend)(attn::ones({3, 3}), gen);
        CHECK(gen.draws_since_seed() == 0);
        REQUIRE(attn::shape_of(y0) == attn::shape_of(x));
        REQUIRE(attn::shape_of(y_eval) == attn::shape_of(x));
        for (std::size_t i = 0; i < x.size(); ++i) {
            CHECK(same_float(y0.flat(i), x.flat(i)));
            CHECK(same_float(y_eval.flat(i), x.flat(i)));
        }
        CHECK(attn::shape_of(y_empty) == attn::Shape{0, 3});
        CHECK(bool(y1 == attn::zeros({3, 3})));
        CHECK(bool(eval.keep_mask({2, 2}, gen) == attn::ones({2, 2})));
        CHECK(bool(Dropout(1.0, backend).keep_mask({2, 2}, gen) == attn::zeros({2, 2})));
        CHECK(gen.draws_since_seed() == 0);
    }
}

// ---- the book -----------------------------------------------------------------------------

TEST_CASE("[book] 002 In [12]: MKL backend, dropout(0.5) of ones(6, 6) after seed 123") {
    attn::manual_seed(123);
    const attn::Tensor example = attn::ones({6, 6});
    const attn::Tensor dropped = Dropout(0.5, BernoulliBackend::mkl)(example);
    CHECK(attn::default_generator().draws_since_seed() == 1);  // one 32-bit draw per call

    const auto printed = book_numbers("002-In12", 36);
    for (std::size_t i = 0; i < 36; ++i) {
        INFO("element " << i);
        CHECK(static_cast<double>(dropped.flat(i)) == printed[i]);  // 2 or 0, exactly
    }
    const std::string text = "Example:\n" + attn::repr(example) + "\n\nDropout:\n" + attn::repr(dropped);
    const auto c = textbook::compare(test::the_book().at("002-In12"), text);
    INFO(c.summary());
    CHECK(c.identical);

    // The other backend prints a different mask: the book tells the two apart.
    attn::manual_seed(123);
    const attn::Tensor portable = Dropout(0.5, BernoulliBackend::portable)(example);
    CHECK_FALSE(textbook::compare(test::the_book().at("002-In12"),
                                    "Example:\n" + attn::repr(example) + "\n\nDropout:\n" +
                                        attn::repr(portable)).match);
}

TEST_CASE("[book] 002 In [13]: MKL backend, dropout(0.5) of the causal weights after seed 123") {
    const attn::Tensor attn_weights = causal_attn_weights();
    attn::manual_seed(123);
    const attn::Tensor dropped = Dropout(0.5, BernoulliBackend::mkl)(attn_weights);
    const auto c = textbook::compare(test::the_book().at("002-In13"), attn::repr(dropped));
    INFO(c.summary());
    CHECK(c.identical);
    // Mask: wherever the weight is non-zero, kept == printed non-zero; kept values are
    // exactly twice the weight.
    const auto printed = book_numbers("002-In13", 36);
    for (std::size_t i = 0; i < 36; ++i) {
        if (attn_weights.flat(i) == 0.0f) continue;
        INFO("element " << i);
        CHECK((dropped.flat(i) != 0.0f) == (printed[i] != 0.0));
        if (dropped.flat(i) != 0.0f) CHECK(dropped.flat(i) == 2.0f * attn_weights.flat(i));
    }
}

TEST_CASE("[book] 004 In [51]: portable backend, the fourth dropout after seed 123") {
    const attn::Tensor attn_weights = causal_attn_weights();
    attn::manual_seed(123);
    const Dropout dropout(0.5, BernoulliBackend::portable);
    attn::Tensor dropped;
    for (int run = 0; run < 4; ++run) {
        CHECK(attn::default_generator().draws_since_seed() == 72u * run);
        dropped = dropout(attn_weights);
    }
    const auto printed = book_numbers("004-In51", 36);
    std::size_t below_diagonal = 0;
    for (std::size_t i = 0; i < 36; ++i) {
        if (attn_weights.flat(i) == 0.0f) continue;  // above the diagonal: 0 either way
        ++below_diagonal;
        INFO("element " << i << ": book " << printed[i] << ", ours " << dropped.flat(i));
        CHECK((dropped.flat(i) != 0.0f) == (printed[i] != 0.0));  // the mask, exactly
        if (printed[i] != 0.0)
            CHECK(attn::ulp_distance(dropped.flat(i), static_cast<float>(printed[i])) <= 4);
    }
    CHECK(below_diagonal == 21);
    // The printed text: same skeleton, every number within 4 ulp (the entry's check).
    const auto c = textbook::compare(test::the_book().at("004-In51"),
                                       "Dropout applied to -inf Attention-Weights: \n " +
                                           attn::numpy_str(dropped));
    INFO(c.summary());
    CHECK(c.match);

    // The MKL backend's fourth call is a different mask.
    attn::manual_seed(123);
    attn::Tensor mkl;
    for (int run = 0; run < 4; ++run) mkl = Dropout(0.5, BernoulliBackend::mkl)(attn_weights);
    CHECK_FALSE(textbook::compare(test::the_book().at("004-In51"),
                                    "Dropout applied to -inf Attention-Weights: \n " +
                                        attn::numpy_str(mkl)).match);
}

// ---- the oracle: portable backend ---------------------------------------------------------

TEST_CASE("[oracle] portable backend: masks, values and generator state match python3-torch") {
    const auto& manifest = test::oracle_file("dropout/manifest.json");
    REQUIRE_FALSE(manifest.at("torch_mkl").get<bool>());
    std::size_t total_mask = 0, total_values = 0, total_rand = 0;
    std::set<std::uint64_t> seeds;
    std::set<double> probabilities;
    for (const auto& stream : manifest.at("streams")) {
        const std::string name = stream.at("name");
        INFO("stream " << name << ": " << stream.at("python").get<std::string>());
        const auto& files = stream.at("files");
        const auto mask = read_bits("dropout/" + files.at("mask").get<std::string>(),
                                    stream.at("mask_bits").get<std::size_t>());
        std::vector<float> values, rands;
        if (files.contains("values")) values = test::oracle_npy<float>("dropout/" + files.at("values").get<std::string>());
        if (files.contains("rand")) rands = test::oracle_npy<float>("dropout/" + files.at("rand").get<std::string>());
        std::size_t mask_at = 0, values_at = 0, rand_at = 0;

        attn::Generator gen(stream.at("seed").get<std::uint64_t>());
        for (const auto& op : stream.at("ops")) {
            const auto shape = op.at("shape").get<attn::Shape>();
            if (op.at("op") == "rand") {
                const attn::Tensor r = attn::rand(shape, gen);
                for (std::size_t i = 0; i < r.size(); ++i, ++rand_at) {
                    INFO("rand element " << rand_at);
                    REQUIRE(rand_at < rands.size());
                    CHECK(same_float(r.flat(i), rands[rand_at]));
                }
                continue;
            }
            const double p = op.at("p");
            Dropout dropout(p, BernoulliBackend::portable);
            dropout.training = op.at("training");
            if (dropout.training && p > 0 && p < 1) {
                seeds.insert(stream.at("seed").get<std::uint64_t>());
                probabilities.insert(p);
            }
            const attn::Tensor x = pattern(shape);
            attn::Generator twin = gen;  // keep_mask must draw exactly what forward draws
            const attn::Tensor kept = dropout.keep_mask(shape, twin);
            const attn::Tensor y = dropout(x, gen);
            REQUIRE(attn::shape_of(y) == shape);
            REQUIRE(attn::shape_of(kept) == shape);
            CHECK(twin.draws_since_seed() == gen.draws_since_seed());
            {
                attn::Generator a = twin, b = gen;
                CHECK(a.random() == b.random());
            }
            std::size_t mismatches = 0;
            for (std::size_t i = 0; i < kept.size(); ++i, ++mask_at)
                mismatches += ((kept.flat(i) != 0.0f) != mask.at(mask_at)) ? 1 : 0;
            CHECK(mismatches == 0);
            total_mask += kept.size();
            if (op.at("values").get<bool>()) {
                std::size_t differ = 0;
                std::ostringstream first_differences;  // the first five, for the failure message
                for (std::size_t i = 0; i < y.size(); ++i, ++values_at) {
                    REQUIRE(values_at < values.size());
                    if (!same_float(y.flat(i), values[values_at])) {
                        if (differ++ < 5)
                            first_differences << "value " << i << ": ours " << y.flat(i) << " (0x" << std::hex
                                              << bits_of(y.flat(i)) << "), torch " << values[values_at]
                                              << " (0x" << bits_of(values[values_at]) << std::dec << ")\n";
                    }
                }
                INFO(first_differences.str());
                CHECK(differ == 0);
                total_values += y.size();
            }
        }
        CHECK(mask_at == mask.size());
        CHECK(values_at == values.size());
        CHECK(rand_at == rands.size());
        total_rand += rand_at;
        // PyTorch's own draw count, read from torch.get_rng_state() by the oracle script.
        CHECK(gen.draws_since_seed() == stream.at("draws32_total").get<std::uint64_t>());
    }
    CHECK(total_mask >= 10000);
    CHECK(seeds.size() >= 3);
    CHECK(probabilities.size() >= 4);
    CHECK(total_values > 0);
    CHECK(total_rand > 0);
}

TEST_CASE("[oracle] kept entries are scaled by 1 / float32(1 - p), as PyTorch does") {
    const auto& manifest = test::oracle_file("dropout/manifest.json");
    const auto& scales = manifest.at("scale_float32");
    REQUIRE(scales.size() >= 5);
    for (const auto& item : scales.items()) {
        const std::string p_text = item.key();
        const auto& scale = item.value();
        const double p = std::stod(p_text);
        INFO("p = " << p_text);
        for (const auto backend : {BernoulliBackend::portable, BernoulliBackend::mkl}) {
            attn::Generator gen(0);
            const attn::Tensor y = Dropout(p, backend)(attn::ones({100000}), gen);
            const float expected = scale.get<float>();
            std::size_t kept = 0, wrong = 0;
            for (std::size_t i = 0; i < y.size(); ++i) {
                if (y.flat(i) == 0.0f) continue;
                ++kept;
                wrong += y.flat(i) != expected ? 1 : 0;
            }
            CHECK(kept > 0);
            CHECK(wrong == 0);
        }
    }
}

TEST_CASE("[oracle] the generator after a dropout call is where PyTorch leaves it") {
    // rand after dropout continues the stream: portable 2n draws, MKL one draw.
    const auto& stream = rand_s123();
    for (const std::size_t n : {1u, 36u, 801u, 2000u}) {
        INFO("n = " << n);
        attn::manual_seed(123);
        Dropout(0.3, BernoulliBackend::portable)(attn::ones({n}));
        attn::Tensor r = attn::rand({16});
        for (std::size_t i = 0; i < 16; ++i) CHECK(same_float(r.flat(i), stream.at(2 * n + i)));

        attn::manual_seed(123);
        Dropout(0.3, BernoulliBackend::mkl)(attn::ones({n}));
        r = attn::rand({16});
        for (std::size_t i = 0; i < 16; ++i) CHECK(same_float(r.flat(i), stream.at(1 + i)));
    }
}

// ---- MKL backend beyond the book ----------------------------------------------------------

TEST_CASE("MKL backend: element i is kept when x_i / (2^31 - 1) < 1 - p, whatever the chunking") {
    // Intel's MCG31m1: x_0 = seed mod (2^31 - 1) (1 if that is 0), x_{i+1} = 1132489760 x_i
    // mod (2^31 - 1), computed here one step at a time; the library splits the tensor into
    // chunks of 800 and skips each ahead, as PyTorch's parallel_for does.
    const std::uint64_t m = 2147483647ULL, a = 1132489760ULL;
    for (const std::uint64_t seed : {0ULL, 123ULL, 789ULL}) {
        for (const double p : {0.2, 0.5, 0.9}) {
            const std::size_t n = 5003;  // 6 full chunks and a ragged one
            attn::Generator gen(seed), probe(seed);
            const attn::Tensor kept = Dropout(p, BernoulliBackend::mkl).keep_mask({n}, gen);
            CHECK(gen.draws_since_seed() == 1);
            std::uint64_t x = probe.random() % m;
            if (x == 0) x = 1;
            std::size_t mismatches = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const bool expect = static_cast<double>(x) / static_cast<double>(m) < 1.0 - p;
                mismatches += (kept.flat(i) != 0.0f) != expect ? 1 : 0;
                x = a * x % m;
            }
            INFO("seed " << seed << ", p " << p);
            CHECK(mismatches == 0);
        }
    }
    // The first 36 elements of a long tensor are the book's 6x6 mask (002 In [12]): the size
    // of the tensor does not change the stream.
    attn::Generator gen(123);
    const attn::Tensor kept = Dropout(0.5, BernoulliBackend::mkl).keep_mask({4000}, gen);
    const auto printed = book_numbers("002-In12", 36);
    for (std::size_t i = 0; i < 36; ++i) CHECK((kept.flat(i) != 0.0f) == (printed[i] != 0.0));
}

TEST_CASE("both backends keep a fraction within 0.2 percentage points of 1 - p over 10^6 elements") {
    for (const auto backend : {BernoulliBackend::portable, BernoulliBackend::mkl}) {
        for (const double p : {0.1, 0.25, 0.5, 0.9}) {
            for (const std::uint64_t seed : {123ULL, 789ULL}) {
                attn::Generator gen(seed);
                const attn::Tensor kept = Dropout(p, backend).keep_mask({1000, 1000}, gen);
                const double fraction = static_cast<double>(xt::sum(kept)()) / 1e6;
                INFO((backend == BernoulliBackend::mkl ? "mkl" : "portable")
                     << ", p = " << p << ", seed " << seed << ": kept " << fraction);
                CHECK(std::abs(fraction - (1.0 - p)) < 0.002);
            }
        }
    }
}

}  // namespace test_dropout
