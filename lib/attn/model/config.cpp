// GPTConfig (config.hpp): its checks, exercise 4.2's sizes and the parameter count.
#include "attn/model/config.hpp"

#include <stdexcept>

#include "attn/core/require.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

void GPTConfig::check(const std::string& where) const {
    require_positive(where, "vocab_size", vocab_size);
    require_positive(where, "context_length", context_length);
    require_positive(where, "emb_dim", emb_dim);
    require_positive(where, "n_heads", n_heads);
    if (n_layers == 0)  // PyTorch would build it: an empty nn.Sequential is the identity
        throw std::invalid_argument(where + ": expected n_layers > 0, got 0 (PyTorch's empty nn.Sequential would "
                                            "pass the embeddings straight to final_norm; this model has at least one "
                                            "block, which its forward, backward and caches assume)");
    require_divisible(where, "emb_dim", emb_dim, "n_heads", n_heads);
    require_probability(where, "drop_rate", drop_rate);
    nn::check_backend(backend, where.c_str());
    require_mask_size(where, "context_length", context_length);
    require_weight_size(where, "vocab_size", vocab_size, "emb_dim", emb_dim);
    require_weight_size(where, "context_length", context_length, "emb_dim", emb_dim);
    require_weight_size(where, "4 * emb_dim", checked_mul(4, emb_dim, where + " (4 * emb_dim)"), "emb_dim",
                        emb_dim);
    // The whole model at once: its parameters and its blocks' masks (n_layers of them).
    const std::size_t params = parameter_count(*this).total;
    const std::size_t masks = checked_mul(n_layers, checked_mul(context_length, context_length, where), where);
    const std::size_t bytes = checked_mul(checked_add(params, masks, where), sizeof(float), where + " (bytes)");
    if (bytes > max_tensor_bytes())
        throw std::length_error(where + ": cannot allocate the model: " + std::to_string(params) + " parameters and " +
                                std::to_string(n_layers) + " masks of [" + std::to_string(context_length) + ", " +
                                std::to_string(context_length) + "] take " + std::to_string(bytes) +
                                " bytes, more than " + std::to_string(max_tensor_bytes()));
}

AttentionConfig GPTConfig::attention() const {
    return {.d_in = emb_dim, .d_out = emb_dim, .context_length = context_length, .dropout = drop_rate,
            .num_heads = n_heads, .qkv_bias = qkv_bias, .backend = backend,
            .projection_order = ProjectionOrder::key_query_value};  // his `keys = self.W_key(x)` first
}

GPTConfig get_config(const GPTConfig& base, const std::string& model_name) {
    GPTConfig c = base;
    if (model_name == "gpt2-small") {
        c.emb_dim = 768, c.n_layers = 12, c.n_heads = 12;
    } else if (model_name == "gpt2-medium") {
        c.emb_dim = 1024, c.n_layers = 24, c.n_heads = 16;
    } else if (model_name == "gpt2-large") {
        c.emb_dim = 1280, c.n_layers = 36, c.n_heads = 20;
    } else if (model_name == "gpt2-xl") {
        c.emb_dim = 1600, c.n_layers = 48, c.n_heads = 25;
    } else {
        throw std::invalid_argument("Incorrect model name " + model_name);
    }
    return c;
}

GPTParameterCount parameter_count(const GPTConfig& c) {
    const std::string where = "parameter_count";
    require_positive(where, "vocab_size", c.vocab_size);
    require_positive(where, "context_length", c.context_length);
    require_positive(where, "emb_dim", c.emb_dim);
    require_positive(where, "n_heads", c.n_heads);
    require_positive(where, "n_layers", c.n_layers);
    require_divisible(where, "emb_dim", c.emb_dim, "n_heads", c.n_heads);
    require_probability(where, "drop_rate", c.drop_rate);
    const std::size_t E = c.emb_dim;
    const auto mul = [&](std::size_t a, std::size_t b) { return checked_mul(a, b, where); };
    const auto add = [&](std::size_t a, std::size_t b) { return checked_add(a, b, where); };
    const std::size_t EE = mul(E, E);
    // att: W_query, W_key, W_value (+ biases), out_proj with its bias
    std::size_t block = add(mul(3, EE), c.qkv_bias ? mul(3, E) : 0);
    block = add(block, add(EE, E));
    // ff: Linear(E, 4E) and Linear(4E, E), both with biases: 8 E^2 + 4E + E
    block = add(block, add(mul(8, EE), mul(5, E)));
    block = add(block, mul(4, E));  // norm1, norm2: scale and shift
    GPTParameterCount n;
    n.out_head = mul(c.vocab_size, E);
    n.total = add(n.out_head, mul(c.context_length, E));  // tok_emb (as out_head), pos_emb
    n.total = add(n.total, mul(c.n_layers, block));
    n.total = add(n.total, mul(2, E));                    // final_norm
    n.total = add(n.total, n.out_head);                   // out_head
    return n;
}

}  // namespace attn
