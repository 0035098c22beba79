// Precompiled for the unit-test program: the heavy headers every test file includes
// (Catch2's single header, xtensor through the library's headers).
#include <catch2/catch.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "textbook/book.hpp"
