// Appendix A's helper: how far a mask a notebook printed agrees with a backend's. Compiled
// with the chapter, in the chapters' unity file (chapters/meson.build): everything here is in
// namespace chA. Includes textbook/display.hpp, the layouts chapters share.
#pragma once

#include <stdexcept>
#include <string>

#include "attn/core/tensor.hpp"
#include "textbook/book.hpp"
#include "textbook/display.hpp"

namespace chA {

/// How far a printed mask agrees with a keep-mask: `"k of n entries agree"`. The printed mask
/// is read from `printed` (a book entry's text): its last `keep.size()` numbers, non-zero
/// where the element was kept (labels such as `-inf` may come before them). Only elements
/// where `where` is non-zero are counted, since a zero input prints 0 kept or not.
/// `keep` and `where` have one shape (`[6, 6]` here).
/// @throws std::out_of_range when `printed` holds fewer numbers than `keep` has elements.
inline std::string mask_agreement(const std::string& printed, const attn::Tensor& keep,
                                  const attn::Tensor& where) {
    const auto numbers = textbook::numbers_in(textbook::strip_grad_fn(printed));
    if (numbers.size() < keep.size())
        throw std::out_of_range("mask_agreement: the printed block has " +
                                std::to_string(numbers.size()) + " numbers, the mask " +
                                std::to_string(keep.size()) + " elements");
    const std::size_t skip = numbers.size() - keep.size();
    std::size_t agree = 0, counted = 0;
    for (std::size_t i = 0; i < keep.size(); ++i) {
        if (where.flat(i) == 0.0f) continue;
        ++counted;
        const bool printed_kept = numbers[skip + i].value != 0.0;
        agree += printed_kept == (keep.flat(i) != 0.0f) ? 1 : 0;
    }
    return std::to_string(agree) + " of " + std::to_string(counted) + " entries agree";
}

}  // namespace chA
