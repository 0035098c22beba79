#include "attn/modules/skeleton.hpp"

#include <utility>

#include "attn/core/require.hpp"

namespace attn {

namespace {

// The arguments every variant takes, plus `also`.
std::vector<ConfigField> taken(std::initializer_list<ConfigField> also) {
    std::vector<ConfigField> takes{ConfigField::d_in,    ConfigField::d_out,     ConfigField::context_length,
                                   ConfigField::dropout, ConfigField::num_heads, ConfigField::qkv_bias,
                                   ConfigField::backend};
    takes.insert(takes.end(), also);
    return takes;
}

}  // namespace

AttentionSkeleton::AttentionSkeleton(std::string name, const AttentionConfig& c,
                                     std::initializer_list<ConfigField> also)
    : num_heads((c.check(name, taken(also)), require_weight_size(name, "d_out", c.d_out, "d_in", c.d_in),
                 require_weight_size(name, "d_out", c.d_out, "d_out", c.d_out), c.num_heads)),
      head_dim(c.d_out / c.num_heads),
      context_length(c.context_length),
      dropout(c.dropout, c.backend),
      name_(std::move(name)) {}

Shape AttentionSkeleton::check_layers(const Tensor& x, const std::vector<LayerCheck>& layers) const {
    std::vector<std::size_t> ins{width_of(W_query, true)}, outs{width_of(W_query), heads_width(num_heads, head_dim)};
    for (const LayerCheck& l : layers) {
        if (l.in == reads_x) ins.push_back(width_of(*l.layer, true));
        if (l.out == gives_d_out) outs.push_back(width_of(*l.layer));
    }
    outs.push_back(width_of(out_proj, true));
    const std::size_t in = agreed_width(ins), d = agreed_width(outs);
    check_linear(name_, "W_query", W_query, in, d);
    check_heads(name_, num_heads, head_dim, d);
    for (const LayerCheck& l : layers)
        check_linear(name_, l.name, *l.layer, l.in == reads_x ? in : l.in, l.out == gives_d_out ? d : l.out);
    check_output_linear(name_, "out_proj", out_proj, d, d);
    const Shape s = check_tokens(name_, x, in);
    check_dropout(name_, dropout);
    return s;
}

Generator& ProjectedAttention::build_layers(const AttentionConfig& c, Generator& gen, bool out_bias) {
    W_query = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_key = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_value = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    out_proj = nn::Linear(c.d_out, c.d_out, out_bias, gen);
    return gen;
}

Shape ProjectedAttention::check_projections(const Tensor& x, std::size_t kv_heads, bool own_keys,
                                            std::initializer_list<LayerCheck> extra) const {
    std::vector<LayerCheck> layers(extra);
    if (own_keys) {
        // GQA's keys are narrower than d_out: a fixed width, not one more say in d_out's.
        const std::size_t kv_width = kv_heads == num_heads ? gives_d_out : kv_heads * head_dim;
        layers.push_back({"W_key", &W_key, reads_x, kv_width});
        layers.push_back({"W_value", &W_value, reads_x, kv_width});
    }
    return check_layers(x, layers);
}

}  // namespace attn
