// Precompiled once for the textbook library: xtensor (through attn/tensor.hpp) and the
// standard headers its files share.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
