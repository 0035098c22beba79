/// @file print.hpp
/// @brief Writes tensors and values exactly as the book printed them; one header per format:
/// - print_torch.hpp: PyTorch's `print(tensor)` (`torch/_tensor_str.py`);
/// - print_numpy.hpp: NumPy's `print(array)` (`arrayprint.py`, Dragon4);
/// - print_python.hpp: Python's `repr` of floats, bools and strings, IPython's tuples.
///
/// They are ports of the formatting rules, not approximations, checked byte for byte
/// against oracle strings recorded from Debian's python3-torch and python3-numpy.
#pragma once

#include "attn/print/numpy.hpp"
#include "attn/print/python.hpp"
#include "attn/print/torch.hpp"
