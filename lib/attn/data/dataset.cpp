// Raschka's GPTDatasetV1: a text's token ids cut into windows and their next tokens (dataset.hpp).
#include "attn/data/dataset.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "attn/core/require.hpp"

namespace attn::data {

namespace {

// His chapter 2's assertion, then Python's range(0, len - max_length, stride): the window
// count, checked in the order Python fails.
std::size_t count_windows(std::size_t tokens, std::size_t max_length, std::size_t stride) {
    if (tokens <= max_length)
        throw std::invalid_argument(
            "GPTDatasetV1: Number of tokenized inputs must at least be equal to max_length+1: got " +
            std::to_string(tokens) + " token ids, max_length " + std::to_string(max_length) + " needs " +
            std::to_string(max_length) + "+1");
    if (stride == 0)
        throw std::invalid_argument("GPTDatasetV1: expected stride > 0, got 0 (range() arg 3 must not be zero)");
    // len(range(0, tokens - max_length, stride)), without the overflow of `+ stride - 1`.
    return 1 + (tokens - max_length - 1) / stride;
}

LongTensor window(const std::vector<std::int64_t>& ids, std::size_t start, std::size_t length) {
    LongTensor t = xt::empty<std::int64_t>(Shape{length});
    std::copy_n(ids.data() + start, length, t.data());
    return t;
}

}  // namespace

GPTDatasetV1::GPTDatasetV1(std::string_view txt, const GPT2Tokenizer& tokenizer, std::size_t max_length,
                           std::size_t stride) {
    // max_length first: it needs no tokens, and a window of none would predict nothing.
    require_positive("GPTDatasetV1", "max_length", max_length);
    token_ids_ = tokenizer.encode(txt, {std::string(GPT2Tokenizer::endoftext)});
    windows_ = count_windows(token_ids_.size(), max_length, stride);
    max_length_ = max_length;
    stride_ = stride;
}

GPTDatasetV1::GPTDatasetV1(std::vector<std::int64_t> token_ids, std::size_t max_length, std::size_t stride)
    : token_ids_(std::move(token_ids)), max_length_(max_length), stride_(stride) {
    require_positive("GPTDatasetV1", "max_length", max_length);
    windows_ = count_windows(token_ids_.size(), max_length, stride);
}

Sample GPTDatasetV1::get(std::size_t idx) const {
    if (idx >= windows_)
        throw std::out_of_range("GPTDatasetV1: index " + std::to_string(idx) + " out of range for " +
                                std::to_string(windows_) + " windows");
    // idx < windows_ keeps start + max_length + 1 <= token_ids_.size(): no overflow.
    const std::size_t start = idx * stride_;
    return {window(token_ids_, start, max_length_), window(token_ids_, start + 1, max_length_)};
}

}  // namespace attn::data
