// TransformerBlock (transformer_block.hpp): Raschka ch. 4.5.
#include "attn/model/transformer_block.hpp"

#include <stdexcept>

#include "attn/core/reduce.hpp"
#include "attn/modules/module.hpp"

namespace attn {

namespace {

// The block's config checked before anything is drawn.
const GPTConfig& checked_block_config(const GPTConfig& cfg) {
    cfg.check("TransformerBlock");
    return cfg;
}

// a + b elementwise (the shortcut's `x + shortcut`), both of one shape, into `y`'s memory (`sized`).
void add_shortcut_into(const Tensor& a, const Tensor& b, Tensor& y) {
    const float* pa = a.data();
    const float* pb = b.data();
    float* py = sized(y, shape_of(a), "TransformerBlock (shortcut)");
    for (std::size_t i = 0; i < a.size(); ++i) py[i] = pa[i] + pb[i];
}

// a + b into a new tensor.
Tensor add_shortcut(const Tensor& a, const Tensor& b) {
    Tensor y;
    add_shortcut_into(a, b, y);
    return y;
}

// `dropout(a) + x` (`x = x + shortcut`) in `a`'s own memory: without a draw (evaluation, or
// p = 0) the dropout is `a` itself, so that no copy and no new tensor is made.
Tensor add_dropped(const nn::Dropout& drop, Tensor a, const Tensor& x, Generator& gen) {
    if (!drop.is_identity()) return add_shortcut(drop(a, gen), x);
    detail::add_into(a.data(), x.data(), a.size());  // a + x per element, as add_shortcut
    return a;
}

}  // namespace

TransformerBlock::TransformerBlock(const GPTConfig& cfg, Generator& gen)
    : att(checked_block_config(cfg).attention(), gen),
      ff(cfg, gen),
      norm1(cfg.emb_dim),
      norm2(cfg.emb_dim),
      drop_shortcut(cfg.drop_rate, cfg.backend) {}

void TransformerBlock::check(const Tensor& x) const {
    const std::string where = "TransformerBlock";
    const std::size_t E = norm1.emb_dim();
    check_tokens(where, x, E);
    const auto agree = [&](const char* field, std::size_t width) {
        if (width != E)
            throw std::invalid_argument(where + ": " + field + " is " + std::to_string(width) +
                                        " wide, but norm1 normalises " + std::to_string(E));
    };
    agree("att (d_in)", att.d_in());
    agree("att (d_out)", att.d_out());
    agree("ff (layers[0].in_features)", ff.layers.get<0>().in_features());
    agree("norm2", norm2.emb_dim());
    check_dropout(where + " (drop_shortcut)", drop_shortcut);
}

Tensor TransformerBlock::finish(const Tensor& x, Tensor a, Generator& gen) const {
    const Tensor x1 = add_dropped(drop_shortcut, std::move(a), x, gen);  // x = x + shortcut
    return add_dropped(drop_shortcut, ff(norm2(x1)), x1, gen);
}

Tensor TransformerBlock::operator()(const Tensor& x, Generator& gen) const {
    check(x);
    return finish(x, att(norm1(x), gen), gen);
}

void TransformerBlock::forward_into(Tensor& x, Tensor& a, Tensor& normed, Generator& gen) const {
    if (!drop_shortcut.is_identity()) {
        x = (*this)(x, gen);
        return;
    }
    check(x);
    const Shape s = shape_of(x);
    const std::size_t rows = s[0] * s[1];
    norm1.forward_into(x.data(), rows, sized(normed, s, "TransformerBlock (normed)"));
    att.forward_into(normed, a, gen);
    detail::add_into(a.data(), x.data(), a.size());            // x = x + shortcut (add_dropped's order)
    norm2.forward_into(a.data(), rows, normed.data());
    ff.forward_into(normed.data(), rows, x.data());            // the block's input is no longer needed
    detail::add_into(x.data(), a.data(), x.size());            // x = x + shortcut
}

Tensor TransformerBlock::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    check(x);
    return finish(x, att.forward(norm1(x), cache, gen), gen);
}

const Tensor& TransformerBlock::forward(const Tensor& x, Saved& saved, Generator& gen) const {
    check(x);
    const Tensor& a = att.forward(norm1.forward(x, saved.norm1), saved.att, gen);
    add_shortcut_into(drop_shortcut.forward_into(a, saved.drop1, saved.dropped, gen), x, saved.shortcut1);
    const Tensor& f = ff.forward(norm2.forward(saved.shortcut1, saved.norm2), saved.ff);
    add_shortcut_into(drop_shortcut.forward_into(f, saved.drop2, saved.dropped, gen), saved.shortcut1, saved.output);
    return saved.output;
}

Tensor TransformerBlock::backward(const Saved& saved, const Tensor& grad_output) {
    Tensor grad_x;
    backward_into(saved, grad_output, grad_x);
    return grad_x;
}

void TransformerBlock::backward_into(const Saved& saved, const Tensor& grad_output, Tensor& grad_x) {
    check(saved.norm1.x);
    check_same_shape("TransformerBlock::backward (grad_output)", shape_of(saved.norm1.x), shape_of(grad_output));
    // [b, T, E] each, this thread's, reused by every block and step: a dropout's gradient, a
    // sub-layer's, and the gradient of shortcut1
    thread_local Tensor g_drop, g_layer, g_x1;
    const Tensor& g_f = nn::Dropout::backward_into(grad_output, saved.drop2, g_drop);
    ff.backward_into(saved.ff, g_f, g_layer);
    norm2.backward_into(saved.norm2, g_layer, &grad_output, g_x1);
    const Tensor& g_a = nn::Dropout::backward_into(g_x1, saved.drop1, g_drop);
    att.backward_into(saved.att, g_a, g_layer);
    norm1.backward_into(saved.norm1, g_layer, &g_x1, grad_x);
}

TransformerBlock::Steps TransformerBlock::forward_steps(const Tensor& x, Generator& gen) const {
    check(x);
    Steps st;
    st.norm1 = norm1.forward_steps(x).output;
    st.att = att.forward_steps(st.norm1, gen).context_vec;
    st.shortcut1 = add_shortcut(drop_shortcut(st.att, gen), x);
    st.norm2 = norm2.forward_steps(st.shortcut1).output;
    st.ff = ff(st.norm2);
    st.output = add_shortcut(drop_shortcut(st.ff, gen), st.shortcut1);
    return st;
}

}  // namespace attn
