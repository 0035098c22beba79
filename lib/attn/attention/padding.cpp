#include "attn/attention/padding.hpp"

#include <cmath>
#include <stdexcept>

#include "attn/core/functional.hpp"

namespace attn {

LongTensor ids_tensor(const std::vector<std::vector<std::int64_t>>& sequences) {
    if (sequences.empty()) throw std::invalid_argument("ids_tensor: expected at least one sequence, got none");
    const std::size_t n = sequences[0].size();
    for (std::size_t b = 0; b < sequences.size(); ++b) {
        if (sequences[b].size() != n) {
            throw std::invalid_argument(
                "ids_tensor: expected sequences of equal length, shape [" +
                std::to_string(sequences.size()) + ", " + std::to_string(n) + "]; sequence " +
                std::to_string(b) + " has length " + std::to_string(sequences[b].size()) +
                " (pad the batch first: pad_batch)");
        }
    }
    LongTensor ids = xt::zeros<std::int64_t>(Shape{sequences.size(), n});
    for (std::size_t b = 0; b < sequences.size(); ++b)
        for (std::size_t i = 0; i < n; ++i) ids(b, i) = sequences[b][i];
    return ids;
}

BatchEncoding pad_batch(const std::vector<std::vector<std::int64_t>>& sequences,
                        std::int64_t pad_token_id, PaddingSide side) {
    if (sequences.empty()) throw std::invalid_argument("pad_batch: expected at least one sequence, got none");
    std::size_t S = 0;
    for (const auto& s : sequences) S = std::max(S, s.size());
    const std::size_t B = sequences.size();
    check_allocation("pad_batch", Shape{B, S}, sizeof(std::int64_t));
    BatchEncoding out;
    out.input_ids = xt::zeros<std::int64_t>(Shape{B, S});
    out.attention_mask = xt::zeros<std::int64_t>(Shape{B, S});
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t n = sequences[b].size();
        // Left padding puts the sequence at the end of the row, right padding at the start.
        const std::size_t first = side == PaddingSide::left ? S - n : 0;
        for (std::size_t i = 0; i < S; ++i) {
            const bool real = i >= first && i < first + n;
            out.input_ids(b, i) = real ? sequences[b][i - first] : pad_token_id;
            out.attention_mask(b, i) = real ? 1 : 0;
        }
    }
    return out;
}

Tensor pad_sequences(const std::vector<Tensor>& sequences, PaddingSide side, float padding_value) {
    if (sequences.empty()) throw std::invalid_argument("pad_sequences: expected at least one sequence, got none");
    check_rank("pad_sequences (sequence 0)", shape_of(sequences[0]), 2);
    const std::size_t E = sequences[0].shape()[1];
    std::size_t S = 0;
    for (std::size_t b = 0; b < sequences.size(); ++b) {
        const Shape s = shape_of(sequences[b]);
        if (s.size() != 2 || s[1] != E)
            throw_shape_error("pad_sequences (sequence " + std::to_string(b) + ")",
                              "[*, " + std::to_string(E) + "]", s);
        S = std::max(S, s[0]);
    }
    const std::size_t B = sequences.size();
    check_allocation("pad_sequences", Shape{B, S, E});
    Tensor out = xt::empty<float>(Shape{B, S, E});
    out.fill(padding_value);
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t n = sequences[b].shape()[0];
        const std::size_t first = side == PaddingSide::left ? S - n : 0;
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t e = 0; e < E; ++e) out(b, first + i, e) = sequences[b](i, e);
    }
    return out;
}

Tensor real_token_rows(const Tensor& x, const LongTensor& attention_mask, std::size_t b) {
    check_rank("real_token_rows (x)", shape_of(x), 3);
    const std::size_t B = x.shape()[0], S = x.shape()[1], E = x.shape()[2];
    check_same_shape("real_token_rows (attention_mask)", Shape{B, S}, shape_of(attention_mask));
    if (b >= B)
        throw std::invalid_argument("real_token_rows: sequence " + std::to_string(b) +
                                    " out of range for a batch of " + std::to_string(B));
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < S; ++i)
        if (attention_mask(b, i) != 0) rows.push_back(i);
    Tensor out = xt::empty<float>(Shape{rows.size(), E});
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t e = 0; e < E; ++e) out(r, e) = x(b, rows[r], e);
    return out;
}

Tensor apply_attention_mask(const Tensor& attention_logits, const LongTensor& attention_mask,
                            float mask_value) {
    const Shape sl = shape_of(attention_logits);
    check_rank("apply_attention_mask (attention_logits)", sl, 3);
    check_same_shape("apply_attention_mask (attention_mask [B, Sk] for logits " + shape_str(sl) + ")",
                     Shape{sl[0], sl[2]}, shape_of(attention_mask));
    // attention_mask[:, None, :] == 0: one [B, 1, Sk] row broadcast over the Sq queries.
    BoolTensor padded = attn::eq(attention_mask, std::int64_t{0});
    padded.reshape({sl[0], std::size_t{1}, sl[2]});
    return attn::masked_fill(attention_logits, padded, mask_value);
}

std::size_t count_fully_masked_rows(const Tensor& x) {
    if (x.dimension() == 0) return 0;
    const std::size_t n = x.shape().back();
    if (n == 0) return 0;
    std::size_t count = 0;
    for (std::size_t r = 0; r < x.size() / n; ++r) {
        bool all_masked = true;
        for (std::size_t j = 0; j < n && all_masked; ++j) {
            const float v = x.data()[r * n + j];
            all_masked = std::isinf(v) && v < 0;
        }
        count += all_masked;
    }
    return count;
}

std::size_t count_nan(const Tensor& x) {
    std::size_t count = 0;
    for (float v : x) count += std::isnan(v);
    return count;
}

}  // namespace attn
