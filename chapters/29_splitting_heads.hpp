// Chapter 29's figure data: which rank holds each (head, token) of the all-to-all's example.
#pragma once

#include <cmath>
#include <cstddef>

#include "attn/core/tensor.hpp"
#include "attn/dist/communicator.hpp"

namespace ch29 {

// [heads, tokens]: the rank holding each number 10 h + t of the ranks' `local` tensors.
inline attn::Tensor owners(const attn::dist::Communicator& world, const attn::Tensor& local, std::size_t heads,
                           std::size_t tokens) {
    const std::vector<float> all = world.all_gather(local.data(), local.size());
    attn::Tensor owner = attn::Tensor::from_shape({heads, tokens});
    for (std::size_t i = 0; i < all.size(); ++i) {
        const long v = std::lround(all[i]);
        owner(std::size_t(v / 10), std::size_t(v % 10)) = float(i / local.size());
    }
    return owner;
}

}  // namespace ch29
