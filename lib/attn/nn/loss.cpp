// The next-token loss of notebook 001 In [21]: log_softmax and cross_entropy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/elementwise.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"

namespace attn {
namespace {

// sum_j exp(row[j] - mx) in the order of PyTorch 1.13's `_vec_log_softmax_lastdim` (AVX2 build):
// `vec::map_reduce_all`, i.e. detail::reduce_all_sum_of (8 lanes and their tree; fewer than 8
// keys added one by one). exp and log are SLEEF's u10 functions, as Vectorized<float>::exp /
// log call them.
float log_softmax_exp_sum(const float* row, std::size_t n, float mx) {
    return detail::reduce_all_sum_of(n, [row, mx](std::size_t j) { return exp_torch(row[j] - mx); });
}

}  // namespace

Tensor log_softmax(const Tensor& x, long dim) {
    return detail::softmax_along("log_softmax", x, dim, true, [](float* row, std::size_t n) {
        float mx = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
        const float log_total = n ? log_torch(log_softmax_exp_sum(row, n, mx)) : 0.0f;
        // PyTorch keeps this order, (x - max) - log(sum), on purpose: adding max + log(sum)
        // first loses the small differences between large logits (pytorch issue 11752).
        for (std::size_t j = 0; j < n; ++j) row[j] = (row[j] - mx) - log_total;
    });
}

namespace {

// c10's CeilLog2 as nll_loss uses it (1 for x <= 2).
std::int64_t ceil_log2(std::int64_t x) {
    if (x <= 2) return 1;
    std::int64_t bits = 0;
    for (std::uint64_t v = static_cast<std::uint64_t>(x - 1); v != 0; v >>= 1) ++bits;
    return bits;
}

}  // namespace

namespace {

// Checks logits [N, C] and targets [N] (every kept target in [0, C)); returns how many targets
// are not ignore_index.
std::int64_t checked_targets(const char* where, const Shape& sl, const LongTensor& targets,
                             std::int64_t ignore_index) {
    check_rank(std::string(where) + " (logits)", sl, 2);
    const std::size_t N = sl[0], C = sl[1];
    const Shape st = shape_of(targets);
    if (st.size() != 1 || st[0] != N)
        throw_shape_error(std::string(where) + " (targets)", "[" + std::to_string(N) + "]", st);
    std::int64_t count = 0;
    for (std::size_t b = 0; b < N; ++b) {
        const std::int64_t t = targets(b);
        if (t == ignore_index) continue;
        if (t < 0 || static_cast<std::uint64_t>(t) >= C)
            throw std::invalid_argument(
                std::string(where) + ": target " + std::to_string(t) + " at position " + std::to_string(b) +
                " is out of bounds: expected a class in [0, " + std::to_string(C) +
                ") or ignore_index=" + std::to_string(ignore_index));
        ++count;
    }
    return count;
}

// nll_loss_out_frame (aten/src/ATen/native/LossNLL.cpp), mean reduction: -log_probs[b, t]
// (`picked[b]`) summed in a cascade of partial sums (level j folds into level j + 1 every
// 2^(4 (j + 1)) rows), then divided by the number of targets that are not ignored, in float32.
// All targets ignored (or N == 0): 0 / 0 = NaN, as PyTorch returns.
float nll_mean(const float* picked, const LongTensor& targets, std::int64_t ignore_index, std::int64_t count) {
    const std::size_t N = targets.size();
    constexpr int levels = 8;
    const std::int64_t level_power =
        std::max<std::int64_t>(4, ceil_log2(static_cast<std::int64_t>(N)) / levels);
    const std::int64_t level_mask = (std::int64_t{1} << level_power) - 1;
    float partial[levels] = {};
    for (std::size_t b = 0; b < N; ++b) {
        if (targets(b) == ignore_index) continue;
        partial[0] -= picked[b];
        for (int j = 0; j + 1 < levels; ++j) {
            if ((static_cast<std::int64_t>(b) & (level_mask << (j * level_power))) != 0) break;
            partial[j + 1] += partial[j];
            partial[j] = 0.0f;
        }
    }
    float total = 0.0f;
    for (const float p : partial) total += p;
    return total / static_cast<float>(count);
}

// `e[j] = fma(-e[j], sum, dy_j)`, the log_softmax backward of a row whose gradient is `value` at
// `target` (`C`: none) and 0 elsewhere, from the row's exp(log_prob) in `e`; compiled for CPUs
// with FMA too (one instruction instead of a call per element).
__attribute__((target_clones("arch=x86-64-v3", "default"), optimize("fp-contract=off")))
void ce_grad_row(float* e, std::size_t C, float sum, std::size_t target, float value) {
    const float e_target = target < C ? e[target] : 0.0f;
    for (std::size_t j = 0; j < C; ++j) e[j] = std::fma(-e[j], sum, 0.0f);
    if (target < C) e[target] = std::fma(-e_target, sum, value);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const LongTensor& targets, std::int64_t ignore_index) {
    const Shape sl = shape_of(logits);
    const std::int64_t count = checked_targets("cross_entropy", sl, targets, ignore_index);
    const std::size_t N = sl[0], C = sl[1];
    // cross_entropy = nll_loss(log_softmax(logits, 1), targets, ignore_index), mean reduction.
    // nll_loss reads one entry of each row's log_softmax: that entry alone, by log_softmax's
    // operations, so that the [N, C] log-probabilities are never stored (103 MB for his batch).
    std::vector<float> picked(N, 0.0f);
    const auto rows = static_cast<long>(N);
#pragma omp parallel for schedule(static) if (N * C >= detail::kParallelFloats)
    for (long r = 0; r < rows; ++r) {
        const auto b = static_cast<std::size_t>(r);
        const std::int64_t t = targets(b);
        if (t == ignore_index) continue;
        const float* x = logits.data() + b * C;
        float mx = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < C; ++j) mx = std::max(mx, x[j]);
        const float log_total = log_torch(log_softmax_exp_sum(x, C, mx));
        picked[b] = (x[static_cast<std::size_t>(t)] - mx) - log_total;
    }
    return scalar_tensor(nll_mean(picked.data(), targets, ignore_index, count));
}

float cross_entropy_with_grad(const Tensor& logits, const LongTensor& targets, Tensor& grad,
                              std::int64_t ignore_index) {
    const Shape sl = shape_of(logits);
    const std::int64_t count = checked_targets("cross_entropy", sl, targets, ignore_index);
    const std::size_t N = sl[0], C = sl[1];
    float* d = sized(grad, sl, "cross_entropy (grad)");
    // nll_loss_backward: -1 / count at each kept target (the gradient of the mean)
    const float value = -(1.0f / static_cast<float>(count));
    std::vector<float> picked(N, 0.0f);
    const auto rows = static_cast<long>(N);
#pragma omp parallel for schedule(static) if (N * C >= detail::kParallelFloats)
    for (long r = 0; r < rows; ++r) {
        const auto b = static_cast<std::size_t>(r);
        const float* x = logits.data() + b * C;
        float* row = d + b * C;
        // log_softmax's row (as attn::log_softmax): (x - max) - log(sum(exp(x - max)))
        float mx = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < C; ++j) mx = std::max(mx, x[j]);
        std::copy_n(x, C, row);
        exp_torch_shifted(row, C, mx);
        const float log_total = C ? log_torch(detail::reduce_all_sum(row, C)) : 0.0f;
        for (std::size_t j = 0; j < C; ++j) row[j] = (x[j] - mx) - log_total;
        const std::int64_t t = targets(b);
        const bool kept = t != ignore_index;
        if (kept) picked[b] = row[static_cast<std::size_t>(t)];
        // log_softmax_backward of the one-hot gradient: its row sums to `value` exactly (or 0 for an
        // ignored row), and dlogits = fma(-exp(log_prob), sum, dlog_prob)
        exp_torch_shifted(row, C, 0.0f);  // exp(log_prob - 0) = exp(log_prob)
        ce_grad_row(row, C, kept ? value : 0.0f, kept ? static_cast<std::size_t>(t) : C, value);
    }
    return nll_mean(picked.data(), targets, ignore_index, count);
}

Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output) {
    return detail::backward_rows("log_softmax_backward", grad_output, output,
                                 [](const float* dy, const float* y, float* d, std::size_t n) {
                                     const float sum = detail::reduce_all_sum(dy, n);
                                     // x - exp(y) * sum, contracted to one fused multiply-add in
                                     // PyTorch's AVX2 build
                                     for (std::size_t j = 0; j < n; ++j)
                                         d[j] = std::fma(-exp_torch(y[j]), sum, dy[j]);
                                 });
}

Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& logits,
                              const LongTensor& targets, std::int64_t ignore_index) {
    const float g = detail::scalar_grad("cross_entropy_backward", grad_output);
    const Shape sl = shape_of(logits);
    const std::int64_t count = checked_targets("cross_entropy_backward", sl, targets, ignore_index);
    const std::size_t N = sl[0];
    // nll_loss_backward (mean): -grad / total_weight at each kept target, zeros elsewhere.
    Tensor d_log_probs = xt::zeros<float>(sl);
    const float value = -(g / static_cast<float>(count));
    for (std::size_t b = 0; b < N; ++b)
        if (targets(b) != ignore_index) d_log_probs(b, static_cast<std::size_t>(targets(b))) = value;
    return log_softmax_backward(d_log_probs, attn::log_softmax(logits, -1));
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
    const Shape s = shape_of(input);
    check_same_shape("mse_loss (target)", s, shape_of(target));
    // mse_kernel: (a - b) * (a - b) per element; then mean: sum / numel.
    Tensor sq = Tensor::from_shape(s);
    for (std::size_t i = 0; i < sq.size(); ++i) {
        const float d = input.data()[i] - target.data()[i];
        sq.data()[i] = d * d;
    }
    return attn::mean(sq);
}

Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target) {
    const float g = detail::scalar_grad("mse_loss_backward", grad_output);
    const Shape s = shape_of(input);
    check_same_shape("mse_loss_backward (target)", s, shape_of(target));
    const float norm = static_cast<float>(2.0 / static_cast<double>(numel(s)));
    Tensor dx = Tensor::from_shape(s);
    for (std::size_t i = 0; i < dx.size(); ++i)
        dx.data()[i] = norm * (input.data()[i] - target.data()[i]) * g;
    return dx;
}

}  // namespace attn
