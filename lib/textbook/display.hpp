/// @file display.hpp
/// @brief Small layouts the chapters print that no notebook function gives: teaching
/// machinery with one home here, so that chapters stay the notebook's cells.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "attn/attention/online_softmax.hpp"
#include "attn/attention/padding.hpp"
#include "attn/core/tensor.hpp"

namespace textbook {

// ---------------------------------------------------------------- chapters 1-6 and appendix A

/// The 32-bit draws of the default generator since its last `manual_seed`, as text: what a
/// chapter prints to show how much of the random stream a call used.
std::string draws_since_seed();

/// How far a printed mask agrees with a keep-mask: `"k of n entries agree"`. The printed mask
/// is read from `printed` (a book entry's text): its last `keep.size()` numbers, non-zero
/// where the element was kept (labels such as `-inf` may come before them). Only elements
/// where `where` is non-zero are counted, since a zero input prints 0 kept or not.
/// @throws std::out_of_range when `printed` holds fewer numbers than `keep` has elements.
std::string mask_agreement(const std::string& printed, const attn::Tensor& keep,
                           const attn::Tensor& where);

/// One line per dropout rate and backend: the fraction of `n` elements that
/// `nn::Dropout(p, backend).keep_mask({n})` keeps right after `torch.manual_seed(seed)`,
/// next to `1 - p` (`p = 0.5  portable  kept 0.499614  (1 - p = 0.5)`).
std::string kept_fractions(const std::vector<double>& rates, std::size_t n, std::uint64_t seed);


// ---------------------------------------------------------------- (separator: keep)

// ---------------------------------------------------------------- chapters 7-10

/// One line per tensor, `label  torch.Size([...])`, the labels padded to one column (two
/// spaces after the longest); no newline at the end. Chapter 7 follows a tensor's shape
/// through each layout's steps:
/// ```
/// heads[0](batch)         torch.Size([2, 6, 2])
/// torch.cat(..., dim=-1)  torch.Size([2, 6, 4])
/// ```
std::string shape_lines(const std::vector<std::pair<std::string, attn::Tensor>>& rows);

/// `attn::max_abs_diff(a, b)` with three significant digits (`%.3g`): `0`, `5.96e-08`.
/// @throws std::invalid_argument when the shapes differ.
std::string max_abs_diff_text(const attn::Tensor& a, const attn::Tensor& b);

/// What a call that should fail printed, as the last line of Python's traceback would: the
/// `std::invalid_argument` it threw, `std::invalid_argument: <what>`, or `prefix` in place of
/// the type's name (`error_text([&] { ... }, "RuntimeError: ")`, as PyTorch names it; `""`
/// for the message alone); `(no error)` when it returned. Other exceptions pass through.
std::string error_text(const std::function<void()>& call,
                       const std::string& prefix = "std::invalid_argument: ");

/// Counts joined by `, `: `6, 4, 0` (chapter 9's fully masked rows and NaNs per tensor).
std::string join_counts(const std::vector<std::size_t>& counts);

/// One line per recorded text: its Python repr, ` -> `, its ids as a list:
/// `'The cat' -> [1, 415, 5255]`; no newline at the end.
std::string token_id_lines(const attn::TokenizerData& tokenizer);

/// Python's repr of a dict's keys: `dict_keys(['input_ids', 'attention_mask'])`.
std::string dict_keys_repr(const std::vector<std::string>& keys);

/// The block chapter 9 prints for notebook 000 In [18], whose output (the tail of a warning
/// tqdm printed on stderr while `transformers` was imported) nothing here reproduces: a
/// one-line note saying so.
std::string import_warning_note();

/// What IPython shows for `x, x.shape`: the tuple of the tensor's repr and its shape's
/// (notebook 001 prints most of its tensors this way).
std::string with_shape(const attn::Tensor& x);
/// `with_shape` for an int64 tensor (001 In [5]: `tokens, tokens.shape`).
std::string with_shape(const attn::LongTensor& x);

// ---------------------------------------------------------------- chapters 11 and 12

/// The online normaliser's state after each element (chapter 12), one line per element:
/// `j  x_j  m  l` with 4 decimals under a header line. `x` and `trace` have one entry each
/// per element.
/// @throws std::invalid_argument when their lengths differ.
std::string normalizer_lines(const attn::Tensor& x,
                             const std::vector<attn::flash::Normalizer>& trace);

/// The fused row's state after each key block (chapter 12), one line per block:
/// `keys 0..j  m  l  O  O / l` with 4 decimals (`O` and `O / l` as lists).
std::string row_state_lines(const std::vector<attn::flash::RowState>& trace);

/// One line per measured case, `label: N ulp` (N with one decimal), then `largest: N ulp`.
std::string ulp_lines(const std::vector<std::pair<std::string, double>>& cases);

/// One line per labelled tensor: the label, padded to the longest, and
/// `max_abs_diff_text(tensor, reference)` (chapter 11's layouts against chapter 7's module).
/// @throws std::invalid_argument when a shape differs from the reference's.
std::string diff_lines(const std::vector<std::pair<std::string, attn::Tensor>>& rows,
                       const attn::Tensor& reference);

// ---------------------------------------------------------------- chapters 13-14 (GQA, SWA)

/// Raschka's `convert_bytes` (memory_estimator_gqa.py): bytes as decimal gigabytes with
/// thousands separators and two decimals, `f"{n / 1000**3:,.2f} GB"`: `17.18 GB`.
std::string gb_text(std::size_t bytes);

/// One line per row, `label  text`, the labels padded to one column (two spaces after the
/// longest); no newline at the end.
std::string labelled_lines(const std::vector<std::pair<std::string, std::string>>& rows);

// ---------------------------------------------------------------- chapters 15-16 (MLA, sharing)

/// The command line of Raschka's estimators `memory_estimator_mla.py` and
/// `memory_estimator_kv_sharing.py` (ch04/05_mla, ch04/10_kv-sharing): `latent_dim` is read
/// by the first, `n_kv_producing_layers` by the second.
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

/// What `memory_estimator_mla.py` prints for `args` (its `==== Config ====` and
/// `==== KV-cache totals across all layers ====` blocks, byte for byte), the totals from
/// attn::kv_bytes_total and attn::mla_bytes_total.
/// @throws std::invalid_argument as his script raises: `n_kv_groups` not dividing `n_heads`,
/// an unknown dtype, a size of 0; std::length_error when a total overflows.
std::string mla_estimator_report(const EstimatorArgs& args);

/// What `memory_estimator_kv_sharing.py` prints for `args` (MHA, GQA, each with and without
/// sharing, the ratio and savings of GQA + sharing against MHA), byte for byte.
/// @throws std::invalid_argument as `mla_estimator_report`, and when
/// `n_kv_producing_layers` is not in `1 .. n_layers`.
std::string kv_sharing_estimator_report(const EstimatorArgs& args);

}  // namespace textbook
