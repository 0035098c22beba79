// FeedForward (feed_forward.hpp): Raschka ch. 4.3.
#include "attn/model/feed_forward.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "attn/core/require.hpp"

namespace attn {

namespace {

nn::Linear expand_layer(const GPTConfig& cfg, Generator& gen) {
    require_positive("FeedForward", "emb_dim", cfg.emb_dim);
    const std::size_t hidden = checked_mul(4, cfg.emb_dim, "FeedForward (4 * emb_dim)");
    // Both weights are checked before the first is drawn.
    require_weight_size("FeedForward", "4 * emb_dim", hidden, "emb_dim", cfg.emb_dim);
    return nn::Linear(cfg.emb_dim, hidden, true, gen);
}

// A thread's hidden activations [rows, 4E], reused between calls.
float* hidden_scratch(std::size_t floats) {
    thread_local std::vector<float> buf;
    if (buf.size() < floats) buf.resize(floats);
    return buf.data();
}

}  // namespace

FeedForward::FeedForward(const GPTConfig& cfg, Generator& gen)
    // Braces: the layers are built (and draw) left to right.
    : layers{expand_layer(cfg, gen), GELU(), nn::Linear(4 * cfg.emb_dim, cfg.emb_dim, true, gen)} {}

void FeedForward::check_layers() const {
    const nn::Linear& fc1 = layers.get<0>();
    const nn::Linear& fc2 = layers.get<2>();
    fc1.check_parameters();
    fc2.check_parameters();
    if (fc2.in_features() != fc1.out_features() || fc2.out_features() != fc1.in_features())
        throw std::invalid_argument(
            "FeedForward: layers[2] must map layers[0]'s " + std::to_string(fc1.out_features()) +
            " outputs back to its " + std::to_string(fc1.in_features()) + " inputs, got Linear(" +
            std::to_string(fc2.in_features()) + ", " + std::to_string(fc2.out_features()) +
            ") (PyTorch's FeedForward would compute it, with another width than its input, which the "
            "block's shortcut x + ff(x) then cannot add: this one keeps its input's width)");
}

Tensor FeedForward::operator()(const Tensor& x) const {
    check_layers();
    const std::size_t E = layers.get<0>().in_features();
    const Shape s = shape_of(x);
    if (s.empty() || s.back() != E) throw_shape_error("FeedForward", "[..., " + std::to_string(E) + "]", s);
    // layers(x), the hidden [rows, 4E] in a reused buffer (no page faults at every forward)
    Tensor y = Tensor::from_shape(s);
    forward_into(x.data(), numel(Shape(s.begin(), s.end() - 1)), y.data());
    return y;
}

void FeedForward::forward_into(const float* x, std::size_t rows, float* y) const {
    check_layers();
    const std::size_t hidden = layers.get<0>().out_features();
    float* h = hidden_scratch(checked_mul(rows, hidden, "FeedForward (rows * 4 * emb_dim)"));
    layers.get<0>().forward_into(x, rows, h);
    gelu_into(h, rows * hidden, h);
    layers.get<2>().forward_into(h, rows, y);
}

const Tensor& FeedForward::forward(const Tensor& x, Saved& saved) const {
    check_layers();
    const nn::Linear& fc1 = layers.get<0>();
    const std::size_t E = fc1.in_features(), hidden = fc1.out_features();
    const Shape s = shape_of(x);
    if (s.empty() || s.back() != E) throw_shape_error("FeedForward", "[..., " + std::to_string(E) + "]", s);
    const std::size_t rows = numel(Shape(s.begin(), s.end() - 1));
    Shape sh = s;
    sh.back() = hidden;
    std::copy_n(x.data(), x.size(), sized(saved.x, s, "FeedForward (saved x)"));
    float* h = sized(saved.hidden, sh, "FeedForward (saved hidden)");
    float* a = sized(saved.activated, sh, "FeedForward (saved activated)");
    fc1.forward_into(x.data(), rows, h);
    gelu_into(h, rows * hidden, a);
    layers.get<2>().forward_into(a, rows, sized(saved.y, s, "FeedForward (saved y)"));
    return saved.y;
}

Tensor FeedForward::backward(const Saved& saved, const Tensor& grad_output) {
    Tensor grad_x;
    backward_into(saved, grad_output, grad_x);
    return grad_x;
}

void FeedForward::backward_into(const Saved& saved, const Tensor& grad_output, Tensor& grad_x) {
    check_layers();
    nn::Linear& fc1 = layers.get<0>();
    nn::Linear& fc2 = layers.get<2>();
    const Shape s = shape_of(saved.x);
    if (s.empty() || s.back() != fc1.in_features())
        throw_shape_error("FeedForward::backward (saved.x)", "[..., " + std::to_string(fc1.in_features()) + "]", s);
    check_same_shape("FeedForward::backward (grad_output)", s, shape_of(grad_output));
    Shape sh = s;
    sh.back() = fc1.out_features();
    check_same_shape("FeedForward::backward (saved.hidden)", sh, shape_of(saved.hidden));
    check_same_shape("FeedForward::backward (saved.activated)", sh, shape_of(saved.activated));
    // dL/d activated, then dL/d hidden in its place, in the thread's reused [rows, 4E] buffer
    // (a fresh one per layer and step would fault its pages in again at every step).
    const std::size_t rows = numel(s) / s.back(), n = numel(sh);
    float* d = hidden_scratch(n);
    fc2.backward_into(saved.activated.data(), rows, grad_output.data(), d);
    gelu_backward_into(d, saved.hidden.data(), n, d);
    fc1.backward_into(saved.x.data(), rows, d, sized(grad_x, s, "FeedForward::backward (grad_input)"));
}

}  // namespace attn
