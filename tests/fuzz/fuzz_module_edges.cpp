// libFuzzer families of empty, zero and half-changed inputs, part of fuzz_modules (its list
// picks them): every module on zero tokens or a zero batch (some on a fresh thread, whose
// scratch is empty), the core's backward on empty and grouped problems, modules with one field
// changed (a layer of another width, a [1] or a missing bias, a replaced buffer), the maps
// between layouts with partial biases, and nn.MultiheadAttention with 2-D and 3-D masks.
// Invariants: an empty forward leaves a cache's position where it was; a query-less backward
// gives zero key and value gradients; the layouts compute what the module computes; a [1] bias
// gives the bits of the same bias repeated; no error message says "expected X, got X".
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
#include "attn/attention/masks.hpp"
#include "attn/modules/torch_mha.hpp"
#include "module_inputs.hpp"
#include "structured.hpp"

namespace fuzz::modules {

using fuzz::clean;
using fuzz::expect;

namespace {

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

}  // namespace

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
        const attn::BoolTensor causal = attn::causal_attn_mask(x.shape()[1]);
        const auto close = [&want](const Tensor& got) {
            return attn::shape_of(got) == attn::shape_of(want) && attn::allclose(got, want, 1e-4, 1e-5);
        };
        switch (p.ConsumeIntegralInRange<int>(0, 2)) {
            case 0: expect(close(attn::combine_qkv(m, any_enum<attn::AttentionKernel>(p, 3))(x)), "combine_qkv: another result"); break;
            case 1: expect(close(attn::to_einsum(m)(x)), "to_einsum: another result"); break;
            default: expect(close(attn::to_torch_layout(m)(x, x, x, {.need_weights = p.ConsumeBool(), .attn_mask = &causal}).attn_output),
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
        const auto with = t(q, kv, kv, {.need_weights = true, .attn_mask = mask ? &*mask : nullptr}),
                   without = t(q, kv, kv, {.need_weights = false, .attn_mask = mask ? &*mask : nullptr});
        expect(attn::shape_of(with.attn_output) == Shape({b, L, 4}), "MultiheadAttention: result has another shape");
        expect(attn::shape_of(*with.attn_output_weights) == Shape({b, L, S}), "MultiheadAttention: weights of another shape");
        expect(attn::shape_of(without.attn_output) == Shape({b, L, 4}), "MultiheadAttention: result has another shape");
    });
}

}  // namespace fuzz::modules
