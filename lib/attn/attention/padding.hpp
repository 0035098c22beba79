/// @file padding.hpp
/// @brief Batches of texts of different lengths: the padding collator, the attention mask
/// applied to attention logits, and the masked softmax that keeps fully masked rows finite.
///
/// Notebook 000 In [18]-[24] and [27]: the Mistral-7B tokenizer pads three texts on the left
/// with its pad id (2, the eos token) and returns `input_ids` and `attention_mask` `[B, S]`;
/// attention then sets the logits of padded keys to `-inf` (`attention_mask[:, None, :] == 0`).
/// Token ids come from `data/tokenizer/` (recorded with `tools/tokenize/`), not from a tokenizer
/// in this library.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

// ---------------------------------------------------------------- token ids

/// `torch.tensor(list_of_id_lists)`: a `[B, S]` int64 tensor, which only exists when every
/// sequence has the same length; the collator below is what makes ragged batches rectangular.
/// @throws std::invalid_argument when the batch is empty or the lengths differ, naming the
/// expected length and the sequence that differs (PyTorch raises `ValueError: expected
/// sequence of length 3 at dim 1 (got 5)`).
LongTensor ids_tensor(const std::vector<std::vector<std::int64_t>>& sequences);

// ---------------------------------------------------------------- the collator

/// Which end of a sequence gets the pad tokens (`tokenizer.padding_side`).
enum class PaddingSide {
    left,   ///< `[pad, pad, <s>, ...]`: decoder-only generation continues from the last column
    right,  ///< `[<s>, ..., pad, pad]`: the default of most tokenizers
};

/// What a tokenizer called with `padding=True, return_tensors='pt'` returns
/// (`encoded_input.keys()` is `dict_keys(['input_ids', 'attention_mask'])`, 000 In [19]).
struct BatchEncoding {
    LongTensor input_ids;       ///< `[B, S]` int64, pad id in the padded places
    LongTensor attention_mask;  ///< `[B, S]` int64, 1 on real tokens and 0 on pad tokens

    /// The field names in the order Hugging Face's `BatchEncoding` lists them.
    static std::vector<std::string> keys() { return {"input_ids", "attention_mask"}; }
};

/// The padding collator: pads every sequence to the longest one with `pad_token_id` on the
/// chosen side. Sequences `[n_b]` -> `input_ids` and `attention_mask` `[B, max n_b]`.
/// 000 In [21]/[22]: `[[1, 13264, 5509], ...]`, pad 2, left ->
/// `input_ids[0] = [2, 2, 2, 2, 2, 2, 1, 13264, 5509]`, `attention_mask[0] = [0, 0, 0, 0, 0, 0, 1, 1, 1]`.
/// An empty sequence becomes a row of pad tokens with mask 0.
/// @throws std::invalid_argument when the batch is empty.
BatchEncoding pad_batch(const std::vector<std::vector<std::int64_t>>& sequences,
                        std::int64_t pad_token_id, PaddingSide side = PaddingSide::left);

/// `torch.nn.utils.rnn.pad_sequence(sequences, batch_first=True, padding_value)` with a side:
/// per-sequence inputs `[n_b, E]` -> `[B, max n_b, E]`, laid out like `pad_batch` lays out the
/// ids (the vectors a model would look up for those ids; here random stand-ins).
/// @throws std::invalid_argument when the list is empty, a tensor is not 2-D, or the widths `E`
/// differ (naming the expected `[*, E]` and the actual shape).
Tensor pad_sequences(const std::vector<Tensor>& sequences, PaddingSide side,
                     float padding_value = 0.0f);

/// The rows of `x[b]` at the real tokens of sequence `b` (where `attention_mask[b] == 1`), in
/// order: `x [B, S, E]` -> `[n_b, E]`. Undoes `pad_sequences` for one sequence.
/// @throws std::invalid_argument when `x` is not 3-D, `attention_mask` is not `[B, S]` of the
/// same `B` and `S`, or `b >= B`.
Tensor real_token_rows(const Tensor& x, const LongTensor& attention_mask, std::size_t b);

// ---------------------------------------------------------------- masking and softmax

/// `attention_logits.masked_fill(attention_mask[:, None, :] == 0, mask_value)` (000 In [24] and
/// `apply_attention_mask` of In [26]/[41]): every query row gets `mask_value` at the key
/// positions whose mask is 0. logits `[B, Sq, Sk]` float32, `attention_mask` `[B, Sk]` int64
/// (0 or 1) -> `[B, Sq, Sk]`. With a KV cache `Sk` counts the cached tokens too.
/// @throws std::invalid_argument when the logits are not 3-D or the mask is not `[B, Sk]`
/// (naming both shapes).
Tensor apply_attention_mask(const Tensor& attention_logits, const LongTensor& attention_mask,
                            float mask_value = -std::numeric_limits<float>::infinity());

/// How many rows (vectors along the last dimension) of `x` are entirely `-inf`.
std::size_t count_fully_masked_rows(const Tensor& x);

/// How many elements of `x` are NaN.
std::size_t count_nan(const Tensor& x);

}  // namespace attn
