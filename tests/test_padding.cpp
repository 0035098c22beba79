// Tests for attn/padding.hpp and the padding path of BaseSelfAttention (notebook 000 In [5]-[27]),
// and the relations of the book's unseeded blocks of that part (000 In [14], [16], [24]).
//
// Expected values: the book (data/book/000/), the recorded tokenizer ids (data/tokenizer/, from
// tools/tokenize/ and checked here against the book's In [21]), layouts worked out by hand from
// the definition of padding, and a text run alone (the property that makes padding correct).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support.hpp"
#include <xtensor/xview.hpp>

#include "textbook/book.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/masks.hpp"
#include "attn/modules/base_self_attention.hpp"
#include "attn/attention/padding.hpp"
#include "textbook/tokenizer_data.hpp"
#include "attn/print/print.hpp"

namespace test_padding {  // every test file is a namespace of its own (tests/meson.build)

namespace {

const float inf = std::numeric_limits<float>::infinity();

const textbook::TokenizerData& tokenizer() {
    static const textbook::TokenizerData data =
        textbook::TokenizerData::load(textbook::data_dir() / "tokenizer" / "mistral-7b-v0.1_000.tsv");
    return data;
}

std::vector<std::int64_t> row(const attn::LongTensor& t, std::size_t b) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < t.shape()[1]; ++i) out.push_back(t(b, i));
    return out;
}

using Ids = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("the recorded Mistral-7B ids are the notebook's") {
    const auto& tok = tokenizer();
    CHECK(tok.unk_token_id == 0);
    CHECK(tok.bos_token_id == 1);
    CHECK(tok.eos_token_id == 2);
    REQUIRE(tok.texts.size() == 3);
    // The texts of 000 In [18] and the ids the issue records for them.
    CHECK(tok.texts[0].text == "Something random");
    CHECK(tok.texts[0].input_ids == Ids{1, 13264, 5509});
    CHECK(tok.texts[1].text == "A bit longer text");
    CHECK(tok.texts[1].input_ids == Ids{1, 330, 2286, 3774, 2245});
    CHECK(tok.texts[2].text == "something even longer than the two before!");
    CHECK(tok.texts[2].input_ids == Ids{1, 1545, 1019, 3774, 821, 272, 989, 1159, 28808});
    // The book's In [21] shows the first text's ids after six pads; the longest text has 9.
    const auto book_ids = test::printed_numbers("000-In21");
    REQUIRE(book_ids.size() == 9);
    for (std::size_t i = 0; i < 3; ++i) CHECK(book_ids[6 + i].value == double(tok.texts[0].input_ids[i]));
    CHECK(book_ids[0].value == double(tok.eos_token_id));  // pad = eos (In [20])
    CHECK(test::the_book().at("000-In20").text == std::to_string(tok.eos_token_id));
    CHECK_FALSE(tok.provenance.empty());
}

TEST_CASE("the collator reproduces 000 In [19], In [21] and In [22]") {
    const auto& tok = tokenizer();
    const attn::BatchEncoding enc = attn::pad_batch(tok.sequences(), tok.eos_token_id, attn::PaddingSide::left);
    REQUIRE(attn::shape_of(enc.input_ids) == attn::Shape{3, 9});
    REQUIRE(attn::shape_of(enc.attention_mask) == attn::Shape{3, 9});
    CHECK(attn::repr(attn::LongTensor(xt::view(enc.input_ids, 0, xt::all()))) == test::the_book().at("000-In21").text);
    CHECK(attn::repr(attn::LongTensor(xt::view(enc.attention_mask, 0, xt::all()))) == test::the_book().at("000-In22").text);
    std::string keys = "dict_keys([";
    for (const auto& k : attn::BatchEncoding::keys()) keys += (keys.back() == '[' ? "" : ", ") + attn::repr_str(k);
    CHECK(keys + "])" == test::the_book().at("000-In19").text);
    // The other rows, from the definition of left padding.
    CHECK(row(enc.input_ids, 1) == Ids{2, 2, 2, 2, 1, 330, 2286, 3774, 2245});
    CHECK(row(enc.attention_mask, 1) == Ids{0, 0, 0, 0, 1, 1, 1, 1, 1});
    CHECK(row(enc.input_ids, 2) == Ids{1, 1545, 1019, 3774, 821, 272, 989, 1159, 28808});
    CHECK(row(enc.attention_mask, 2) == Ids{1, 1, 1, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("the collator pads on the right and with any pad id") {
    const attn::BatchEncoding enc = attn::pad_batch({{5, 6}, {7}, {}, {8, 9, 10}}, 0, attn::PaddingSide::right);
    REQUIRE(attn::shape_of(enc.input_ids) == attn::Shape{4, 3});
    CHECK(row(enc.input_ids, 0) == Ids{5, 6, 0});
    CHECK(row(enc.input_ids, 1) == Ids{7, 0, 0});
    CHECK(row(enc.input_ids, 2) == Ids{0, 0, 0});
    CHECK(row(enc.input_ids, 3) == Ids{8, 9, 10});
    CHECK(row(enc.attention_mask, 0) == Ids{1, 1, 0});
    CHECK(row(enc.attention_mask, 2) == Ids{0, 0, 0});
    const attn::BatchEncoding left = attn::pad_batch({{5, 6}, {7}}, -1, attn::PaddingSide::left);
    CHECK(row(left.input_ids, 1) == Ids{-1, 7});
    CHECK(row(left.attention_mask, 1) == Ids{0, 1});
    test::require_invalid([] { attn::pad_batch({}, 2); }, {"at least one sequence"});
}

TEST_CASE("ids of different lengths cannot make a tensor without the collator") {
    test::require_invalid([] { attn::ids_tensor({{1, 13264, 5509}, {1, 330, 2286, 3774, 2245}}); },
                    {"[2, 3]", "sequence 1 has length 5"});
    test::require_invalid([] { attn::ids_tensor({}); }, {"at least one sequence"});
    const attn::LongTensor ids = attn::ids_tensor({{1, 2}, {3, 4}});
    CHECK(attn::shape_of(ids) == attn::Shape{2, 2});
    CHECK(ids(1, 0) == 3);
}

TEST_CASE("pad_sequences and real_token_rows lay out and cut out per-sequence vectors") {
    const attn::Tensor a = attn::tensor({{1, 2}, {3, 4}});
    const attn::Tensor b = attn::tensor({{5, 6}});
    const attn::Tensor left = attn::pad_sequences({a, b}, attn::PaddingSide::left, -1.0f);
    REQUIRE(attn::shape_of(left) == attn::Shape{2, 2, 2});
    CHECK(left(1, 0, 0) == -1.0f);
    CHECK(left(1, 1, 1) == 6.0f);
    const attn::Tensor right = attn::pad_sequences({a, b}, attn::PaddingSide::right);
    CHECK(right(1, 0, 1) == 6.0f);
    CHECK(right(1, 1, 0) == 0.0f);
    const attn::LongTensor mask = attn::pad_batch({{1, 1}, {1}}, 0, attn::PaddingSide::left).attention_mask;
    CHECK((attn::real_token_rows(left, mask, 1) == b));
    CHECK((attn::real_token_rows(left, mask, 0) == a));
    test::require_invalid([&] { attn::pad_sequences({a, attn::tensor({{1, 2, 3}})}, attn::PaddingSide::left); },
                    {"[*, 2]", "[1, 3]"});
    test::require_invalid([&] { attn::real_token_rows(left, xt::ones<std::int64_t>(attn::Shape{2, 3}), 0); },
                    {"[2, 2]", "[2, 3]"});
    CHECK_THROWS_AS(attn::real_token_rows(left, mask, 2), std::invalid_argument);
}

TEST_CASE("apply_attention_mask: -inf on every query row at the padded keys") {
    const attn::LongTensor mask = attn::pad_batch({{1, 2}, {3, 4, 5}}, 0, attn::PaddingSide::left).attention_mask;
    const attn::Tensor logits = attn::ones({2, 3, 3});
    const attn::Tensor masked = attn::apply_attention_mask(logits, mask);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(masked(0, i, 0) == -inf);
        CHECK(masked(0, i, 1) == 1.0f);
        CHECK(masked(0, i, 2) == 1.0f);
        for (std::size_t j = 0; j < 3; ++j) CHECK(masked(1, i, j) == 1.0f);
    }
    // With a KV cache the logits are [B, Sq, Sk] and the mask covers all Sk keys.
    const attn::Tensor step = attn::apply_attention_mask(attn::ones({2, 1, 3}), mask);
    CHECK(step(0, 0, 0) == -inf);
    // A mask that does not fit the logits.
    test::require_invalid([&] { attn::apply_attention_mask(attn::ones({2, 3, 4}), mask); }, {"[2, 4]", "[2, 3]"});
    test::require_invalid([&] { attn::apply_attention_mask(attn::ones({3, 3, 3}), mask); }, {"[3, 3]", "[2, 3]"});
    test::require_invalid([&] { attn::apply_attention_mask(attn::ones({3, 3}), mask); }, {"[3, 3]"});
}

TEST_CASE("masked_softmax: zeros for fully masked rows, softmax bit for bit elsewhere") {
    attn::manual_seed(7);
    attn::Tensor x = attn::rand({2, 4, 5});
    x(0, 1, 2) = -inf;
    for (std::size_t j = 0; j < 5; ++j) x(1, 3, j) = -inf;  // a query with nothing to attend to
    const attn::Tensor plain = attn::softmax(x, -1);
    const attn::Tensor masked = attn::masked_softmax(x);
    CHECK(std::isnan(plain(1, 3, 0)));  // torch.softmax: 0/0
    CHECK(attn::count_nan(plain) == 5);
    CHECK(attn::count_nan(masked) == 0);
    CHECK(attn::count_fully_masked_rows(x) == 1);
    for (std::size_t j = 0; j < 5; ++j) CHECK(masked(1, 3, j) == 0.0f);
    for (std::size_t i = 0; i < x.size(); ++i)
        if (i / 5 != 7) CHECK(plain.data()[i] == masked.data()[i]);
    CHECK(masked(0, 1, 2) == 0.0f);
    // NaN inputs are not "masked": they stay NaN.
    attn::Tensor n = attn::zeros({1, 3});
    n(0, 1) = std::nanf("");
    CHECK(attn::count_nan(attn::masked_softmax(n)) == 3);
    CHECK_THROWS_AS(attn::masked_softmax(attn::scalar_tensor(1.0f)), std::invalid_argument);
}

TEST_CASE("left padding with the causal mask: NaN from torch.softmax, none after the fix") {
    const auto& tok = tokenizer();
    const attn::BatchEncoding enc = attn::pad_batch(tok.sequences(), tok.eos_token_id, attn::PaddingSide::left);
    attn::manual_seed(27);
    const attn::Tensor z = attn::rand({3, 9, 16});
    attn::BaseSelfAttention layer1({.embed_dim = 16}), layer2({.embed_dim = 16});
    REQUIRE(layer1.fully_masked_rows == attn::FullyMaskedRows::nan);  // the notebook's torch.softmax

    const attn::BaseOutput out = layer1(z, enc.attention_mask);
    // Exactly the pad rows are NaN: 6 + 4 + 0 pads, 16 outputs each, and their weights.
    CHECK(attn::count_nan(out.attention_output) == (6 + 4) * 16);
    CHECK(attn::count_nan(out.attention_weights) == (6 + 4) * 9);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t i = 0; i < 9; ++i)
            CHECK(std::isnan(out.attention_output(b, i, 0)) == (enc.attention_mask(b, i) == 0));
    // A second layer spreads it to every token of the padded texts (0 * NaN = NaN).
    const attn::BaseOutput out2 = layer2(out.attention_output, enc.attention_mask);
    CHECK(attn::count_nan(out2.attention_output) == 2 * 9 * 16);

    layer1.fully_masked_rows = layer2.fully_masked_rows = attn::FullyMaskedRows::zero;
    const attn::BaseOutput fixed = layer1(z, enc.attention_mask);
    const attn::BaseOutput fixed2 = layer2(fixed.attention_output, enc.attention_mask);
    CHECK(attn::count_nan(fixed.attention_output) == 0);
    CHECK(attn::count_nan(fixed.attention_weights) == 0);
    CHECK(attn::count_nan(fixed2.attention_output) == 0);
    // A pad row's output is output_proj(0), the bias.
    for (std::size_t o = 0; o < 16; ++o) CHECK(fixed.attention_output(0, 0, o) == (*layer1.output_proj.bias)(o));
    // The real rows are untouched by the fix.
    for (std::size_t b = 0; b < 3; ++b)
        CHECK((attn::real_token_rows(fixed.attention_output, enc.attention_mask, b) ==
               attn::real_token_rows(out.attention_output, enc.attention_mask, b)));
}

TEST_CASE("padded == unpadded: every text's real tokens equal the text run alone, left and right padding") {
    const auto& tok = tokenizer();
    attn::manual_seed(99);
    attn::BaseSelfAttention layer1({.embed_dim = 16}), layer2({.embed_dim = 16});
    layer1.fully_masked_rows = layer2.fully_masked_rows = attn::FullyMaskedRows::zero;
    std::vector<attn::Tensor> inputs;
    for (const auto& t : tok.texts) inputs.push_back(attn::rand({t.input_ids.size(), 16}));
    for (const auto side : {attn::PaddingSide::left, attn::PaddingSide::right}) {
        const attn::BatchEncoding enc = attn::pad_batch(tok.sequences(), tok.eos_token_id, side);
        // Pad vectors are arbitrary (7.0): they must not matter.
        const attn::Tensor z = attn::pad_sequences(inputs, side, 7.0f);
        const attn::Tensor y1 = layer1(z, enc.attention_mask).attention_output;
        const attn::Tensor y2 = layer2(y1, enc.attention_mask).attention_output;
        for (std::size_t b = 0; b < inputs.size(); ++b) {
            INFO((side == attn::PaddingSide::left ? "left" : "right") << " padding, text " << b);
            const long n = static_cast<long>(inputs[b].shape()[0]);
            const attn::Tensor alone_in = attn::view(inputs[b], {1, n, 16});
            const attn::Tensor alone1 = layer1(alone_in).attention_output;
            const attn::Tensor alone2 = layer2(alone1).attention_output;
            CHECK(test::max_abs_diff(attn::real_token_rows(y1, enc.attention_mask, b), attn::view(alone1, {n, 16})) <= 1e-6f);
            CHECK(test::max_abs_diff(attn::real_token_rows(y2, enc.attention_mask, b), attn::view(alone2, {n, 16})) <= 1e-6f);
        }
    }
    // Without the attention mask the pads leak into the real tokens (left padding): the
    // property needs the mask, so this test can tell a missing mask from a working one.
    const attn::BatchEncoding enc = attn::pad_batch(tok.sequences(), tok.eos_token_id, attn::PaddingSide::left);
    const attn::Tensor z = attn::pad_sequences(inputs, attn::PaddingSide::left, 7.0f);
    const attn::Tensor unmasked = layer1(z).attention_output;
    const attn::Tensor alone = attn::view(layer1(attn::view(inputs[0], {1, 3, 16})).attention_output, {3, 16});
    CHECK(test::max_abs_diff(attn::real_token_rows(unmasked, enc.attention_mask, 0), alone) > 1e-3f);
}

TEST_CASE("repr_str writes Python's repr of a str") {
    CHECK(attn::repr_str("Something random") == "'Something random'");
    CHECK(attn::repr_str("it's") == "\"it's\"");
    CHECK(attn::repr_str("it's \"x\"") == "'it\\'s \"x\"'");
    CHECK(attn::repr_str("a\\b\tc") == "'a\\\\b\\tc'");
    CHECK(attn::repr_str(std::string("\x01", 1)) == "'\\x01'");
    CHECK(attn::repr_str("\nWith KV caching:\nInput: (B,1,E), kv_cache\nOutput: (B,1,E)\n\n") ==
          test::the_book().at("000-In28").text);
}

TEST_CASE("relation:causal_neg_inf_above_diagonal") {
    // 000 In [14]: masked_attention_logits[0], [8, 8]: -inf exactly where j > i, finite elsewhere.
    const auto n = test::printed_numbers("000-In14");
    REQUIRE(n.size() == 64);
    for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t j = 0; j < 8; ++j) {
            const double v = n[i * 8 + j].value;
            INFO("row " << i << " column " << j << ": " << n[i * 8 + j].text);
            if (j > i) CHECK((std::isinf(v) && v < 0));
            else CHECK(std::isfinite(v));
        }
    // The library's mask has the same pattern.
    attn::manual_seed(14);
    const attn::BaseSelfAttention layer({.embed_dim = 16});
    const attn::Tensor logits = layer.apply_causal_mask(attn::rand({1, 8, 8}));
    for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t j = 0; j < 8; ++j) CHECK((logits(0, i, j) == -inf) == (j > i));
}

TEST_CASE("relation:softmax_of_printed_logits") {
    // 000 In [16] row (0, i) is softmax of 000 In [14] row i. Inputs: the printed logits (4
    // decimals). Tolerance: each printed logit is within 5e-5 of the true one, and
    // d softmax_i = p_i (dx_i - sum_j p_j dx_j), so |dp_i| <= p_i * 2 * 5e-5 = 1e-4 * p_i; the
    // printed weight is itself rounded to 4 decimals (5e-5). Bound: 5e-5 + 1e-4 * p_i + 1e-6
    // (float32 arithmetic).
    const auto logits = test::printed_numbers("000-In14");
    const auto weights = test::printed_numbers("000-In16");  // truncated: batch 0 complete, batch 1 partial
    REQUIRE(logits.size() == 64);
    REQUIRE(weights.size() >= 64);
    attn::Tensor x = attn::zeros({8, 8});
    for (std::size_t k = 0; k < 64; ++k) x.data()[k] = static_cast<float>(logits[k].value);
    const attn::Tensor p = attn::softmax(x, -1);
    std::size_t rows_failing_a_wrong_relation = 0;
    // A wrong relation must fail: the logits multiplied by sqrt(E) = 4 (a forgotten scaling).
    const attn::Tensor wrong = attn::softmax(attn::Tensor(x * 4.0f), -1);
    for (std::size_t i = 0; i < 8; ++i) {
        bool wrong_ok = true;
        for (std::size_t j = 0; j < 8; ++j) {
            const double printed = weights[i * 8 + j].value;
            const double tol = 5e-5 + 1e-4 * p(i, j) + 1e-6;
            INFO("row " << i << " column " << j << ": printed " << weights[i * 8 + j].text << ", softmax " << p(i, j));
            CHECK(std::fabs(p(i, j) - printed) <= tol);
            wrong_ok = wrong_ok && std::fabs(wrong(i, j) - printed) <= tol;
        }
        rows_failing_a_wrong_relation += !wrong_ok;
    }
    CHECK(rows_failing_a_wrong_relation == 7);  // every row but the first (a single 1.0000)
    // Batch 1 of In [16] (its logits were not printed): rows sum to 1 within the rounding of
    // their printed entries, zero above the diagonal. Complete rows only (5 of 8 survive).
    for (std::size_t i = 0; i < 5; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < 8; ++j) {
            const double v = weights[64 + i * 8 + j].value;
            if (j > i) CHECK(v == 0.0);
            total += v;
        }
        CHECK(std::fabs(total - 1.0) <= 8 * 5e-5);
    }
}

TEST_CASE("relation:masked_pattern_from_attention_mask") {
    // 000 In [24]: torch.rand(B, S, S) with -inf where attention_mask[:, None, :] == 0. The
    // mask is the collator's on the recorded ids (In [22] shows the first row). Check every
    // printed number: -inf exactly on the padded key columns, a rand value in [0, 1) elsewhere.
    const auto& tok = tokenizer();
    const attn::BatchEncoding enc = attn::pad_batch(tok.sequences(), tok.eos_token_id, attn::PaddingSide::left);
    const std::size_t S = enc.attention_mask.shape()[1];
    REQUIRE(S == 9);
    const auto n = test::printed_numbers("000-In24");  // truncated in the export
    REQUIRE(n.size() > 81);                      // all of text 0, part of text 1
    for (std::size_t k = 0; k < n.size(); ++k) {
        const std::size_t b = k / (S * S), j = k % S;
        INFO("text " << b << " row " << (k % (S * S)) / S << " column " << j << ": " << n[k].text);
        if (enc.attention_mask(b, j) == 0) CHECK((std::isinf(n[k].value) && n[k].value < 0));
        else CHECK((n[k].value >= 0.0 && n[k].value < 1.0));
    }
    // The library applies the same pattern.
    attn::manual_seed(24);
    const attn::Tensor ours = attn::apply_attention_mask(attn::rand({3, S, S}), enc.attention_mask);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t i = 0; i < S; ++i)
            for (std::size_t j = 0; j < S; ++j) CHECK((ours(b, i, j) == -inf) == (enc.attention_mask(b, j) == 0));
}

}  // namespace test_padding
