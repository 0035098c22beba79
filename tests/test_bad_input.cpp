// The bad-input table (issue 15): what a careful user can hand the public API that is not
// what the book does -- wrong shapes, zero and huge sizes, NaN and infinity, bad
// probabilities, heads that do not divide, too many tokens, mismatched caches, masks of the
// wrong shape, tensors whose shape does not match their storage, broken data files -- and the
// exact outcome of each: the exception type and a substring of its message naming what was
// wrong, or the result PyTorch gives.
//
// Expected values: PyTorch 1.13 (Debian's python3-torch) for every "returns" case and for
// which inputs are errors at all (`torch.zeros(2**32, 2**32)` raises "Storage size
// calculation overflowed", `nn.Linear(0, 3)(torch.zeros(2, 0))` is the bias, ...); the issue
// for the cases it lists (crashes, silent wrong answers, the hang). The substrings are this
// library's wording of what was wrong (PyTorch's own wording where the library uses it).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include <unistd.h>

#include <doctest/doctest.h>

#include "attn/attention/self_attention.hpp"
#include "attn/attention/causal.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/base_self_attention.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/attention/gpt2.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/multihead.hpp"
#include "attn/nn/nn.hpp"
#include "attn/attention/padding.hpp"
#include "attn/print/torch.hpp"
#include "attn/core/text_file.hpp"
#include "textbook/book.hpp"

namespace test_bad_input {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
namespace fs = std::filesystem;

constexpr std::size_t K = std::size_t{1} << 32;
const float inf = std::numeric_limits<float>::infinity();
const float nan_f = std::numeric_limits<float>::quiet_NaN();

enum class Outcome { returns, invalid_argument, length_error, runtime_error, out_of_range };

// One row: `run` either throws (expected type and message substring), or returns whether
// its result is the PyTorch-equal one.
struct Case {
    std::string name;
    std::function<bool()> run;
    Outcome outcome;
    std::string substring;  // for the throwing outcomes
};

const char* outcome_name(Outcome o) {
    switch (o) {
        case Outcome::returns: return "returns";
        case Outcome::invalid_argument: return "std::invalid_argument";
        case Outcome::length_error: return "std::length_error";
        case Outcome::runtime_error: return "std::runtime_error";
        case Outcome::out_of_range: return "std::out_of_range";
    }
    return "?";
}

Outcome outcome_of(const std::exception& e) {
    if (typeid(e) == typeid(std::invalid_argument)) return Outcome::invalid_argument;
    if (typeid(e) == typeid(std::length_error)) return Outcome::length_error;
    if (typeid(e) == typeid(std::runtime_error)) return Outcome::runtime_error;
    if (typeid(e) == typeid(std::out_of_range)) return Outcome::out_of_range;
    return Outcome::returns;  // never expected for an exception: reported as a mismatch
}

// A tensor made directly with xtensor, whose shape's element count overflows: xtensor gives
// it that shape and 0 elements (the library's factories refuse such a shape). xtensor's
// stride computation overflows a signed long on the way, which UBSan reports: CI runs this
// table with tests/ubsan.supp, which suppresses exactly that report.
Tensor broken() { return Tensor(xt::xarray<float>::from_shape({K, K})); }

bool same_shape(const Tensor& t, const Shape& s) { return shape_of(t) == s; }

bool all_equal(const Tensor& t, const Shape& s, const std::vector<float>& values) {
    if (shape_of(t) != s || t.size() != values.size()) return false;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float a = t.data()[i], b = values[i];
        if (std::isnan(b) ? !std::isnan(a) : (a != b || std::signbit(a) != std::signbit(b)))
            return false;
    }
    return true;
}

// ------------------------------------------------------------------------ data files

// Every directory the data-file cases made, removed when the table has run.
std::vector<fs::path>& made_dirs() {
    static std::vector<fs::path> dirs;
    return dirs;
}

// A fresh directory under the system's temporary directory for one data-file case.
fs::path fresh_dir() {
    static int counter = 0;
    const fs::path dir = fs::temp_directory_path() /
                         ("attn_bad_input_" + std::to_string(::getpid()) + "_" +
                          std::to_string(++counter));
    fs::remove_all(dir);
    fs::create_directories(dir / "book");
    made_dirs().push_back(dir);
    return dir;
}

void write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

const std::string good_row = "a-1\tnb.txt\tIn [1]\t1\ttorch\t4\texact\tb/a.txt\tthe block\n";

// Loads a book whose manifest is `manifest` and whose block files are `blocks`.
bool load_book(const std::string& manifest,
               const std::map<std::string, std::string>& blocks = {{"b/a.txt", "tensor(1.)\n"}}) {
    const fs::path dir = fresh_dir();
    write(dir / "book" / "manifest.tsv", manifest);
    for (const auto& [name, text] : blocks) write(dir / "book" / name, text);
    const auto book = textbook::Book::load(dir);
    return !book.entries().empty();
}

const std::string good_tokens =
    "# provenance\nspecial\tunk\t<unk>\t0\nspecial\tbos\t<s>\t1\nspecial\teos\t</s>\t2\n"
    "text\thello\t1 5 6\n";

bool load_tokens(const std::string& text) {
    const fs::path dir = fresh_dir();
    write(dir / "tok.tsv", text);
    const auto data = TokenizerData::load(dir / "tok.tsv");
    return !data.texts.empty();
}

// ------------------------------------------------------------------------ the table

#define RUN(expr) [] { (void)(expr); return true; }

std::vector<Case> table() {
    std::vector<Case> t;
    auto err = [&t](std::string name, std::function<bool()> f, Outcome o, std::string s) {
        t.push_back({std::move(name), std::move(f), o, std::move(s)});
    };
    auto ok = [&t](std::string name, std::function<bool()> f) {
        t.push_back({std::move(name), std::move(f), Outcome::returns, ""});
    };
    const auto IA = Outcome::invalid_argument;
    const auto LE = Outcome::length_error;
    const auto RE = Outcome::runtime_error;

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
    err("issue: MultiHeadAttention context_length 2^32",
        RUN(MultiHeadAttention({.d_in = 4, .d_out = 4, .context_length = K, .num_heads = 2})), LE,
        "MultiHeadAttention (mask [context_length, context_length]): cannot allocate");
    err("issue: attn::sum(attn::ones({2^33, 2^31}), 0) (was: minutes)", RUN(attn::sum(attn::ones({K * 2, K / 2}), 0)), LE,
        "ones: cannot allocate");
    err("issue: causal_mask(2^32, 2^32)", RUN(causal_mask(K, K)), LE, "zeros: cannot allocate");
    err("CausalAttention context_length 2^32", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = K})), LE,
        "CausalAttention (mask [context_length, context_length])");
    err("MultiHeadAttentionWrapper context_length 2^32",
        RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = K, .num_heads = 2})), LE,
        "MultiHeadAttentionWrapper (mask [context_length, context_length])");
    err("GPT2Attention block_size 2^32", RUN(GPT2Attention({.block_size = K, .n_embd = 4, .n_head = 2})), LE,
        "GPT2Attention (mask [block_size, block_size])");
    err("GPT2Attention n_embd 2^63 (3 * n_embd overflows)",
        RUN(GPT2Attention({.block_size = 4, .n_embd = std::size_t{1} << 63, .n_head = 1})), LE,
        "3 * n_embd = 3 * 9223372036854775808 overflows");
    err("CausalAttention d_in * d_out overflows", RUN(CausalAttention({.d_in = K, .d_out = K, .context_length = 4})), LE,
        "CausalAttention (weight [d_out, d_in])");
    err("BaseSelfAttention embed_dim 2^32", RUN(BaseSelfAttention({.embed_dim = K})), LE,
        "BaseSelfAttention (weight [embed_dim, embed_dim])");
    err("SelfAttention_v1 d_in * d_out overflows", RUN(SelfAttention_v1(K, K)), LE, "rand: cannot allocate");
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
    ok("zeros({0, 2^62, 2^62}) has 0 elements (PyTorch too)",
       [] { const Tensor z = attn::zeros({0, std::size_t{1} << 62, std::size_t{1} << 62}); return z.size() == 0; });
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
    err("CausalAttention dropout 1.5", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 1.5})), IA,
        "CausalAttention: expected dropout in [0, 1], got 1.5");
    err("CausalAttention dropout nan", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = std::nan("")})), IA,
        "expected dropout in [0, 1]");
    err("MultiHeadAttention dropout -1", RUN(MultiHeadAttention({.d_in = 4, .d_out = 4, .context_length = 4, .dropout = -1, .num_heads = 2})), IA,
        "MultiHeadAttention: expected dropout in [0, 1]");
    err("Wrapper dropout 2", RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = 4, .dropout = 2, .num_heads = 2})), IA,
        "MultiHeadAttentionWrapper: expected dropout in [0, 1]");
    err("GPT2Attention dropout 1.1", RUN(GPT2Attention({.block_size = 4, .n_embd = 4, .n_head = 2, .dropout = 1.1})), IA,
        "GPT2Attention: expected dropout in [0, 1]");

    // --- config sizes and heads.
    err("CausalAttention d_in 0", RUN(CausalAttention({.d_in = 0, .d_out = 2, .context_length = 6})), IA, "CausalAttention: expected d_in > 0");
    err("CausalAttention d_out 0", RUN(CausalAttention({.d_in = 3, .d_out = 0, .context_length = 6})), IA, "expected d_out > 0");
    err("CausalAttention context_length 0", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 0})), IA, "expected context_length > 0");
    err("MultiHeadAttention heads do not divide", RUN(MultiHeadAttention({.d_in = 3, .d_out = 5, .context_length = 4, .num_heads = 2})), IA,
        "d_out must be divisible by num_heads, got d_out = 5, num_heads = 2");
    err("MultiHeadAttention num_heads 0", RUN(MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 0})), IA,
        "num_heads = 0");
    err("Wrapper num_heads 0", RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = 4, .num_heads = 0})), IA,
        "MultiHeadAttentionWrapper: expected num_heads > 0");
    err("GPT2Attention n_head does not divide", RUN(GPT2Attention({.block_size = 4, .n_embd = 5, .n_head = 2})), IA,
        "GPT2Attention (n_embd, n_head): d_out must be divisible by num_heads");
    err("GPT2Attention block_size 0", RUN(GPT2Attention({.block_size = 0, .n_embd = 4, .n_head = 2})), IA, "GPT2Attention: expected block_size > 0");
    err("BaseSelfAttention embed_dim 0", RUN(BaseSelfAttention({.embed_dim = 0})), IA, "BaseSelfAttention: expected embed_dim > 0");
    ok("a bad config draws nothing", [] {
        manual_seed(0);
        try {
            MultiHeadAttention({.d_in = 4, .d_out = 4, .context_length = K, .num_heads = 2});
        } catch (const std::length_error&) {
        }
        return attn::rand({1}).data()[0] == 0.49625658988952637f;
    });
    err("MultiHeadAttention from layers, heads do not divide",
        RUN(MultiHeadAttention(nn::Linear(3, 5), nn::Linear(3, 5), nn::Linear(3, 5), nn::Linear(5, 5), 4, 2, 0.0)), IA,
        "d_out must be divisible by num_heads");
    err("MultiHeadAttention from layers, W_key differs",
        RUN(MultiHeadAttention(nn::Linear(3, 4), nn::Linear(3, 2), nn::Linear(3, 4), nn::Linear(4, 4), 4, 2, 0.0)), IA,
        "MultiHeadAttention (W_key)");
    err("MultiHeadAttention from layers, context_length 2^32",
        RUN(MultiHeadAttention(nn::Linear(3, 4), nn::Linear(3, 4), nn::Linear(3, 4), nn::Linear(4, 4), K, 2, 0.0)), LE,
        "MultiHeadAttention (mask [context_length, context_length])");

    // --- too many tokens, wrong inputs to modules.
    err("CausalAttention 7 tokens, context_length 6", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6})(attn::zeros({1, 7, 3}))), IA,
        "CausalAttention: got 7 tokens, but context_length is 6");
    err("CausalAttention input 2-D", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6})(attn::zeros({6, 3}))), IA,
        "CausalAttention: expected [b, T, 3], got [6, 3]");
    err("MultiHeadAttention 5 tokens, context_length 4",
        RUN(MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2})(attn::zeros({1, 5, 3}))), IA,
        "MultiHeadAttention: got 5 tokens, but context_length is 4");
    err("MultiHeadAttention wrong width", RUN(MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2})(attn::zeros({1, 2, 4}))), IA,
        "MultiHeadAttention: expected [b, T, 3], got [1, 2, 4]");
    err("GPT2Attention 5 tokens, block_size 4", RUN(GPT2Attention({.block_size = 4, .n_embd = 4, .n_head = 2, .dropout = 0})(attn::zeros({1, 5, 4}))), IA,
        "GPT2Attention: got 5 tokens, but block_size is 4");
    err("Wrapper 5 tokens, context_length 4",
        RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = 4, .num_heads = 2})(attn::zeros({1, 5, 3}))), IA,
        "got 5 tokens, but context_length is 4");
    err("SelfAttention_v1 wrong width", RUN(SelfAttention_v1(3, 2)(attn::zeros({6, 4}))), IA, "SelfAttention_v1: expected [T, 3], got [6, 4]");
    err("SelfAttention_v2 3-D input", RUN(SelfAttention_v2(3, 2)(attn::zeros({1, 6, 3}))), IA, "SelfAttention_v2: expected [T, 3], got [1, 6, 3]");
    err("BaseSelfAttention wrong width", RUN(BaseSelfAttention({.embed_dim = 4})(attn::zeros({1, 2, 3}))), IA, "expected [B, S, 4], got [1, 2, 3]");
    err("decode chunk 0", RUN(decode_with_cache(BaseSelfAttention({.embed_dim = 4}), attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}), 0)), IA,
        "decode: expected chunk >= 1, got 0");
    err("decode empty prompt", RUN(decode_without_cache(BaseSelfAttention({.embed_dim = 4}), attn::zeros({1, 0, 4}), attn::zeros({1, 2, 4}))), IA,
        "decode (prompt): expected [B, S0 >= 1, 4]");
    err("decode tokens of another batch", RUN(decode_with_cache(BaseSelfAttention({.embed_dim = 4}), attn::zeros({1, 2, 4}), attn::zeros({2, 2, 4}))), IA,
        "decode (tokens, the batch size of the prompt)");

    // --- modules whose public state was replaced: checked where used, nothing read first.
    err("Linear weight replaced by 1-D", [] { nn::Linear l(3, 2); l.weight = attn::zeros({6}); l(attn::zeros({1, 3})); return true; }, IA,
        "Linear (weight): expected [*, *] (2-D), got [6]");
    err("Linear bias replaced by the wrong size", [] { nn::Linear l(3, 2); l.bias = attn::zeros({5}); l(attn::zeros({1, 3})); return true; }, IA,
        "Linear (bias): expected [2], got [5]");
    err("Linear weight replaced by [2, 5], input [1, 3]", [] { nn::Linear l(3, 2); l.weight = attn::zeros({2, 5}); l(attn::zeros({1, 3})); return true; }, IA,
        "Linear: expected [..., 5], got [1, 3]");
    err("Linear in_features() of a 0-d weight", [] { nn::Linear l(3, 2); l.weight = attn::scalar_tensor(1.0f); return l.in_features() == 0; }, IA,
        "Linear (weight)");
    err("Linear given a 1-D weight", RUN(nn::Linear(attn::zeros({3}), std::nullopt)), IA, "Linear (weight)");
    err("Linear given a bias that does not fit", RUN(nn::Linear(attn::zeros({2, 3}), attn::zeros({3}))), IA, "Linear (bias): expected [2], got [3]");
    err("Embedding weight replaced by 1-D", [] { nn::Embedding e(3, 2); e.weight = attn::zeros({6}); e(LongTensor{0}); return true; }, IA,
        "Embedding (weight)");
    err("Embedding index 3 of 3", RUN(nn::Embedding(3, 2)(LongTensor{0, 3})), IA, "Embedding: index 3 out of range [0, 3)");
    err("Embedding index -1", RUN(nn::Embedding(3, 2)(LongTensor{-1})), IA, "Embedding: index -1 out of range [0, 3)");
    err("Embedding(0, 3) index 0", RUN(nn::Embedding(0, 3)(LongTensor{0})), IA, "index 0 out of range [0, 0)");
    err("CausalAttention mask replaced by a non-square one", [] {
        CausalAttention a({.d_in = 3, .d_out = 2, .context_length = 6});
        a.mask = attn::zeros({6, 3});
        a(attn::zeros({1, 4, 3}));
        return true;
    }, IA, "CausalAttention (mask): expected a square [context_length, context_length], got [6, 3]");
    err("CausalAttention mask replaced by 0-d", [] {
        CausalAttention a({.d_in = 3, .d_out = 2, .context_length = 6});
        a.mask = attn::scalar_tensor(0.0f);
        return a.context_length() == 0;
    }, IA, "CausalAttention (mask)");
    err("MultiHeadAttention W_query replaced by 1-D weight", [] {
        MultiHeadAttention m({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2});
        m.W_query.weight = attn::zeros({12});
        m(attn::zeros({1, 2, 3}));
        return true;
    }, IA, "Linear (weight)");
    err("MultiHeadAttention out_proj bias replaced (fast path)", [] {
        MultiHeadAttention m({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2});
        m.eval();
        m.out_proj.bias = attn::zeros({2});
        m(attn::zeros({1, 2, 3}));
        return true;
    }, IA, "MultiHeadAttention (out_proj.bias): expected [4], got [2]");
    err("BaseSelfAttention output_proj bias replaced", [] {
        BaseSelfAttention a({.embed_dim = 4});
        a.output_proj.bias = attn::zeros({3});
        a(attn::zeros({1, 2, 4}));
        return true;
    }, IA, "BaseSelfAttention (output_proj.bias): expected [4], got [3]");

    // --- KV caches that do not fit.
    err("KVCache key 1-D", RUN(KVCache(attn::zeros({4}), attn::zeros({4}))), IA, "KVCache (key): expected [..., S, hd] (at least 2-D), got [4]");
    err("KVCache value differs", RUN(KVCache(attn::zeros({1, 2, 4}), attn::zeros({1, 3, 4}))), IA, "KVCache (value, the shape of key but the last dimension): expected [1, 2, 4], got [1, 3, 4]");
    err("KVCache key replaced by a longer one (was: read past the end)", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.key = attn::zeros({1, 50, 4});
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "BaseSelfAttention (kv_cache) (value, the shape of key but the last dimension): expected [1, 50, 4], got [1, 2, 4]");
    err("KVCache value replaced by a longer one", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.value = attn::zeros({1, 9, 4});
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "BaseSelfAttention (kv_cache) (value, the shape of key but the last dimension): expected [1, 2, 4], got [1, 9, 4]");
    err("KVCache key replaced by 1-D", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.key = attn::zeros({8});
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "BaseSelfAttention (kv_cache) (key): expected [..., S, hd] (at least 2-D), got [8]");
    err("KVCache length() after key replaced by 1-D", [] {
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.key = attn::zeros({8});
        return c.length() == 0;
    }, IA, "KVCache::length (key)");
    err("KVCache bytes() after value replaced", [] {
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.value = attn::zeros({1, 3, 4});
        return c.bytes() == 0;
    }, IA, "KVCache::bytes (value, the shape of key but the last dimension)");
    err("KVCache of another batch size", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        const KVCache c(attn::zeros({2, 2, 4}), attn::zeros({2, 2, 4}));
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "expected [1, S_past, 4], got [2, 2, 4]");
    err("KVCache of another width", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        const KVCache c(attn::zeros({1, 2, 3}), attn::zeros({1, 2, 3}));
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "expected [1, S_past, 4], got [1, 2, 3]");
    err("attention_mask not covering the cache", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        const KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        a(attn::zeros({1, 1, 4}), LongTensor(xt::ones<std::int64_t>(Shape{1, 1})), &c);
        return true;
    }, IA, "attention_mask [B, S_past + Sq] for x [1, 1, 4] and a cache of 2 tokens): expected [1, 3], got [1, 1]");

    // --- masks of the wrong shape.
    err("causal_mask Sq > Sk", RUN(causal_mask(3, 2)), IA, "causal_mask: expected Sq <= Sk (new queries among the keys), got Sq = 3, Sk = 2");
    err("apply_causal_mask Sq > Sk", RUN(BaseSelfAttention({.embed_dim = 4}).apply_causal_mask(attn::zeros({1, 3, 2}))), IA, "got Sq = 3, Sk = 2");
    err("apply_causal_mask 2-D", RUN(BaseSelfAttention({.embed_dim = 4}).apply_causal_mask(attn::zeros({3, 3}))), IA,
        "apply_causal_mask (attention_logits)");
    err("apply_causal_mask_square_ with a cache (notebook In [36])", [] {
        Tensor logits = attn::zeros({2, 1, 5});
        BaseSelfAttention({.embed_dim = 4}).apply_causal_mask_square_(logits);
        return true;
    }, IA, "output with shape [2, 1, 5] doesn't match the broadcast shape [2, 5, 5]");
    err("masked_fill mask [4, 3] over [3, 4]", RUN(attn::masked_fill(attn::zeros({3, 4}), BoolTensor(xt::zeros<bool>(Shape{4, 3})), 1.0f)), IA,
        "masked_fill (mask): expected a shape broadcastable to [3, 4], got [4, 3]");
    err("masked_fill mask of higher rank", RUN(attn::masked_fill(attn::zeros({3}), BoolTensor(xt::zeros<bool>(Shape{2, 3})), 1.0f)), IA,
        "broadcastable to [3], got [2, 3]");
    err("masked_fill_ that does not broadcast", [] { Tensor x = attn::zeros({3, 4}); attn::masked_fill_(x, BoolTensor(xt::zeros<bool>(Shape{3, 5})), 1.0f); return true; }, IA,
        "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");
    err("scaled_dot_product_attention attn_mask [3, 3] for [2, 2]", [] { const BoolTensor m = xt::ones<bool>(Shape{3, 3});
        (void)scaled_dot_product_attention(attn::zeros({2, 4}), attn::zeros({2, 4}), attn::zeros({2, 4}), {.attn_mask = &m}); return true; }, IA,
        "scaled_dot_product_attention (attn_mask): expected a shape broadcastable to [2, 2], got [3, 3]");
    err("scaled_dot_product_attention attn_bias [2, 3] for [2, 2]", [] { const Tensor m = attn::zeros({2, 3});
        (void)scaled_dot_product_attention(attn::zeros({2, 4}), attn::zeros({2, 4}), attn::zeros({2, 4}), {.attn_bias = &m}); return true; }, IA,
        "scaled_dot_product_attention (attn_bias): expected a shape broadcastable to [2, 2], got [2, 3]");
    err("scaled_dot_product_attention key width", RUN(scaled_dot_product_attention(attn::zeros({2, 4}), attn::zeros({2, 3}), attn::zeros({2, 4}))), IA,
        "scaled_dot_product_attention (key): expected [..., S, 4], got [2, 3]");
    err("apply_attention_mask [B, Sq] for [B, Sq, Sk]", RUN(apply_attention_mask(attn::zeros({1, 2, 3}), LongTensor(xt::ones<std::int64_t>(Shape{1, 2})))), IA,
        "expected [1, 3], got [1, 2]");
    err("real_token_rows sequence out of range", RUN(real_token_rows(attn::zeros({1, 2, 3}), LongTensor(xt::ones<std::int64_t>(Shape{1, 2})), 1)), IA,
        "real_token_rows: sequence 1 out of range for a batch of 1");
    err("real_token_rows mask shape", RUN(real_token_rows(attn::zeros({1, 2, 3}), LongTensor(xt::ones<std::int64_t>(Shape{1, 3})), 0)), IA,
        "real_token_rows (attention_mask): expected [1, 2], got [1, 3]");

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
    err("softmax dim 0 of 2-D", RUN(attn::softmax(attn::zeros({2, 3}), 0)), IA, "softmax: only the last dimension is supported (dim=-1), got dim=0");
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
    err("print precision -1", [] { PrintOptions o; o.precision = -1; attn::repr(attn::zeros({1}), o); return true; }, IA,
        "print options: precision must be >= 0, got -1");

    // --- text checks.
    ok("first_non_utf8 accepts ASCII, 2-, 3- and 4-byte forms", [] { return first_non_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == std::string_view::npos; });
    ok("first_non_utf8 finds a lone continuation byte", [] { return first_non_utf8("ab\x80") == 2; });
    ok("first_non_utf8 finds an overlong form", [] { return first_non_utf8("\xC0\xAF") == 0; });
    ok("first_non_utf8 finds a surrogate", [] { return first_non_utf8("x\xED\xA0\x80") == 1; });
    ok("first_non_utf8 finds a truncated sequence", [] { return first_non_utf8("xy\xE2\x82") == 2; });
    ok("first_non_utf8 finds a code point above U+10FFFF", [] { return first_non_utf8("\xF4\x90\x80\x80") == 0; });
    ok("first_non_utf8 finds a NUL", [] { return first_non_utf8(std::string_view("a\0b", 3)) == 1; });

    // --- broken data files: the book's manifest and blocks.
    const std::string header = "# id\tnotebook\tcell\tchapter\tstyle\tprecision\tcheck\tfile\twhat\n";
    ok("a good manifest loads", [header] { return load_book(header + good_row); });
    err("manifest missing", [] { const fs::path d = fresh_dir(); textbook::Book::load(d); return true; }, RE, "manifest.tsv: cannot open the book's manifest");
    err("manifest row missing a column", [header] { return load_book(header + "a-1\tnb.txt\tIn [1]\t1\ttorch\t4\texact\tb/a.txt\n"); }, RE,
        "manifest.tsv:2: expected 9 tab-separated fields");
    err("manifest row with an empty field", [header] { return load_book(header + "a-1\tnb.txt\t\t1\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: field 3 is empty");
    err("manifest duplicate id", [header] { return load_book(header + good_row + good_row); }, RE, "manifest.tsv:3: duplicate id 'a-1'");
    err("manifest missing block file", [header] { return load_book(header + good_row, {}); }, RE, "manifest.tsv:2: cannot read block file");
    err("manifest empty block file", [header] { return load_book(header + good_row, {{"b/a.txt", "\n\n"}}); }, RE, "manifest.tsv:2: block file");
    err("manifest bad style", [header] { return load_book(header + "a-1\tnb\tc\t1\tjson\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: style must be torch, numpy or text, got 'json'");
    err("manifest bad chapter", [header] { return load_book(header + "a-1\tnb\tc\tx1\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: chapter must be a number or a capital letter, got 'x1'");
    err("manifest chapter 0", [header] { return load_book(header + "a-1\tnb\tc\t0\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: chapter must be a number or a capital letter, got '0'");
    err("manifest negative precision", [header] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t-4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: precision must be a non-negative integer, got '-4'");
    err("manifest bad check", [header] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t4\tclose\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: check must be exact, ulp:N");
    err("manifest ulp tolerance too long", [header] { return load_book(header + "a-1\tnb\tc\t1\tnumpy\t4\tulp:99999999999999999999\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: check must be");
    err("manifest non-UTF-8 in the what column", [header] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\tbad \xFF byte\n"); }, RE,
        "manifest.tsv:2: byte 0xFF at column 38 is not UTF-8 text");
    err("manifest Latin-1 in a comment", [header] { return load_book("# caf\xE9\n" + header + good_row); }, RE,
        "manifest.tsv:1: byte 0xE9 at column 6 is not UTF-8 text");
    err("manifest NUL byte", [header] { return load_book(header + std::string("a-1\0", 4) + "\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: byte 0x00 at column 4 is not UTF-8 text");
    err("manifest with only comments", [header] { return load_book(header); }, RE, "manifest.tsv:1: no entries by the end of the file");
    err("manifest empty", [] { return load_book(""); }, RE, "manifest.tsv:0: no entries");
    err("block file with a bad byte on its line 2", [header] { return load_book(header + good_row, {{"b/a.txt", "tensor([1.,\n \xC3\x28])\n"}}); }, RE,
        "a.txt:2: byte 0xC3 at column 2 is not UTF-8 text");
    err("block file with a surrogate", [header] { return load_book(header + good_row, {{"b/a.txt", "\xED\xA0\x80"}}); }, RE,
        "a.txt:1: byte 0xED at column 1 is not UTF-8 text");
    err("book: unknown id", [header] { const fs::path d = fresh_dir(); write(d / "book/manifest.tsv", header + good_row);
        write(d / "book/b/a.txt", "x"); textbook::Book::load(d).at("nope"); return true; }, Outcome::out_of_range, "book: no entry with id 'nope'");
    err("printed_matrix wants more numbers than the block has", [] {
        textbook::Entry e; e.id = "x"; e.text = "tensor([1., 2.])"; textbook::printed_matrix(e, 2, 2); return true; }, IA,
        "book entry x: expected at least 4 printed numbers, got 2");

    // --- broken data files: the tokenizer TSV.
    ok("a good tokenizer file loads", [] { return load_tokens(good_tokens); });
    err("tokenizer file missing", [] { TokenizerData::load(fresh_dir() / "none.tsv"); return true; }, RE, "none.tsv: cannot be read");
    err("tokenizer unknown row kind", [] { return load_tokens(good_tokens + "word\tx\t1\n"); }, RE, "tok.tsv:6: unknown row kind 'word'");
    err("tokenizer special with 3 fields", [] { return load_tokens("special\tunk\t0\n"); }, RE, "tok.tsv:1: expected special<TAB>role<TAB>token<TAB>id");
    err("tokenizer special unknown role", [] { return load_tokens("special\tpad\t<p>\t3\n"); }, RE, "tok.tsv:1: unknown special token role 'pad'");
    err("tokenizer id not a number", [] { return load_tokens("special\tunk\t<unk>\tzero\n"); }, RE, "tok.tsv:1: expected a token id, got 'zero'");
    err("tokenizer negative id", [] { return load_tokens(good_tokens + "text\thi\t1 -5\n"); }, RE, "tok.tsv:6: expected a token id, got '-5'");
    err("tokenizer id too big", [] { return load_tokens(good_tokens + "text\thi\t99999999999999999999\n"); }, RE,
        "tok.tsv:6: expected a token id, got '99999999999999999999'");
    err("tokenizer id with trailing junk", [] { return load_tokens(good_tokens + "text\thi\t12ab\n"); }, RE, "tok.tsv:6: expected a token id, got '12ab'");
    err("tokenizer text row with 2 fields", [] { return load_tokens(good_tokens + "text\thi\n"); }, RE, "tok.tsv:6: expected text<TAB>text<TAB>ids");
    err("tokenizer missing eos", [] { return load_tokens("special\tunk\t<unk>\t0\nspecial\tbos\t<s>\t1\n"); }, RE,
        "tok.tsv:2: missing a special token row (unk, bos, eos)");
    err("tokenizer non-UTF-8 text", [] { return load_tokens(good_tokens + "text\tna\xEFve\t1\n"); }, RE, "tok.tsv:6: byte 0xEF at column 8 is not UTF-8 text");
    err("tokenizer non-UTF-8 comment", [] { return load_tokens("# \x80\n" + good_tokens); }, RE, "tok.tsv:1: byte 0x80 at column 3 is not UTF-8 text");
    ok("tokenizer: a UTF-8 text loads verbatim", [] {
        const fs::path dir = fresh_dir();
        write(dir / "tok.tsv", good_tokens + "text\tna\xC3\xAFve\t7\n");
        const auto d = TokenizerData::load(dir / "tok.tsv");
        return d.texts.size() == 2 && d.texts[1].text == "na\xC3\xAFve" && d.texts[1].input_ids == std::vector<std::int64_t>{7};
    });
    return t;
}

}  // namespace

TEST_CASE("bad-input table: every case has its exact outcome") {
    const std::vector<Case> cases = table();
    CHECK(cases.size() >= 150);
    // ATTN_BAD_INPUT_CASE=N runs case N alone (0-based), so a script can run every case in
    // a process of its own and tell crashes and hangs apart from wrong outcomes.
    const char* only = std::getenv("ATTN_BAD_INPUT_CASE");
    std::size_t returns = 0, throws = 0;
    for (std::size_t index = 0; index < cases.size(); ++index) {
        if (only && std::to_string(index) != only) continue;
        const Case& c = cases[index];
        (c.outcome == Outcome::returns ? returns : throws) += 1;
        INFO("case: " << c.name << " (expected " << outcome_name(c.outcome) << " '" << c.substring << "')");
        Outcome got = Outcome::returns;
        std::string message;
        bool result = false;
        try {
            result = c.run();
        } catch (const std::exception& e) {
            got = outcome_of(e);
            message = e.what();
            if (got == Outcome::returns) message = std::string("unexpected exception type: ") + message;
        }
        INFO("got " << outcome_name(got) << ": " << message);
        if (c.outcome == Outcome::returns) {
            CHECK(got == Outcome::returns);
            CHECK(result);
        } else {
            CHECK(got == c.outcome);
            CHECK(message.find(c.substring) != std::string::npos);
            CHECK(message.find('\n') == std::string::npos);  // one line
        }
    }
    for (const auto& dir : made_dirs()) fs::remove_all(dir);
    std::printf("bad-input table: %zu cases, %zu errors with their message, %zu PyTorch-equal results\n",
                cases.size(), throws, returns);
}

#undef RUN

}  // namespace test_bad_input
