// nn::Dropout: PyTorch 1.13's CPU dropout (`_dropout_impl` in aten/src/ATen/native/Dropout.cpp)
// with both of its Bernoulli backends (`bernoulli_scalar_kernel` and
// `bernoulli_scalar_kernel_default` in aten/src/ATen/native/cpu/DistributionKernels.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attn/nn/nn.hpp"
#include "attn/print/python.hpp"

namespace attn::nn {
namespace {

// Intel MKL VSL's MCG31m1 basic generator: x_{i+1} = a x_i mod m, u_i = x_i / m.
constexpr std::uint64_t mcg31_m = 2147483647ULL;  // 2^31 - 1
constexpr std::uint64_t mcg31_a = 1132489760ULL;
// PyTorch hands the MKL path to `parallel_for(0, n, /*grain_size=*/800, ...)`.
constexpr std::size_t mkl_grain_size = 800;

void check_probability(double p, const char* where) {
    if (std::isnan(p) || p < 0.0 || p > 1.0)
        throw std::invalid_argument(std::string(where) +
                                    ": dropout probability has to be between 0 and 1, but got " +
                                    std::to_string(p));
}

// a^e mod m by squaring: what `vslSkipAheadStream(stream, e)` does to an MCG31m1 stream.
std::uint64_t mcg31_pow(std::uint64_t e) {
    std::uint64_t result = 1, base = mcg31_a;
    while (e > 0) {
        if (e & 1U) result = result * base % mcg31_m;
        base = base * base % mcg31_m;
        e >>= 1U;
    }
    return result;
}

// `bernoulli_scalar_kernel` with MKL on an Intel CPU: one 32-bit draw `seed`, then
// `vslNewStream(MCG31, seed)` per chunk, skipped ahead to the chunk's first element, and
// `viRngBernoulli(ICDF, ..., q)`: element i is 1 when u_i < q. Every chunk restarts from the
// same seed and skips ahead by its offset, so element i always gets u_i whatever the
// chunking (thread count) is: chunking here as PyTorch's finest split changes nothing.
void mkl_mask(float* out, std::size_t n, double q, Generator& gen) {
    const std::uint32_t seed = gen.random();
    std::uint64_t x0 = seed % mcg31_m;  // vslNewStream: x_0 = seed mod m, and 1 if that is 0
    if (x0 == 0) x0 = 1;
    for (std::size_t begin = 0; begin < n; begin += mkl_grain_size) {
        const std::size_t end = std::min(n, begin + mkl_grain_size);
        std::uint64_t x = x0 * mcg31_pow(begin) % mcg31_m;  // vslSkipAheadStream(begin)
        for (std::size_t i = begin; i < end; ++i) {
            // The first element uses x_0 itself (not x_1), and "kept" is u < q (not the
            // inverse-CDF reading u >= 1 - q): both checked against 002 In [12], where the other
            // choices agree with 21 and 0 of 36 entries. Whether MKL forms u in float or
            // double only matters for x within about 2^7 of q * m (odds ~2^-24 per element).
            out[i] = static_cast<double>(x) / static_cast<double>(mcg31_m) < q ? 1.0f : 0.0f;
            x = x * mcg31_a % mcg31_m;
        }
    }
}

// `bernoulli_scalar_kernel_default`: per element, in row-major order, one 64-bit draw turned
// into a double u in [0, 1) (`uniform_real_distribution<double>`); 1 when u < q.
void portable_mask(float* out, std::size_t n, double q, Generator& gen) {
    for (std::size_t i = 0; i < n; ++i) out[i] = gen.uniform_double() < q ? 1.0f : 0.0f;
}

}  // namespace

void check_backend(BernoulliBackend backend, const char* where) {
    switch (backend) {
        case BernoulliBackend::portable:
        case BernoulliBackend::mkl:
            return;
    }
    throw std::invalid_argument(std::string(where) + ": unknown Bernoulli backend " +
                                std::to_string(static_cast<long long>(backend)) +
                                " (expected BernoulliBackend::portable (0) or mkl (1))");
}

std::string backend_name(BernoulliBackend backend) {
    check_backend(backend, "backend_name");
    return backend == BernoulliBackend::mkl ? "MKL" : "portable";
}

Dropout::Dropout(double p_, BernoulliBackend backend_) : p(p_), backend(backend_) {
    check_probability(p, "Dropout");
    check_backend(backend, "Dropout");
}

Tensor Dropout::keep_mask(const Shape& shape, Generator& gen) const {
    Tensor mask;
    keep_mask_into(shape, mask, gen);
    return mask;
}

void Dropout::keep_mask_into(const Shape& shape, Tensor& mask, Generator& gen) const {
    check_probability(p, "Dropout::keep_mask");
    check_backend(backend, "Dropout::keep_mask");
    check_allocation("Dropout::keep_mask", shape);
    const std::size_t n = numel(shape);
    float* out = sized(mask, shape, "Dropout::keep_mask");
    if (!training || p == 0.0 || p == 1.0 || n == 0) {
        std::fill_n(out, n, !training || p == 0.0 ? 1.0f : 0.0f);
        return;
    }
    const double q = 1.0 - p;  // bernoulli_(1 - p): the keep probability, in double
    if (backend == BernoulliBackend::mkl)
        mkl_mask(out, n, q, gen);
    else
        portable_mask(out, n, q, gen);
}

bool Dropout::is_identity() const {
    check_probability(p, "Dropout");
    check_backend(backend, "Dropout");
    return !training || p == 0.0;
}

Tensor Dropout::operator()(const Tensor& x, Generator& gen) const {
    check_probability(p, "Dropout");
    check_backend(backend, "Dropout");
    shape_of(x);  // refuses a shape that does not match the storage
    if (!training || p == 0.0 || x.size() == 0) return x;
    // PyTorch: `input * zeros({})`, so inf and nan inputs give nan, negative ones -0.
    if (p == 1.0) return Tensor(x * 0.0f);
    // `noise.bernoulli_(1 - p); noise.div_(1 - p); return input * noise;` The divisor is
    // rounded to float32 first and the division is float32: 1 / float(1 - p), which for
    // p = 0.999 is 999.99994, not 1000 (checked against the oracle).
    Tensor noise = keep_mask(shape_of(x), gen);
    const float scale = 1.0f / static_cast<float>(1.0 - p);
    noise *= scale;
    return Tensor(x * noise);
}

Tensor Dropout::forward(const Tensor& x, Tensor& noise, Generator& gen) const {
    Tensor y;
    const Tensor& r = forward_into(x, noise, y, gen);
    return &r == &x ? x : y;
}

const Tensor& Dropout::forward_into(const Tensor& x, Tensor& noise, Tensor& y, Generator& gen) const {
    check_probability(p, "Dropout");
    const Shape s = shape_of(x);
    if (!training || p == 0.0 || x.size() == 0) {
        noise = Tensor();
        return x;
    }
    // keep * (1 / float(1 - p)) as operator(); for p = 1 zeros, nothing drawn (x * 0)
    keep_mask_into(s, noise, gen);
    const float scale = p == 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p);
    float* m = noise.data();
    if (p != 1.0)
        for (std::size_t i = 0; i < noise.size(); ++i) m[i] *= scale;
    const float* px = x.data();  // read before y is written, element by element (y may be x)
    float* py = sized(y, s, "Dropout (output)");
    for (std::size_t i = 0; i < noise.size(); ++i) py[i] = px[i] * m[i];
    return y;
}

Tensor Dropout::backward(const Tensor& grad_output, const Tensor& noise) {
    Tensor g;
    const Tensor& r = backward_into(grad_output, noise, g);
    return &r == &grad_output ? grad_output : g;
}

const Tensor& Dropout::backward_into(const Tensor& grad_output, const Tensor& noise, Tensor& grad_input) {
    const Shape g = shape_of(grad_output);
    if (noise.dimension() == 0) return grad_output;  // nothing was dropped
    check_same_shape("Dropout::backward (noise)", g, shape_of(noise));
    const float* pg = grad_output.data();  // MulBackward0: grad * other (grad_input may be grad_output)
    const float* m = noise.data();
    float* out = sized(grad_input, g, "Dropout::backward (grad_input)");
    for (std::size_t i = 0; i < noise.size(); ++i) out[i] = pg[i] * m[i];
    return grad_input;
}

std::string Dropout::extra_repr() const { return "p=" + attn::repr_float(p) + ", inplace=False"; }

}  // namespace attn::nn
