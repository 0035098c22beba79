/// @file generate.hpp
/// @brief Greedy text generation with a `GPTModel`: Raschka's `generate_text_simple` (ch. 4.7,
/// In [29]), which runs the whole context through the model for every new token, and his
/// `generate_text_simple_cached` (ch04/03_kv-cache), which runs the prompt once and then one
/// token at a time through the model's KV cache. For the same model both give the same tokens.
#pragma once

#include <cstddef>
#include <functional>

#include "attn/core/tensor.hpp"
#include "attn/model/gpt_model.hpp"

namespace attn {

/// His `generate_text_simple(model, idx, max_new_tokens, context_size)`: `max_new_tokens`
/// times, `logits = model(idx[:, -context_size:])` (without dropout draws: call it on a model
/// in evaluation mode, as he does after `model.eval()`), `probas = torch.softmax(logits[:, -1,
/// :], dim=-1)`, `idx_next = torch.argmax(probas, dim=-1, keepdim=True)` (the first of equal
/// maxima), `idx = torch.cat((idx, idx_next), dim=1)`. `idx`: int64 `[b, T]` -> `[b, T +
/// max_new_tokens]`.
/// @throws std::invalid_argument as `GPTModel::operator()` (an id out of range), or when
/// `context_size` is 0 or exceeds the model's `context_length`.
LongTensor generate_text_simple(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens,
                                std::size_t context_size);

/// His `generate_text_simple_cached(model, idx, max_new_tokens, context_size=None,
/// use_cache=True)`, greedy: `cache.reset()`, `logits = model(idx[:, -ctx_len:], cache)` (the
/// prompt once), then `max_new_tokens` times `next_idx = logits[:, -1].argmax(dim=-1,
/// keepdim=True)`, `idx = cat(idx, next_idx)`, `logits = model(next_idx, cache)` (one token
/// through every block's cache). `ctx_len` is `context_size` or, when 0 (his `None`), the
/// model's `context_length`. With `use_cache = false` his other branch: the whole (cropped)
/// context at every step, as `generate_text_simple` without the softmax. `idx`: int64 `[b, T]`
/// -> `[b, T + max_new_tokens]`; `cache` is left holding the keys and values of every token, the
/// last generated one included (his loop ends with a forward of it).
/// @throws std::invalid_argument as `GPTModel::forward` (an id out of range, a position beyond
/// `context_length`: he does not crop the cached decode, so neither does this), or when
/// `context_size` exceeds the model's `context_length`.
LongTensor generate_text_simple_cached(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens,
                                       GPTCache& cache, std::size_t context_size = 0, bool use_cache = true);

/// `generate_text_simple_cached` calling `on_token(n)` after each new token's forward, `n` the
/// tokens generated so far (1 to `max_new_tokens`): for a progress line, as tqdm would wrap
/// his loop. The same tokens, the same cache: `idx` int64 `[b, T]` -> `[b, T + max_new_tokens]`.
/// @throws std::invalid_argument as the overload above; what `on_token` throws passes through.
LongTensor generate_text_simple_cached(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens,
                                       GPTCache& cache, const std::function<void(std::size_t)>& on_token,
                                       std::size_t context_size = 0, bool use_cache = true);

}  // namespace attn
