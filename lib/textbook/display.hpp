/// @file display.hpp
/// @brief Small layouts several chapters print that no notebook function gives: teaching
/// machinery with one home here, so that chapters stay the notebook's cells. Generic on
/// purpose: a few layouts (an aligned table, a labelled list, a list of shapes) and the
/// formatters that fill them (fixed decimals, gigabytes, differences, errors); a chapter
/// builds its rows at the call site. What only one chapter uses lives beside it
/// (`chapters/<name>.hpp`, in the chapter's namespace).
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

/// One line per tensor, `label  torch.Size([...])`, the labels padded to one column (two
/// spaces after the longest); no newline at the end. Chapter 7 follows a tensor's shape
/// through each layout's steps:
/// ```
/// heads[0](batch)         torch.Size([2, 6, 2])
/// torch.cat(..., dim=-1)  torch.Size([2, 6, 4])
/// ```
std::string shape_lines(const std::vector<std::pair<std::string, attn::Tensor>>& rows);

// ---------------------------------------------------------------- token ids

/// `torch.stack([torch.tensor(ids) for ids in rows])`: token id lists of one length as an int64
/// tensor `[len(rows), len]` (Raschka 4 In [4]'s `batch`, `torch.tensor(encoded).unsqueeze(0)`).
/// @throws std::invalid_argument when the rows differ in length or there is none.
attn::LongTensor ids_tensor(const std::vector<std::vector<std::int64_t>>& rows);

/// Row `i` of a 2-D int64 tensor as a list: `out[i].tolist()`, what `tokenizer.decode` takes.
/// @throws std::invalid_argument when `ids` is not 2-D or `i` is out of range.
std::vector<std::int64_t> row_ids(const attn::LongTensor& ids, std::size_t i);

// ---------------------------------------------------------------- formatters

/// `v` with `decimals` digits after the point (`%.*f`): `fixed(1.49504f)` is `1.4950`.
std::string fixed(double v, int decimals = 4);

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

// ---------------------------------------------------------------- Raschka's memory estimators

/// The command line of Raschka's estimators `memory_estimator_mla.py` and
/// `memory_estimator_kv_sharing.py` (ch04/05_mla, ch04/10_kv-sharing), which chapters 15 and 16
/// reproduce (chapters/15_latent_attention.hpp, chapters/16_kv_sharing.hpp): `latent_dim` is
/// read by the first, `n_kv_producing_layers` by the second.
struct EstimatorArgs {
    std::size_t context_length = 1024;     ///< tokens per sequence
    std::size_t emb_dim = 0;               ///< model width
    std::size_t n_heads = 0;               ///< query heads
    std::size_t n_layers = 0;              ///< transformer blocks
    std::size_t n_kv_groups = 1;           ///< query heads per key/value head (GQA)
    std::size_t latent_dim = 0;            ///< MLA's latent per token and layer
    std::size_t n_kv_producing_layers = 0; ///< layers that compute and cache keys and values
    std::size_t batch_size = 1;            ///< sequences
    std::string dtype = "fp16";            ///< `fp32`, `bf16`, `fp16`, `fp8`, `int8`
};

/// What both scripts derive from their arguments.
struct EstimatorSizes {
    std::size_t head_dim;        ///< `ceil(emb_dim / n_heads)`
    std::size_t kv_heads_gqa;    ///< `n_heads / n_kv_groups`
    std::size_t bytes_per_elem;  ///< of `dtype` (attn::dtype_bytes)
};

/// The scripts' common checks, then the sizes they derive. `script` names the script in the
/// messages (`memory_estimator_mla`).
/// @throws std::invalid_argument as his scripts raise: `n_heads`, `n_kv_groups` or
/// `n_layers` 0, `n_kv_groups` not dividing `n_heads`, an unknown dtype.
EstimatorSizes estimator_sizes(const std::string& script, const EstimatorArgs& args);

/// The scripts' `==== Config ====` block, byte for byte, and the header of the totals that
/// follow (`==== KV-cache totals across all layers ====`, with its newline): the five common
/// arguments, then `extra` (the script's own argument), then batch size, dtype and the
/// derived sizes, each `f"{key:<width}: {value}"` (`width` 17 in the MLA script, 23 in the
/// sharing one).
std::string estimator_config(const EstimatorArgs& args, const EstimatorSizes& sizes,
                             const std::pair<std::string, std::size_t>& extra, std::size_t width);

/// Python's `f"{x:,.2f}"`: two decimals, thousands separated by commas: `1,234.57`, `-0.50`.
std::string grouped_fixed(double x);

}  // namespace textbook
