// generate_text_simple and generate_text_simple_cached (generate.hpp): Raschka ch. 4.7 and
// ch04/03_kv-cache.
#include "attn/model/generate.hpp"

#include <stdexcept>
#include <string>

#include "attn/core/functional.hpp"

namespace attn {

namespace {

// idx[:, -n:]
LongTensor last_tokens(const LongTensor& idx, std::size_t n) {
    const std::size_t b = idx.shape()[0], T = idx.shape()[1], keep = std::min(n, T);
    LongTensor out = xt::empty<std::int64_t>(Shape{b, keep});
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t t = 0; t < keep; ++t) out(i, t) = idx(i, T - keep + t);
    return out;
}

// logits[:, -1, :].argmax(dim=-1, keepdim=True) of [b, T, V] logits, optionally after softmax.
LongTensor next_tokens(const Tensor& logits, bool through_softmax) {
    const std::size_t b = logits.shape()[0], T = logits.shape()[1], V = logits.shape()[2];
    Tensor last = Tensor::from_shape(Shape{b, V});
    for (std::size_t i = 0; i < b; ++i)
        std::copy_n(logits.data() + (i * T + T - 1) * V, V, last.data() + i * V);
    const LongTensor best = argmax(through_softmax ? softmax(last, -1) : last, -1);
    LongTensor out = xt::empty<std::int64_t>(Shape{b, 1});
    for (std::size_t i = 0; i < b; ++i) out(i, 0) = best(i);
    return out;
}

// torch.cat((idx, next), dim=1)
LongTensor append(const LongTensor& idx, const LongTensor& next) {
    const std::size_t b = idx.shape()[0], T = idx.shape()[1];
    LongTensor out = xt::empty<std::int64_t>(Shape{b, T + 1});
    for (std::size_t i = 0; i < b; ++i) {
        for (std::size_t t = 0; t < T; ++t) out(i, t) = idx(i, t);
        out(i, T) = next(i, 0);
    }
    return out;
}

void check_idx(const char* where, const LongTensor& idx) {
    const Shape s = shape_of(idx);
    if (s.size() != 2 || s[1] == 0) throw_shape_error(std::string(where) + " (idx)", "[batch, n_tokens], n_tokens > 0", s);
}

void check_context(const char* where, const GPTModel& model, std::size_t context_size) {
    if (context_size > model.context_length())
        throw std::invalid_argument(std::string(where) + ": context_size " + std::to_string(context_size) +
                                    " exceeds the model's context_length " + std::to_string(model.context_length()));
}

}  // namespace

LongTensor generate_text_simple(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens,
                                std::size_t context_size) {
    check_idx("generate_text_simple", idx);
    if (context_size == 0) throw std::invalid_argument("generate_text_simple: expected context_size > 0, got 0");
    check_context("generate_text_simple", model, context_size);
    LongTensor out = idx;
    for (std::size_t step = 0; step < max_new_tokens; ++step)
        out = append(out, next_tokens(model(last_tokens(out, context_size)), /*through_softmax=*/true));
    return out;
}

LongTensor generate_text_simple_cached(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens,
                                       GPTCache& cache, std::size_t context_size, bool use_cache) {
    return generate_text_simple_cached(model, idx, max_new_tokens, cache, {}, context_size, use_cache);
}

LongTensor generate_text_simple_cached(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens,
                                       GPTCache& cache, const std::function<void(std::size_t)>& on_token,
                                       std::size_t context_size, bool use_cache) {
    check_idx("generate_text_simple_cached", idx);
    check_context("generate_text_simple_cached", model, context_size);
    const std::size_t ctx_len = context_size != 0 ? context_size : model.context_length();
    LongTensor out = idx;
    if (!use_cache) {
        for (std::size_t step = 0; step < max_new_tokens; ++step) {
            out = append(out, next_tokens(model(last_tokens(out, ctx_len)), false));
            if (on_token) on_token(step + 1);
        }
        return out;
    }
    cache.reset();  // model.reset_kv_cache()
    Tensor logits = model.forward(last_tokens(out, ctx_len), cache);
    for (std::size_t step = 0; step < max_new_tokens; ++step) {
        const LongTensor next = next_tokens(logits, false);
        out = append(out, next);
        logits = model.forward(next, cache);
        if (on_token) on_token(step + 1);
    }
    return out;
}

}  // namespace attn
