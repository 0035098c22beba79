/// @file display.hpp
/// @brief Small layouts the chapters print that no notebook function gives: teaching
/// machinery with one home here, so that chapters stay the notebook's cells. Generic on
/// purpose: a few layouts (an aligned table, a labelled list, a list of shapes) and the
/// formatters that fill them (fixed decimals, gigabytes, differences, errors); a chapter
/// builds its rows at the call site.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace textbook {

// ---------------------------------------------------------------- layouts

/// One row of a table: its cells, left to right.
using Row = std::vector<std::string>;

/// An aligned table, one line per row (the first row may be a header): cells left-aligned,
/// each column as wide as its widest cell plus two spaces, or `min_width[k]` if that is
/// wider; the last column is not padded. No newline at the end.
/// ```
/// j  x_j      m        l          table(rows, {3, 9, 9})
/// 0  0.9544   0.9544   1.0000
/// ```
std::string table(const std::vector<Row>& rows, const std::vector<std::size_t>& min_width = {});

/// How a labelled list sets a label beside its text.
struct ListStyle {
    std::string separator = "  ";  ///< between the label (padded, if `align`) and the text
    bool align = true;             ///< pad the labels to the longest, so the texts form a column
};

/// One line per row, `label`, the separator, `text`; with `align`, the labels padded to one
/// column (the default: two spaces after the longest). No newline at the end.
/// ```
/// MHA (32 KV heads)     17.18 GB
/// GQA (8 KV heads)      4.29 GB
/// ```
std::string labelled_lines(const std::vector<std::pair<std::string, std::string>>& rows,
                           const ListStyle& style = {});

/// `labelled_lines` of values turned into text by `text` (e.g. a tensor into its largest
/// difference to a reference): `labelled_lines(layouts, [&](const attn::Tensor& t) { ... })`.
template <class T, class F>
std::string labelled_lines(const std::vector<std::pair<std::string, T>>& rows, F&& text,
                           const ListStyle& style = {}) {
    std::vector<std::pair<std::string, std::string>> lines;
    lines.reserve(rows.size());
    for (const auto& [label, value] : rows) lines.emplace_back(label, text(value));
    return labelled_lines(lines, style);
}

/// One line per item, as `line(item)` writes it; no newline at the end:
/// `lines(tokenizer.texts, [](const auto& t) { return ...; })`.
template <class Items, class F>
std::string lines(const Items& items, F&& line) {
    std::string out;
    bool first = true;
    for (const auto& item : items) {
        if (!first) out += '\n';
        out += line(item);  // appended: `"\n" + line(item)` makes GCC 12 warn (-Wrestrict)
        first = false;
    }
    return out;
}

/// One line per tensor, `label  torch.Size([...])`, the labels padded to one column (two
/// spaces after the longest); no newline at the end. Chapter 7 follows a tensor's shape
/// through each layout's steps:
/// ```
/// heads[0](batch)         torch.Size([2, 6, 2])
/// torch.cat(..., dim=-1)  torch.Size([2, 6, 4])
/// ```
std::string shape_lines(const std::vector<std::pair<std::string, attn::Tensor>>& rows);

/// Named values on one line, `name = text` joined by `, `: `m = 1.4950, l = 1.5824`.
std::string fields(const std::vector<std::pair<std::string, std::string>>& named);

// ---------------------------------------------------------------- formatters

/// `v` with `decimals` digits after the point (`%.*f`): `fixed(1.49504f)` is `1.4950`.
std::string fixed(double v, int decimals = 4);

/// The elements of a 1-D tensor (or a vector) with `decimals` digits each, as a Python list
/// would show them: `[0.5058, 0.6050, 0.7447]`.
std::string fixed_list(const attn::Tensor& v, int decimals = 4);
/// `fixed_list` of a vector of floats: `[0.8004, 0.9574, 1.1783]`.
std::string fixed_list(const std::vector<float>& v, int decimals = 4);

/// Integers as a Python list: `[1, 415, 5255]`.
std::string int_list(const std::vector<std::int64_t>& v);

/// `attn::max_abs_diff(a, b)` with three significant digits (`%.3g`): `0`, `5.96e-08`.
/// @throws std::invalid_argument when the shapes differ.
std::string max_abs_diff_text(const attn::Tensor& a, const attn::Tensor& b);

/// Raschka's `convert_bytes` (memory_estimator_gqa.py): bytes as decimal gigabytes with
/// thousands separators and two decimals, `f"{n / 1000**3:,.2f} GB"`: `17.18 GB`.
std::string gb_text(std::size_t bytes);

/// Counts joined by `, `: `6, 4, 0` (chapter 9's fully masked rows and NaNs per tensor).
std::string join_counts(const std::vector<std::size_t>& counts);

/// The 32-bit draws of the default generator since its last `manual_seed`, as text: what a
/// chapter prints to show how much of the random stream a call used.
std::string draws_since_seed();

/// What a call that should fail printed, as the last line of Python's traceback would: the
/// `std::invalid_argument` it threw, `std::invalid_argument: <what>`, or `prefix` in place of
/// the type's name (`error_text([&] { ... }, "RuntimeError: ")`, as PyTorch names it; `""`
/// for the message alone); `(no error)` when it returned. Other exceptions pass through.
std::string error_text(const std::function<void()>& call,
                       const std::string& prefix = "std::invalid_argument: ");

/// Python's repr of a dict's keys: `dict_keys(['input_ids', 'attention_mask'])`.
std::string dict_keys_repr(const std::vector<std::string>& keys);

/// What IPython shows for `x, x.shape`: the tuple of the tensor's repr and its shape's
/// (notebook 001 prints most of its tensors this way).
std::string with_shape(const attn::Tensor& x);
/// `with_shape` for an int64 tensor (001 In [5]: `tokens, tokens.shape`).
std::string with_shape(const attn::LongTensor& x);

/// The block a chapter prints in place of a notebook output that nothing here reproduces:
/// `(not reproduced: <why>)`.
std::string not_reproduced(const std::string& why);

/// How far a printed mask agrees with a keep-mask: `"k of n entries agree"`. The printed mask
/// is read from `printed` (a book entry's text): its last `keep.size()` numbers, non-zero
/// where the element was kept (labels such as `-inf` may come before them). Only elements
/// where `where` is non-zero are counted, since a zero input prints 0 kept or not.
/// @throws std::out_of_range when `printed` holds fewer numbers than `keep` has elements.
std::string mask_agreement(const std::string& printed, const attn::Tensor& keep,
                           const attn::Tensor& where);

}  // namespace textbook
