// libFuzzer target (issue 19): the attention core and its modules called as a user would, with
// inputs built from the fuzzer's bytes (structured.hpp): scaled_dot_product_attention with
// every option (masks of any broadcast shape, positions, windows, scales, dropout, an
// out-of-range backend, huge tiles), the modules (CausalAttention, MultiHeadAttention,
// GPT2Attention, GroupedQueryAttention, MultiHeadAttentionWithSWA) built from fuzzed configs
// and then given a mutated public field before a forward, a decode through the KV cache, the
// cache itself, and the KV-memory estimator; and (issue 32) every module on zero tokens or a
// zero batch (some on a fresh thread, whose scratch is empty), the core's backward on empty
// and grouped problems, modules with one field changed (a layer of another width, a [1] or a
// missing bias, a replaced buffer), the maps between layouts with partial biases, and
// nn.MultiheadAttention with 2-D and 3-D masks. PyTorch's kinds of error are clean; a crash, a
// sanitizer report, a hang, another exception or a broken invariant is a finding.
//
// Invariants: a result has the shape the inputs imply; the fast backend gives the step
// backend's bits for every input (NaN where it has NaN); a module's output equals its
// `forward_steps` on the step backend; an empty forward leaves a cache's position where it was;
// a query-less backward gives zero key and value gradients; the layouts compute what the
// module computes; a [1] bias gives the bits of the same bias repeated; no error message says
// "expected X, got X" (structured.hpp).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

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
#include "attn/attention/sdpa.hpp"
#include "attn/modules/swa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "structured.hpp"

namespace {

using attn::Shape;
using attn::Tensor;
using fuzz::clean;
using fuzz::expect;

// A small size, or (rarely) an extreme one: every accepted tensor stays tiny.
std::size_t size(FuzzedDataProvider& p, std::size_t max = 6) {
    switch (p.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return std::size_t{1} << 40;
        case 1: return SIZE_MAX;
        default: return p.ConsumeIntegralInRange<std::size_t>(0, max);
    }
}

// A position or a window: small, near 2^62, or past it.
std::size_t position(FuzzedDataProvider& p) {
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: return (std::size_t{1} << 62) - 1;
        case 1: return std::size_t{1} << 63;
        case 2: return SIZE_MAX;
        default: return p.ConsumeIntegralInRange<std::size_t>(0, 12);
    }
}

double probability(FuzzedDataProvider& p) {
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: return std::nan("");
        case 1: return -0.5;
        case 2: return 1.5;
        case 3: return 1.0;
        default: return p.ConsumeBool() ? 0.0 : 0.25;
    }
}

// An enum value a caller could pass by a cast, valid or not.
template <class E>
E any_enum(FuzzedDataProvider& p, int valid) {
    return static_cast<E>(p.ConsumeIntegralInRange<int>(-1, valid));
}

// Two tensors equal bit for bit, NaN where the other has NaN.
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
        o.attn_mask = mask ? &*mask : nullptr;
        o.attn_bias = bias ? &*bias : nullptr;
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

// Runs `f` on a thread of its own (its scratch buffers empty), rethrowing what it threw.
template <class F>
void on_fresh_thread(F&& f) {
    std::exception_ptr error;
    std::thread t([&] {
        try {
            f();
        } catch (...) {
            error = std::current_exception();
        }
    });
    t.join();
    if (error) std::rethrow_exception(error);
}

// Zero tokens or a zero batch through any module, training or not, any backend, with or
// without a cache, now and then on a fresh thread: the empty result, the cache where it was.
void empty(FuzzedDataProvider& p) {
    clean([&] {
        attn::AttentionConfig c{.d_in = 1 + size(p, 4) % 5, .d_out = 4, .context_length = 8, .dropout = probability(p) == 0.25 ? 0.25 : 0.0,
                                .num_heads = p.ConsumeBool() ? 2u : 1u};
        const bool tokens0 = p.ConsumeBool();
        const Shape x{tokens0 ? p.ConsumeIntegralInRange<std::size_t>(0, 3) : 0, tokens0 ? 0 : p.ConsumeIntegralInRange<std::size_t>(0, 4), c.d_in};
        const int which = p.ConsumeIntegralInRange<int>(0, 9);
        const bool cached = p.ConsumeBool(), fresh = p.ConsumeIntegralInRange<int>(0, 7) == 0;
        const auto backend = any_enum<attn::SDPABackend>(p, 3);
        const std::size_t start = p.ConsumeIntegralInRange<std::size_t>(0, 3);
        Shape out;
        std::size_t pos_before = 0, pos_after = 0;
        bool used_cache = false;
        const auto run = [&] {
            attn::SDPABackendGuard guard(backend == attn::SDPABackend::automatic ? attn::SDPABackend::step : backend);
            attn::Generator gen(1);
            const Tensor input = attn::zeros(x);
            const auto through = [&](const auto& m, attn::KVCache cache) {
                if (!cached) return attn::shape_of(m(input, gen));
                used_cache = true;
                if (start) (void)m.forward(attn::ones({x[0], start, c.d_in}), cache, gen);
                pos_before = cache.pos;
                const Shape s = attn::shape_of(m.forward(input, cache, gen));
                pos_after = cache.pos;
                return s;
            };
            switch (which) {
                case 0: { c.num_kv_groups = 1; const attn::GroupedQueryAttention m(c, gen); out = through(m, attn::KVCache()); break; }
                case 1: { c.sliding_window_size = 2; const attn::MultiHeadAttentionWithSWA m(c, gen); out = through(m, m.make_cache()); break; }
                case 2: { c.latent_dim = 2; const attn::MultiHeadLatentAttention m(c, gen); out = through(m, attn::KVCache()); break; }
                case 3: { const attn::MultiHeadAttentionWithKVSharing m(c, gen); out = through(m, attn::KVCache()); break; }
                case 4: { const attn::GatedMultiHeadAttention m(c, gen); out = through(m, attn::KVCache()); break; }
                case 5: { const attn::MultiHeadAttention m(c, gen); out = attn::shape_of(m(input, gen)); break; }
                case 6: { const attn::GPT2Attention m({.block_size = 8, .n_embd = c.d_in, .n_head = 1, .dropout = c.dropout}, attn::nn::BernoulliBackend::portable, gen);
                          out = attn::shape_of(m(input, gen)); out.back() = 4; break; }
                case 7: { c.index_n_heads = 2, c.index_head_dim = 2, c.topk = 2; const attn::MultiHeadAttentionWithDSA m(c, gen);
                          attn::DSACache cache;
                          if (!cached) { out = attn::shape_of(m(input, gen)); break; }
                          out = attn::shape_of(m.forward(input, cache, gen));
                          used_cache = true;
                          pos_after = cache.length(); break; }
                case 8: { const attn::MultiHeadAttention m(c, gen); out = attn::shape_of(attn::combine_qkv(m, attn::AttentionKernel::tiled)(input)); break; }
                default: { c.num_heads = 0; c.d_out = 2; const attn::CausalAttention m(c, gen);
                           attn::AttentionSaved saved;
                           attn::CausalAttention t = m;
                           const Tensor y = t.forward(input, saved, gen);
                           (void)t.backward(saved, attn::ones(attn::shape_of(y)));
                           out = attn::shape_of(y); out.back() = 4; break; }
            }
        };
        if (fresh) on_fresh_thread(run); else run();
        expect(out == Shape({x[0], x[1], 4}), "empty: the result is not [b, T, d_out]");
        if (used_cache) expect(pos_after == pos_before + x[1], "empty: a cache moved by other than the tokens given");
    });
}

// The core's backward on small problems, empty ones and grouped heads included, any backend.
void backward(FuzzedDataProvider& p) {
    const std::size_t B = size(p, 2), H = size(p, 3), Tq = size(p, 4), Tk = size(p, 4), hd = size(p, 3);
    const std::size_t Hkv = p.ConsumeBool() ? H : size(p, 3), dv = p.ConsumeBool() ? hd : size(p, 3);
    clean([&] {
        const Tensor q = fuzz::tensor(p, {B, H, Tq, hd}), k = fuzz::tensor(p, {B, Hkv, Tk, hd}), v = fuzz::tensor(p, {B, Hkv, Tk, dv});
        attn::SDPAOptions o;
        o.is_causal = p.ConsumeBool();
        o.scale = p.ConsumeBool() ? attn::ScoreScale{} : attn::ScoreScale::multiply_by(fuzz::value(p));
        attn::Generator gen(2);
        o.generator = &gen;
        if (p.ConsumeBool()) o.dropout_p = 0.5;
        o.backend = any_enum<attn::SDPABackend>(p, 3);
        const attn::SDPAForward f = attn::scaled_dot_product_attention_forward(q, k, v, o);
        const attn::SDPAGradients g = attn::scaled_dot_product_attention_backward(fuzz::tensor(p, {B, H, Tq, dv}), q, k, v, f, o);
        expect(attn::shape_of(g.grad_query) == attn::shape_of(q) && attn::shape_of(g.grad_key) == attn::shape_of(k) &&
                   attn::shape_of(g.grad_value) == attn::shape_of(v), "backward: a gradient has another shape");
        if (Tq == 0 || H == 0)
            expect(std::all_of(g.grad_key.begin(), g.grad_key.end(), [](float x) { return x == 0.0f; }) &&
                       std::all_of(g.grad_value.begin(), g.grad_value.end(), [](float x) { return x == 0.0f; }),
                   "backward: keys no query saw got a gradient");
    });
}

// A module with one field changed and not its partners: its own error naming that field, or
// (a [1] bias, a missing one) what PyTorch computes.
void changed(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(5);
        const auto bias = [&](std::size_t out) -> std::optional<Tensor> {
            switch (p.ConsumeIntegralInRange<int>(0, 3)) {
                case 0: return std::nullopt;
                case 1: return fuzz::tensor(p, {1});
                case 2: return fuzz::tensor(p, {out});
                default: return fuzz::tensor(p);
            }
        };
        const Tensor x = fuzz::tensor(p, {size(p, 2), size(p, 4), p.ConsumeBool() ? 4 : size(p, 6)});
        if (p.ConsumeBool()) {
            attn::GPT2Attention m({.block_size = 4, .n_embd = 4, .n_head = 2, .dropout = 0}, attn::nn::BernoulliBackend::portable, gen);
            switch (p.ConsumeIntegralInRange<int>(0, 3)) {
                case 0: m.bias = fuzz::tensor(p, fuzz::small_shape(p, 5)); break;
                case 1: m.c_attn = attn::nn::Linear(size(p, 6), size(p, 14), p.ConsumeBool(), gen); break;
                case 2: m.c_attn.bias = bias(12); break;
                default: m.c_proj = attn::nn::Linear(size(p, 6), size(p, 6), p.ConsumeBool(), gen); break;
            }
            const Tensor y = p.ConsumeBool() ? m(x, gen) : m.forward_steps(x, gen).output;
            expect(attn::shape_of(y) == Shape({x.shape()[0], x.shape()[1], 4}), "GPT2Attention: result has another shape");
            if (p.ConsumeBool()) (void)attn::split_c_attn(m);
            return;
        }
        attn::MultiHeadAttention m({.d_in = 4, .d_out = 4, .context_length = 4, .num_heads = 2, .qkv_bias = p.ConsumeBool()}, gen);
        attn::nn::Linear* layers[] = {&m.W_query, &m.W_key, &m.W_value, &m.out_proj};
        attn::nn::Linear& l = *layers[p.ConsumeIntegralInRange<std::size_t>(0, 3)];
        if (p.ConsumeBool()) l.bias = bias(4);
        else l = attn::nn::Linear(size(p, 6), size(p, 6), p.ConsumeBool(), gen);
        const Tensor y = m(x, gen);
        expect(attn::shape_of(y) == Shape({x.shape()[0], x.shape()[1], 4}), "MultiHeadAttention: result has another shape");
        expect(same_bits(y, m.forward_steps(x, gen).context_vec), "MultiHeadAttention: operator() differs from forward_steps");
    });
}

// The maps between layouts on a module whose projections carry biases or not (some, all, a
// [1] one): where the module's output is finite, each layout's is within float rounding of it.
void layouts(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(6);
        attn::MultiHeadAttention m({.d_in = 4, .d_out = 4, .context_length = 6, .num_heads = p.ConsumeBool() ? 2u : 1u,
                                    .out_bias = p.ConsumeBool()}, gen);
        for (attn::nn::Linear* l : {&m.W_query, &m.W_key, &m.W_value})
            switch (p.ConsumeIntegralInRange<int>(0, 2)) {
                case 0: l->bias = std::nullopt; break;
                case 1: l->bias = attn::rand({1}, gen); break;
                default: l->bias = attn::rand({4}, gen); break;
            }
        const Tensor x = attn::rand({size(p, 2), size(p, 6) % 7, 4}, gen);
        const Tensor want = m(x);
        const auto close = [&want](const Tensor& got) {
            return attn::shape_of(got) == attn::shape_of(want) && attn::allclose(got, want, 1e-4, 1e-5);
        };
        switch (p.ConsumeIntegralInRange<int>(0, 2)) {
            case 0: expect(close(attn::combine_qkv(m, any_enum<attn::AttentionKernel>(p, 3))(x)), "combine_qkv: another result"); break;
            case 1: expect(close(attn::to_einsum(m)(x)), "to_einsum: another result"); break;
            default: expect(close(attn::to_torch_layout(m)(x, x, x, attn::causal_attn_mask(x.shape()[1]), p.ConsumeBool()).attn_output),
                            "to_torch_layout: another result"); break;
        }
    });
}

// nn.MultiheadAttention with masks of any shape ([L, S], [b * H, L, S], others): its own
// error, or the same output with and without the weights.
void torch_mha(FuzzedDataProvider& p) {
    clean([&] {
        attn::Generator gen(7);
        const attn::MultiHeadAttention m({.d_in = 4, .d_out = 4, .context_length = 8, .num_heads = 2}, gen);
        const attn::MultiheadAttention t = attn::to_torch_layout(m);
        const std::size_t b = size(p, 2), L = size(p, 4), S = size(p, 4);
        const Tensor q = attn::rand({b, L, 4}, gen), kv = attn::rand({b, S, 4}, gen);
        std::optional<attn::BoolTensor> mask;
        switch (p.ConsumeIntegralInRange<int>(0, 3)) {
            case 0: break;
            case 1: mask = attn::to_bool(fuzz::tensor(p, {L, S})); break;
            case 2: mask = attn::to_bool(fuzz::tensor(p, {b * 2, L, S})); break;
            default: mask = attn::to_bool(fuzz::tensor(p, fuzz::small_shape(p, 4))); break;
        }
        const auto with = t(q, kv, kv, mask, true), without = t(q, kv, kv, mask, false);
        expect(attn::shape_of(with.attn_output) == Shape({b, L, 4}), "MultiheadAttention: result has another shape");
        expect(attn::shape_of(*with.attn_output_weights) == Shape({b, L, S}), "MultiheadAttention: weights of another shape");
        expect(attn::shape_of(without.attn_output) == Shape({b, L, 4}), "MultiheadAttention: result has another shape");
    });
}

constexpr fuzz::Family families[] = {
    {"sdpa", sdpa}, {"multihead", multihead}, {"causal", causal}, {"gpt2", gpt2},
    {"gqa", gqa},   {"swa", swa},             {"cache", cache},   {"estimator", estimator},
    {"empty", empty}, {"backward", backward}, {"changed", changed}, {"layouts", layouts},
    {"torch_mha", torch_mha},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider p(data, size);
    families[p.ConsumeIntegralInRange<std::size_t>(0, std::size(families) - 1)].run(p);
    return 0;
}
