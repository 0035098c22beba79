#include "attn/core/functional.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <cmath>
#include <limits>
#include <numeric>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>
#if ATTN_BLAS_REFERENCE
#include "attn/core/reduce.hpp"
#include "attn/kernels/gemm.hpp"
#else
#include <xtensor-blas/xblas.hpp>
#endif

namespace attn {

namespace {

// Row-major strides of a shape, in elements.
std::vector<std::size_t> strides_of(const Shape& s) {
    std::vector<std::size_t> st(s.size(), 1);
    for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
    return st;
}

// Broadcasts `from` to `to` (numpy rules, `from` aligned right); returns false if impossible.
bool broadcastable(const Shape& from, const Shape& to) {
    if (from.size() > to.size()) return false;
    const std::size_t off = to.size() - from.size();
    for (std::size_t i = 0; i < from.size(); ++i)
        if (from[i] != 1 && from[i] != to[off + i]) return false;
    return true;
}

// The shape two shapes broadcast to (numpy rules, right-aligned); when they do not, none,
// and `mismatch` (if given) gets the first disagreeing dimension of the result.
std::optional<Shape> try_broadcast(const Shape& a, const Shape& b,
                                   std::size_t* mismatch = nullptr) {
    const std::size_t n = std::max(a.size(), b.size());
    Shape out(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const std::size_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
        if (da != db && da != 1 && db != 1) {
            if (mismatch) *mismatch = i;
            return std::nullopt;
        }
        out[i] = da == 1 ? db : da;  // 1 stretches to the other (0 included: [0] with [1] is [0])
    }
    return out;
}

// The shape two shapes broadcast to, or throws naming both.
Shape broadcast_shapes(const std::string& where, const Shape& a, const Shape& b) {
    if (auto out = try_broadcast(a, b)) return *out;
    throw std::invalid_argument(where + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                                " do not broadcast");
}

// `[2, -1]` as PyTorch writes a requested size in its messages.
std::string python_sizes(const std::vector<long>& size) {
    std::string s = "[";
    for (std::size_t i = 0; i < size.size(); ++i) s += (i ? ", " : "") + std::to_string(size[i]);
    return s + "]";
}

// Offset of the element of a (broadcast) tensor of shape `s` for a multi-index over `to`.
std::size_t broadcast_offset(const Shape& s, const std::vector<std::size_t>& st,
                             const std::vector<std::size_t>& index) {
    const std::size_t off = index.size() - s.size();
    std::size_t o = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] != 1) o += index[off + i] * st[i];
    return o;
}

}  // namespace

void gemm_rowmajor(const float* A, const float* B, float* C, std::size_t m, std::size_t k,
                   std::size_t n, bool transpose_b) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        std::fill_n(C, m * n, 0.0f);
        return;
    }
#if ATTN_BLAS_REFERENCE
    // The reference BLAS's bits, from the in-order kernels of kernels/gemm.hpp (faster, and
    // threaded for large products): every element summed over k in order, as sgemm.f sums it.
    fast::gemm(m, n, k, A, k, false, B, transpose_b ? k : n, transpose_b, C, n);
#else
    // Adapt the buffers without copying; sgemm reads B as [n, k] when transpose_b is set,
    // which is how PyTorch's addmm(bias, x, W.t()) hands a Linear weight to BLAS.
    using shape2 = std::array<std::size_t, 2>;
    auto a = xt::adapt(const_cast<float*>(A), m * k, xt::no_ownership(), shape2{m, k});
    auto b = xt::adapt(const_cast<float*>(B), k * n, xt::no_ownership(),
                       transpose_b ? shape2{n, k} : shape2{k, n});
    auto c = xt::adapt(C, m * n, xt::no_ownership(), shape2{m, n});
    xt::blas::gemm(a, b, c, false, transpose_b);
#endif
}

Tensor ones(const Shape& size) {
    check_allocation("ones", size);
    return xt::ones<float>(size);
}

Tensor zeros(const Shape& size) {
    check_allocation("zeros", size);
    return xt::zeros<float>(size);
}

LongTensor arange(std::int64_t n) {
    if (n < 0) throw std::invalid_argument("arange: expected n >= 0, got " + std::to_string(n));
    check_allocation("arange", Shape{static_cast<std::size_t>(n)}, sizeof(std::int64_t));
    LongTensor t = xt::zeros<std::int64_t>(Shape{static_cast<std::size_t>(n)});
    std::iota(t.begin(), t.end(), std::int64_t{0});
    return t;
}

Tensor transpose(const Tensor& x, long dim0, long dim1) {
    const Shape s = shape_of(x);
    const std::size_t d0 = wrap_dim("transpose", dim0, s.size());
    const std::size_t d1 = wrap_dim("transpose", dim1, s.size());
    Shape out = s;
    std::swap(out[d0], out[d1]);
    // Walk the output in row-major order, reading the input through swapped strides; the
    // source offset is updated incrementally, like an odometer.
    auto in_strides = strides_of(s);
    std::swap(in_strides[d0], in_strides[d1]);
    Tensor y = xt::zeros<float>(out);
    const std::size_t rank = out.size();
    std::vector<std::size_t> index(rank, 0);
    std::size_t src = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        y.data()[i] = x.data()[src];
        for (std::size_t j = rank; j-- > 0;) {
            src += in_strides[j];
            if (++index[j] < out[j]) break;
            src -= index[j] * in_strides[j];
            index[j] = 0;
        }
    }
    return y;
}

Tensor T(const Tensor& x) {
    check_rank("T", shape_of(x), 2);
    return attn::transpose(x, 0, 1);
}

Tensor view(const Tensor& x, const std::vector<long>& size) {
    Shape out(size.size());
    long infer = -1;
    for (std::size_t i = 0; i < size.size(); ++i) {
        if (size[i] == -1) {
            if (infer >= 0) throw std::invalid_argument("view: only one dimension can be -1");
            infer = static_cast<long>(i);
        } else if (size[i] < 0) {
            throw std::invalid_argument("view: invalid size " + std::to_string(size[i]));
        } else {
            out[i] = static_cast<std::size_t>(size[i]);
        }
    }
    const Shape sx = shape_of(x);  // refuses a shape that does not match the storage
    if (infer >= 0) {
        Shape rest = out;
        rest.erase(rest.begin() + infer);
        const std::size_t known = numel(rest);  // throws when the given sizes overflow
        if (known == 0) {
            // PyTorch's infer_size wording: with a 0 among the sizes, -1 could be anything.
            throw std::invalid_argument("view: cannot reshape tensor of " + std::to_string(x.size()) +
                                        " elements into shape " + python_sizes(size) +
                                        " because the unspecified dimension size -1 can be any "
                                        "value and is ambiguous");
        }
        out[infer] = x.size() / known;
    }
    if (numel(out) != x.size()) {
        throw std::invalid_argument("view: shape " + shape_str(out) + " is invalid for input " +
                                    shape_str(sx) + " of " + std::to_string(x.size()) +
                                    " elements");
    }
    Tensor y = x;
    y.reshape(out);
    return y;
}

Tensor stack(const std::vector<Tensor>& tensors, long dim) {
    if (tensors.empty()) throw std::invalid_argument("stack: expected a non-empty list");
    const Shape s = shape_of(tensors[0]);
    for (const auto& t : tensors) check_same_shape("stack", s, shape_of(t));
    const std::size_t d = wrap_dim("stack", dim, s.size() + 1);
    std::vector<Tensor> expanded;
    expanded.reserve(tensors.size());
    for (const auto& t : tensors) {
        Shape e = s;
        e.insert(e.begin() + static_cast<long>(d), 1);
        Tensor u = t;
        u.reshape(e);
        expanded.push_back(std::move(u));
    }
    return attn::cat(expanded, static_cast<long>(d));
}

Tensor cat(const std::vector<Tensor>& tensors, long dim) {
    if (tensors.empty()) throw std::invalid_argument("cat: expected a non-empty list");
    const Shape s0 = shape_of(tensors[0]);
    const std::size_t d = wrap_dim("cat", dim, s0.size());
    Shape out = s0;
    out[d] = 0;
    for (const auto& t : tensors) {
        Shape s = shape_of(t);
        Shape expect = s0;
        expect[d] = s.size() == s0.size() ? s[d] : 0;
        if (s.size() != s0.size()) throw_shape_error("cat", shape_str(s0) + " except dim " +
                                                                std::to_string(d), s);
        for (std::size_t i = 0; i < s.size(); ++i)
            if (i != d && s[i] != s0[i])
                throw_shape_error("cat", shape_str(expect) + " (all but dim " +
                                             std::to_string(d) + " equal)", s);
        if (__builtin_add_overflow(out[d], s[d], &out[d]))
            throw std::length_error("cat: the joined dimension " + std::to_string(d) +
                                    " overflows (storage size calculation overflowed)");
    }
    check_allocation("cat", out);
    Tensor y = xt::zeros<float>(out);
    // Nothing to copy: and the block sizes below may not fit (`[0, 2^32, 2^32]`), as PyTorch
    // returns such an empty result.
    if (y.size() == 0) return y;
    // Copy row-major blocks: everything after dim d is contiguous per tensor.
    const std::size_t outer = numel(Shape(out.begin(), out.begin() + static_cast<long>(d)));
    const std::size_t inner = numel(Shape(out.begin() + static_cast<long>(d) + 1, out.end()));
    std::size_t pos = 0;
    for (std::size_t o = 0; o < outer; ++o)
        for (const auto& t : tensors) {
            const std::size_t chunk = t.shape()[d] * inner;
            std::copy_n(t.data() + o * chunk, chunk, y.data() + pos);
            pos += chunk;
        }
    return y;
}

Tensor select(const Tensor& x, long index) {
    const Shape s = shape_of(x);  // refuses a shape that does not match the storage
    if (s.empty()) throw_shape_error("select", "at least 1-D", s);
    // index in [-n, n), compared without signed overflow: an empty tensor's n may pass 2^63.
    const std::size_t n = s[0];
    const std::size_t back = index < 0 ? static_cast<std::size_t>(-(index + 1)) + 1 : 0;
    if (index >= 0 ? static_cast<std::size_t>(index) >= n : back > n) {
        throw std::invalid_argument("select: index " + std::to_string(index) +
                                    " out of range for dimension 0 of " + shape_str(s));
    }
    const std::size_t i = index >= 0 ? static_cast<std::size_t>(index) : n - back;
    // xtensor's views of an array with no storage offset a null pointer: no view then.
    if (x.size() == 0) return Tensor(xt::zeros<float>(Shape(s.begin() + 1, s.end())));
    xt::xstrided_slice_vector sv(x.dimension(), xt::all());
    sv[0] = static_cast<std::ptrdiff_t>(i);
    return Tensor(xt::strided_view(x, sv));
}

Tensor slice(const Tensor& x, long dim, long start, long stop) {
    const Shape s = shape_of(x);
    const std::size_t d = wrap_dim("slice", dim, s.size());
    const std::size_t n = s[d];
    // Python's slice bounds: a negative one counts from the end; both clamped to [0, n].
    auto clampi = [n](long i) -> std::size_t {
        if (i >= 0) return std::min(static_cast<std::size_t>(i), n);
        const std::size_t back = static_cast<std::size_t>(-(i + 1)) + 1;
        return back >= n ? 0 : n - back;
    };
    const std::size_t b = clampi(start);
    const std::size_t e = std::max(b, clampi(stop));
    if (x.size() == 0) {  // as in select: no view of no storage
        Shape out = s;
        out[d] = e - b;
        return Tensor(xt::zeros<float>(out));
    }
    xt::xstrided_slice_vector sv(x.dimension(), xt::all());
    sv[d] = xt::range(static_cast<std::ptrdiff_t>(b), static_cast<std::ptrdiff_t>(e));
    return Tensor(xt::strided_view(x, sv));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    const Shape sa = shape_of(a), sb = shape_of(b);
    if (sa.empty() || sb.empty())
        throw_shape_error("matmul", "both arguments at least 1-D", sa.empty() ? sa : sb);
    // Promote vectors to matrices as torch.matmul does, and remember to drop the dims.
    Shape ma = sa, mb = sb;
    const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
    if (a_vec) ma.insert(ma.begin(), 1);
    if (b_vec) mb.push_back(1);
    const std::size_t m = ma[ma.size() - 2], k = ma.back(), n = mb.back();
    if (mb[mb.size() - 2] != k) {
        throw std::invalid_argument("matmul: expected the second argument to have " +
                                    std::to_string(k) + " rows to match " + shape_str(sa) +
                                    ", got " + shape_str(sb));
    }
    const Shape ba(ma.begin(), ma.end() - 2), bb(mb.begin(), mb.end() - 2);
    const Shape batch = broadcast_shapes("matmul (batch dimensions)", ba, bb);
    const auto sta = strides_of(ba), stb = strides_of(bb);
    const std::size_t nbatch = numel(batch);
    Shape out = batch;
    out.push_back(m);
    out.push_back(n);
    check_allocation("matmul", out);
    Tensor y = xt::zeros<float>(out);
    std::vector<std::size_t> index(batch.size(), 0);
    // An empty result has nothing to compute, however many (empty) batches it has: [2^40, 0, n].
    for (std::size_t i = 0; i < (y.size() ? nbatch : 0); ++i) {
        const float* pa = a.data() + broadcast_offset(ba, sta, index) * m * k;
        const float* pb = b.data() + broadcast_offset(bb, stb, index) * k * n;
        gemm_rowmajor(pa, pb, y.data() + i * m * n, m, k, n, false);
        for (std::size_t j = batch.size(); j-- > 0;) {
            if (++index[j] < batch[j]) break;
            index[j] = 0;
        }
    }
    if (a_vec) out.erase(out.end() - 2);
    if (b_vec) out.pop_back();
    y.reshape(out);
    return y;
}

Tensor sum(const Tensor& x, long dim, bool keepdim) {
    const Shape s = shape_of(x);
    const std::size_t d = wrap_dim("sum", dim, s.size());
    const std::size_t outer = numel(Shape(s.begin(), s.begin() + static_cast<long>(d)));
    const std::size_t inner = numel(Shape(s.begin() + static_cast<long>(d) + 1, s.end()));
    const std::size_t len = s[d];
    Shape out = s;
    if (keepdim) out[d] = 1;
    else out.erase(out.begin() + static_cast<long>(d));
    check_allocation("sum", out);
    Tensor y = xt::zeros<float>(out);
    // An empty result has nothing to sum, however many (empty) rows x has: [2^40, 2, 0] over 1.
    if (y.size() == 0) return y;
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < inner; ++i) {
            if (inner == 1) {  // a contiguous row: PyTorch's cascade order (reduce.hpp)
                y.data()[o] = detail::torch_sum(x.data() + o * len, len);
                continue;
            }
            float acc = 0.0f;
            for (std::size_t j = 0; j < len; ++j) acc += x.data()[(o * len + j) * inner + i];
            y.data()[o * inner + i] = acc;
        }
    return y;
}

Tensor sum(const Tensor& x) {
    shape_of(x);  // refuses a shape that does not match the storage
    return scalar_tensor(detail::torch_sum(x.data(), x.size()));
}

Tensor norm(const Tensor& x, double p) {
    shape_of(x);
    if (p == 2.0) return scalar_tensor(detail::torch_norm2(x.data(), x.size()));
    if (p == std::numeric_limits<double>::infinity()) {
        if (x.size() == 0)
            throw std::invalid_argument("norm: the inf-norm of an empty tensor is undefined (PyTorch's abs().max() "
                                        "of no element raises)");
        const float m = detail::torch_max(x.data(), x.size(), true);  // x.abs().max()
        return scalar_tensor(m);
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", p);
    throw std::invalid_argument(std::string("norm: p must be 2 or inf (the orders computed here as PyTorch does), got ") +
                                text);
}

LongTensor argmax(const Tensor& x, long dim) {
    const Shape s = shape_of(x);
    const std::size_t d = wrap_dim("argmax", dim, s.size());
    if (s[d] == 0) throw_shape_error("argmax", "a non-empty dimension " + std::to_string(d), s);
    const std::size_t outer = numel(Shape(s.begin(), s.begin() + static_cast<long>(d)));
    const std::size_t inner = numel(Shape(s.begin() + static_cast<long>(d) + 1, s.end()));
    Shape out = s;
    out.erase(out.begin() + static_cast<long>(d));
    LongTensor y = xt::zeros<std::int64_t>(out);
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < inner; ++i) {
            std::size_t best = 0;
            float bv = x.data()[o * s[d] * inner + i];
            for (std::size_t j = 1; j < s[d]; ++j) {
                const float v = x.data()[(o * s[d] + j) * inner + i];
                if (v > bv || (std::isnan(v) && !std::isnan(bv))) { best = j; bv = v; }
            }
            y.data()[o * inner + i] = static_cast<std::int64_t>(best);
        }
    return y;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
    check_same_shape("allclose", shape_of(a), shape_of(b));
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = a.data()[i], y = b.data()[i];
        if (x == y) continue;  // equal infinities
        if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
    }
    return true;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
    check_same_shape("max_abs_diff", shape_of(a), shape_of(b));
    float m = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float d = std::abs(a.data()[i] - b.data()[i]);
        if (std::isnan(d)) return d;
        m = std::max(m, d);
    }
    return m;
}

Tensor exp(const Tensor& x) {
    shape_of(x);  // refuses a shape that does not match the storage
    Tensor y = x;
    for (auto& v : y) v = std::exp(v);
    return y;
}

namespace {
Tensor triangle(const char* where, const Tensor& x, long diagonal, bool lower) {
    const Shape s = shape_of(x);
    if (s.size() < 2) throw_shape_error(where, "at least 2-D [*, *]", s);
    const std::size_t rows = s[s.size() - 2], cols = s.back();
    Tensor y = x;
    const std::size_t mats = (rows * cols) != 0 ? y.size() / (rows * cols) : 0;
    for (std::size_t m = 0; m < mats; ++m)
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) {
                const long off = static_cast<long>(j) - static_cast<long>(i);
                const bool keep = lower ? off <= diagonal : off >= diagonal;
                if (!keep) y.data()[(m * rows + i) * cols + j] = 0.0f;
            }
    return y;
}
}  // namespace

Tensor tril(const Tensor& x, long diagonal) { return triangle("tril", x, diagonal, true); }

Tensor triu(const Tensor& x, long diagonal) { return triangle("triu", x, diagonal, false); }

// Elementwise functions check the input's storage too (shape_of), so a result never gets a
// shape its storage does not hold.
BoolTensor to_bool(const Tensor& x) {
    shape_of(x);
    return BoolTensor(xt::not_equal(x, 0.0f));
}

BoolTensor eq(const Tensor& x, float value) {
    shape_of(x);
    return BoolTensor(xt::equal(x, value));
}

BoolTensor eq(const LongTensor& x, std::int64_t value) {
    shape_of(x);
    return BoolTensor(xt::equal(x, value));
}

Tensor to_float(const BoolTensor& x) {
    shape_of(x);
    return xt::cast<float>(x);
}

Tensor masked_fill(const Tensor& x, const BoolTensor& mask, float value) {
    const Shape sx = shape_of(x), sm = shape_of(mask);
    if (!broadcastable(sm, sx))
        throw_shape_error("masked_fill (mask)", "a shape broadcastable to " + shape_str(sx), sm);
    Tensor y = x;
    const auto stm = strides_of(sm);
    std::vector<std::size_t> index(sx.size(), 0);
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (mask.data()[broadcast_offset(sm, stm, index)]) y.data()[i] = value;
        for (std::size_t j = sx.size(); j-- > 0;) {
            if (++index[j] < sx[j]) break;
            index[j] = 0;
        }
    }
    return y;
}

Tensor& masked_fill_(Tensor& x, const BoolTensor& mask, float value) {
    const Shape a = shape_of(x), b = shape_of(mask);
    std::size_t i = 0;
    const auto out = try_broadcast(a, b, &i);
    if (!out) {
        // PyTorch's infer_size wording (aten/src/ATen/ExpandUtils.cpp), dimension i of the
        // right-aligned result.
        const std::size_t n = std::max(a.size(), b.size());
        const std::size_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const std::size_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
        throw std::invalid_argument("The size of tensor a (" + std::to_string(da) +
                                    ") must match the size of tensor b (" + std::to_string(db) +
                                    ") at non-singleton dimension " + std::to_string(i));
    }
    if (*out != a) {
        // An in-place result keeps x's storage, so it cannot take the broadcast shape
        // (TensorIterator's check, aten/src/ATen/TensorIterator.cpp, PyTorch's wording).
        throw std::invalid_argument("output with shape " + shape_str(a) +
                                    " doesn't match the broadcast shape " + shape_str(*out));
    }
    x = attn::masked_fill(x, mask, value);
    return x;
}

}  // namespace attn
