// Chapter 10's helper: what IPython shows for `x, x.shape` (notebook 001 prints most of its
// tensors this way). Compiled with the chapter, in the chapters' unity file
// (chapters/meson.build): everything here is in namespace ch10. Includes
// textbook/display.hpp, the layouts chapters share.
#pragma once

#include <string>

#include "attn/core/tensor.hpp"
#include "attn/print/print.hpp"
#include "textbook/display.hpp"

namespace ch10 {

/// The tuple of the tensor's repr and its shape's: `(tensor([45, 43, 49, 81,  0]), torch.Size([5]))`.
inline std::string with_shape(const attn::Tensor& x) {
    return attn::repr_tuple({attn::repr(x), attn::repr(attn::shape_of(x))});
}

/// `with_shape` for an int64 tensor (001 In [5]: `tokens, tokens.shape`).
inline std::string with_shape(const attn::LongTensor& x) {
    return attn::repr_tuple({attn::repr(x), attn::repr(attn::shape_of(x))});
}

}  // namespace ch10
