// topk and multinomial (sampling.hpp): PyTorch 1.13's CPU kernels, native/TopKImpl.h and
// native/Distributions.cpp (`multinomial_out`).
#include "attn/core/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/functional.hpp"

namespace attn {

namespace {

// topk_impl_loop's element (accscalar_t of float is double) and its "largest" comparison: NaN
// above every number, as NumPy sorts it.
using TopkPair = std::pair<double, std::int64_t>;

bool topk_greater(const TopkPair& a, const TopkPair& b) {
    return (std::isnan(a.first) && !std::isnan(b.first)) || a.first > b.first;
}

// One row of topk_impl_loop (largest, sorted): the same algorithms on the same pairs, so that
// equal values come out in PyTorch's order.
void topk_row(const float* x, std::size_t n, std::size_t k, std::vector<TopkPair>& queue, float* values,
              std::int64_t* indices) {
    for (std::size_t j = 0; j < n; ++j) queue[j] = {x[j], static_cast<std::int64_t>(j)};
    const auto first = queue.begin();
    const auto kk = static_cast<std::ptrdiff_t>(k);
    if (k * 64 <= n) {
        std::partial_sort(first, first + kk, queue.end(), topk_greater);
    } else {
        std::nth_element(first, first + kk - 1, queue.end(), topk_greater);
        std::sort(first, first + kk - 1, topk_greater);  // the k-th is in place already
    }
    for (std::size_t j = 0; j < k; ++j) {
        values[j] = static_cast<float>(queue[j].first);
        indices[j] = queue[j].second;
    }
}

[[noreturn]] void multinomial_error(const std::string& what) {
    throw std::invalid_argument("multinomial: " + what);
}

}  // namespace

TopK topk(const Tensor& x, std::size_t k) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error("topk", "at least 1-D", s);
    const std::size_t n = s.back();
    if (k > n)
        throw std::invalid_argument("topk: selected index k out of range: k = " + std::to_string(k) +
                                    " but the last dimension has " + std::to_string(n) + " elements");
    Shape out = s;
    out.back() = k;
    TopK r{Tensor::from_shape(out), xt::empty<std::int64_t>(out)};
    if (k == 0) return r;
    const std::size_t rows = x.size() / n;
    std::vector<TopkPair> queue(n);
    for (std::size_t i = 0; i < rows; ++i)
        topk_row(x.data() + i * n, n, k, queue, r.values.data() + i * k, r.indices.data() + i * k);
    return r;
}

LongTensor multinomial(const Tensor& probs, std::size_t num_samples, bool replacement, Generator& gen) {
    // multinomial_out's checks, in its order.
    const Shape s = shape_of(probs);
    if (s.size() != 1 && s.size() != 2) multinomial_error("prob_dist must be 1 or 2 dim, got shape " + shape_str(s));
    if (num_samples == 0) multinomial_error("cannot sample n_sample <= 0 samples (num_samples = 0)");
    const std::size_t n_categories = s.back();
    if (!replacement && num_samples > n_categories)
        multinomial_error("cannot sample n_sample > prob_dist.size(-1) samples without replacement (num_samples = " +
                          std::to_string(num_samples) + ", prob_dist.size(-1) = " + std::to_string(n_categories) + ")");
    if (n_categories > (std::size_t{1} << 24))  // FLOAT32_MAX_CONSECUTIVE_INT: indices pass through float
        multinomial_error("number of categories cannot exceed 2^24, got " + std::to_string(n_categories));
    if (replacement && num_samples > 1)
        multinomial_error(
            "sampling " + std::to_string(num_samples) +
            " samples with replacement (PyTorch's multinomial_with_replacement kernel) is not implemented");
    const std::size_t rows = s.size() == 1 ? 1 : s[0];
    const Shape out_shape = s.size() == 1 ? Shape{num_samples} : Shape{rows, num_samples};
    LongTensor result = xt::empty<std::int64_t>(out_shape);
    if (result.size() == 0) return result;

    // The fast path's sanity checks: max < inf and min >= 0 (NaN fails both), then no row sums to
    // 0 (a sum of non-negative floats is 0 exactly when every term is 0).
    for (const float p : probs)
        if (!(p < std::numeric_limits<float>::infinity() && p >= 0.0F))
            multinomial_error("probability tensor contains either `inf`, `nan` or element < 0");
    for (std::size_t i = 0; i < rows; ++i) {
        const float* row = probs.data() + i * n_categories;
        if (std::all_of(row, row + n_categories, [](float p) { return p == 0.0F; }))
            multinomial_error("invalid multinomial distribution (sum of probabilities <= 0), in row " +
                              std::to_string(i));
    }

    // s = argmax(p / q), q ~ Exp(1): the whole tensor of exponentials first, then the division.
    Tensor q = Tensor::from_shape(s);
    exponential_(q, 1.0, gen);
    for (std::size_t i = 0; i < q.size(); ++i) q.data()[i] = probs.data()[i] / q.data()[i];
    if (num_samples == 1) {
        const LongTensor best = argmax(q, -1);
        std::copy(best.begin(), best.end(), result.data());
    } else {
        const TopK top = topk(q, num_samples);
        std::copy(top.indices.begin(), top.indices.end(), result.data());
    }
    return result;
}

}  // namespace attn
