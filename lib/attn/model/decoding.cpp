// top_k_filter, sample_next_token, generate, generate_cached (decoding.hpp): Raschka ch05 §5.3,
// In [37]-[40].
#include "attn/model/decoding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/core/sampling.hpp"

namespace attn {

namespace {

// idx[:, -n:]
LongTensor decoding_crop(const LongTensor& idx, std::size_t n) {
    const std::size_t b = idx.shape()[0], T = idx.shape()[1], keep = std::min(n, T);
    LongTensor out = xt::empty<std::int64_t>(Shape{b, keep});
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t t = 0; t < keep; ++t) out(i, t) = idx(i, T - keep + t);
    return out;
}

// logits[:, -1, :] of [b, T, V] logits
Tensor decoding_last_position(const Tensor& logits) {
    const std::size_t b = logits.shape()[0], T = logits.shape()[1], V = logits.shape()[2];
    Tensor last = Tensor::from_shape(Shape{b, V});
    for (std::size_t i = 0; i < b; ++i) std::copy_n(logits.data() + (i * T + T - 1) * V, V, last.data() + i * V);
    return last;
}

// torch.cat((idx, idx_next), dim=1)
LongTensor decoding_cat(const LongTensor& idx, const LongTensor& next) {
    const std::size_t b = idx.shape()[0], T = idx.shape()[1];
    LongTensor out = xt::empty<std::int64_t>(Shape{b, T + 1});
    for (std::size_t i = 0; i < b; ++i) {
        for (std::size_t t = 0; t < T; ++t) out(i, t) = idx(i, t);
        out(i, T) = next(i, 0);
    }
    return out;
}

// The settings every decoding function checks; `vocab` is the logits' width.
void check_sampling(const std::string& where, double temperature, std::optional<std::size_t> top_k, std::size_t vocab) {
    if (!(temperature >= 0.0) || std::isinf(temperature))
        throw std::invalid_argument(
            where + ": expected a finite temperature >= 0 (0: greedy), got temperature=" + std::to_string(temperature));
    if (top_k && (*top_k == 0 || *top_k > vocab))
        throw std::invalid_argument(where + ": expected top_k in [1, vocab_size = " + std::to_string(vocab) +
                                    "], got top_k=" + std::to_string(*top_k));
}

// generate's and generate_cached's checks of everything but the model's output.
void check_generate(const std::string& where, const GPTModel& model, const LongTensor& idx, std::size_t context_size,
                    double temperature, std::optional<std::size_t> top_k, std::optional<std::int64_t> eos_id) {
    const Shape s = shape_of(idx);
    if (s.size() != 2 || s[0] == 0 || s[1] == 0)
        throw_shape_error(where + " (idx)", "[batch, n_tokens] with batch > 0 and n_tokens > 0", s);
    if (context_size == 0) throw std::invalid_argument(where + ": expected context_size > 0, got 0");
    if (context_size > model.context_length())
        throw std::invalid_argument(where + ": context_size " + std::to_string(context_size) +
                                    " exceeds the model's context_length " + std::to_string(model.context_length()));
    check_sampling(where, temperature, top_k, model.vocab_size());
    if (eos_id && s[0] != 1)
        throw std::invalid_argument(where +
                                    ": eos_id needs a batch of 1 (his `if idx_next == eos_id` compares one "
                                    "token), got a batch of " +
                                    std::to_string(s[0]));
}

// sample_next_token without its checks.
LongTensor decoding_step(const Tensor& logits, double temperature, std::optional<std::size_t> top_k, Generator& gen) {
    const std::size_t b = logits.shape()[0], V = logits.shape()[1];
    Tensor x = top_k ? top_k_filter(logits, *top_k) : logits;
    LongTensor idx_next = xt::empty<std::int64_t>(Shape{b, 1});
    if (temperature > 0.0) {
        // logits / temperature: a float32 tensor divided by a Python float divides by float(T)
        const auto t = static_cast<float>(temperature);
        for (float& v : x) v = v / t;
        // logits - logits.max(dim=-1, keepdim=True).values (max propagates NaN)
        for (std::size_t i = 0; i < b; ++i) {
            float* row = x.data() + i * V;
            float m = row[0];
            for (std::size_t j = 1; j < V; ++j)
                if (std::isnan(row[j]) || row[j] > m) m = std::isnan(m) ? m : row[j];
            for (std::size_t j = 0; j < V; ++j) row[j] = row[j] - m;
        }
        idx_next = multinomial(softmax(x, -1), 1, false, gen);
    } else {
        const LongTensor best = argmax(x, -1);  // the first maximum
        std::copy(best.begin(), best.end(), idx_next.data());
    }
    return idx_next;
}

}  // namespace

Tensor top_k_filter(const Tensor& logits, std::size_t k) {
    const Shape s = shape_of(logits);
    if (s.empty()) throw_shape_error("top_k_filter", "at least 1-D", s);
    if (k == 0 || k > s.back())
        throw std::invalid_argument("top_k_filter: expected k in [1, " + std::to_string(s.back()) +
                                    "], got k=" + std::to_string(k));
    const TopK top = topk(logits, k);
    const std::size_t V = s.back(), rows = logits.size() / V;
    Tensor out = logits;
    constexpr float minus_inf = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < rows; ++i) {
        const float min_val = top.values.data()[i * k + k - 1];
        for (float* v = out.data() + i * V; v != out.data() + (i + 1) * V; ++v)
            if (*v < min_val) *v = minus_inf;
    }
    return out;
}

LongTensor sample_next_token(const Tensor& logits, double temperature, std::optional<std::size_t> top_k,
                             Generator& gen) {
    const Shape s = shape_of(logits);
    if (s.size() != 2 || s[0] == 0 || s[1] == 0)
        throw_shape_error("sample_next_token (logits)", "[batch, vocab_size] with batch > 0 and vocab_size > 0", s);
    check_sampling("sample_next_token", temperature, top_k, s[1]);
    return decoding_step(logits, temperature, top_k, gen);
}

LongTensor generate(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens, std::size_t context_size,
                    double temperature, std::optional<std::size_t> top_k, std::optional<std::int64_t> eos_id,
                    Generator& gen) {
    check_generate("generate", model, idx, context_size, temperature, top_k, eos_id);
    LongTensor out = idx;
    for (std::size_t step = 0; step < max_new_tokens; ++step) {
        const Tensor logits = decoding_last_position(model(decoding_crop(out, context_size), gen));
        const LongTensor idx_next = decoding_step(logits, temperature, top_k, gen);
        if (eos_id && idx_next(0, 0) == *eos_id) break;
        out = decoding_cat(out, idx_next);
    }
    return out;
}

LongTensor generate_cached(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens, GPTCache& cache,
                           std::size_t context_size, double temperature, std::optional<std::size_t> top_k,
                           std::optional<std::int64_t> eos_id, Generator& gen) {
    check_generate("generate_cached", model, idx, context_size, temperature, top_k, eos_id);
    const LongTensor prompt = decoding_crop(idx, context_size);
    const std::size_t P = prompt.shape()[1];
    if (max_new_tokens > 0 && P + max_new_tokens - 1 > model.context_length())
        throw std::invalid_argument("generate_cached: the prompt's " + std::to_string(P) +
                                    " tokens and max_new_tokens " + std::to_string(max_new_tokens) + " need " +
                                    std::to_string(P + max_new_tokens - 1) +
                                    " positions, beyond the model's context_length " +
                                    std::to_string(model.context_length()) + " (the cached decode is not cropped)");
    LongTensor out = idx;
    if (max_new_tokens == 0) return out;
    cache.reset();  // model.reset_kv_cache()
    Tensor logits = decoding_last_position(model.forward(prompt, cache, gen));
    for (std::size_t step = 0; step < max_new_tokens; ++step) {
        const LongTensor idx_next = decoding_step(logits, temperature, top_k, gen);
        if (eos_id && idx_next(0, 0) == *eos_id) break;
        out = decoding_cat(out, idx_next);
        if (step + 1 < max_new_tokens) logits = decoding_last_position(model.forward(idx_next, cache, gen));
    }
    return out;
}

}  // namespace attn
