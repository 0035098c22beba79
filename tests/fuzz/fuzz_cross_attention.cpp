// libFuzzer target (issue 32): chapter 25's pieces called as a user would, with inputs built
// from the fuzzer's bytes (structured.hpp): torch.nn.MultiheadAttention built from a fuzzed
// config (packed or kdim/vdim weights, add_bias_kv, add_zero_attn, either layout, dropout),
// sometimes with a public field changed, then called with fuzzed queries, keys, values,
// key_padding_mask, boolean or float attn_mask, weights or not; its backward; the
// cross-attention cache; the encoder-decoder with fuzzed ids. PyTorch's kinds of error are
// clean; a crash, a sanitizer report, a hang, another exception or a broken invariant is a
// finding.
//
// Invariants: a result has the shape the inputs imply; the fast backend gives the step
// backend's bits, forward (NaN where it has NaN; with dropout, from one seed) and backward
// (after a forward whose outputs are all finite);
// the cached memory gives the uncached bits; the gradients have the inputs' shapes.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/seq2seq.hpp"
#include "attn/modules/torch_mha.hpp"
#include "structured.hpp"

namespace {

using attn::Shape;
using attn::Tensor;
using fuzz::clean;
using fuzz::expect;

// A small size, or (rarely) an extreme one.
std::size_t size(FuzzedDataProvider& p, std::size_t max = 5) {
    switch (p.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return std::size_t{1} << 40;
        case 1: return SIZE_MAX;
        default: return p.ConsumeIntegralInRange<std::size_t>(0, max);
    }
}

bool same_bits(const Tensor& a, const Tensor& b) {
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

attn::MultiheadAttentionConfig config(FuzzedDataProvider& p) {
    attn::MultiheadAttentionConfig c{.embed_dim = size(p, 8), .num_heads = size(p, 4)};
    if (p.ConsumeBool()) c.dropout = p.ConsumeBool() ? 0.25 : (p.ConsumeBool() ? 1.0 : std::nan(""));
    c.bias = p.ConsumeBool();
    c.add_bias_kv = p.ConsumeBool();
    c.add_zero_attn = p.ConsumeBool();
    if (p.ConsumeBool()) c.kdim = size(p, 6);
    if (p.ConsumeBool()) c.vdim = size(p, 6);
    c.batch_first = p.ConsumeBool();
    return c;
}

// One public field changed as a user might (PyTorch raises at the forward for each).
void mutate(FuzzedDataProvider& p, attn::MultiheadAttention& m) {
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: m.num_heads = size(p, 5); break;
        case 1: m.head_dim = size(p, 5); break;
        case 2: if (m.in_proj_weight) m.in_proj_weight = fuzz::tensor(p); break;
        case 3: m.in_proj_bias = fuzz::tensor(p); break;
        case 4: m.bias_k = fuzz::tensor(p); break;
        case 5: m.out_proj.weight = fuzz::tensor(p); break;
        case 6: m.k_proj_weight = fuzz::tensor(p); break;
        default: m.embed_dim = size(p, 8); break;
    }
}

// The module's inputs: usually shapes that fit, sometimes any.
struct Call {
    Tensor query, key, value;
    std::optional<attn::BoolTensor> kpm, mask;
    std::optional<Tensor> bias;
    bool self = false, kv_same = false;
    attn::MultiheadAttentionArgs args;
};

Call call(FuzzedDataProvider& p, const attn::MultiheadAttention& m) {
    Call c;
    const std::size_t B = size(p, 3), L = size(p), S = size(p), E = m.embed_dim;
    const auto fit = [&](std::size_t T, std::size_t W) {
        if (p.ConsumeIntegralInRange<int>(0, 7) == 0) return fuzz::small_shape(p, 4);
        return m.batch_first ? Shape{B, T, W} : Shape{T, B, W};
    };
    c.query = fuzz::tensor(p, fit(L, E));
    c.self = p.ConsumeBool();
    c.kv_same = c.self || p.ConsumeBool();
    if (!c.self) c.key = fuzz::tensor(p, fit(S, m.kdim));
    if (!c.kv_same) c.value = fuzz::tensor(p, fit(S, m.vdim));
    const std::size_t Sk = c.self ? L : S;
    if (p.ConsumeBool()) c.kpm = attn::to_bool(fuzz::tensor(p, p.ConsumeBool() ? Shape{B, Sk} : fuzz::small_shape(p, 3)));
    if (p.ConsumeBool()) {
        const Shape s = p.ConsumeBool() ? Shape{L, Sk} : fuzz::small_shape(p, 3);
        if (p.ConsumeBool()) c.mask = attn::to_bool(fuzz::tensor(p, s));
        else c.bias = fuzz::tensor(p, s);
    }
    c.args.key_padding_mask = c.kpm ? &*c.kpm : nullptr;
    c.args.attn_mask = c.mask ? &*c.mask : nullptr;
    c.args.attn_bias = c.bias ? &*c.bias : nullptr;
    c.args.need_weights = p.ConsumeBool();
    c.args.average_attn_weights = p.ConsumeBool();
    return c;
}

const Tensor& key_of(const Call& c) { return c.self ? c.query : c.key; }
const Tensor& value_of(const Call& c) { return c.kv_same ? key_of(c) : c.value; }

// The module's forward on both backends from one seed (the same dropout), compared; the
// cache compared with the uncached call; the backward's gradients on both backends compared.
void mha(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator init(p.ConsumeIntegral<std::uint32_t>());
        attn::MultiheadAttention m(config(p), init);
        if (p.ConsumeBool()) m.train(false);
        if (p.ConsumeIntegralInRange<int>(0, 3) == 0) mutate(p, m);
        const Call c = call(p, m);
        const std::uint64_t seed = p.ConsumeIntegral<std::uint64_t>();
        const auto run = [&](attn::SDPABackend backend, attn::MultiheadAttentionSaved& saved) {
            const attn::SDPABackendGuard guard(backend);
            attn::Generator gen(seed);
            return m.forward(c.query, key_of(c), value_of(c), c.args, saved, gen);
        };
        attn::MultiheadAttentionSaved s_step, s_fast;
        const auto step = run(attn::SDPABackend::step, s_step);
        const auto fast = run(attn::SDPABackend::fast, s_fast);
        expect(same_bits(step.attn_output, fast.attn_output), "mha: the fast backend's output differs");
        expect(step.attn_output_weights.has_value() == c.args.need_weights, "mha: weights when not asked");
        expect(attn::shape_of(step.attn_output).size() == attn::shape_of(c.query).size(), "mha: output rank");
        attn::Generator again(seed);
        expect(same_bits(m(c.query, key_of(c), value_of(c), c.args, again).attn_output, step.attn_output),
               "mha: the forward without saving differs");
        if (!c.args.attn_mask && !c.args.attn_bias && (m.dropout == 0.0 || !m.training)) {
            const attn::KVCache memory = m.memory_cache(key_of(c), value_of(c));
            expect(same_bits(m(c.query, memory, c.args).attn_output, step.attn_output),
                   "mha: the cached memory's output differs");
        }
        // The backward on both backends, whatever the values: infinities and NaN included
        // (PyTorch's additive mask, which both backends follow: MaskOp::additive).
        const Tensor grad = fuzz::tensor(p, attn::shape_of(step.attn_output));
        if (p.ConsumeBool()) {
            attn::MultiheadAttention m2 = m;  // the same parameters, no gradients yet
            const auto backward = [&](attn::MultiheadAttention& module, const attn::MultiheadAttentionSaved& saved,
                                      attn::SDPABackend backend) {
                const attn::SDPABackendGuard guard(backend);
                return module.backward(saved, grad);
            };
            const attn::MultiheadAttentionGrads gs = backward(m, s_step, attn::SDPABackend::step);
            const attn::MultiheadAttentionGrads gf = backward(m2, s_fast, attn::SDPABackend::fast);
            expect(same_bits(gs.query, gf.query), "mha: the fast backward's query gradient differs");
            expect(attn::shape_of(gs.query) == attn::shape_of(c.query), "mha: the query gradient's shape");
            if (gs.key) expect(attn::shape_of(*gs.key) == attn::shape_of(c.key), "mha: the key gradient's shape");
            if (gs.value) expect(attn::shape_of(*gs.value) == attn::shape_of(c.value), "mha: the value gradient's shape");
            const auto ps = m.named_parameters(), pf = m2.named_parameters();
            for (std::size_t i = 0; i < ps.size(); ++i)
                expect(ps[i].grad->has_value() && pf[i].grad->has_value() && same_bits(**ps[i].grad, **pf[i].grad),
                       "mha: the fast backward's parameter gradient differs");
        }
    });
}

// The encoder-decoder: a fuzzed config, fuzzed ids, a forward and backward, greedy decoding.
void seq2seq(FuzzedDataProvider& p) {
    clean([&] {
        const attn::Seq2SeqConfig cfg{.vocab_size = size(p, 12), .context_length = size(p, 6),
                                      .emb_dim = size(p, 8), .num_heads = size(p, 4)};
        attn::Generator gen(p.ConsumeIntegral<std::uint32_t>());
        attn::AttentionOnlySeq2Seq model(cfg, gen);
        const auto ids = [&](std::size_t B, std::size_t T) {
            attn::LongTensor t = attn::LongTensor::from_shape({B, T});
            for (auto& v : t) v = p.ConsumeIntegralInRange<std::int64_t>(-1, static_cast<std::int64_t>(cfg.vocab_size));
            return t;
        };
        const std::size_t B = p.ConsumeIntegralInRange<std::size_t>(0, 3);
        const attn::LongTensor src = ids(B, p.ConsumeIntegralInRange<std::size_t>(0, 7));
        const attn::LongTensor tgt = ids(B, p.ConsumeIntegralInRange<std::size_t>(0, 7));
        attn::AttentionOnlySeq2Seq::Saved saved;
        const Tensor logits = model.forward(src, tgt, saved);
        expect(attn::shape_of(logits) == Shape({B, tgt.shape()[1], cfg.vocab_size}), "seq2seq: logits' shape");
        model.backward(saved, fuzz::tensor(p, p.ConsumeBool() ? attn::shape_of(logits) : fuzz::small_shape(p, 3)));
        const attn::LongTensor decoded = model.greedy_decode(src, p.ConsumeIntegralInRange<std::size_t>(0, 7));
        expect(decoded.shape()[0] == B, "seq2seq: decoded batch");
    });
}

constexpr fuzz::Family families[] = {{"mha", mha}, {"seq2seq", seq2seq}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider p(data, size);
    families[p.ConsumeIntegralInRange<std::size_t>(0, std::size(families) - 1)].run(p);
    return 0;
}
