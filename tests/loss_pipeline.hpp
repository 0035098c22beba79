/// @file loss_pipeline.hpp
/// @brief Notebook 001's pipeline after manual_seed(seed), up to the logits, and an
/// independent cross-entropy in double: shared by test_loss.cpp and test_loss_relations.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"

namespace test {

// Independent reference for the mean cross-entropy: log-sum-exp in double, per row.
inline double reference_cross_entropy(const attn::Tensor& logits, const attn::LongTensor& targets,
                               std::int64_t ignore_index) {
    const std::size_t N = logits.shape()[0], C = logits.shape()[1];
    double total = 0.0;
    std::size_t count = 0;
    for (std::size_t i = 0; i < N; ++i) {
        if (targets(i) == ignore_index) continue;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < C; ++j) mx = std::max(mx, static_cast<double>(logits(i, j)));
        double s = 0.0;
        for (std::size_t j = 0; j < C; ++j) s += std::exp(static_cast<double>(logits(i, j)) - mx);
        total += mx + std::log(s) - static_cast<double>(logits(i, static_cast<std::size_t>(targets(i))));
        ++count;
    }
    return total / static_cast<double>(count);  // 0 / 0 = NaN when all are ignored
}

// Notebook 001 after manual_seed(seed), up to the logits.
struct Pipeline {
    attn::LongTensor tokens;
    attn::Tensor x, q, k, v, raw_att, tril_att, masked_att, weights, new_v, logits;
    attn::nn::Linear clf;
    explicit Pipeline(attn::nn::Linear head) : clf(std::move(head)) {}
};

inline Pipeline run_001(std::uint64_t seed, std::size_t V = 100, std::size_t d = 768, std::size_t T = 5) {
    attn::Generator gen(seed);
    const attn::nn::Embedding emb(V, d, gen);
    Pipeline p(attn::nn::Linear(d, V, true, gen));
    const attn::nn::Linear q_proj(d, d, true, gen), k_proj(d, d, true, gen), v_proj(d, d, true, gen);
    p.tokens = attn::randint(static_cast<std::int64_t>(V), {T}, gen);
    p.x = emb(p.tokens);
    p.q = q_proj(p.x);
    p.k = k_proj(p.x);
    p.v = v_proj(p.x);
    p.raw_att = attn::matmul(p.q, attn::T(p.k)) / std::sqrt(static_cast<float>(d));
    p.tril_att = attn::tril(p.raw_att);
    p.masked_att = attn::masked_fill(p.tril_att, attn::eq(p.tril_att, 0.0f), -std::numeric_limits<float>::infinity());
    p.weights = attn::softmax(p.masked_att, -1);
    p.new_v = attn::matmul(p.weights, p.v);
    p.logits = p.clf(p.new_v);
    return p;
}

inline const Pipeline& seeded_pipeline() {
    static const Pipeline p = run_001(123);
    return p;
}

}  // namespace test
