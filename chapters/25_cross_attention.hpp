// Chapter 25's helpers: what tools/oracle/cross_attention.py prints, written as Python prints it
// (a module's parameters as a list of tuples, the training log every 20 steps), and the count of
// held-out sequences a model decodes exactly. Compiled with the chapter, in the chapters' unity
// file (chapters/meson.build): everything here is in namespace ch25.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/modules/seq2seq.hpp"
#include "attn/nn/module.hpp"

namespace ch25 {

/// `print([(name, tuple(p.shape)) for name, p in module.named_parameters()])`:
/// `[('in_proj_weight', (24, 8)), ('in_proj_bias', (24,)), ...]`.
inline std::string named_shapes(attn::nn::Module& module) {
    std::string out = "[";
    for (const auto& p : module.named_parameters()) {
        if (out.size() > 1) out += ", ";
        out += "('" + p.name + "', (";
        const auto& shape = p.value->shape();
        for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
        out += shape.size() == 1 ? ",))" : "))";
    }
    return out + "]";
}

/// The training log as `train()` prints it, every `every` steps and the last:
/// `print(f"step {step:3d}: loss {loss.item():.4f}")`.
inline std::string loss_lines(const std::vector<float>& losses, std::size_t every = 20) {
    std::string out;
    for (std::size_t step = 0; step < losses.size(); ++step) {
        if (step % every != 0 && step + 1 != losses.size()) continue;
        char buf[64];
        std::snprintf(buf, sizeof buf, "step %3zu: loss %.4f", step, static_cast<double>(losses[step]));
        out += (out.empty() ? "" : "\n") + std::string(buf);
    }
    return out;
}

/// How many of `tgt`'s sequences `decoded` reproduces token for token (both `[B, n]`):
/// `(decoded == tgt).all(dim=1).sum()`.
inline std::size_t exact_rows(const attn::LongTensor& decoded, const attn::LongTensor& tgt) {
    std::size_t exact = 0;
    for (std::size_t b = 0; b < tgt.shape()[0]; ++b) {
        bool same = true;
        for (std::size_t j = 0; j < tgt.shape()[1]; ++j) same = same && decoded(b, j) == tgt(b, j);
        exact += same ? 1 : 0;
    }
    return exact;
}

}  // namespace ch25
