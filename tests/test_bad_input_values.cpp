// The bad-input table (issues 15 and 19), values and public fields of core/, nn/ and print/:
// NaN and infinity (PyTorch's results; tests/test_nan.cpp checks each function against the
// oracle), probabilities, enums cast from integers outside them, print options, nn modules
// whose public parameters were replaced. The machinery: bad_input.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/numpy.hpp"
#include "attn/print/python.hpp"
#include "attn/print/torch.hpp"
#include "textbook/book.hpp"

namespace test_bad_input_values {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

std::vector<Case> value_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };
    // --- NaN and infinity: PyTorch's results.
    ok("softmax([nan, 1]) is [nan, nan]", [] { return all_equal(attn::softmax(attn::tensor({nan_f, 1.0f})), {2}, {nan_f, nan_f}); });
    ok("softmax([inf, 1]) is [nan, nan]", [] { return all_equal(attn::softmax(attn::tensor({inf, 1.0f})), {2}, {nan_f, nan_f}); });
    ok("softmax([-inf, -inf]) is [nan, nan]", [] { return all_equal(attn::softmax(attn::tensor({-inf, -inf})), {2}, {nan_f, nan_f}); });
    ok("softmax([-inf, 0]) is [0, 1]", [] { return all_equal(attn::softmax(attn::tensor({-inf, 0.0f})), {2}, {0, 1}); });
    ok("log_softmax([-inf, 0]) is [-inf, 0]", [] { return all_equal(attn::log_softmax(attn::tensor({-inf, 0.0f})), {2}, {-inf, 0}); });
    ok("exp([inf, -inf, nan]) is [inf, 0, nan]", [] { return all_equal(attn::exp(attn::tensor({inf, -inf, nan_f})), {3}, {inf, 0, nan_f}); });
    ok("Dropout(p=1) of [inf, -1] is [nan, -0]", [] { return all_equal(nn::Dropout(1.0)(attn::tensor({inf, -1.0f})), {2}, {nan_f, -0.0f}); });
    ok("argmax([nan, 1]) is 0", [] { return attn::argmax(attn::tensor({nan_f, 1.0f}))() == 0; });
    ok("argmax([1, nan, nan]) is 1", [] { return attn::argmax(attn::tensor({1.0f, nan_f, nan_f}))() == 1; });
    ok("cross_entropy with every target ignored is nan", [] {
        return std::isnan(attn::cross_entropy(attn::zeros({2, 3}), LongTensor{-100, -100})());
    });
    ok("masked_softmax of a fully masked row is zeros", [] { return all_equal(attn::masked_softmax(attn::tensor({-inf, -inf})), {2}, {0, 0}); });
    ok("allclose(nan, nan) is false", [] { return !attn::allclose(attn::tensor({nan_f}), attn::tensor({nan_f})); });
    ok("allclose(inf, inf) is true", [] { return attn::allclose(attn::tensor({inf}), attn::tensor({inf})); });
    ok("max_abs_diff with a nan is nan", [] { return std::isnan(attn::max_abs_diff(attn::tensor({nan_f}), attn::tensor({1.0f}))); });
    err("uniform_ from = nan", [] { Tensor x = attn::zeros({2}); attn::uniform_(x, std::nan(""), 1.0); return true; }, IA, "from=nan is out of bounds");
    err("uniform_ to = inf", [] { Tensor x = attn::zeros({2}); attn::uniform_(x, 0.0, INFINITY); return true; }, IA, "to=inf is out of bounds");
    err("uniform_ from > to", [] { Tensor x = attn::zeros({2}); attn::uniform_(x, 1.0, 0.0); return true; }, IA, "expected from <= to");
    err("uniform_ range over float32", [] { Tensor x = attn::zeros({2}); attn::uniform_(x, -3e38, 3e38); return true; }, IA, "to - from exceeds");
    err("normal_ std < 0", [] { Tensor x = attn::zeros({2}); attn::normal_(x, 0.0, -1.0); return true; }, IA, "expected std >= 0.0, got std=-1");
    err("normal_ std nan", [] { Tensor x = attn::zeros({2}); attn::normal_(x, 0.0, std::nan("")); return true; }, IA, "expected std >= 0.0");

    // --- probabilities.
    err("Dropout(1.5)", RUN(nn::Dropout(1.5)), IA, "dropout probability has to be between 0 and 1, but got 1.5");
    err("Dropout(-0.1)", RUN(nn::Dropout(-0.1)), IA, "dropout probability has to be between 0 and 1, but got -0.1");
    err("Dropout(nan)", RUN(nn::Dropout(std::nan(""))), IA, "dropout probability has to be between 0 and 1");
    err("Dropout p replaced by 2 after construction", [] { nn::Dropout d(0.5); d.p = 2.0; d(attn::zeros({2})); return true; }, IA,
        "Dropout: dropout probability");
    err("keep_mask p replaced by -1", [] { nn::Dropout d(0.5); d.p = -1.0; d.keep_mask({2}); return true; }, IA, "Dropout::keep_mask");

    // --- modules whose public state was replaced: checked where used, nothing read first.
    err("Linear weight replaced by 1-D", [] { nn::Linear l(3, 2); l.weight = attn::zeros({6}); l(attn::zeros({1, 3})); return true; }, IA,
        "Linear (weight): expected [*, *] (2-D), got [6]");
    err("Linear bias replaced by the wrong size", [] { nn::Linear l(3, 2); l.bias = attn::zeros({5}); l(attn::zeros({1, 3})); return true; }, IA,
        "Linear (bias): expected [2] (or [1], broadcast), got [5]");
    err("Linear weight replaced by [2, 5], input [1, 3]", [] { nn::Linear l(3, 2); l.weight = attn::zeros({2, 5}); l(attn::zeros({1, 3})); return true; }, IA,
        "Linear: expected [..., 5], got [1, 3]");
    err("Linear in_features() of a 0-d weight", [] { nn::Linear l(3, 2); l.weight = attn::scalar_tensor(1.0f); return l.in_features() == 0; }, IA,
        "Linear (weight)");
    err("Linear given a 1-D weight", RUN(nn::Linear(attn::zeros({3}), std::nullopt)), IA, "Linear (weight)");
    err("Linear given a bias that does not fit", RUN(nn::Linear(attn::zeros({2, 3}), attn::zeros({3}))), IA, "Linear (bias): expected [2] (or [1], broadcast), got [3]");
    err("Embedding weight replaced by 1-D", [] { nn::Embedding e(3, 2); e.weight = attn::zeros({6}); e(LongTensor{0}); return true; }, IA,
        "Embedding (weight)");
    err("Embedding index 3 of 3", RUN(nn::Embedding(3, 2)(LongTensor{0, 3})), IA, "Embedding: index 3 out of range [0, 3)");
    err("Embedding index -1", RUN(nn::Embedding(3, 2)(LongTensor{-1})), IA, "Embedding: index -1 out of range [0, 3)");
    err("Embedding(0, 3) index 0", RUN(nn::Embedding(0, 3)(LongTensor{0})), IA, "index 0 out of range [0, 0)");

    // --- issue 19: enums cast from integers outside them are refused at the first use, never
    // run as another value.
    const auto backend = [](int v) { return static_cast<nn::BernoulliBackend>(v); };
    err("Dropout built with BernoulliBackend 7 (was: drew as portable)", [backend] { nn::Dropout d(0.5, backend(7)); return true; }, IA,
        "Dropout: unknown Bernoulli backend 7 (expected BernoulliBackend::portable (0) or mkl (1))");
    err("Dropout backend set to 2, forward (was: drew as portable)", [backend] {
        nn::Dropout d(0.5);
        d.backend = backend(2);
        d(attn::ones({4}));
        return true;
    }, IA, "Dropout: unknown Bernoulli backend 2");
    err("Dropout backend set to -1, keep_mask", [backend] {
        nn::Dropout d(0.5);
        d.backend = backend(-1);
        d.keep_mask({4});
        return true;
    }, IA, "Dropout::keep_mask: unknown Bernoulli backend -1");
    err("Dropout backend set to 2, evaluation mode (no mask drawn)", [backend] {
        nn::Dropout d(0.5);
        d.backend = backend(2);
        d.training = false;
        d(attn::ones({4}));
        return true;
    }, IA, "Dropout: unknown Bernoulli backend 2");
    err("Dropout backend set to 2, p = 0 (no mask drawn)", [backend] {
        nn::Dropout d(0.0);
        d.backend = backend(2);
        d(attn::ones({4}));
        return true;
    }, IA, "Dropout: unknown Bernoulli backend 2");
    err("backend_name of BernoulliBackend 5 (was: 'portable')", [backend] { return nn::backend_name(backend(5)) == "portable"; }, IA,
        "backend_name: unknown Bernoulli backend 5");
    ok("backend_name of the two backends", [] {
        return nn::backend_name(nn::BernoulliBackend::mkl) == "MKL" && nn::backend_name(nn::BernoulliBackend::portable) == "portable";
    });
    const auto kind = [](int v) { return static_cast<textbook::Check::Kind>(v); };
    err("compare with Check kind 9 (was: not compared, as a relation)", [kind] {
        textbook::Entry e;
        e.id = "x";
        e.text = "tensor(1.)";
        e.check.kind = kind(9);
        return !textbook::compare(e, "tensor(2.)").match;
    }, IA, "Check: unknown kind 9 (expected exact, ulp, relation or unreproducible)");
    err("Check kind 9: kind_name (was: 'exact')", [kind] {
        textbook::Check c;
        c.kind = kind(9);
        return c.kind_name() == "exact";
    }, IA, "Check: unknown kind 9");
    err("Check kind -3: str (was: 'exact:')", [kind] {
        textbook::Check c;
        c.kind = kind(-3);
        return !c.str().empty();
    }, IA, "Check: unknown kind -3");
    err("Check kind 4: compares_text (was: false)", [kind] {
        textbook::Check c;
        c.kind = kind(4);
        return !c.compares_text();
    }, IA, "Check: unknown kind 4");

    // --- issue 19: printers with extreme options and shapes.
    err("print precision 2^31 - 1 (was: basic_string length_error)",
        [] { PrintOptions o; o.precision = 2147483647; attn::repr(attn::ones({2}), o); return true; }, IA,
        "print options: precision must be >= 0 and <= 1000, got 2147483647");
    err("set_printoptions precision 1001", [] { attn::set_printoptions(1001); return true; }, IA,
        "set_printoptions: precision must be >= 0 and <= 1000, got 1001");
    ok("print edgeitems 2^31 - 1 above the threshold prints every element, as PyTorch", [] {
        PrintOptions o;
        o.edgeitems = 2147483647;
        o.threshold = 0;
        return attn::repr(attn::tensor({1.5f, 2.5f}), o) == "tensor([1.5000, 2.5000])";
    });
    ok("print linewidth 2^31 - 1", [] {
        PrintOptions o;
        o.linewidth = 2147483647;
        return attn::repr(attn::tensor({1.5f, 2.5f}), o) == "tensor([1.5000, 2.5000])";
    });
    err("repr of a tensor of 100,000 dimensions (was: stack overflow)", [] { attn::repr(attn::zeros(Shape(100000, 1))); return true; }, IA,
        "repr: expected at most 1000 dimensions, got 100000");
    err("repr of a bool tensor of 100,000 dimensions", [] { attn::repr(BoolTensor(xt::zeros<bool>(Shape(100000, 1)))); return true; }, IA,
        "repr: expected at most 1000 dimensions, got 100000");
    ok("repr of a tensor of 494 dimensions (PyTorch prints it)", [] {
        return attn::repr(attn::ones(Shape(494, 1))) == "tensor(" + std::string(494, '[') + "1." + std::string(494, ']') + ")";
    });
    err("numpy_str of 33 dimensions (was: printed; NumPy has at most 32)", [] { attn::numpy_str(attn::zeros(Shape(33, 1))); return true; }, IA,
        "numpy_str: expected at most 32 dimensions, got 33 (NumPy: maximum supported dimension for an ndarray is 32)");
    err("numpy_str of 100,000 dimensions (was: stack overflow)", [] { attn::numpy_str(attn::zeros(Shape(100000, 1))); return true; }, IA,
        "numpy_str: expected at most 32 dimensions");
    ok("repr_float of NaN and -inf as Python", [] { return attn::repr_float(std::nan("")) == "nan" && attn::repr_float(-INFINITY) == "-inf"; });
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (values): every case has its exact outcome") {
    run_table("values", value_cases());
}

}  // namespace test_bad_input_values
