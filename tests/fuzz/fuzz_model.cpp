// libFuzzer target (issue 32): the GPT model's pieces (attn/model/) called as a user would, with
// inputs built from the fuzzer's bytes (structured.hpp): LayerNorm, GELU and its backward,
// FeedForward and TransformerBlock on fuzzed shapes and values (public fields sometimes replaced
// before the call), mean and var over any dimension, and a tiny GPTModel given fuzzed token ids,
// with and without its KV cache. PyTorch's kinds of error are clean; a crash, a sanitizer
// report, a hang, another exception or a broken invariant is a finding.
//
// Invariants: a result has the input's shape (the logits [b, T, vocab]); LayerNorm's operator()
// equals its forward_steps bit for bit; GELU's forward and backward keep NaN as NaN; the
// TransformerBlock gives the same bits on the step and fast attention backends; a cached
// forward refused for a bad id or position leaves the cache as it was.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/model/gelu.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/model/layer_norm.hpp"
#include "structured.hpp"

namespace {

using attn::Shape;
using attn::Tensor;
using fuzz::clean;
using fuzz::expect;

// A small width, or (rarely) an extreme one.
std::size_t width(FuzzedDataProvider& p, std::size_t max = 8) {
    switch (p.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return std::size_t{1} << 40;
        case 1: return SIZE_MAX;
        case 2: return 0;
        default: return p.ConsumeIntegralInRange<std::size_t>(1, max);
    }
}

// Equal bits, NaN where the other has NaN.
bool model_same_bits(const Tensor& a, const Tensor& b) {
    if (attn::shape_of(a) != attn::shape_of(b)) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return false;
        } else if (std::memcmp(&x, &y, sizeof x) != 0) {
            return false;
        }
    }
    return true;
}

void layer_norm(FuzzedDataProvider& p) {
    clean([&] {
        attn::LayerNorm ln(width(p));
        if (p.ConsumeBool()) ln.scale = fuzz::tensor(p);
        if (p.ConsumeBool()) ln.shift = fuzz::tensor(p);
        if (p.ConsumeBool()) ln.eps = p.ConsumeBool() ? 0.0 : double(fuzz::value(p));
        const Tensor x = fuzz::tensor(p);
        const Tensor y = ln(x);
        expect(attn::shape_of(y) == attn::shape_of(x), "LayerNorm: result has another shape");
        expect(model_same_bits(y, ln.forward_steps(x).output), "LayerNorm: operator() differs from forward_steps");
    });
}

void gelu(FuzzedDataProvider& p) {
    clean([&] {
        const Tensor x = fuzz::tensor(p);
        const Tensor y = attn::gelu(x);
        expect(attn::shape_of(y) == attn::shape_of(x), "gelu: result has another shape");
        for (std::size_t i = 0; i < x.size(); ++i)
            if (std::isnan(x.data()[i])) expect(std::isnan(y.data()[i]), "gelu: NaN in, a number out");
        const Tensor g = p.ConsumeBool() ? fuzz::tensor(p, attn::shape_of(x)) : fuzz::tensor(p);
        const Tensor dx = attn::gelu_backward(g, x);
        expect(attn::shape_of(dx) == attn::shape_of(x), "gelu_backward: result has another shape");
    });
}

void moments(FuzzedDataProvider& p) {
    clean([&] {
        const Tensor x = fuzz::tensor(p);
        const long dim = fuzz::index(p);
        const bool keepdim = p.ConsumeBool();
        const Tensor m = attn::mean(x, dim, keepdim);
        const Tensor v = attn::var(x, dim, p.ConsumeBool(), keepdim);
        expect(attn::shape_of(m) == attn::shape_of(v), "mean and var: results of different shapes");
    });
}

attn::GPTConfig config(FuzzedDataProvider& p) {
    return {.vocab_size = width(p, 12), .context_length = width(p, 6), .emb_dim = width(p, 8),
            .n_heads = width(p, 4), .n_layers = width(p, 2), .drop_rate = p.ConsumeBool() ? 0.0 : 0.25,
            .qkv_bias = p.ConsumeBool()};
}

void feed_forward(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(22);
        const attn::GPTConfig c = config(p);
        attn::FeedForward ff(c, gen);
        if (p.ConsumeBool()) ff.layers.get<2>() = attn::nn::Linear(width(p), width(p), p.ConsumeBool(), gen);
        const Tensor x = fuzz::tensor(p, {width(p, 2), width(p, 4), p.ConsumeBool() ? c.emb_dim : width(p)});
        const Tensor y = ff(x);
        expect(attn::shape_of(y) == attn::shape_of(x), "FeedForward: result has another shape");
    });
}

void block(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(22);
        const attn::GPTConfig c = config(p);
        attn::TransformerBlock b(c, gen);
        b.eval();
        if (p.ConsumeBool()) b.norm2 = attn::LayerNorm(width(p));
        const Tensor x = fuzz::tensor(p, {width(p, 2), width(p, 4), p.ConsumeBool() ? c.emb_dim : width(p)});
        Tensor step, fast;
        {
            const attn::SDPABackendGuard guard(attn::SDPABackend::step);
            step = b(x);
        }
        {
            const attn::SDPABackendGuard guard(attn::SDPABackend::fast);
            fast = b(x);
        }
        expect(model_same_bits(step, fast), "TransformerBlock: the fast backend's bits differ from the step backend's");
    });
}

void model(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(22);
        const attn::GPTConfig c = config(p);
        attn::GPTModel m(c, gen);
        if (p.ConsumeBool()) m.eval();
        const std::size_t b = width(p, 2), T = width(p, 8);
        attn::check_allocation("fuzz (ids)", Shape{b, T}, sizeof(std::int64_t));
        attn::LongTensor ids = xt::empty<std::int64_t>(Shape{b, T});
        for (auto& id : ids) id = p.ConsumeIntegralInRange<std::int64_t>(-2, std::int64_t(c.vocab_size) + 1);
        if (p.ConsumeBool()) {
            const Tensor logits = m(ids, gen);
            expect(attn::shape_of(logits) == Shape({b, T, c.vocab_size}), "GPTModel: logits of another shape");
            return;
        }
        attn::GPTCache cache;
        (void)m.forward(ids, cache, gen);
        const std::size_t pos = cache.current_pos();
        try {
            (void)m.forward(ids, cache, gen);
        } catch (const std::invalid_argument&) {
            expect(cache.current_pos() == pos, "GPTModel: a refused cached forward moved the cache");
            throw;
        }
    });
}

constexpr fuzz::Family families[] = {
    {"layer_norm", layer_norm}, {"gelu", gelu}, {"moments", moments},
    {"feed_forward", feed_forward}, {"block", block}, {"model", model},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider p(data, size);
    families[p.ConsumeIntegralInRange<std::size_t>(0, std::size(families) - 1)].run(p);
    return 0;
}
