// The relations between notebook 001's printed blocks (chapter 10). 001 is unseeded, so its
// values are checked through relations (TEST_CASE names "relation:<name>", as in the book's
// manifest): the printed numbers against each other, and this library's run of 001 under a
// fixed seed (loss_pipeline.hpp) for the relations a seeded run shows.
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

namespace test_loss_relations {  // every test file is a namespace of its own (tests/meson.build)

using test::Pipeline;
using test::reference_cross_entropy;
using test::run_001;
using test::seeded_pipeline;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

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

}  // namespace

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
        CHECK(row == Approx(1.0).epsilon(1e-6));
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
    CHECK(loss == Approx(reference_cross_entropy(p.logits, targets, -1)).epsilon(1e-6));
    CHECK(std::abs(loss - ln_v) < 0.25);
    for (const std::uint64_t seed : {7u, 8u, 9u}) {
        const Pipeline r = run_001(seed);
        CHECK(std::abs(attn::cross_entropy(r.logits, targets, -1)() - ln_v) < 0.25);
    }
}

}  // namespace test_loss_relations
