// Tests of multi-head latent attention (chapter 15), keys and values shared across layers
// (chapter 16) and their memory estimates.
//
// The estimates are compared with the figures Raschka's READMEs print for his estimators'
// arguments (rasbt/LLMs-from-scratch ch04/05_mla/README.md, ch04/10_kv-sharing/README.md):
// GB to two decimals, ratios and savings as his script formats them.
#include <doctest/doctest.h>

#include "support.hpp"

#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/attention/kv_memory.hpp"

namespace test_mla_sharing {  // every test file is a namespace of its own (tests/meson.build)

namespace {

// Python's f"{x:,.2f}" for the values these tests meet (below 1000: no thousands separator).
std::string two_decimals(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", x);
    return buf;
}

// convert_bytes of his estimators: 10^9 bytes to a GB.
std::string gb(std::size_t bytes) { return two_decimals(static_cast<double>(bytes) / 1e9) + " GB"; }

constexpr std::size_t kBf16 = 2;

}  // namespace

// ============================================================================ estimators

TEST_CASE("memory_estimator_mla.py with his README's arguments prints his README's figures") {
    // --context_length 8192 --emb_dim 2048 --n_heads 24 --n_layers 48 --n_kv_groups 4
    // --batch_size 1 --dtype bf16 --latent_dim 1024; head_dim = ceil(2048 / 24) = 86.
    const std::size_t mha = attn::kv_bytes_total(1, 8192, 2048, 24, 24, 48, kBf16);
    const std::size_t gqa = attn::kv_bytes_total(1, 8192, 2048, 24, 24 / 4, 48, kBf16);
    const std::size_t mla = attn::mla_bytes_total(1, 8192, 48, 1024, kBf16);
    CHECK(gb(mha) == "3.25 GB");
    CHECK(gb(gqa) == "0.81 GB");
    CHECK(gb(mla) == "0.81 GB");
    CHECK(two_decimals(double(mha) / double(gqa)) == "4.00");
    CHECK(two_decimals((1 - double(gqa) / double(mha)) * 100) == "75.00");
    CHECK(two_decimals(double(mha) / double(mla)) == "4.03");
    CHECK(two_decimals((1 - double(mla) / double(mha)) * 100) == "75.19");
    // The same through the one config.
    attn::KVMemoryConfig cfg{.batch = 1, .context_length = 8192, .emb_dim = 2048, .num_heads = 24,
                             .num_kv_heads = 24, .num_layers = 48, .bytes_per_elem = kBf16};
    CHECK(attn::kv_cache_total_bytes(cfg) == mha);
    cfg.num_kv_heads = 6;
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa);
    cfg.latent_dim = 1024;
    CHECK(attn::kv_cache_total_bytes(cfg) == mla);
    CHECK(attn::kv_cache_bytes_per_token(cfg) == 48.0 * 1024 * 2);
    CHECK(attn::latent_bytes_per_layer(1, 8192, 1024, kBf16) * 48 == mla);
}

TEST_CASE("memory_estimator_kv_sharing.py with his README's E2B arguments prints his README's figures") {
    // --context_length 131072 --emb_dim 2048 --n_heads 8 --n_layers 35 --n_kv_groups 8
    // --n_kv_producing_layers 15 --batch_size 1 --dtype bf16; head_dim 256, GQA n_kv_heads 1.
    const std::size_t mha = attn::kv_bytes_total(1, 131072, 2048, 8, 8, 35, kBf16);
    const std::size_t gqa = attn::kv_bytes_total(1, 131072, 2048, 8, 1, 35, kBf16);
    const std::size_t mha_sharing = attn::kv_bytes_total(1, 131072, 2048, 8, 8, 15, kBf16);
    const std::size_t gqa_sharing = attn::kv_bytes_total(1, 131072, 2048, 8, 1, 15, kBf16);
    CHECK(gb(mha) == "37.58 GB");
    CHECK(gb(gqa) == "4.70 GB");
    CHECK(gb(mha_sharing) == "16.11 GB");
    CHECK(gb(gqa_sharing) == "2.01 GB");
    CHECK(two_decimals(double(mha) / double(gqa_sharing)) == "18.67");
    CHECK(two_decimals((1 - double(gqa_sharing) / double(mha)) * 100) == "94.64");
    attn::KVMemoryConfig cfg{.batch = 1, .context_length = 131072, .emb_dim = 2048, .num_heads = 8,
                             .num_kv_heads = 1, .num_layers = 35, .bytes_per_elem = kBf16,
                             .num_kv_producing_layers = 15};
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa_sharing);
    cfg.num_kv_producing_layers = 35;  // every layer produces: no sharing
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa);
    cfg.num_kv_producing_layers = 0;
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa);
    // His tests.py, test_memory_estimator_counts_cached_layers.
    CHECK(attn::kv_bytes_total(1, 128, 32, 4, 1, 2, 2) == 1 * 128 * 8 * 1 * 2 * 2 * 2);
}

TEST_CASE("the variants combine in one config: sharing, MLA and SWA layers") {
    attn::KVMemoryConfig cfg{.batch = 2, .context_length = 4096, .emb_dim = 768, .num_heads = 12,
                             .num_kv_heads = 12, .num_layers = 12, .bytes_per_elem = 4};
    const std::size_t per_layer = 2 * 4096 * 2 * 768 * 4;
    CHECK(attn::kv_cache_total_bytes(cfg) == 12 * per_layer);
    CHECK(attn::kv_cache_bytes_per_token(cfg) == 12.0 * 2 * 768 * 4);
    cfg.num_kv_producing_layers = 6;
    CHECK(attn::kv_cache_total_bytes(cfg) == 6 * per_layer);
    // 6 producers at 1:1: 3 hold a 1024-token window, 3 the whole context.
    cfg.sliding_window_size = 1024, cfg.swa_a = 1, cfg.swa_b = 1;
    CHECK(attn::kv_cache_total_bytes(cfg) == 3 * per_layer + 3 * per_layer / 4);
    cfg.latent_dim = 96;  // each cached layer holds 96 numbers per token instead of 2 * 768
    CHECK(attn::kv_cache_total_bytes(cfg) == 3 * (2 * 4096 * 96 * 4) + 3 * (2 * 1024 * 96 * 4));
}

TEST_CASE("the estimators refuse what they cannot count") {
    constexpr std::size_t big = std::numeric_limits<std::size_t>::max() / 2;
    CHECK_THROWS_CONTAINING(attn::mla_bytes_total(1, big, 48, 1024, 2), "mla_bytes_total", "overflows");
    CHECK_THROWS_CONTAINING(attn::latent_bytes_per_layer(big, 4, 1, 1), "latent_bytes_per_layer", "overflows");
    CHECK_THROWS_CONTAINING(attn::kv_bytes_total(1, big, 2048, 8, 8, 35, 2), "overflows");
    CHECK_THROWS_CONTAINING(attn::kv_bytes_total(1, 1, 2048, 0, 8, 35, 2), "num_heads > 0");
    const attn::KVMemoryConfig over{.batch = 1, .context_length = 8, .emb_dim = 64, .num_heads = 8,
                                    .num_kv_heads = 8, .num_layers = 4, .num_kv_producing_layers = 5};
    CHECK_THROWS_CONTAINING(attn::kv_cache_total_bytes(over), "num_kv_producing_layers <= num_layers = 4", "got 5");
    attn::KVMemoryConfig huge{.batch = 1, .context_length = big, .emb_dim = 64, .num_heads = 8,
                              .num_kv_heads = 8, .num_layers = 4, .latent_dim = 64};
    CHECK_THROWS_AS(attn::kv_cache_bytes_per_token(huge), std::length_error);
}

TEST_CASE("control: MLA's estimate counted as keys and values both (2 x latent_dim)" * doctest::should_fail()) {
    // A latent cache holds one latent per token, not a key and a value: doubling it must not
    // match his README's 0.81 GB / 4.03x.
    const std::size_t mha = attn::kv_bytes_total(1, 8192, 2048, 24, 24, 48, kBf16);
    const std::size_t wrong = 2 * attn::mla_bytes_total(1, 8192, 48, 1024, kBf16);
    CHECK(two_decimals(double(mha) / double(wrong)) == "4.03");
}

}  // namespace test_mla_sharing
