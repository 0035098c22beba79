/// @file torch.hpp
/// @brief PyTorch's `print(tensor)`, `repr(torch.Size)` and print options: a port of
/// `torch/_tensor_str.py` (`_Formatter`, `_tensor_str`, `_vector_str`,
/// `get_summarized_data`), checked byte for byte against strings recorded from Debian's
/// python3-torch (`data/oracle/`), and `module_repr`, with which every module's repr is
/// written beside the module (`repr(nn::Linear)` in nn/, `repr(MultiHeadAttention)` in
/// attention/).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

/// `torch.set_printoptions` state (the defaults are PyTorch's).
struct PrintOptions {
    int precision = 4;       ///< digits after the decimal point
    int threshold = 1000;    ///< summarise (with `...`) above this many elements
    int edgeitems = 3;       ///< items kept at each edge of a summarised dimension
    int linewidth = 80;      ///< characters per line before wrapping
    std::optional<bool> sci_mode;  ///< force (true) or forbid (false) scientific notation
};

/// The current torch print options (process-wide, like PyTorch's `PRINT_OPTS`).
PrintOptions& printoptions();

/// `torch.set_printoptions(precision=..., linewidth=...)`; the other options keep their values.
/// @throws std::invalid_argument when `precision` is outside [0, 1000] or `linewidth < 1`.
void set_printoptions(int precision = 4, int linewidth = 80);

/// `repr(tensor)` / `print(tensor)` for a float32 tensor of any rank, without the
/// `grad_fn=` suffix (there is no autograd here): e.g. `tensor([0.3061, 0.8210])`,
/// `tensor(4.54)` (0-d, precision 2), `tensor([[1., 0.],\n        [1., 1.]])`.
///
/// PyTorch's rules: integer-valued tensors print as `2.`; scientific notation when the
/// non-zero finite magnitudes span more than 1000x, exceed 1e8 or (non-integer) go below
/// 1e-4; `nan` / `inf` / `-inf` right-aligned; `-0.` keeps its sign; above
/// `opts.threshold` elements only `opts.edgeitems` per edge are shown (` ...`) and only they
/// decide the format; empty tensors print `tensor([])` (plus `size=(...)` when not 1-D).
/// @throws std::invalid_argument when `opts` has a precision outside [0, 1000] (more digits
///         than a float32 has would only append zeros), a negative threshold or edgeitems,
///         or a linewidth below 1; when `t` has more than 1000 dimensions (the printer
///         recurses once per dimension; PyTorch's raises RecursionError near 500).
std::string repr(const Tensor& t, const PrintOptions& opts = printoptions());

/// `repr` of a bool tensor: `tensor([[False,  True], ...])` (`dtype=torch.bool` when empty).
std::string repr(const BoolTensor& t, const PrintOptions& opts = printoptions());

/// `repr` of an int64 tensor: `tensor([    2,     2,     1, 13264,  5509])`
/// (`dtype=torch.int64` when empty).
std::string repr(const LongTensor& t, const PrintOptions& opts = printoptions());

/// `Module.__repr__` of a module with children: `Name(\n  (child): text\n  ...\n)`, the
/// children in registration order, each `text` being the child's own repr (one line for a
/// leaf such as `Linear(in_features=3, out_features=2, bias=False)`). Every module repr of the
/// library is written with it (print_torch.cpp).
std::string module_repr(const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& children);

/// `repr(torch.Size(shape))`: `torch.Size([2, 6, 3])`.
std::string repr(const Shape& shape);

}  // namespace attn
