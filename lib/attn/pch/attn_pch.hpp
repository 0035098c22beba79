// Precompiled once for the attention library: xtensor's headers, which every source file
// includes through attn/tensor.hpp and which cost most of each file's compile time.
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <string>
#include <vector>
