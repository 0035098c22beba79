/// @file display.hpp
/// @brief Small layouts the chapters print that no notebook function gives: teaching
/// machinery with one home here, so that chapters stay the notebook's cells.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attn/tensor.hpp"

namespace textbook {

// ---------------------------------------------------------------- chapters 1-6 and appendix A

// ---------------------------------------------------------------- (separator: keep)

// ---------------------------------------------------------------- chapters 7-10

}  // namespace textbook
