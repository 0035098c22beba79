// Tests of attn/print.hpp: every expected string comes from the oracle file recorded with
// PyTorch 1.13 / NumPy 1.24 (tools/oracle/print_cases.py -> data/oracle/print_cases.json) or
// verbatim from the notebooks' printed output; none is produced by this library.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xoperation.hpp>

#include "oracle.hpp"
#include "textbook/book.hpp"
#include "attn/print/print.hpp"
#include "attn/core/tensor.hpp"

namespace test_print {  // every test file is a namespace of its own (tests/meson.build)

using attn::BoolTensor;
using attn::LongTensor;
using attn::PrintOptions;
using attn::Shape;
using attn::Tensor;
using nlohmann::json;

namespace {

template <class T>
xt::xarray<T> make(const Shape& shape, const std::vector<T>& flat) {
    auto t = xt::xarray<T>::from_shape(shape);
    REQUIRE(t.size() == flat.size());
    std::copy(flat.begin(), flat.end(), t.begin());
    return t;
}

PrintOptions options_of(const json& o) {
    PrintOptions opts;
    opts.precision = o.at("precision").get<int>();
    opts.linewidth = o.at("linewidth").get<int>();
    opts.threshold = o.at("threshold").get<int>();
    opts.edgeitems = o.at("edgeitems").get<int>();
    if (!o.at("sci_mode").is_null()) opts.sci_mode = o.at("sci_mode").get<bool>();
    return opts;
}

/// Checks one string; on a mismatch reports the case, the expected and the actual text.
bool same(const std::string& what, const std::string& expected, const std::string& actual) {
    if (expected == actual) return true;
    FAIL_CHECK(what << "\n--- expected ---\n" << expected << "\n--- actual ---\n" << actual << "\n---");
    return false;
}

/// Parses whitespace/bracket separated decimal numbers (NumPy's printed text) into float32
/// values (strtof: the nearest float32, which identifies the printed value).
std::vector<float> parse_numbers(const std::string& text) {
    std::vector<float> out;
    std::string token;
    auto flush = [&] {
        if (!token.empty()) {
            out.push_back(std::strtof(token.c_str(), nullptr));
            token.clear();
        }
    };
    for (char c : text) {
        if (c == '[' || c == ']' || c == ' ' || c == '\n' || c == ',') {
            flush();
        } else {
            token += c;
        }
    }
    flush();
    return out;
}

Tensor tril_ones(std::size_t n) {
    Tensor t = xt::zeros<float>({n, n});
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j <= i; ++j) t(i, j) = 1.0f;
    return t;
}

}  // namespace

TEST_CASE("oracle file has provenance and cases") {
    const auto& doc = test::oracle_file("print_cases.json");
    REQUIRE(doc.contains("provenance"));
    CHECK(doc["provenance"]["torch"].get<std::string>().rfind("1.13", 0) == 0);
    CHECK(doc["provenance"]["numpy"].get<std::string>().rfind("1.24", 0) == 0);
    REQUIRE(doc["cases"].size() > 100);
}

TEST_CASE("repr and numpy_str match the PyTorch / NumPy oracle") {
    std::size_t checked = 0, failed = 0;
    for (const auto& c : test::oracle_file("print_cases.json")["cases"]) {
        const auto name = c["name"].get<std::string>();
        const auto dtype = c["dtype"].get<std::string>();
        const auto shape = c["shape"].get<Shape>();
        const PrintOptions opts = options_of(c["options"]);
        const auto expected_torch = c["torch"].get<std::string>();
        if (dtype == "float32") {
            const Tensor t = test::oracle_bits_tensor(shape, c["bits"]);
            if (!same(name + " (torch repr)", expected_torch, attn::repr(t, opts))) ++failed;
            if (!same(name + " (numpy str)", c["numpy"].get<std::string>(), attn::numpy_str(t))) ++failed;
            checked += 2;
        } else if (dtype == "int64") {
            const LongTensor t = test::oracle_long_tensor(c);
            if (!same(name + " (torch repr)", expected_torch, attn::repr(t, opts))) ++failed;
            ++checked;
        } else if (dtype == "bool") {
            const BoolTensor t = test::oracle_bool_tensor(c);
            if (!same(name + " (torch repr)", expected_torch, attn::repr(t, opts))) ++failed;
            ++checked;
        } else {
            FAIL("unknown dtype " << dtype << " in case " << name);
        }
    }
    INFO("checked " << checked << " strings, " << failed << " mismatches");
    CHECK(failed == 0);
    CHECK(checked > 200);
}

/// repr_tuple takes an initializer list; spread a runtime list of items into one.
std::string repr_tuple_of(const std::vector<std::string>& v) {
    switch (v.size()) {
        case 0: return attn::repr_tuple({});
        case 1: return attn::repr_tuple({v[0]});
        case 2: return attn::repr_tuple({v[0], v[1]});
        case 3: return attn::repr_tuple({v[0], v[1], v[2]});
        case 4: return attn::repr_tuple({v[0], v[1], v[2], v[3]});
        case 5: return attn::repr_tuple({v[0], v[1], v[2], v[3], v[4]});
        case 6: return attn::repr_tuple({v[0], v[1], v[2], v[3], v[4], v[5]});
        case 7: return attn::repr_tuple({v[0], v[1], v[2], v[3], v[4], v[5], v[6]});
        case 8: return attn::repr_tuple({v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
        default: throw std::invalid_argument("repr_tuple_of: too many items");
    }
}

TEST_CASE("repr_tuple matches IPython's pretty printer (oracle)") {
    const auto& doc = test::oracle_file("print_cases.json");
    if (!doc.contains("tuples") || doc["tuples"].empty()) {
        WARN("the oracle has no tuple cases (no IPython when it was recorded)");
        return;
    }
    std::size_t failed = 0;
    for (const auto& c : doc["tuples"]) {
        const auto name = c["name"].get<std::string>();
        const auto items = c["items"].get<std::vector<std::string>>();
        if (!same(name + " (IPython tuple)", c["ipython"].get<std::string>(), repr_tuple_of(items))) ++failed;
    }
    CHECK(failed == 0);
    CHECK(doc["tuples"].size() >= 10);
}

TEST_CASE("the process-wide options are used by default") {
    const PrintOptions saved = attn::printoptions();
    const Tensor t = attn::scalar_tensor(4.54f);
    CHECK(attn::repr(t) == "tensor(4.5400)");
    attn::set_printoptions(2, 200);
    CHECK(attn::printoptions().precision == 2);
    CHECK(attn::printoptions().linewidth == 200);
    CHECK(attn::repr(t) == "tensor(4.54)");
    attn::printoptions() = saved;
}

TEST_CASE("set_printoptions rejects bad values") {
    const PrintOptions saved = attn::printoptions();
    CHECK_THROWS_AS(attn::set_printoptions(-1, 80), std::invalid_argument);
    CHECK_THROWS_AS(attn::set_printoptions(4, 0), std::invalid_argument);
    CHECK_THROWS_AS(attn::set_printoptions(4, -5), std::invalid_argument);
    // a rejected call leaves the options unchanged
    CHECK(attn::printoptions().precision == saved.precision);
    CHECK(attn::printoptions().linewidth == saved.linewidth);
    PrintOptions bad;
    bad.precision = -2;
    CHECK_THROWS_AS(attn::repr(attn::scalar_tensor(1.0f), bad), std::invalid_argument);
}

TEST_CASE("repr of torch.Size and bool") {
    CHECK(attn::repr(Shape{2, 6, 3}) == "torch.Size([2, 6, 3])");
    CHECK(attn::repr(Shape{5}) == "torch.Size([5])");
    CHECK(attn::repr(Shape{}) == "torch.Size([])");
    CHECK(attn::repr_bool(true) == "True");
    CHECK(attn::repr_bool(false) == "False");
}

// ---- verbatim from the notebooks --------------------------------------------------------

TEST_CASE("notebook 002 In [5]: tuple of the simple mask and its shape") {
    const std::string expected =
        "(tensor([[1., 0., 0., 0., 0., 0.],\n"
        "         [1., 1., 0., 0., 0., 0.],\n"
        "         [1., 1., 1., 0., 0., 0.],\n"
        "         [1., 1., 1., 1., 0., 0.],\n"
        "         [1., 1., 1., 1., 1., 0.],\n"
        "         [1., 1., 1., 1., 1., 1.]]),\n"
        " torch.Size([6, 6]))";
    const Tensor mask = tril_ones(6);
    same("002 In [5]", expected, attn::repr_tuple({attn::repr(mask, PrintOptions{}), attn::repr(Shape{6, 6})}));
}

TEST_CASE("notebook 002 In [9]: triu mask and its bool version") {
    const std::string expected =
        "tensor([[0., 1., 1., 1., 1., 1.],\n"
        "        [0., 0., 1., 1., 1., 1.],\n"
        "        [0., 0., 0., 1., 1., 1.],\n"
        "        [0., 0., 0., 0., 1., 1.],\n"
        "        [0., 0., 0., 0., 0., 1.],\n"
        "        [0., 0., 0., 0., 0., 0.]])\n"
        "\n"
        "tensor([[False,  True,  True,  True,  True,  True],\n"
        "        [False, False,  True,  True,  True,  True],\n"
        "        [False, False, False,  True,  True,  True],\n"
        "        [False, False, False, False,  True,  True],\n"
        "        [False, False, False, False, False,  True],\n"
        "        [False, False, False, False, False, False]])";
    const Tensor mask = 1.0f - tril_ones(6);
    const BoolTensor mask_bool = xt::not_equal(mask, 0.0f);
    // print(f'''{mask}\n\n{mask.bool()}''')
    same("002 In [9]", expected, attn::repr(mask, PrintOptions{}) + "\n\n" + attn::repr(mask_bool, PrintOptions{}));
}

TEST_CASE("notebook 002 In [10]: a multi-line item with a suffix line in a tuple") {
    // The tensor's own repr (with the grad_fn line this library never prints) is the
    // notebook's text with the tuple's one-space continuation indent removed.
    const std::string tensor_repr =
        "tensor([[0.2899,   -inf,   -inf,   -inf,   -inf,   -inf],\n"
        "        [0.4656, 0.1723,   -inf,   -inf,   -inf,   -inf],\n"
        "        [0.4594, 0.1703, 0.1731,   -inf,   -inf,   -inf],\n"
        "        [0.2642, 0.1024, 0.1036, 0.0186,   -inf,   -inf],\n"
        "        [0.2183, 0.0874, 0.0882, 0.0177, 0.0786,   -inf],\n"
        "        [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]],\n"
        "       grad_fn=<MaskedFillBackward0>)";
    const std::string expected =
        "(tensor([[0.2899,   -inf,   -inf,   -inf,   -inf,   -inf],\n"
        "         [0.4656, 0.1723,   -inf,   -inf,   -inf,   -inf],\n"
        "         [0.4594, 0.1703, 0.1731,   -inf,   -inf,   -inf],\n"
        "         [0.2642, 0.1024, 0.1036, 0.0186,   -inf,   -inf],\n"
        "         [0.2183, 0.0874, 0.0882, 0.0177, 0.0786,   -inf],\n"
        "         [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]],\n"
        "        grad_fn=<MaskedFillBackward0>),\n"
        " torch.Size([6, 6]))";
    same("002 In [10]", expected, attn::repr_tuple({tensor_repr, attn::repr(Shape{6, 6})}));
}

TEST_CASE("notebook 001 In [5] and In [19]: one-line tuples of int64 tensors and sizes") {
    PrintOptions p2;  // notebook 001 runs with set_printoptions(precision=2, linewidth=200)
    p2.precision = 2;
    p2.linewidth = 200;
    const LongTensor tokens = {95, 11, 75, 30, 31};
    same("001 In [5]", "(tensor([95, 11, 75, 30, 31]), torch.Size([5]))",
         attn::repr_tuple({attn::repr(tokens, p2), attn::repr(Shape{5})}));
    const LongTensor argmax = {0, 66, 81, 43, 87};
    same("001 In [19]", "(tensor([ 0, 66, 81, 43, 87]), torch.Size([5, 100]), torch.Size([5]))",
         attn::repr_tuple({attn::repr(argmax, p2), attn::repr(Shape{5, 100}), attn::repr(Shape{5})}));
}

TEST_CASE("notebook 001 In [8]: tuple item with a trailing suffix on its last line") {
    const std::string tensor_repr =
        "tensor([[-0.82, -0.36, -0.15,  0.76, -0.32],\n"
        "        [ 0.03, -0.23, -0.01,  0.25, -0.73],\n"
        "        [ 0.43,  0.37, -0.27,  0.20, -0.52],\n"
        "        [ 0.19, -0.01,  0.19,  0.06, -0.21],\n"
        "        [-0.04,  0.16, -0.30, -0.12, -0.27]], grad_fn=<DivBackward0>)";
    const std::string expected =
        "(tensor([[-0.82, -0.36, -0.15,  0.76, -0.32],\n"
        "         [ 0.03, -0.23, -0.01,  0.25, -0.73],\n"
        "         [ 0.43,  0.37, -0.27,  0.20, -0.52],\n"
        "         [ 0.19, -0.01,  0.19,  0.06, -0.21],\n"
        "         [-0.04,  0.16, -0.30, -0.12, -0.27]], grad_fn=<DivBackward0>),\n"
        " torch.Size([5, 5]))";
    same("001 In [8]", expected, attn::repr_tuple({tensor_repr, attn::repr(Shape{5, 5})}));
}

TEST_CASE("notebook 000 In [21], In [22]: int64 token ids and attention mask") {
    const LongTensor ids = {2, 2, 2, 2, 2, 2, 1, 13264, 5509};
    same("000 In [21]", "tensor([    2,     2,     2,     2,     2,     2,     1, 13264,  5509])",
         attn::repr(ids, PrintOptions{}));
    const LongTensor mask = {0, 0, 0, 0, 0, 0, 1, 1, 1};
    same("000 In [22]", "tensor([0, 0, 0, 0, 0, 0, 1, 1, 1])", attn::repr(mask, PrintOptions{}));
}

TEST_CASE("notebook 004 In [36]: NumPy print of the simple mask") {
    const std::string expected =
        "[[1. 0. 0. 0. 0. 0.]\n"
        " [1. 1. 0. 0. 0. 0.]\n"
        " [1. 1. 1. 0. 0. 0.]\n"
        " [1. 1. 1. 1. 0. 0.]\n"
        " [1. 1. 1. 1. 1. 0.]\n"
        " [1. 1. 1. 1. 1. 1.]]";
    same("004 In [36]", expected, attn::numpy_str(tril_ones(6)));
}

TEST_CASE("notebook 004: NumPy prints of attention results") {
    // NumPy prints each float32 with its shortest round-trip digits cut at 8 decimals; at
    // these magnitudes that text identifies the float32 (strtof gives it back), so the
    // printed text must come back unchanged.
    struct Cell {
        const char* name;
        Shape shape;
        const char* text;
    };
    const Cell cells[] = {
        {"004 In [27]", {6, 2},
         "[[-0.07389025  0.07128991]\n"
         " [-0.07481073  0.0703093 ]\n"
         " [-0.07485619  0.07024166]\n"
         " [-0.07600163  0.06845011]\n"
         " [-0.07632761  0.06794281]\n"
         " [-0.07544428  0.06930492]]"},
        {"004 In [30]", {6, 6},
         "[[0.19212602 0.1646463  0.16516064 0.15499417 0.17211477 0.15095802]\n"
         " [0.20412546 0.16588287 0.16621484 0.14957766 0.16645327 0.1477459 ]\n"
         " [0.20356156 0.16592424 0.16624875 0.14981547 0.16641727 0.14803267]\n"
         " [0.18688802 0.1666883  0.16683646 0.15710352 0.16609134 0.15639237]\n"
         " [0.18304484 0.16685854 0.16695702 0.1588405  0.16582507 0.15847409]\n"
         " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]"},
        {"004 In [38]", {6, 6},
         "[[0.19212602 0.         0.         0.         0.         0.        ]\n"
         " [0.20412546 0.16588287 0.         0.         0.         0.        ]\n"
         " [0.20356156 0.16592424 0.16624875 0.         0.         0.        ]\n"
         " [0.18688802 0.1666883  0.16683646 0.15710352 0.         0.        ]\n"
         " [0.18304484 0.16685854 0.16695702 0.1588405  0.16582507 0.        ]\n"
         " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]"},
        {"004 In [39]", {6, 6},
         "[[1.         0.         0.         0.         0.         0.        ]\n"
         " [0.551678   0.44832197 0.         0.         0.         0.        ]\n"
         " [0.3799672  0.30971354 0.31031927 0.         0.         0.        ]\n"
         " [0.27584285 0.24602847 0.24624716 0.23188154 0.         0.        ]\n"
         " [0.21751536 0.1982809  0.19839793 0.18875293 0.1970528  0.        ]\n"
         " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]"},
        {"004 In [41]", {6, 2},
         "[[-0.08721808  0.02858998]\n"
         " [-0.09906914  0.05009485]\n"
         " [-0.09994501  0.06334987]\n"
         " [-0.0982549   0.04894815]\n"
         " [-0.05144592  0.10984372]\n"
         " [-0.07544428  0.06930492]]"},
        {"004 In [43]", {6, 6},
         "[[0.2899089        -inf       -inf       -inf       -inf       -inf]\n"
         " [0.4656424  0.17225963       -inf       -inf       -inf       -inf]\n"
         " [0.45943564 0.17031771 0.17308104       -inf       -inf       -inf]\n"
         " [0.26415503 0.10239156 0.10364803 0.01864095       -inf       -inf]\n"
         " [0.21828783 0.08735328 0.08818767 0.01770909 0.0785667        -inf]\n"
         " [0.34078205 0.12703359 0.12903105 0.01979299 0.12896936 0.00775672]]"},
        {"004 In [51]", {6, 6},
         "[[0.         0.         0.         0.         0.         0.        ]\n"
         " [0.         0.89664394 0.         0.         0.         0.        ]\n"
         " [0.75993437 0.619427   0.6206385  0.         0.         0.        ]\n"
         " [0.5516857  0.         0.         0.         0.         0.        ]\n"
         " [0.4350308  0.3965619  0.39679593 0.         0.39410567 0.        ]\n"
         " [0.         0.         0.33313617 0.         0.         0.30575907]]"},
        {"004 In [62]", {2, 6, 2},
         "[[[-0.90384054  0.44320962]\n"
         "  [-0.4367989   0.21418986]\n"
         "  [-0.48492774 -0.13410191]\n"
         "  [-0.58335876  0.00813284]\n"
         "  [-0.62186474 -0.05263354]\n"
         "  [-0.14171308 -0.05048606]]\n"
         "\n"
         " [[ 0.          0.        ]\n"
         "  [-1.1748701   0.0115522 ]\n"
         "  [-0.7732556   0.00728327]\n"
         "  [-0.9139531  -0.27685684]\n"
         "  [-0.76786053 -0.07353682]\n"
         "  [-0.6748546  -0.09838524]]]"},
        {"004 In [64]", {6, 2},
         "[[0.28226054 0.04943101]\n"
         " [0.27218515 0.11528094]\n"
         " [0.27345967 0.13080472]\n"
         " [0.20599014 0.02699874]\n"
         " [0.0383919  0.12273508]\n"
         " [0.2399512  0.07629689]]"},
    };
    for (const auto& cell : cells) {
        const Tensor t = make<float>(cell.shape, parse_numbers(cell.text));
        same(cell.name, cell.text, attn::numpy_str(t));
    }
}

}  // namespace test_print
