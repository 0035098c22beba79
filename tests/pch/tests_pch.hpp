// Precompiled for the unit-test program: the heavy headers every test file includes
// (doctest, xtensor through the library's headers).
#include <doctest/doctest.h>

#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "textbook/book.hpp"
