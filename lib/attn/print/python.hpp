/// @file python.hpp
/// @brief How Python and IPython display plain values: `repr(float)`, `repr(bool)`,
/// `repr(str)` and a Jupyter cell's tuple display.
#pragma once

#include <initializer_list>
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

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

/// Python's `repr(list)` of integers as `print(list)` shows them, on one line:
/// `[15496, 11, 314, 716]` (Raschka 4 In [30]'s `print("encoded:", encoded)`); `[]` when empty.
std::string repr_list(const std::vector<std::int64_t>& values);

/// Python's `repr(str)` for the texts and strings the notebook displays: single quotes
/// (double quotes when the text holds a `'` and no `"`), with `\\`, `\n`, `\t`, `\r` and the
/// quote escaped, e.g. <tt>'\\nWith KV caching:\\n'</tt> (000 In [28]). ASCII input only.
std::string repr_str(const std::string& text);

}  // namespace attn
