#include "attn/attention/kv_memory.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

#include "attn/attention/config.hpp"

namespace attn {

namespace {

// The product of `factors`, or std::length_error naming `what` when it overflows.
std::size_t checked_product(const char* what, std::initializer_list<std::size_t> factors) {
    std::size_t p = 1;
    for (const std::size_t f : factors)
        if (__builtin_mul_overflow(p, f, &p))
            throw std::length_error(std::string(what) + ": the byte count overflows 2^64");
    return p;
}

std::size_t checked_sum(const char* what, std::size_t a, std::size_t b) {
    std::size_t s = 0;
    if (__builtin_add_overflow(a, b, &s))
        throw std::length_error(std::string(what) + ": the byte count overflows 2^64");
    return s;
}

}  // namespace

std::size_t dtype_bytes(const std::string& dtype) {
    if (dtype == "fp32") return 4;
    if (dtype == "bf16" || dtype == "fp16") return 2;
    if (dtype == "fp8" || dtype == "int8") return 1;
    throw std::invalid_argument("dtype_bytes: expected fp32, bf16, fp16, fp8 or int8, got " + dtype);
}

std::size_t kv_bytes_per_layer(std::size_t batch, std::size_t tokens, std::size_t head_dim,
                               std::size_t num_kv_heads, std::size_t bytes_per_elem) {
    return checked_product("kv_bytes_per_layer",
                           {batch, tokens, head_dim, num_kv_heads, 2, bytes_per_elem});
}

std::size_t kv_cache_bytes_per_token(std::size_t num_layers, std::size_t num_kv_heads,
                                     std::size_t head_dim, std::size_t bytes_per_elem) {
    return checked_product("kv_cache_bytes_per_token",
                           {num_layers, kv_bytes_per_layer(1, 1, head_dim, num_kv_heads, bytes_per_elem)});
}

std::pair<std::size_t, std::size_t> distribute_layers(std::size_t num_layers, std::size_t a,
                                                      std::size_t b) {
    std::size_t block = 0;
    if (__builtin_add_overflow(a, b, &block) || block == 0)
        throw std::invalid_argument("distribute_layers: expected 0 < a + b < 2^64, got " +
                                    std::to_string(a) + ":" + std::to_string(b));
    const std::size_t blocks = num_layers / block, rem = num_layers % block;
    return {blocks * a + std::min(a, rem), blocks * b + (rem > a ? rem - a : 0)};
}

void KVMemoryConfig::validate() const {
    const std::string where = "KVMemoryConfig";
    require_positive(where, "batch", batch);
    require_positive(where, "context_length", context_length);
    require_positive(where, "emb_dim", emb_dim);
    require_positive(where, "num_heads", num_heads);
    require_positive(where, "num_kv_heads", num_kv_heads);
    require_positive(where, "num_layers", num_layers);
    require_positive(where, "bytes_per_elem", bytes_per_elem);
    require_divisible(where, "num_heads", num_heads, "num_kv_heads", num_kv_heads);
    if (swa_a + swa_b == 0 || swa_a + swa_b < swa_a)
        throw std::invalid_argument(where + ": expected 0 < swa_a + swa_b < 2^64, got " +
                                    std::to_string(swa_a) + ":" + std::to_string(swa_b));
}

std::size_t kv_cache_total_bytes(const KVMemoryConfig& c) {
    c.validate();
    const std::size_t head_dim = c.emb_dim / c.num_heads + (c.emb_dim % c.num_heads != 0);  // ceil
    const auto [swa, full] = c.sliding_window_size == 0
                                 ? std::pair<std::size_t, std::size_t>{0, c.num_layers}
                                 : distribute_layers(c.num_layers, c.swa_a, c.swa_b);
    const std::size_t eff_W = std::min(c.context_length, c.sliding_window_size);
    const char* what = "kv_cache_total_bytes";
    return checked_sum(
        what,
        checked_product(what, {swa, kv_bytes_per_layer(c.batch, eff_W, head_dim, c.num_kv_heads, c.bytes_per_elem)}),
        checked_product(what, {full, kv_bytes_per_layer(c.batch, c.context_length, head_dim,
                                                        c.num_kv_heads, c.bytes_per_elem)}));
}

}  // namespace attn
