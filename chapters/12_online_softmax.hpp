// Chapter 12's helpers: how it prints the online state of each block of keys
// (`m = 1.4950, l = 1.5824, O = [0.8004, 0.9574, 1.1783]`). Compiled with the chapter, in the
// chapters' unity file (chapters/meson.build): everything here is in namespace ch12.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"
#include "textbook/display.hpp"

namespace ch12 {

/// Named values on one line, `name = text` joined by `, `: `m = 1.4950, l = 1.5824`.
inline std::string fields(const std::vector<std::pair<std::string, std::string>>& named) {
    std::string out;
    for (const auto& [name, text] : named) out.append(out.empty() ? "" : ", ").append(name).append(" = ").append(text);
    return out;
}

/// The elements of a vector of floats with `decimals` digits each, as a Python list would
/// show them: `[0.8004, 0.9574, 1.1783]` (textbook::fixed of each).
inline std::string fixed_list(const std::vector<float>& v, int decimals = 4) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(textbook::fixed(v[i], decimals));
    return out + "]";
}

/// `fixed_list` of the elements of a tensor, in row-major order (`[3]` in this chapter).
inline std::string fixed_list(const attn::Tensor& v, int decimals = 4) {
    return fixed_list(std::vector<float>(v.begin(), v.end()), decimals);
}

}  // namespace ch12
