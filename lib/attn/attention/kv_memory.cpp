#include "attn/attention/kv_memory.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

#include "attn/core/require.hpp"

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

std::size_t kv_bytes_total(std::size_t batch, std::size_t context_length, std::size_t emb_dim,
                           std::size_t num_heads, std::size_t num_kv_heads,
                           std::size_t num_cached_layers, std::size_t bytes_per_elem) {
    if (num_heads == 0) throw std::invalid_argument("kv_bytes_total: expected num_heads > 0, got 0");
    const std::size_t head_dim = emb_dim / num_heads + (emb_dim % num_heads != 0);  // math.ceil
    return checked_product("kv_bytes_total",
                           {kv_bytes_per_layer(batch, context_length, head_dim, num_kv_heads, bytes_per_elem),
                            num_cached_layers});
}

std::size_t latent_bytes_per_layer(std::size_t batch, std::size_t tokens, std::size_t latent_dim,
                                   std::size_t bytes_per_elem) {
    return checked_product("latent_bytes_per_layer", {batch, tokens, latent_dim, bytes_per_elem});
}

std::size_t mla_bytes_total(std::size_t batch, std::size_t context_length, std::size_t num_layers,
                            std::size_t latent_dim, std::size_t bytes_per_elem) {
    return checked_product("mla_bytes_total", {batch, context_length, num_layers, latent_dim, bytes_per_elem});
}

std::size_t deltanet_state_bytes_per_layer(std::size_t batch, std::size_t num_heads, std::size_t head_dim,
                                           std::size_t bytes_per_elem) {
    return checked_product("deltanet_state_bytes_per_layer", {batch, num_heads, head_dim, head_dim, bytes_per_elem});
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
    if (num_kv_producing_layers > num_layers)
        throw std::invalid_argument(where + ": expected num_kv_producing_layers <= num_layers = " +
                                    std::to_string(num_layers) + ", got " +
                                    std::to_string(num_kv_producing_layers));
    if (deltanet_state && (latent_dim != 0 || sliding_window_size != 0))
        throw std::invalid_argument(where + ": deltanet_state holds no tokens; expected latent_dim = 0 and "
                                    "sliding_window_size = 0, got " + std::to_string(latent_dim) + " and " +
                                    std::to_string(sliding_window_size));
}

std::size_t kv_cache_total_bytes(const KVMemoryConfig& c) {
    c.validate();
    const std::size_t head_dim = c.emb_dim / c.num_heads + (c.emb_dim % c.num_heads != 0);  // ceil
    // Consumers of shared keys and values hold nothing: only the producers are cached.
    const std::size_t cached = c.num_kv_producing_layers == 0 ? c.num_layers : c.num_kv_producing_layers;
    if (c.deltanet_state)  // a state per head, of no token count
        return checked_product("kv_cache_total_bytes",
                               {cached, deltanet_state_bytes_per_layer(c.batch, c.num_heads, head_dim, c.bytes_per_elem)});
    const auto [swa, full] = c.sliding_window_size == 0
                                 ? std::pair<std::size_t, std::size_t>{0, cached}
                                 : distribute_layers(cached, c.swa_a, c.swa_b);
    const std::size_t eff_W = std::min(c.context_length, c.sliding_window_size);
    const auto layer_bytes = [&](std::size_t tokens) {
        return c.latent_dim != 0
                   ? latent_bytes_per_layer(c.batch, tokens, c.latent_dim, c.bytes_per_elem)
                   : kv_bytes_per_layer(c.batch, tokens, head_dim, c.num_kv_heads, c.bytes_per_elem);
    };
    const char* what = "kv_cache_total_bytes";
    return checked_sum(what, checked_product(what, {swa, layer_bytes(eff_W)}),
                       checked_product(what, {full, layer_bytes(c.context_length)}));
}

double kv_cache_bytes_per_token(const KVMemoryConfig& c) {
    const std::size_t total = kv_cache_total_bytes(c);  // validates: batch, context_length > 0
    return static_cast<double>(total) /
           (static_cast<double>(c.batch) * static_cast<double>(c.context_length));
}

}  // namespace attn
