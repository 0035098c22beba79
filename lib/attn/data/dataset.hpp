/// @file dataset.hpp
/// @brief Datasets as `torch.utils.data` reads them (map-style: a length and an item per
/// index), and Raschka's `GPTDatasetV1`, which cuts a text's token ids into windows of
/// `max_length` inputs and the same window shifted by one token as targets.
///
/// The data room (lib/attn/data/, "torch.utils.data") includes core/ and text/ only.
/// Sources: torch/utils/data/dataset.py (`Dataset`); his chapter 2's `GPTDatasetV1` as his
/// chapter 5 imports it (data/sources/raschka/raschka_ch05_previous_chapters.py, commit
/// b969b3e), with the check his chapter 2 later added (`assert len(token_ids) > max_length,
/// "Number of tokenized inputs must at least be equal to max_length+1"`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/text/gpt2_tokenizer.hpp"

namespace attn::data {

/// One item of a dataset, `dataset[idx]`: his `(self.input_ids[idx], self.target_ids[idx])`.
struct Sample {
    LongTensor input_ids;   ///< int64; `[max_length]` for `GPTDatasetV1`
    LongTensor target_ids;  ///< int64; the same shape as `input_ids` for `GPTDatasetV1`
};

/// `torch.utils.data.Dataset`, map-style: what a `DataLoader` reads. A dataset's items never
/// change while a loader holds it (a loader shares it, immutable).
class Dataset {
public:
    virtual ~Dataset() = default;

    /// `len(dataset)`: the number of items.
    virtual std::size_t size() const = 0;

    /// `dataset[idx]` (`__getitem__`), a copy of item `idx`.
    /// @throws std::out_of_range naming the index and the size when `idx >= size()` (Python:
    /// IndexError; negative indices do not exist here).
    virtual Sample get(std::size_t idx) const = 0;
};

/// His `GPTDatasetV1(txt, tokenizer, max_length, stride)`: `token_ids = tokenizer.encode(txt,
/// allowed_special={"<|endoftext|>"})`, then for `i in range(0, len(token_ids) - max_length,
/// stride)` one window: input `token_ids[i:i + max_length]`, target `token_ids[i + 1:i +
/// max_length + 1]` (the next token at every position). That is `1 + (len - max_length - 1) /
/// stride` windows, window `w` starting at token `w * stride`: with `stride == max_length` the
/// windows tile the text without overlap, with a smaller stride they overlap. Window `w`'s
/// item is int64 `[max_length]` inputs and int64 `[max_length]` targets.
///
/// He stores every window as two tensors; this keeps the token ids once and copies a window
/// out when it is read (the same items, without `2 * max_length / stride` copies of the text).
class GPTDatasetV1 final : public Dataset {
public:
    /// His constructor: tokenizes `txt` (UTF-8) with `<|endoftext|>` allowed as GPT-2's
    /// special token, then cuts the windows (see the class). The checks in Python's order:
    /// @throws std::invalid_argument
    /// - `"GPTDatasetV1: expected max_length > 0, got 0"` (checked first, before tokenizing;
    ///   his code would cut windows of no tokens);
    /// - as `GPT2Tokenizer::encode` when `txt` is not UTF-8;
    /// - `"GPTDatasetV1: Number of tokenized inputs must at least be equal to max_length+1:
    ///   got N token ids, max_length M needs M+1"` when the text has at most `max_length`
    ///   tokens (his chapter 2's `assert len(token_ids) > max_length`; there would be no
    ///   window);
    /// - `"GPTDatasetV1: expected stride > 0, got 0 (range() arg 3 must not be zero)"`
    ///   (Python's `range` raises ValueError then).
    GPTDatasetV1(std::string_view txt, const GPT2Tokenizer& tokenizer, std::size_t max_length,
                 std::size_t stride);

    /// The windows of token ids already encoded (`token_ids` as his `tokenizer.encode` returns
    /// them; any int64 values are kept as they are).
    /// @throws std::invalid_argument as the text constructor (max_length 0, too few ids,
    /// stride 0), in that order.
    GPTDatasetV1(std::vector<std::int64_t> token_ids, std::size_t max_length, std::size_t stride);

    /// `len(dataset)`: the number of windows, at least 1.
    std::size_t size() const override { return windows_; }

    /// `dataset[idx]`: window `idx`, inputs `token_ids[idx * stride:][:max_length]` and targets
    /// one token further, both int64 `[max_length]`.
    /// @throws std::out_of_range `"GPTDatasetV1: index I out of range for N windows"` when
    /// `idx >= size()`.
    Sample get(std::size_t idx) const override;

    /// The token ids the windows are cut from, `[n]`.
    const std::vector<std::int64_t>& token_ids() const { return token_ids_; }
    /// Tokens per window.
    std::size_t max_length() const { return max_length_; }
    /// Tokens between the starts of consecutive windows.
    std::size_t stride() const { return stride_; }

private:
    std::vector<std::int64_t> token_ids_;
    std::size_t max_length_ = 0;
    std::size_t stride_ = 0;
    std::size_t windows_ = 0;
};

}  // namespace attn::data
