// The bad-input table (issues 15 and 19), tensors: factories and shapes with extreme sizes,
// sizes whose calculation overflows (one checked multiply and add, checked_mul / checked_add),
// arrays whose shape does not match their storage, zero-size dimensions, plain shape errors
// of the functional API. The machinery and the expected values' sources: bad_input.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/modules/gpt2.hpp"
#include "attn/attention/padding.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/torch.hpp"

namespace test_bad_input_tensors {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

std::vector<Case> tensor_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };
    // --- huge sizes: every factory refuses a shape whose size calculation overflows (PyTorch:
    // "Storage size calculation overflowed with sizes=[...]") or exceeds the memory limit.
    const std::vector<std::pair<std::string, Shape>> huge = {
        {"[2^32, 2^32]", {K, K}},
        {"[2^33, 2^31]", {K * 2, K / 2}},
        {"[4, 2^62]", {4, std::size_t{1} << 62}},
        {"[2^62, 2^62, 0]", {std::size_t{1} << 62, std::size_t{1} << 62, 0}},
        {"[2^61] (bytes overflow)", {std::size_t{1} << 62}},
        {"[2^40] (over the limit)", {std::size_t{1} << 40}},
    };
    for (const auto& [label, shape] : huge) {
        const std::string what = label.find("limit") != std::string::npos ? "more than the limit"
                                 : "storage size calculation overflowed";
        const Shape s = shape;
        err("zeros " + label, [s] { attn::zeros(s); return true; }, LE, "zeros: cannot allocate a tensor of shape " + shape_str(s));
        err("ones " + label, [s] { attn::ones(s); return true; }, LE, what);
        err("rand " + label, [s] { attn::rand(s); return true; }, LE, "rand: cannot allocate");
        err("randn " + label, [s] { attn::randn(s); return true; }, LE, "randn: cannot allocate");
        err("randint " + label, [s] { attn::randint(0, 5, s); return true; }, LE, "randint: cannot allocate");
        err("Dropout::keep_mask " + label, [s] { nn::Dropout(0.5).keep_mask(s); return true; }, LE,
            "Dropout::keep_mask: cannot allocate");
    }
    // The cases.
    err("issue: attn::zeros({2^32, 2^32}) (was: full shape, 0 elements)", RUN(attn::zeros({K, K})), LE,
        "shape [4294967296, 4294967296]: storage size calculation overflowed");
    err("issue: attn::softmax(attn::rand({2^32, 2^32}))", RUN(attn::softmax(attn::rand({K, K}))), LE, "rand: cannot allocate");
    err("issue: Linear(2^62, 4) (was: 0-element weight)", RUN(nn::Linear(std::size_t{1} << 62, 4)), LE,
        "Linear (weight [out_features, in_features]): cannot allocate a tensor of shape [4, 4611686018427387904]");
    err("issue: Embedding(2^40, 2^30) (was: segfault on lookup)",
        RUN(nn::Embedding(std::size_t{1} << 40, std::size_t{1} << 30)), LE, "Embedding (weight");
    err("issue: attn::sum(attn::ones({2^33, 2^31}), 0) (was: minutes)", RUN(attn::sum(attn::ones({K * 2, K / 2}), 0)), LE,
        "ones: cannot allocate");
    err("rand_parameter 2^32 x 2^32", RUN(nn::rand_parameter(K, K)), LE, "rand: cannot allocate");
    err("arange(2^62) bytes overflow", RUN(attn::arange(std::int64_t{1} << 62)), LE, "arange: cannot allocate");
    err("matmul [2^32, 0] @ [0, 2^32]", RUN(attn::matmul(attn::zeros({K, 0}), attn::zeros({0, K}))), LE,
        "matmul: cannot allocate a tensor of shape [4294967296, 4294967296]");
    err("Linear(0, 2^32) on [2^32, 0]", RUN(nn::Linear(0, K, false)(attn::zeros({K, 0}))), LE, "Linear (output)");
    err("Embedding whose weight was replaced by a broken one", [] {
        nn::Embedding e(3, 2);
        e.weight = broken();
        e(LongTensor{0});
        return true;
    }, LE, "its element count overflows");
    err("view to [2^32, 2^32]", RUN(attn::view(attn::zeros({0}), {long(K), long(K)})), LE, "overflows");
    err("view -1 beside sizes that overflow", RUN(attn::view(attn::zeros({4}), {-1, long(K), long(K)})), LE, "overflows");

    // --- tensors whose shape does not match their storage (made outside the library).
    const std::string storage = "its element count overflows";
    err("broken: select", RUN(attn::select(broken(), 0)), LE, storage);
    err("broken: attn::sum(x, 0)", RUN(attn::sum(broken(), 0)), LE, storage);
    err("broken: attn::sum(x)", RUN(attn::sum(broken())), LE, storage);
    err("broken: softmax", RUN(attn::softmax(broken())), LE, storage);
    err("broken: exp", RUN(attn::exp(broken())), LE, storage);
    err("broken: transpose", RUN(attn::transpose(broken(), 0, 1)), LE, storage);
    err("broken: matmul", RUN(attn::matmul(attn::zeros({2, 2}), broken())), LE, storage);
    err("broken: masked_fill", RUN(attn::masked_fill(broken(), BoolTensor(xt::zeros<bool>(Shape{1})), 1.0f)), LE, storage);
    err("broken: to_bool", RUN(attn::to_bool(broken())), LE, storage);
    err("broken: view", RUN(attn::view(broken(), {-1})), LE, storage);
    err("broken: cat", RUN(attn::cat({broken(), broken()}, 0)), LE, storage);
    err("broken: tril", RUN(attn::tril(broken())), LE, storage);
    err("broken: Linear forward input", RUN(nn::Linear(3, 2)(Tensor(xt::xarray<float>::from_shape({K, K, 3})))), LE, storage);
    err("broken: Dropout", RUN(nn::Dropout(0.5)(broken())), LE, storage);
    err("broken: uniform_", [] { Tensor b = broken(); attn::uniform_(b, 0, 1); return true; }, LE, storage);
    err("broken: argmax", RUN(attn::argmax(broken(), 0)), LE, storage);
    err("broken: slice", RUN(attn::slice(broken(), 0, 0, 1)), LE, storage);

    // --- zero-size dimensions: PyTorch's results.
    ok("zeros({0, 3}) is [0, 3]", [] { return same_shape(attn::zeros({0, 3}), {0, 3}); });
    // PyTorch 1.13 makes it; its strides (2^124) overflow every signed 64-bit integer, and
    // xtensor's strides are signed: refused, as PyTorch 2's "Stride calculation overflowed".
    err("zeros({0, 2^62, 2^62}): its strides overflow (was: UB computing them)",
        RUN(attn::zeros({0, std::size_t{1} << 62, std::size_t{1} << 62})), LE,
        "zeros: cannot allocate a tensor of shape [0, 4611686018427387904, 4611686018427387904]: stride calculation overflowed");
    ok("zeros({0, 2^31, 2^31}) has 0 elements (PyTorch too)",
       [] { const Tensor z = attn::zeros({0, std::size_t{1} << 31, std::size_t{1} << 31}); return z.size() == 0; });
    ok("Linear(0, 3)(attn::zeros({2, 0})) is the zero bias [2, 3]", [] {
        manual_seed(0);
        const nn::Linear l(0, 3);
        return all_equal(l(attn::zeros({2, 0})), {2, 3}, {0, 0, 0, 0, 0, 0});
    });
    ok("Linear(0, 3) draws 3 uniforms for its bias (torch.rand(1) = 0.13203048706054688 next)", [] {
        manual_seed(0);
        const nn::Linear l(0, 3);
        return attn::rand({1}).data()[0] == 0.13203048706054688f;
    });
    ok("Linear(0, 3, bias=false) draws nothing (torch.rand(1) = 0.49625658988952637 next)", [] {
        manual_seed(0);
        const nn::Linear l(0, 3, false);
        return attn::rand({1}).data()[0] == 0.49625658988952637f && all_equal(l(attn::zeros({2, 0})), {2, 3}, {0, 0, 0, 0, 0, 0});
    });
    ok("Linear(in=0) given as a [3, 0] weight: forward is the bias (was: SIGFPE)", [] {
        const nn::Linear l(attn::zeros({3, 0}), attn::tensor({1.0f, 2.0f, 3.0f}));
        return all_equal(l(attn::zeros({2, 0})), {2, 3}, {1, 2, 3, 1, 2, 3});
    });
    ok("Linear(3, 0)(attn::zeros({2, 3})) is [2, 0]", [] { return same_shape(nn::Linear(3, 0)(attn::zeros({2, 3})), {2, 0}); });
    ok("Linear(3, 2) on [0, 3] is [0, 2]", [] { return same_shape(nn::Linear(3, 2)(attn::zeros({0, 3})), {0, 2}); });
    ok("Embedding(0, 3) of no ids is [0, 3] and draws nothing", [] {
        manual_seed(0);
        const nn::Embedding e(0, 3);
        const bool shape_ok = same_shape(e(LongTensor(xt::zeros<std::int64_t>(Shape{0}))), {0, 3});
        return shape_ok && attn::rand({1}).data()[0] == 0.49625658988952637f;
    });
    ok("Embedding(3, 0) lookup of 2 ids is [2, 0]", [] {
        return same_shape(nn::Embedding(3, 0)(LongTensor{1, 2}), {2, 0});
    });
    ok("sum(attn::zeros({0, 3}), 0) is three zeros", [] { return all_equal(attn::sum(attn::zeros({0, 3}), 0), {3}, {0, 0, 0}); });
    ok("sum(attn::zeros({3, 0}), 0) is [0]", [] { return same_shape(attn::sum(attn::zeros({3, 0}), 0), {0}); });
    ok("sum(attn::zeros({3, 0}), 1) is three zeros", [] { return all_equal(attn::sum(attn::zeros({3, 0}), 1), {3}, {0, 0, 0}); });
    ok("sum(attn::zeros({2, 0, 3}), 1) is [2, 3] zeros", [] { return all_equal(attn::sum(attn::zeros({2, 0, 3}), 1), {2, 3}, {0, 0, 0, 0, 0, 0}); });
    ok("sum of [2, 0] is 0", [] { return all_equal(attn::sum(attn::zeros({2, 0})), {}, {0}); });
    ok("softmax of [2, 0] is [2, 0]", [] { return same_shape(attn::softmax(attn::zeros({2, 0})), {2, 0}); });
    ok("softmax of [0, 3] is [0, 3]", [] { return same_shape(attn::softmax(attn::zeros({0, 3})), {0, 3}); });
    ok("log_softmax of [2, 0] is [2, 0]", [] { return same_shape(attn::log_softmax(attn::zeros({2, 0})), {2, 0}); });
    ok("matmul [2, 0] @ [0, 3] is [2, 3] zeros", [] { return all_equal(attn::matmul(attn::zeros({2, 0}), attn::zeros({0, 3})), {2, 3}, {0, 0, 0, 0, 0, 0}); });
    ok("cat of two [2, 0] along 1 is [2, 0]", [] { return same_shape(attn::cat({attn::zeros({2, 0}), attn::zeros({2, 0})}, 1), {2, 0}); });
    ok("stack of one [0] is [1, 0]", [] { return same_shape(attn::stack({attn::zeros({0})}, 0), {1, 0}); });
    ok("tril of [0, 3] is [0, 3]", [] { return same_shape(attn::tril(attn::ones({0, 3})), {0, 3}); });
    ok("triu of [3, 0] is [3, 0]", [] { return same_shape(attn::triu(attn::ones({3, 0}), 1), {3, 0}); });
    ok("argmax of [0, 3] along 1 is [0]", [] { return shape_of(attn::argmax(attn::zeros({0, 3}), 1)) == Shape{0}; });
    ok("transpose of [0, 3] is [3, 0]", [] { return same_shape(attn::transpose(attn::zeros({0, 3}), 0, 1), {3, 0}); });
    ok("slice [4][3:1] is [0]", [] { return same_shape(attn::slice(attn::zeros({4}), 0, 3, 1), {0}); });
    ok("slice [4][-10:10] is [4]", [] { return same_shape(attn::slice(attn::zeros({4}), 0, -10, 10), {4}); });
    ok("arange(0) is [0]", [] { return shape_of(attn::arange(0)) == Shape{0}; });
    ok("rand of [0] draws nothing", [] {
        manual_seed(0);
        attn::rand({0});
        return attn::rand({1}).data()[0] == 0.49625658988952637f;
    });
    ok("split of [2, 0] by 2 along 1 is one [2, 0] chunk", [] {
        const auto parts = attn::split(attn::zeros({2, 0}), 2, 1);
        return parts.size() == 1 && same_shape(parts[0], {2, 0});
    });
    ok("max_abs_diff of empties is 0", [] { return attn::max_abs_diff(attn::zeros({0}), attn::zeros({0})) == 0.0f; });
    ok("Dropout(0.5) of [0, 3] is [0, 3] and draws nothing", [] {
        manual_seed(0);
        const bool shape_ok = same_shape(nn::Dropout(0.5)(attn::zeros({0, 3})), {0, 3});
        return shape_ok && attn::rand({1}).data()[0] == 0.49625658988952637f;
    });
    ok("repr of [2, 0]", [] { return attn::repr(attn::zeros({2, 0})) == "tensor([], size=(2, 0))"; });

    err("masked_fill mask [4, 3] over [3, 4]", RUN(attn::masked_fill(attn::zeros({3, 4}), BoolTensor(xt::zeros<bool>(Shape{4, 3})), 1.0f)), IA,
        "masked_fill (mask): expected a shape broadcastable to [3, 4], got [4, 3]");
    err("masked_fill mask of higher rank", RUN(attn::masked_fill(attn::zeros({3}), BoolTensor(xt::zeros<bool>(Shape{2, 3})), 1.0f)), IA,
        "broadcastable to [3], got [2, 3]");
    err("masked_fill_ that does not broadcast", [] { Tensor x = attn::zeros({3, 4}); attn::masked_fill_(x, BoolTensor(xt::zeros<bool>(Shape{3, 5})), 1.0f); return true; }, IA,
        "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");

    // --- plain shape errors.
    err("matmul inner dims", RUN(attn::matmul(attn::zeros({2, 3}), attn::zeros({4, 2}))), IA, "matmul: expected the second argument to have 3 rows");
    err("matmul 0-d", RUN(attn::matmul(attn::scalar_tensor(1.0f), attn::zeros({2}))), IA, "matmul: expected both arguments at least 1-D");
    err("matmul batch dims", RUN(attn::matmul(attn::zeros({2, 2, 3}), attn::zeros({3, 3, 2}))), IA, "matmul (batch dimensions): shapes [2] and [3] do not broadcast");
    err("transpose dim 2 of 2-D", RUN(attn::transpose(attn::zeros({3, 4}), 0, 2)), IA, "transpose: dimension 2 out of range for a 2-D tensor (expected [-2, 1])");
    err("sum dim -3 of 2-D", RUN(attn::sum(attn::zeros({3, 4}), -3)), IA, "sum: dimension -3 out of range");
    err("sum dim of 0-d", RUN(attn::sum(attn::scalar_tensor(1.0f), 0)), IA, "sum: dimension 0 out of range for a 0-D tensor");
    err("select index 3 of 3", RUN(attn::select(attn::zeros({3, 4}), 3)), IA, "select: index 3 out of range for dimension 0 of [3, 4]");
    err("select index -4 of 3", RUN(attn::select(attn::zeros({3, 4}), -4)), IA, "select: index -4 out of range");
    err("select of 0-d", RUN(attn::select(attn::scalar_tensor(1.0f), 0)), IA, "select: expected at least 1-D, got []");
    err("slice dim 1 of 1-D", RUN(attn::slice(attn::zeros({3}), 1, 0, 1)), IA, "slice: dimension 1 out of range");
    err("stack of none", RUN(attn::stack({}, 0)), IA, "stack: expected a non-empty list");
    err("stack of different shapes", RUN(attn::stack({attn::zeros({2}), attn::zeros({3})}, 0)), IA, "stack: expected [2], got [3]");
    err("cat of none", RUN(attn::cat({}, 0)), IA, "cat: expected a non-empty list");
    err("cat of different ranks", RUN(attn::cat({attn::zeros({2, 2}), attn::zeros({2})}, 0)), IA, "cat: expected [2, 2] except dim 0, got [2]");
    err("cat of different widths", RUN(attn::cat({attn::zeros({2, 2}), attn::zeros({2, 3})}, 0)), IA, "(all but dim 0 equal), got [2, 3]");
    err("view [4, -1] of 6", RUN(attn::view(attn::zeros({2, 3}), {4, -1})), IA, "view: shape [4, 1] is invalid for input [2, 3] of 6 elements");
    err("view two -1", RUN(attn::view(attn::zeros({2, 3}), {-1, -1})), IA, "view: only one dimension can be -1");
    err("view -2", RUN(attn::view(attn::zeros({2, 3}), {-2, 3})), IA, "view: invalid size -2");
    err("view [-1, 0] of 0 elements (ambiguous, as PyTorch)", RUN(attn::view(attn::zeros({0}), {-1, 0})), IA,
        "view: cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any value and is ambiguous");
    err("softmax of 0-d", RUN(attn::softmax(attn::scalar_tensor(1.0f))), IA, "softmax: expected at least 1-D, got []");
    ok("softmax dim 0 of 2-D zeros is 0.5 everywhere (was: refused)",
       [] { return all_equal(attn::softmax(attn::zeros({2, 3}), 0), {2, 3}, std::vector<float>(6, 0.5f)); });
    ok("log_softmax dim -2 of 2-D zeros is -log(2) everywhere (was: refused)",
       [] { return all_equal(attn::log_softmax(attn::zeros({2, 3}), -2), {2, 3}, std::vector<float>(6, -0.693147182f)); });
    err("softmax dim 2 of 2-D", RUN(attn::softmax(attn::zeros({2, 3}), 2)), IA, "softmax: dimension 2 out of range");
    err("log_softmax of 0-d", RUN(attn::log_softmax(attn::scalar_tensor(1.0f))), IA, "log_softmax");
    err("T of 3-D", RUN(attn::T(attn::zeros({2, 3, 4}))), IA, "T: expected [*, *] (2-D), got [2, 3, 4]");
    err("tril of 1-D", RUN(attn::tril(attn::zeros({3}))), IA, "tril: expected at least 2-D [*, *], got [3]");
    err("argmax over an empty dim", RUN(attn::argmax(attn::zeros({3, 0}), 1)), IA, "argmax: expected a non-empty dimension 1, got [3, 0]");
    err("allclose shapes differ", RUN(attn::allclose(attn::zeros({2}), attn::zeros({3}))), IA, "allclose: expected [2], got [3]");
    err("split size 0", RUN(attn::split(attn::zeros({2, 3}), 0, 1)), IA, "split: expected split_size > 0, got 0");
    err("cross_entropy target 3 of 3 classes", RUN(attn::cross_entropy(attn::zeros({2, 3}), LongTensor{0, 3})), IA, "3");
    err("cross_entropy targets of the wrong length", RUN(attn::cross_entropy(attn::zeros({2, 3}), LongTensor{0})), IA, "cross_entropy");
    err("arange(-1)", RUN(attn::arange(-1)), IA, "arange: expected n >= 0, got -1");
    err("randint low == high", RUN(attn::randint(3, 3, {2})), IA, "randint: expected low < high, got low=3 >= high=3");
    err("randint(0, ...)", RUN(attn::randint(0, {2})), IA, "randint: expected low < high");
    err("tensor rows of different lengths", RUN(attn::tensor({{1.0f, 2.0f}, {3.0f}})), IA, "tensor: expected rows of length 2, got row 1 of length 1");
    err("ids_tensor ragged", RUN(ids_tensor({{1, 2}, {3}})), IA, "sequence 1 has length 1");
    err("ids_tensor empty", RUN(ids_tensor({})), IA, "ids_tensor: expected at least one sequence");
    err("pad_batch empty", RUN(pad_batch({}, 0, PaddingSide::left)), IA, "pad_batch: expected at least one sequence");
    err("pad_sequences widths differ", RUN(pad_sequences({attn::zeros({2, 3}), attn::zeros({2, 4})}, PaddingSide::left)), IA,
        "pad_sequences (sequence 1): expected [*, 3], got [2, 4]");
    err("pad_sequences empty", RUN(pad_sequences({}, PaddingSide::left)), IA, "pad_sequences: expected at least one sequence");

    // --- issue 19: empty results whose block sizes do not fit, and batch sizes that overflow.
    // (A [0, 2^32, 2^32] tensor cannot be made: its strides overflow; 2^31 is the largest.)
    const std::size_t K31 = std::size_t{1} << 31;
    const Shape empty_huge = {0, K31, K31};
    err("zeros [0, 2^32, 2^32]: strides of 2^64", [] { attn::zeros({0, K, K}); return true; }, LE, "stride calculation overflowed");
    ok("cat of two [0, 2^31, 2^31] is [0, 2^31, 2^31], as PyTorch (was: length_error)",
       [empty_huge] { return same_shape(attn::cat({attn::zeros(empty_huge), attn::zeros(empty_huge)}, 0), empty_huge); });
    ok("stack of one [0, 2^31, 2^31] is [1, 0, 2^31, 2^31] (was: length_error)",
       [empty_huge, K31] { return same_shape(attn::stack({attn::zeros(empty_huge)}, 0), {1, 0, K31, K31}); });
    ok("transpose of [0, 2^31, 2^31]", [empty_huge, K31] { return same_shape(attn::transpose(attn::zeros(empty_huge), 0, 1), {K31, 0, K31}); });
    ok("softmax of [0, 2^31, 2^31]", [empty_huge] { return same_shape(attn::softmax(attn::zeros(empty_huge)), empty_huge); });
    ok("tril of [0, 2^31, 2^31]", [empty_huge] { return same_shape(attn::tril(attn::zeros(empty_huge)), empty_huge); });
    ok("sum over the last dim of [0, 2^31, 2^31] is [0, 2^31]", [empty_huge, K31] { return same_shape(attn::sum(attn::zeros(empty_huge), 2), {0, K31}); });
    err("sum over dim 0 of [0, 2^31, 2^31] (a [2^31, 2^31] result)", [empty_huge] { attn::sum(attn::zeros(empty_huge), 0); return true; }, LE,
        "cannot allocate");
    ok("slice of [0, 5] along 1 from 4 is [0, 1] (was: an offset applied to no storage, UB)",
       [] { return same_shape(attn::slice(attn::zeros({0, 5}), 1, 4, 5), {0, 1}); });
    ok("select of [2^62, 0] at 2^62 - 1 is [0]", [] { return same_shape(attn::select(attn::zeros({std::size_t{1} << 62, 0}), (1L << 62) - 1), {0}); });
    ok("select of [2^62, 0] at -2^62 is [0]", [] { return same_shape(attn::select(attn::zeros({std::size_t{1} << 62, 0}), -(1L << 62)), {0}); });
    ok("select of [2^63, 0] at -1 (was: -n overflowed a long)", [] { return same_shape(attn::select(attn::zeros({std::size_t{1} << 63, 0}), -1), {0}); });
    err("select of [3] at LONG_MIN", RUN(attn::select(attn::zeros({3}), std::numeric_limits<long>::min())), IA,
        "select: index -9223372036854775808 out of range for dimension 0 of [3]");
    ok("slice of [2^62, 0] from -1 is [1, 0]", [] { return same_shape(attn::slice(attn::zeros({std::size_t{1} << 62, 0}), 0, -1, LONG_MAX), {1, 0}); });
    ok("slice of [4] from -2^62 to -1 is [3]", [] { return same_shape(attn::slice(attn::zeros({4}), 0, -(1L << 62), -1), {3}); });
    ok("slice of [4] from LONG_MIN to -1 is [3] (Python's rule; PyTorch 1.13 fails internally)", [] { return same_shape(attn::slice(attn::zeros({4}), 0, LONG_MIN, -1), {3}); });
    ok("matmul [2^40, 0, 3] @ [3, 2] is [2^40, 0, 2] at once (was: 2^40 empty products, a hang)",
       [] { return same_shape(attn::matmul(attn::zeros({std::size_t{1} << 40, 0, 3}), attn::zeros({3, 2})), {std::size_t{1} << 40, 0, 2}); });
    ok("matmul [0, 1, 3] @ [3, 2] is [0, 1, 2] (was: a batch of 1 read from no storage, segfault)",
       [] { return same_shape(attn::matmul(attn::zeros({0, 1, 3}), attn::ones({3, 2})), {0, 1, 2}); });
    ok("matmul [2, 1, 2, 3] @ [0, 3, 2] is [2, 0, 2, 2]", [] { return same_shape(attn::matmul(attn::ones({2, 1, 2, 3}), attn::zeros({0, 3, 2})), {2, 0, 2, 2}); });
    err("matmul batch [2] against [3]", RUN(attn::matmul(attn::zeros({2, 1, 3}), attn::zeros({3, 3, 2}))), IA, "matmul (batch dimensions): shapes [2] and [3] do not broadcast");
    err("matmul whose broadcast batch [2^32, 2^32] overflows",
        RUN(attn::matmul(attn::zeros({K, 1, 1, 0}), attn::zeros({1, K, 0, 1}))), LE, "[4294967296, 4294967296]");
    err("cat whose joined dimension overflows", [] {
        const Tensor half = attn::zeros({std::size_t{1} << 63, 0});
        attn::cat({half, half}, 0);
        return true;
    }, LE, "cat: the joined dimension 0 overflows");
    err("arange(2^63 - 1)", RUN(attn::arange(INT64_MAX)), LE, "arange: cannot allocate");
    err("randint over the whole int64 range, 2^62 of them", RUN(attn::randint(INT64_MIN, INT64_MAX, {std::size_t{1} << 62})), LE,
        "randint: cannot allocate");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (tensors): every case has its exact outcome") {
    run_table("tensors", tensor_cases());
}

}  // namespace test_bad_input_tensors
