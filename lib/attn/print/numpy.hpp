/// @file numpy.hpp
/// @brief NumPy's `print(array)` for float32 (notebook 004's `.detach().numpy()`): a port of
/// `numpy/core/arrayprint.py` (`FloatingFormat`, `_formatArray`) with Dragon4
/// (`unique=True`), checked byte for byte against strings recorded from python3-numpy.
#pragma once

#include <string>

#include "attn/core/tensor.hpp"

namespace attn {

/// `str(array)` of NumPy for a float32 array (`print(t.detach().numpy())`): at most 8
/// fraction digits, the shortest that identify each float32, `1.`/`0.` padded to the column,
/// scientific notation when NumPy would choose it, `...` above 1000 elements, lines wrapped
/// at 75 characters: e.g. `[[-0.07389025  0.07128991]\n [-0.07481073  0.0703093 ]]`.
/// In scientific mode every value gets as many digits as the longest needs (so `1e-05`
/// next to `1.2345679e-05` prints `9.9999997e-06`, as NumPy does). A 0-d array prints like
/// the NumPy scalar (`0.5`, `1e-05`), an empty one as `[]`. NaN prints `nan`, infinities
/// `inf` / `-inf`, right-aligned in the column.
/// @throws std::invalid_argument for more than 32 dimensions (NumPy's `NPY_MAXDIMS`: "maximum
/// supported dimension for an ndarray is 32").
std::string numpy_str(const Tensor& t);

}  // namespace attn
