/// @file decoding.hpp
/// @brief Raschka's decoding strategies (ch05 §5.3): top-k filtering, temperature scaling and
/// sampling with `torch.multinomial`, and his `generate` (In [40]) that combines them, with a
/// KV-cached variant. Built on `topk` and `multinomial` (core/sampling.hpp), the library's
/// PyTorch-exact `softmax`, and `GPTModel`; checked against Debian's torch 1.13 running his code
/// (data/oracle/decoding.json, tests/test_decoding.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/gpt_model.hpp"

namespace attn {

/// His top-k filter (In [38], and in `generate`): `min_val = torch.topk(logits, k).values[..., -1]`,
/// `torch.where(logits < min_val, -inf, logits)`: in each row the values below its k-th largest
/// become `-inf` (values equal to it stay, so more than `k` may stay; NaN stays). `logits`:
/// float32 `[..., V]`, at least 1-D -> the same shape. Each row is compared with its own k-th
/// largest: what his line does for one row (his `generate` on a batch of 1); on `[B, V]` with
/// `B > 1` his `top_logits[:, -1]` has shape `[B]`, which PyTorch broadcasts along `V` (an
/// error unless `B == V`).
/// @throws std::invalid_argument when `logits` is 0-d, `k` is 0 (he would index an empty
/// result) or `k > V` (`topk`'s "selected index k out of range").
Tensor top_k_filter(const Tensor& logits, std::size_t k);

/// One step of his `generate` after the model (In [40]'s body): on the last position's logits
/// `[B, V]` float32, the top-k filter when `top_k` is given; then, when `temperature > 0`,
/// `logits / temperature` (float32 division by `float(temperature)`), `logits -
/// logits.max(dim=-1, keepdim=True).values`, `probs = softmax(logits, -1)`, `idx_next =
/// multinomial(probs, 1)` (`B * V` 64-bit draws from `gen`); otherwise (temperature 0, greedy)
/// `argmax(logits, -1, keepdim=True)`, no draw. Returns int64 `[B, 1]`.
/// @throws std::invalid_argument when `logits` is not 2-D with `B > 0` and `V > 0`, `temperature` is
/// negative, NaN or infinite, `top_k` is 0 or exceeds `V`, or as `multinomial` (a row whose
/// probabilities hold NaN, e.g. from NaN logits).
LongTensor sample_next_token(const Tensor& logits, double temperature = 0.0,
                             std::optional<std::size_t> top_k = std::nullopt, Generator& gen = default_generator());

/// His `generate(model, idx, max_new_tokens, context_size, temperature=0.0, top_k=None,
/// eos_id=None)` (ch05 In [40]): `max_new_tokens` times, `logits = model(idx[:, -context_size:])[:,
/// -1, :]` (call it on a model in evaluation mode, as he does after `model.eval()`; the model's
/// dropout, if in training mode, would draw from `gen` too), `idx_next = sample_next_token(logits,
/// temperature, top_k, gen)`; stop before appending when `idx_next == eos_id`; `idx =
/// torch.cat((idx, idx_next), dim=1)`. With a temperature of 0 and no `top_k` it is
/// `generate_text_simple`'s greedy choice, taken on the logits rather than on their softmax (whose
/// float32 values can tie where the logits do not). `idx`: int64 `[B, T]` -> `[B, T + n]`,
/// `n <= max_new_tokens` (fewer when `eos_id` was drawn). For a given seed of `gen` it gives his
/// tokens when the model's logits are his bits (checked on a small GPTModel built as his after
/// `manual_seed(123)`).
/// Differences from his code, on inputs where his would fail or mislead: a negative temperature
/// is refused (his takes the greedy branch), top-k compares each row with its own k-th largest
/// (see `top_k_filter`), and `eos_id` needs a batch of 1 (his `if idx_next == eos_id` raises
/// "Boolean value of Tensor with more than one value is ambiguous" otherwise).
/// @throws std::invalid_argument, before anything is drawn, when `idx` is not 2-D with `B > 0` and
/// `T > 0`, `context_size` is 0 or exceeds the model's `context_length`, `temperature` is
/// negative, NaN or infinite, `top_k` is 0 or exceeds the model's `vocab_size`, or `eos_id` is
/// given with `B > 1`; later as `GPTModel::operator()` (an id out of range).
LongTensor generate(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens, std::size_t context_size,
                    double temperature = 0.0, std::optional<std::size_t> top_k = std::nullopt,
                    std::optional<std::int64_t> eos_id = std::nullopt, Generator& gen = default_generator());

/// `generate` with the model's KV cache (as `generate_text_simple_cached`, his
/// ch04/03_kv-cache): `cache.reset()`, the prompt `idx[:, -context_size:]` once through
/// `model.forward(idx_cond, cache)`, then each step samples from the last position's logits as
/// `generate` does (the same draws from `gen`), appends the token and, when another step follows,
/// runs that one token through the cache; `cache` is left holding every token but the last
/// generated one. The cached decode is not cropped: the prompt's `P` tokens and `max_new_tokens`
/// need `P + max_new_tokens - 1 <= context_length`. It gives `generate`'s tokens (same model,
/// same seed) as long as the sequence fits in `context_size` and the cached logits equal the
/// recomputed ones bit for bit (tests/test_decoding.cpp shows both on the oracle's model).
/// `idx`: int64 `[B, T]` -> `[B, T + n]`, `n <= max_new_tokens`.
/// @throws std::invalid_argument as `generate`, and when `P + max_new_tokens - 1` exceeds the
/// model's `context_length` (before anything is drawn).
LongTensor generate_cached(const GPTModel& model, const LongTensor& idx, std::size_t max_new_tokens, GPTCache& cache,
                           std::size_t context_size, double temperature = 0.0,
                           std::optional<std::size_t> top_k = std::nullopt,
                           std::optional<std::int64_t> eos_id = std::nullopt, Generator& gen = default_generator());

}  // namespace attn
