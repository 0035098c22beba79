// libFuzzer target (issue 19): the library called as a user would, with inputs built from the
// fuzzer's bytes (FuzzedDataProvider, structured.hpp): tensor factories and shape functions
// with extreme sizes, the functional ops with NaN and infinities, Linear / Dropout / Embedding
// with mutated public fields, the printers with NaN, huge and deep tensors and extreme print
// options, and the checked size arithmetic. PyTorch's kinds of error are clean; a crash, a
// sanitizer report, a hang, another exception or a broken invariant is a finding.
//
// The first byte picks a family. Add a family (an attention module, a backend, a cache) as
// one more function and one more entry in `families`.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "textbook/text_file.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/numpy.hpp"
#include "attn/print/python.hpp"
#include "attn/print/torch.hpp"
#include "structured.hpp"

namespace {

using attn::Shape;
using attn::Tensor;
using fuzz::clean;
using fuzz::expect;

bool any_nan(const float* v, std::size_t n) { return std::any_of(v, v + n, [](float x) { return std::isnan(x); }); }

// Factories with extreme shapes: refused with std::length_error, never a wrong size.
void factories(FuzzedDataProvider& p) {
    const Shape s = fuzz::shape(p);
    const auto check = [&s](const auto& t) { expect(attn::shape_of(t) == s, "factory: result has another shape"); };
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: clean([&] { check(attn::zeros(s)); }); break;
        case 1: clean([&] { check(attn::ones(s)); }); break;
        case 2: clean([&] { check(attn::rand(s)); }); break;
        case 3: clean([&] { check(attn::randn(s)); }); break;
        case 4: clean([&] {
            const auto low = p.ConsumeIntegral<std::int64_t>();
            check(attn::randint(low, p.ConsumeIntegral<std::int64_t>(), s));
        }); break;
        // n small, negative or at the edges of long (refused): any int64 would also draw sizes
        // the machine holds but the fuzzer's memory limit does not (a 24 GB arange on 24 GB).
        case 5: clean([&] { (void)attn::arange(fuzz::index(p)); }); break;
        case 6: clean([&] { check(attn::nn::Dropout(0.5).keep_mask(s)); }); break;
        default: clean([&] { (void)attn::nn::rand_parameter(fuzz::dim(p), fuzz::dim(p)); }); break;
    }
}

// Shape functions on tensors with no elements but extreme dimensions, or small ones.
void shapes(FuzzedDataProvider& p) {
    Shape s = fuzz::shape(p);
    if (!s.empty() && p.ConsumeBool()) s[p.ConsumeIntegralInRange<std::size_t>(0, s.size() - 1)] = 0;
    clean([&] {
        const Tensor x = p.ConsumeBool() ? attn::zeros(s) : fuzz::tensor(p);
        const Tensor y = p.ConsumeBool() ? x : fuzz::tensor(p);
        switch (p.ConsumeIntegralInRange<int>(0, 10)) {
            case 0: {
                std::vector<long> size(p.ConsumeIntegralInRange<std::size_t>(0, 4));
                for (auto& v : size) v = fuzz::index(p);
                const Tensor v = attn::view(x, size);
                expect(v.size() == x.size(), "view: element count changed");
                break;
            }
            case 1: (void)attn::transpose(x, fuzz::index(p), fuzz::index(p)); break;
            case 2: (void)attn::cat({x, y}, fuzz::index(p)); break;
            case 3: (void)attn::stack({x, y}, fuzz::index(p)); break;
            case 4: (void)attn::select(x, fuzz::index(p)); break;
            case 5: (void)attn::slice(x, fuzz::index(p), fuzz::index(p), fuzz::index(p)); break;
            case 6: (void)attn::matmul(x, y); break;
            case 7: (void)attn::tril(x, fuzz::index(p)); break;
            case 8: (void)attn::triu(x, fuzz::index(p)); break;
            case 9: (void)attn::masked_fill(x, attn::to_bool(y), fuzz::value(p)); break;
            default: {
                Tensor z = x;
                (void)attn::masked_fill_(z, attn::to_bool(y), fuzz::value(p));
                break;
            }
        }
    });
}

// The lines of `x` along dimension `dim` (any dimension, issue 32), each copied out.
std::vector<std::vector<float>> lines_along(const Tensor& x, long dim) {
    std::vector<std::vector<float>> lines;
    if (x.dimension() == 0) return lines;
    const std::size_t d = attn::wrap_dim("lines_along", dim, x.dimension());
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= x.shape()[i];
    for (std::size_t i = d + 1; i < x.dimension(); ++i) inner *= x.shape()[i];
    const std::size_t n = x.shape()[d];
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < inner && n; ++i) {
            std::vector<float> line(n);
            for (std::size_t j = 0; j < n; ++j) line[j] = x.data()[(o * n + j) * inner + i];
            lines.push_back(std::move(line));
        }
    return lines;
}

// Softmax along `dim` with NaN, infinities and huge values: PyTorch's NaN rules hold.
void check_softmax(const Tensor& x, const Tensor& y, long dim = -1) {
    const auto in_lines = lines_along(x, dim), out_lines = lines_along(y, dim);
    expect(in_lines.size() == out_lines.size(), "softmax: another number of lines");
    for (std::size_t r = 0; r < in_lines.size(); ++r) {
        const auto& in = in_lines[r];
        const auto& out = out_lines[r];
        const bool nan_row = any_nan(in.data(), in.size()) || std::any_of(in.begin(), in.end(), [](float v) { return v == INFINITY; }) ||
                             std::all_of(in.begin(), in.end(), [](float v) { return v == -INFINITY; });
        if (nan_row) {
            expect(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }), "softmax: NaN row lost its NaN");
            continue;
        }
        double total = 0.0;
        for (const float v : out) {
            expect(v >= 0.0f && v <= 1.0f, "softmax: a finite row gave a value outside [0, 1]");
            total += v;
        }
        expect(std::abs(total - 1.0) < 1e-4, "softmax: a finite row does not sum to 1");
    }
}

// A NaN or `0 * inf` among a product's terms makes it NaN (2-D `a @ b`).
void check_matmul(const Tensor& a, const Tensor& b, const Tensor& c) {
    if (a.dimension() != 2 || b.dimension() != 2) return;
    const std::size_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t l = 0; l < k; ++l) {
                const float u = a(i, l), v = b(l, j);
                if (std::isnan(u) || std::isnan(v) || (std::isinf(u) && v == 0.0f) || (u == 0.0f && std::isinf(v))) {
                    expect(std::isnan(c(i, j)), "matmul: a NaN term did not reach the product");
                    break;
                }
            }
}

void functional(FuzzedDataProvider& p) {
    clean([&] {
        const Tensor x = fuzz::tensor(p);
        switch (p.ConsumeIntegralInRange<int>(0, 9)) {
            case 0: {  // over any dimension (issue 32)
                const long dim = fuzz::index(p);
                check_softmax(x, attn::softmax(x, dim), dim);
                break;
            }
            case 1: {
                const long dim = p.ConsumeBool() ? -1 : fuzz::index(p);
                const Tensor y = attn::log_softmax(x, dim);
                const auto in = lines_along(x, dim), out = lines_along(y, dim);
                for (std::size_t r = 0; r < in.size(); ++r)
                    if (any_nan(in[r].data(), in[r].size()))
                        expect(std::all_of(out[r].begin(), out[r].end(), [](float v) { return std::isnan(v); }),
                               "log_softmax: NaN row lost its NaN");
                break;
            }
            case 2: {
                const Tensor s = attn::sum(x);
                if (any_nan(x.data(), x.size())) expect(std::isnan(s()), "sum: NaN lost");
                break;
            }
            case 3: (void)attn::sum(x, fuzz::index(p), p.ConsumeBool()); break;
            case 4: (void)attn::argmax(x, fuzz::index(p)); break;
            case 5: {
                const Tensor e = attn::exp(x);
                for (std::size_t i = 0; i < x.size(); ++i)
                    expect(std::isnan(x.data()[i]) == std::isnan(e.data()[i]), "exp: NaN added or lost");
                break;
            }
            case 6: {
                const Tensor b = fuzz::tensor(p, {x.dimension() ? x.shape().back() : 0, p.ConsumeIntegralInRange<std::size_t>(0, 4)});
                const Tensor c = attn::matmul(x, b);
                check_matmul(x, b, c);
                break;
            }
            case 7: {
                attn::LongTensor t = xt::zeros<std::int64_t>(Shape{x.dimension() ? x.shape()[0] : 0});
                for (auto& v : t) v = fuzz::index(p);
                (void)attn::cross_entropy(x, t, fuzz::index(p));
                break;
            }
            case 8: {
                const Tensor y = fuzz::tensor(p);
                const float d = attn::max_abs_diff(x, y);
                if (any_nan(x.data(), x.size())) expect(std::isnan(d), "max_abs_diff: NaN lost");
                (void)attn::allclose(x, y);
                break;
            }
            default: {
                // A fully masked row gives zeros; any other row is softmax's, NaN rules included.
                const Tensor y = attn::masked_softmax(x);
                const std::size_t n = x.shape().back();
                for (std::size_t r = 0; n && r < x.size() / n; ++r) {
                    const float* in = x.data() + r * n;
                    if (std::all_of(in, in + n, [](float v) { return v == -INFINITY; }))
                        expect(std::all_of(y.data() + r * n, y.data() + (r + 1) * n, [](float v) { return v == 0.0f; }),
                               "masked_softmax: a fully masked row is not zeros");
                    else if (any_nan(in, n))
                        expect(std::all_of(y.data() + r * n, y.data() + (r + 1) * n, [](float v) { return std::isnan(v); }),
                               "masked_softmax: NaN row lost its NaN");
                }
                break;
            }
        }
    });
}

// nn::Linear with its public weight and bias replaced by tensors of any shape (a [1] bias
// among them: broadcast, the bits of the same bias repeated to [out_features]).
void linear(FuzzedDataProvider& p) {
    clean([&] {
        attn::nn::Linear l(p.ConsumeIntegralInRange<std::size_t>(0, 4), p.ConsumeIntegralInRange<std::size_t>(0, 4), p.ConsumeBool());
        if (p.ConsumeBool()) l.weight = fuzz::tensor(p);
        if (p.ConsumeBool()) {
            switch (p.ConsumeIntegralInRange<int>(0, 2)) {
                case 0: l.bias = std::nullopt; break;
                case 1: l.bias = fuzz::tensor(p, {1}); break;
                default: l.bias = fuzz::tensor(p); break;
            }
        }
        const Tensor x = fuzz::tensor(p);
        const Tensor y = l(x);
        expect(!y.shape().empty() && y.shape().back() == l.out_features(), "Linear: output width is not out_features");
        if (l.bias && l.bias->size() == 1) {
            const attn::nn::Linear full(l.weight, l.bias_vector());
            const Tensor z = full(x);
            expect(std::equal(y.data(), y.data() + y.size(), z.data(), [](float a, float b) {
                       return std::isnan(a) ? std::isnan(b) : a == b; }),
                   "Linear: a [1] bias differs from the same value repeated");
            if (p.ConsumeBool() && x.dimension() >= 1) {
                attn::nn::Linear g = l;
                (void)g.backward(x, attn::ones(attn::shape_of(y)));
                expect(attn::shape_of(*g.bias_grad) == Shape{1}, "Linear: a [1] bias got a gradient of another shape");
            }
        }
        (void)attn::nn::repr(l);
    });
}

// nn::Dropout with p, backend (any integer) and training mode as a user may set them.
void dropout(FuzzedDataProvider& p) {
    static constexpr double ps[] = {0.0, 0.5, 1.0, -0.0, 1e-300, 0.999, 1.0000001, -1.0, NAN, INFINITY};
    clean([&] {
        attn::nn::Dropout d(0.5);
        d.p = p.ConsumeBool() ? ps[p.ConsumeIntegralInRange<std::size_t>(0, std::size(ps) - 1)] : p.ConsumeProbability<double>();
        d.backend = static_cast<attn::nn::BernoulliBackend>(p.ConsumeBool() ? p.ConsumeIntegralInRange<int>(0, 1) : p.ConsumeIntegral<int>());
        d.training = p.ConsumeBool();
        attn::manual_seed(p.ConsumeIntegral<std::uint64_t>());
        const Tensor x = fuzz::tensor(p);
        const Tensor y = d(x);
        expect(attn::shape_of(y) == attn::shape_of(x), "Dropout: shape changed");
        for (std::size_t i = 0; i < x.size(); ++i)
            if (std::isnan(x.data()[i])) expect(std::isnan(y.data()[i]), "Dropout: NaN lost");
        (void)attn::nn::backend_name(d.backend);
        (void)attn::nn::repr(d);
    });
}

// nn::Embedding with a replaced weight and ids anywhere in int64.
void embedding(FuzzedDataProvider& p) {
    clean([&] {
        attn::nn::Embedding e(p.ConsumeBool() ? fuzz::dim(p) : p.ConsumeIntegralInRange<std::size_t>(0, 4),
                              p.ConsumeIntegralInRange<std::size_t>(0, 4));
        if (p.ConsumeBool()) e.weight = fuzz::tensor(p);
        attn::LongTensor ids = xt::zeros<std::int64_t>(fuzz::small_shape(p));
        for (auto& v : ids) v = p.ConsumeBool() ? p.ConsumeIntegralInRange<std::int64_t>(-1, 4) : p.ConsumeIntegral<std::int64_t>();
        (void)e(ids);
    });
}

// The printers: NaN, infinities, extreme options, deep and empty-but-huge shapes.
void print(FuzzedDataProvider& p) {
    static constexpr int edges[] = {-1, 0, 1, 2, 4, 8, 1000, 1001, 2147483647, -2147483647 - 1};
    const auto option = [&p] { return p.ConsumeBool() ? edges[p.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)] : p.ConsumeIntegralInRange<int>(0, 12); };
    clean([&] {
        attn::PrintOptions o;
        o.precision = std::min(option(), p.ConsumeBool() ? 1000 : 12);  // 1000 digits: legal, slow
        o.threshold = option();
        o.edgeitems = option();
        o.linewidth = option();
        if (p.ConsumeBool()) o.sci_mode = p.ConsumeBool();
        Tensor x;
        switch (p.ConsumeIntegralInRange<int>(0, 3)) {
            case 0: x = fuzz::tensor(p); break;
            case 1: x = attn::zeros(Shape(p.ConsumeIntegralInRange<std::size_t>(0, 1200), 1)); break;  // deep
            case 2: {
                Shape s = fuzz::shape(p);
                s.push_back(0);
                x = attn::zeros(s);  // empty, dimensions up to 2^64 - 1
                break;
            }
            default: x = fuzz::tensor(p, {p.ConsumeIntegralInRange<std::size_t>(0, 64), p.ConsumeIntegralInRange<std::size_t>(0, 64)}); break;
        }
        const std::string r = attn::repr(x, o);
        expect(r.rfind("tensor(", 0) == 0, "repr: does not start with tensor(");
        if (p.ConsumeBool()) (void)attn::numpy_str(x);
        if (p.ConsumeBool()) (void)attn::repr(attn::to_bool(x), o);
        (void)attn::repr_float(p.ConsumeFloatingPoint<double>());
        (void)attn::repr(x.dimension() ? attn::shape_of(x) : Shape{});
    });
}

// The checked size arithmetic and the parsers' field helpers against exact arithmetic.
void sizes_and_fields(FuzzedDataProvider& p) {
    const auto a = p.ConsumeIntegral<std::size_t>(), b = p.ConsumeIntegral<std::size_t>();
    const unsigned __int128 product = static_cast<unsigned __int128>(a) * b, sum = static_cast<unsigned __int128>(a) + b;
    bool threw = false;
    try { expect(attn::checked_mul(a, b, "fuzz") == product, "checked_mul: wrong product"); } catch (const std::length_error&) { threw = true; }
    expect(threw == (product >> 64 != 0), "checked_mul: refused a product that fits, or let one overflow");
    threw = false;
    try { expect(attn::checked_add(a, b, "fuzz") == sum, "checked_add: wrong sum"); } catch (const std::length_error&) { threw = true; }
    expect(threw == (sum >> 64 != 0), "checked_add: refused a sum that fits, or let one overflow");
    const std::string field = p.ConsumeRandomLengthString(64);
    if (const auto v = textbook::parse_integer(field)) expect(std::to_string(*v).size() <= field.size(), "parse_integer: read more than the field");
    const std::string q = textbook::quoted(field);
    expect(std::none_of(q.begin(), q.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }), "quoted: echoed a control byte");
}

constexpr fuzz::Family families[] = {
    {"factories", factories}, {"shapes", shapes},   {"functional", functional}, {"linear", linear},
    {"dropout", dropout},     {"embedding", embedding}, {"print", print},     {"sizes_and_fields", sizes_and_fields},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider p(data, size);
    families[p.ConsumeIntegralInRange<std::size_t>(0, std::size(families) - 1)].run(p);
    return 0;
}
