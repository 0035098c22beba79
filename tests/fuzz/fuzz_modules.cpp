// libFuzzer target (issue 19): the attention core and its modules called as a user would, with
// inputs built from the fuzzer's bytes (structured.hpp): scaled_dot_product_attention with
// every option (masks of any broadcast shape, positions, windows, scales, dropout, an
// out-of-range backend, huge tiles, ALiBi slopes), the modules (CausalAttention,
// MultiHeadAttention, GPT2Attention, GroupedQueryAttention, MultiHeadAttentionWithSWA) built from
// fuzzed configs and then given a mutated public field before a forward, a decode through the KV
// cache, the cache itself, the KV-memory estimator, the position functions (RoPE's tables and
// rotation, the sinusoidal table, ALiBi's slopes and bias) and the modules under a position
// scheme (RoPE or ALiBi, their tables or slopes replaced). fuzz_edges.cpp adds the empty,
// zero and half-changed inputs. PyTorch's kinds of error are clean; a crash, a
// sanitizer report, a hang, another exception or a broken invariant is a finding.
//
// Invariants: a result has the shape the inputs imply; the fast backend gives the step
// backend's bits for every input (NaN where it has NaN); a module's output equals its
// `forward_steps` on the step backend; under RoPE or ALiBi, decoding through the cache equals
// the full forward bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "attn/attention/positions.hpp"
#include "attn/modules/causal.hpp"
#include "attn/modules/dsa.hpp"
#include "attn/modules/efficient.hpp"
#include "attn/modules/gated_attention.hpp"
#include "attn/modules/gpt2.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/kv_sharing.hpp"
#include "attn/modules/mla.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/positional_encoding.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/modules/swa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "module_inputs.hpp"
#include "structured.hpp"

namespace {

using attn::Shape;
using attn::Tensor;
using fuzz::clean;
using fuzz::expect;

using namespace fuzz::modules;

// The core: one call with fuzzed tensors and options; then, when it returns and the inputs
// allow it, the step and fast backends compared bit for bit.
void sdpa(FuzzedDataProvider& p) {
    const std::size_t B = size(p, 2), H = size(p, 4), Tq = size(p), Tk = size(p), hd = size(p, 4);
    const std::size_t Hkv = p.ConsumeBool() ? H : size(p, 4), dv = p.ConsumeBool() ? hd : size(p, 4);
    clean([&] {
        const Tensor q = fuzz::tensor(p, {B, H, Tq, hd});
        const Tensor k = fuzz::tensor(p, {B, Hkv, Tk, hd});
        const Tensor v = fuzz::tensor(p, {B, Hkv, Tk, dv});
        attn::SDPAOptions o;
        std::optional<attn::BoolTensor> mask;
        std::optional<Tensor> bias;
        if (p.ConsumeBool()) mask = attn::to_bool(fuzz::tensor(p, fuzz::small_shape(p, 4)));
        if (p.ConsumeBool()) bias = fuzz::tensor(p, fuzz::small_shape(p, 4));
        std::optional<Tensor> slopes;  // ALiBi: [H] slopes, or a shape that does not fit
        if (p.ConsumeBool()) slopes = fuzz::tensor(p, p.ConsumeBool() ? Shape{H} : fuzz::small_shape(p, 2));
        o.attn_mask = mask ? &*mask : nullptr;
        o.attn_bias = bias ? &*bias : nullptr;
        o.alibi_slopes = slopes ? &*slopes : nullptr;
        o.is_causal = p.ConsumeBool();
        if (p.ConsumeBool()) o.window = position(p);
        o.query_start = position(p);
        o.key_start = p.ConsumeBool() ? 0 : position(p);
        o.scale = p.ConsumeBool() ? attn::ScoreScale::divide_by(fuzz::value(p))
                                  : attn::ScoreScale::multiply_by(fuzz::value(p));
        o.fully_masked_rows = any_enum<attn::FullyMaskedRows>(p, 1);
        attn::Generator gen(p.ConsumeIntegral<std::uint64_t>());
        if (p.ConsumeBool()) {
            o.dropout_p = probability(p);
            o.dropout_backend = any_enum<attn::nn::BernoulliBackend>(p, 1);
            o.generator = &gen;
        }
        o.backend = any_enum<attn::SDPABackend>(p, 3);
        o.block_q = size(p, 70);
        o.block_k = size(p, 70);
        const Tensor out = attn::scaled_dot_product_attention(q, k, v, o);
        expect(attn::shape_of(out) == Shape({B, H, Tq, dv}), "sdpa: result has another shape");
        if (o.dropout_p == 0.0) {
            attn::SDPAOptions step = o, fast = o;
            step.backend = attn::SDPABackend::step;
            fast.backend = attn::SDPABackend::fast;
            expect(same_bits(attn::scaled_dot_product_attention(q, k, v, step),
                             attn::scaled_dot_product_attention(q, k, v, fast)),
                   "sdpa: the fast backend's bits differ from the step backend's");
        }
    });
}

// A forward after a user changed one public field: the module's own check, never a wrong index.
template <class Module, class Mutate>
void forward_after(FuzzedDataProvider& p, Module& m, std::size_t d_in, Mutate&& mutate) {
    if (p.ConsumeBool()) mutate();
    if (p.ConsumeBool()) m.train(p.ConsumeBool());
    const Tensor x = fuzz::tensor(p, {size(p, 2), size(p), p.ConsumeBool() ? d_in : size(p, 8)});
    attn::Generator gen(p.ConsumeIntegral<std::uint64_t>());
    const auto backend = p.ConsumeBool() ? attn::SDPABackend::step : attn::SDPABackend::fast;
    attn::SDPABackendGuard guard(backend);
    (void)m(x, gen);
}

attn::nn::Linear linear(FuzzedDataProvider& p, attn::Generator& gen) {
    return attn::nn::Linear(size(p, 8), size(p, 8), p.ConsumeBool(), gen);
}

void multihead(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(123);
        // (Designated fields: AttentionConfig holds every module's arguments.)
        attn::MultiHeadAttentionConfig c{.d_in = size(p, 8), .d_out = size(p, 8), .context_length = size(p, 8),
                                         .dropout = probability(p), .num_heads = size(p, 4), .qkv_bias = p.ConsumeBool(),
                                         .out_bias = p.ConsumeBool(), .backend = any_enum<attn::nn::BernoulliBackend>(p, 1)};
        attn::MultiHeadAttention m(c, gen);
        bool mutated = false;
        forward_after(p, m, c.d_in, [&] {
            mutated = true;
            switch (p.ConsumeIntegralInRange<int>(0, 4)) {
                case 0: m.num_heads = size(p, 4); break;
                case 1: m.head_dim = size(p, 4); break;
                case 2: m.W_key = linear(p, gen); break;
                case 3: m.out_proj = linear(p, gen); break;
                default: m.dropout.p = probability(p); break;
            }
        });
        if (mutated || c.dropout != 0.0) return;
        // operator() == forward_steps, bit for bit, on the step and fast backends.
        const Tensor x = fuzz::tensor(p, {size(p, 2), size(p), c.d_in});
        attn::SDPABackendGuard guard(p.ConsumeBool() ? attn::SDPABackend::step : attn::SDPABackend::fast);
        const Tensor out = m(x);
        expect(attn::shape_of(out) == Shape({x.shape()[0], x.shape()[1], c.d_out}), "MultiHeadAttention: result has another shape");
        expect(same_bits(out, m.forward_steps(x).context_vec), "MultiHeadAttention: operator() differs from forward_steps");
    });
}

void causal(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(123);
        attn::CausalAttentionConfig c{.d_in = size(p, 8), .d_out = size(p, 8), .context_length = size(p, 8),
                                      .dropout = probability(p), .qkv_bias = p.ConsumeBool(),
                                      .backend = any_enum<attn::nn::BernoulliBackend>(p, 1)};
        attn::CausalAttention m(c, gen);
        forward_after(p, m, c.d_in, [&] {
            switch (p.ConsumeIntegralInRange<int>(0, 2)) {
                case 0: m.W_query = linear(p, gen); break;
                case 1: m.W_value = linear(p, gen); break;
                default: m.dropout.p = probability(p); break;
            }
        });
    });
}

void gpt2(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(123);
        attn::GPT2Config c{size(p, 8), size(p, 8), size(p, 4), probability(p), p.ConsumeBool()};
        attn::GPT2Attention m(c, any_enum<attn::nn::BernoulliBackend>(p, 1), gen);
        forward_after(p, m, c.n_embd, [&] {
            switch (p.ConsumeIntegralInRange<int>(0, 4)) {
                case 0: m.num_heads = size(p, 4); break;
                case 1: m.head_dim = size(p, 4); break;
                case 2: m.c_attn = linear(p, gen); break;
                case 3: m.c_proj = linear(p, gen); break;
                default: m.attn_dropout.p = probability(p); break;
            }
        });
    });
}

// A decode through a module's cache, in chunks, with the cache's public fields mutated.
template <class Module>
void decode(FuzzedDataProvider& p, const Module& m, attn::KVCache cache, std::size_t d_in) {
    attn::Generator gen(0);
    const std::size_t B = size(p, 2);
    for (int step = p.ConsumeIntegralInRange<int>(1, 6); step > 0; --step) {
        if (p.ConsumeIntegralInRange<int>(0, 7) == 0) cache.pos = position(p);
        if (p.ConsumeIntegralInRange<int>(0, 7) == 0) cache.window = size(p, 6);
        const Tensor x = fuzz::tensor(p, {p.ConsumeBool() ? B : size(p, 2), size(p, 4), p.ConsumeBool() ? d_in : size(p, 8)});
        const Tensor out = m.forward(x, cache, gen);
        expect(attn::shape_of(out) == Shape({x.shape()[0], x.shape()[1], m.d_out()}), "decode: result has another shape");
    }
}

void gqa(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(123);
        attn::GroupedQueryAttentionConfig c{.d_in = size(p, 8), .d_out = size(p, 8), .context_length = size(p, 8),
                                            .dropout = probability(p), .num_heads = size(p, 4), .num_kv_groups = size(p, 4),
                                            .qkv_bias = p.ConsumeBool(), .backend = any_enum<attn::nn::BernoulliBackend>(p, 1)};
        attn::GroupedQueryAttention m(c, gen);
        const auto mutate = [&] {
            switch (p.ConsumeIntegralInRange<int>(0, 4)) {
                case 0: m.num_kv_heads = size(p, 4); break;
                case 1: m.group_size = size(p, 4); break;
                case 2: m.head_dim = size(p, 4); break;
                case 3: m.W_value = linear(p, gen); break;
                default: m.context_length = position(p); break;
            }
        };
        if (p.ConsumeBool()) return forward_after(p, m, c.d_in, mutate);
        if (p.ConsumeBool()) mutate();
        decode(p, m, attn::KVCache(), c.d_in);
    });
}

void swa(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(123);
        attn::MultiHeadAttentionWithSWAConfig c{.d_in = size(p, 8), .d_out = size(p, 8), .context_length = size(p, 8),
                                                .dropout = probability(p), .num_heads = size(p, 4), .qkv_bias = p.ConsumeBool(),
                                                .sliding_window_size = position(p),
                                                .backend = any_enum<attn::nn::BernoulliBackend>(p, 1)};
        attn::MultiHeadAttentionWithSWA m(c, gen);
        const auto mutate = [&] {
            switch (p.ConsumeIntegralInRange<int>(0, 3)) {
                case 0: m.sliding_window_size = position(p); break;
                case 1: m.num_heads = size(p, 4); break;
                case 2: m.W_query = linear(p, gen); break;
                default: m.context_length = position(p); break;
            }
        };
        if (p.ConsumeBool()) return forward_after(p, m, c.d_in, mutate);
        if (p.ConsumeBool()) mutate();
        decode(p, m, m.make_cache(), c.d_in);
    });
}

// The cache on its own: appends of any shape, reads of any length, fields changed between.
void cache(FuzzedDataProvider& p) {
    clean([&] {
        attn::KVCache c = p.ConsumeBool() ? attn::KVCache() : attn::KVCache::sliding_window(size(p, 6));
        for (int step = p.ConsumeIntegralInRange<int>(1, 6); step > 0; --step) {
            switch (p.ConsumeIntegralInRange<int>(0, 7)) {
                case 0: c.pos = position(p); break;
                case 1: c.window = size(p, 6); break;
                case 6: (p.ConsumeBool() ? c.key : c.value) = p.ConsumeBool() ? Tensor() : fuzz::tensor(p); break;
                case 7: (void)c.batch_size(); break;
                case 2: (void)c.recent_keys(size(p, 8)); break;
                case 3: (void)c.recent_values(size(p, 8)); break;
                default: {
                    const Shape s = fuzz::small_shape(p, 4);
                    c.append(fuzz::tensor(p, s), fuzz::tensor(p, p.ConsumeBool() ? s : fuzz::small_shape(p, 4)));
                    break;
                }
            }
            (void)c.bytes();
        }
    });
}

// The KV-memory estimator: any fields, an exact answer or std::length_error, never a wrap.
void estimator(FuzzedDataProvider& p) {
    clean([&] {
        attn::KVMemoryConfig c;
        c.batch = position(p);
        c.context_length = position(p);
        c.emb_dim = position(p);
        c.num_heads = size(p, 16);
        c.num_kv_heads = size(p, 16);
        c.num_layers = position(p);
        c.bytes_per_elem = size(p, 4);
        c.sliding_window_size = position(p);
        c.swa_a = size(p, 4);
        c.swa_b = size(p, 4);
        (void)attn::kv_cache_total_bytes(c);
    });
}

// The position functions with fuzzed sizes, bases, smoothing configs, tables and offsets.
void positions(FuzzedDataProvider& p) {
    clean([&] {
        std::optional<attn::RopeFreqConfig> fc;
        if (p.ConsumeBool())
            fc = attn::RopeFreqConfig{fuzz::value(p), fuzz::value(p), fuzz::value(p), p.ConsumeBool() ? 8192.0 : fuzz::value(p)};
        const double base = p.ConsumeBool() ? 10000.0 : fuzz::value(p);
        switch (p.ConsumeIntegralInRange<int>(0, 4)) {
            case 0: (void)attn::rope_inv_freq(size(p, 16), base, fc); break;
            case 1: {
                const std::size_t hd = size(p, 8), ctx = size(p, 12);
                const auto [cos, sin] = attn::precompute_rope_params(hd, base, ctx, fc);
                const Tensor x = fuzz::tensor(p, {size(p, 2), size(p, 2), size(p, 12), p.ConsumeBool() ? hd : size(p, 8)});
                const std::size_t offset = p.ConsumeBool() ? 0 : position(p);
                const Tensor y = p.ConsumeBool() ? attn::compute_rope(x, cos, sin, offset)
                                                 : attn::compute_rope_backward(x, cos, sin, offset);
                expect(attn::shape_of(y) == attn::shape_of(x), "compute_rope: result has another shape");
                break;
            }
            case 2: (void)attn::sinusoidal_encoding(size(p, 12), size(p, 8)); break;
            case 3: (void)attn::alibi_bias(fuzz::tensor(p, fuzz::small_shape(p, 2)), size(p), size(p), position(p), position(p)); break;
            default: {
                attn::PositionalEncoding pe(size(p, 8), probability(p), size(p, 8));
                if (p.ConsumeBool()) pe.pe = fuzz::tensor(p, fuzz::small_shape(p, 4));
                attn::Generator gen(1);
                (void)pe(fuzz::tensor(p, {size(p, 2), size(p), size(p, 8)}), position(p), gen);
                break;
            }
        }
        (void)attn::alibi_slopes(size(p, 64));
    });
}

// The modules under a position scheme: a fuzzed config (any scheme, base, smoothing), tables or
// slopes replaced before a forward, a decode; when nothing was replaced, decoding equals the
// forward over the tokens so far (MultiHeadAttention and GroupedQueryAttention) and the fast
// backend the step backend, bit for bit.
void positioned(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(123);
        attn::AttentionConfig c{.d_in = size(p, 8), .d_out = size(p, 8), .context_length = size(p, 12),
                                .num_heads = size(p, 4), .num_kv_groups = size(p, 4)};
        c.positions = any_enum<attn::PositionScheme>(p, 2);
        if (p.ConsumeBool()) c.rope_base = fuzz::value(p);
        if (p.ConsumeBool()) c.rope_freq = attn::RopeFreqConfig::llama3_2();
        const bool grouped = p.ConsumeBool();
        if (!grouped) c.num_kv_groups = 0;
        attn::GroupedQueryAttention gqa = grouped ? attn::GroupedQueryAttention(c, gen)
                                                  : attn::GroupedQueryAttention({.d_in = 1, .d_out = 2, .context_length = 1,
                                                                                 .num_heads = 1, .num_kv_groups = 1});
        attn::MultiHeadAttention mha = grouped ? attn::expand_kv_groups(gqa) : attn::MultiHeadAttention(c, gen);
        attn::ModulePositions& pos = grouped ? gqa.positions : mha.positions;
        bool replaced = false;
        if (p.ConsumeIntegralInRange<int>(0, 3) == 0) {
            replaced = true;
            switch (p.ConsumeIntegralInRange<int>(0, 3)) {
                case 0: pos.cos = fuzz::tensor(p, fuzz::small_shape(p, 2)); break;
                case 1: pos.alibi_slopes = fuzz::tensor(p, fuzz::small_shape(p, 2)); break;
                case 2: pos.scheme = any_enum<attn::PositionScheme>(p, 2); break;
                default: mha.positions = attn::ModulePositions{}; break;
            }
        }
        const Tensor x = fuzz::tensor(p, {size(p, 2), size(p, 12), c.d_in});
        attn::SDPABackendGuard guard(attn::SDPABackend::step);
        const Tensor out = grouped ? gqa(x) : mha(x);
        if (replaced) return;
        {
            attn::SDPABackendGuard fast(attn::SDPABackend::fast);
            expect(same_bits(out, grouped ? gqa(x) : mha(x)), "positions: the fast backend's bits differ from the step backend's");
        }
        // Decoding equals recomputation, for both modules (MultiHeadAttention's cache once ignored
        // RoPE): each step against the forward over the tokens so far
        // (not over all T: PyTorch's softmax adds a row of fewer than 8 keys in another order than
        // a longer one). With values that are not finite, a hidden future key's 0 * v is NaN in a
        // longer forward, and a sum of -0 terms meets +0 there: compared as numbers, finite only.
        attn::KVCache cache;
        for (long t = 0; t < long(x.shape()[1]); ++t) {
            const Tensor part = attn::slice(x, 1, t, t + 1), prefix = attn::slice(x, 1, 0, t + 1);
            const Tensor step = grouped ? gqa.forward(part, cache) : mha.forward(part, cache);
            const Tensor full = attn::slice(grouped ? gqa(prefix) : mha(prefix), 1, t, t + 1);
            bool finite = true, equal = attn::shape_of(step) == attn::shape_of(full);
            for (const float v : full) finite = finite && std::isfinite(v);
            for (std::size_t i = 0; equal && i < full.size(); ++i) equal = step.data()[i] == full.data()[i];
            if (finite) expect(equal, "positions: decoding differs from recomputation");
        }
    });
}

constexpr fuzz::Family families[] = {
    {"sdpa", sdpa}, {"multihead", multihead}, {"causal", causal}, {"gpt2", gpt2},
    {"gqa", gqa},   {"swa", swa},             {"cache", cache},   {"estimator", estimator},
    {"positions", positions}, {"positioned", positioned},
    {"empty", empty}, {"backward", backward}, {"changed", changed}, {"layouts", layouts},
    {"torch_mha", torch_mha},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider p(data, size);
    families[p.ConsumeIntegralInRange<std::size_t>(0, std::size(families) - 1)].run(p);
    return 0;
}
