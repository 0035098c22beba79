/// @file print.hpp
/// @brief Writes tensors exactly as the book printed them: PyTorch's `print(tensor)` and
/// NumPy's `print(array)` for float32 arrays (notebook 004's `.detach().numpy()`).
///
/// Both printers are ports of the formatting rules, not approximations: the torch printer
/// follows `torch/_tensor_str.py` (`_Formatter`, `_tensor_str`, `_vector_str`,
/// `get_summarized_data`) and the NumPy one `numpy/core/arrayprint.py` (`FloatingFormat`,
/// `_formatArray`, Dragon4 with `unique=True`). They are checked byte for byte against
/// oracle strings recorded from Debian's python3-torch and python3-numpy (`data/oracle/`).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "attn/tensor.hpp"

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
/// @throws std::invalid_argument when `precision < 0` or `linewidth < 1`.
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
/// @throws std::invalid_argument when `opts` has a negative precision, threshold or
///         edgeitems, or a linewidth below 1.
std::string repr(const Tensor& t, const PrintOptions& opts = printoptions());

/// `repr` of a bool tensor: `tensor([[False,  True], ...])` (`dtype=torch.bool` when empty).
std::string repr(const BoolTensor& t, const PrintOptions& opts = printoptions());

/// `repr` of an int64 tensor: `tensor([    2,     2,     1, 13264,  5509])`
/// (`dtype=torch.int64` when empty).
std::string repr(const LongTensor& t, const PrintOptions& opts = printoptions());

/// `repr(torch.Size(shape))`: `torch.Size([2, 6, 3])`.
std::string repr(const Shape& shape);

/// `repr(float)` as Python writes a double: the shortest digits that round-trip, e.g.
/// `0.2`, `2.0`, `1e-06` (module reprs such as `Dropout(p=0.2, inplace=False)` use it).
std::string repr_float(double value);

/// `repr(bool)` as Python writes it: `True` / `False` (e.g. `torch.allclose(...)`).
std::string repr_bool(bool value);

/// How a Jupyter cell displays a tuple of values whose reprs are given (IPython's pretty
/// printer): on one line `(a, b)` when every item is one line and the whole fits in 79
/// characters; otherwise one item per line, later lines of an item indented by one space:
/// `(tensor([[...],\n         [...]]),\n torch.Size([6, 6]))`. A 1-tuple prints `(x,)`
/// and never breaks; an empty line inside an item becomes a single space.
std::string repr_tuple(std::initializer_list<std::string> items);

/// `str(array)` of NumPy for a float32 array (`print(t.detach().numpy())`): at most 8
/// fraction digits, the shortest that identify each float32, `1.`/`0.` padded to the column,
/// scientific notation when NumPy would choose it, `...` above 1000 elements, lines wrapped
/// at 75 characters: e.g. `[[-0.07389025  0.07128991]\n [-0.07481073  0.0703093 ]]`.
/// In scientific mode every value gets as many digits as the longest needs (so `1e-05`
/// next to `1.2345679e-05` prints `9.9999997e-06`, as NumPy does). A 0-d array prints like
/// the NumPy scalar (`0.5`, `1e-05`), an empty one as `[]`.
std::string numpy_str(const Tensor& t);

}  // namespace attn
