// Empty, zero and half-changed inputs (issue 32), against PyTorch 1.13 (data/oracle/edges.json,
// tools/oracle/edges.py):
// - zero tokens and a zero batch: every module's empty result, on every backend, on a thread
//   whose scratch buffers are still empty (the regression: "attend: expected an output buffer,
//   got null" unless an earlier forward had grown them); the draws (none), zero gradients, and
//   a cache left where it was; the core with no heads, forward and backward;
// - scale 0 and negative scales against PyTorch's math path, forward and backward;
// - softmax / log_softmax over a dimension other than the last, PyTorch's bits;
// - a Linear bias of shape [1] (broadcast), forward and backward;
// - nn.MultiheadAttention's 3-D attn_mask [b * H, L, S];
// - the maps between layouts with biases on only some projections.
// The refusals (half-changed modules, messages) are rows of the bad-input table
// (test_bad_input_edges.cpp).
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/causal.hpp"
#include "attn/modules/deltanet.hpp"
#include "attn/modules/dsa.hpp"
#include "attn/modules/efficient.hpp"
#include "attn/modules/gated_attention.hpp"
#include "attn/modules/gpt2.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/kv_sharing.hpp"
#include "attn/modules/mla.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/swa.hpp"
#include "attn/modules/torch_mha.hpp"

namespace test_edges {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::Shape;
using attn::Tensor;

constexpr attn::SDPABackend kBackends[] = {attn::SDPABackend::step, attn::SDPABackend::tiled,
                                           attn::SDPABackend::fast};

// Runs `f` on a thread of its own under `backend` (a fresh thread's scratch is empty) and
// rethrows what it threw; Catch2's assertions stay on the test's thread.
template <class F>
void on_fresh_thread(attn::SDPABackend backend, F&& f) {
    std::exception_ptr error;
    std::thread t([&] {
        try {
            attn::SDPABackendGuard guard(backend);
            f();
        } catch (...) {
            error = std::current_exception();
        }
    });
    t.join();
    if (error) std::rethrow_exception(error);
}

bool all_zero(const Tensor& t) {
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t.data()[i] != 0.0f) return false;
    return true;
}

// What one empty forward gave: the output's shape, the next draw, and with a cache the
// positions after the empty call and after 2 more tokens.
struct Empty {
    Shape output;
    float next_rand = 0;
    std::size_t pos_after_empty = 0, pos_after_two_more = 0;
};

std::size_t position(const attn::KVCache& c) { return c.pos; }
std::size_t position(const attn::DSACache& c) { return c.kv.pos; }

// A module's empty forward (and with a cache, two more tokens after it), after manual_seed(123).
template <class Module, class Cache, class Config>
Empty run_empty(const Config& config, const Shape& x, bool with_cache) {
    attn::manual_seed(123);
    const Module m(config);
    Empty e;
    if constexpr (std::is_same_v<Cache, void>) {
        e.output = attn::shape_of(m(attn::zeros(x)));
    } else if (!with_cache) {
        e.output = attn::shape_of(m(attn::zeros(x)));
    } else {
        Cache cache;
        if constexpr (std::is_same_v<Module, attn::MultiHeadAttentionWithSWA>) cache = m.make_cache();
        e.output = attn::shape_of(m.forward(attn::zeros(x), cache));
        e.pos_after_empty = position(cache);
        const Tensor more = attn::rand({x[0], 2, x[2]});
        (void)m.forward(more, cache);
        e.pos_after_two_more = position(cache);
    }
    e.next_rand = attn::rand({1}).data()[0];
    return e;
}

struct ModuleCase {
    const char* name;
    std::function<Empty(const Shape&, bool cache)> run;
    bool has_cache;
};

// `Cache`: the module's cache type, or void for a module without one.
template <class Module, class Cache = void, class Config>
ModuleCase module_case(const char* name, Config config) {
    return {name, [config](const Shape& x, bool cache) { return run_empty<Module, Cache>(config, x, cache); },
            !std::is_same_v<Cache, void>};
}

std::vector<ModuleCase> module_cases() {
    using namespace attn;
    const AttentionConfig mha{.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.2, .num_heads = 2};
    AttentionConfig gqa = mha, swa = mha, mla = mha, dsa = mha;
    gqa.num_kv_groups = 1;
    swa.sliding_window_size = 2;
    mla.latent_dim = 2;
    dsa.index_n_heads = 2, dsa.index_head_dim = 2, dsa.topk = 2;
    return {
        module_case<CausalAttention>("causal", AttentionConfig{.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.2}),
        module_case<MultiHeadAttentionWrapper>("wrapper", AttentionConfig{.d_in = 3, .d_out = 2, .context_length = 6,
                                                                          .dropout = 0.2, .num_heads = 2}),
        module_case<MultiHeadAttention>("multihead", mha),
        module_case<GPT2Attention>("gpt2", GPT2Config{.block_size = 6, .n_embd = 4, .n_head = 2, .dropout = 0.2}),
        module_case<GroupedQueryAttention, KVCache>("gqa", gqa),
        module_case<MultiHeadAttentionWithSWA, KVCache>("swa", swa),
        module_case<MultiHeadLatentAttention, KVCache>("mla", mla),
        module_case<MultiHeadAttentionWithKVSharing, KVCache>("kv_sharing", mha),
        module_case<MultiHeadAttentionWithDSA, DSACache>("dsa", dsa),
        module_case<GatedMultiHeadAttention>("gated", mha),
        module_case<GatedDeltaNet>("deltanet", AttentionConfig{.d_in = 3, .d_out = 4, .dropout = 0.2, .num_heads = 2}),
    };
}

}  // namespace

TEST_CASE("zero tokens and a zero batch: every module's empty result, no draw, the cache where it was, on every backend (oracle)") {
    std::size_t checked = 0;
    for (const ModuleCase& m : module_cases()) {
        for (const char* label : {"tokens0", "batch0"}) {
            for (const bool cache : {false, true}) {
                if (cache && !m.has_cache) continue;
                const std::string name = std::string("empty_") + m.name + "_" + label + (cache ? "_cache" : "");
                const auto& c = test::oracle_case("edges.json", name);
                const Shape x = c["x_shape"].get<Shape>();
                for (const auto backend : kBackends) {
                    INFO(name << " on " << attn::backend_name(backend));
                    Empty e;
                    on_fresh_thread(backend, [&] { e = m.run(x, cache); });
                    if (c.contains("raises")) {
                        // GatedDeltaNet of 0 tokens: his loop stacks the outputs of no token
                        // (torch.stack raises); the recurrence over no token is the empty
                        // result, the state as it was, which the library returns.
                        CHECK(std::string(m.name) == "deltanet");
                        CHECK(e.output == Shape({x[0], 0, 4}));
                        continue;
                    }
                    CHECK(e.output == c["output_shape"].get<Shape>());
                    CHECK(e.next_rand == c["next_rand"].get<float>());
                    if (cache) {
                        CHECK(e.pos_after_empty == c["pos_after_empty"].get<std::size_t>());
                        CHECK(e.pos_after_two_more == c["pos_after_two_more"].get<std::size_t>());
                    }
                    ++checked;
                }
            }
        }
    }
    CHECK(checked == 3 * (2 * 11 - 1 + 2 * 5));  // every case but deltanet's tokens0, on 3 backends
}

TEST_CASE("the backward of an empty batch or sequence: zero gradients of every parameter, on every backend (oracle)") {
    for (const char* label : {"tokens0", "batch0"}) {
        for (const auto backend : kBackends) {
            INFO(label << " on " << attn::backend_name(backend));
            const auto& cm = test::oracle_case("edges.json", std::string("empty_multihead_") + label);
            const auto& cc = test::oracle_case("edges.json", std::string("empty_causal_") + label);
            REQUIRE(cm["grads_zero"].get<bool>());
            REQUIRE(cc["grads_zero"].get<bool>());
            attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.2, .num_heads = 2});
            attn::CausalAttention causal({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.2});
            Tensor dx_mha, dx_causal;
            on_fresh_thread(backend, [&] {
                attn::AttentionSaved saved;
                const Tensor x = attn::zeros(cm["x_shape"].get<Shape>());
                Tensor y = mha.forward(x, saved);
                dx_mha = mha.backward(saved, attn::ones(attn::shape_of(y)));  // y.sum().backward()
                attn::AttentionSaved saved2;
                y = causal.forward(x, saved2);
                dx_causal = causal.backward(saved2, attn::ones(attn::shape_of(y)));
            });
            CHECK(attn::shape_of(dx_mha) == cm["x_shape"].get<Shape>());
            CHECK(attn::shape_of(dx_causal) == cc["x_shape"].get<Shape>());
            for (const auto& [module, oracle] : {std::pair<attn::nn::Module*, const nlohmann::json*>{&mha, &cm}, {&causal, &cc}}) {
                const auto& shapes = (*oracle)["grad_shapes"];
                std::size_t n = 0;
                for (const auto& p : module->named_parameters()) {
                    INFO(p.name);
                    REQUIRE(p.grad->has_value());
                    CHECK(attn::shape_of(**p.grad) == shapes.at(p.name).get<Shape>());
                    CHECK(all_zero(**p.grad));
                    ++n;
                }
                CHECK(n == shapes.size());
            }
        }
    }
}

TEST_CASE("the core with no heads, no batch, no queries: PyTorch's empty result, forward and backward, every backend") {
    const auto& c = test::oracle_case("edges.json", "sdpa_zero_heads");
    for (const auto backend : kBackends) {
        INFO(attn::backend_name(backend));
        for (const char* which : {"no_heads", "no_batch"}) {
            const Shape s = c[which]["input_shape"].get<Shape>();
            const Tensor q = attn::zeros(s);
            attn::SDPAForward f;
            attn::SDPAGradients g;
            on_fresh_thread(backend, [&] {
                f = attn::scaled_dot_product_attention_forward(q, q, q, {.dropout_p = 0.2, .backend = backend});
                g = attn::scaled_dot_product_attention_backward(attn::zeros(s), q, q, q, f,
                                                                {.dropout_p = 0.2, .backend = backend});
            });
            CHECK(attn::shape_of(f.output) == c[which]["output_shape"].get<Shape>());
            CHECK(attn::shape_of(g.grad_query) == s);
            CHECK(attn::shape_of(g.grad_key) == s);
        }
        // Queries of no token against 3 keys: the keys' and values' gradients are zeros.
        attn::Generator gen(1);
        const Tensor q = attn::randn({1, 2, 0, 4}, gen), k = attn::randn({1, 2, 3, 4}, gen),
                     v = attn::randn({1, 2, 3, 5}, gen);
        const attn::SDPAOptions o{.backend = backend};
        const attn::SDPAForward f = attn::scaled_dot_product_attention_forward(q, k, v, o);
        const attn::SDPAGradients g = attn::scaled_dot_product_attention_backward(attn::zeros({1, 2, 0, 5}), q, k, v, f, o);
        CHECK(attn::shape_of(f.output) == Shape({1, 2, 0, 5}));
        CHECK((attn::shape_of(g.grad_key) == Shape({1, 2, 3, 4}) && all_zero(g.grad_key)));
        CHECK((attn::shape_of(g.grad_value) == Shape({1, 2, 3, 5}) && all_zero(g.grad_value)));
        // attend into a null buffer of no elements, and its backward into null buffers.
        const attn::HeadsView hq = attn::HeadsView::of(q), hk = attn::HeadsView::of(k), hv = attn::HeadsView::of(v);
        attn::AttendSaved saved;
        attn::attend(hq, hk, hv, nullptr, o, saved);
        CHECK(attn::shape_of(saved.logsumexp) == Shape({1, 2, 0}));
        std::vector<float> dk(2 * 3 * 4, 1.0f), dv(2 * 3 * 5, 1.0f);
        attn::attend_backward(attn::HeadsView::split(nullptr, 1, 0, 10, 2, 5), hq, hk, hv,
                              attn::HeadsView::split(nullptr, 1, 0, 10, 2, 5), saved, nullptr, dk.data(), dv.data(), o);
        CHECK(std::count(dk.begin(), dk.end(), 0.0f) == long(dk.size()));
        CHECK(std::count(dv.begin(), dv.end(), 0.0f) == long(dv.size()));
    }
}

TEST_CASE("scale 0 and a negative scale: PyTorch's math path, forward and backward, on every backend (oracle)") {
    for (const char* name : {"scale_zero_causal", "scale_negative"}) {
        const auto& c = test::oracle_case("edges.json", name);
        const Tensor q = test::oracle_tensor(c["q"]), k = test::oracle_tensor(c["k"]), v = test::oracle_tensor(c["v"]);
        const attn::SDPAOptions base{.is_causal = c["is_causal"].get<bool>(),
                                     .scale = attn::ScoreScale::multiply_by(c["scale"].get<float>())};
        for (const auto backend : kBackends) {
            INFO(name << " on " << attn::backend_name(backend));
            attn::SDPAOptions o = base;
            o.backend = backend;
            const attn::SDPAForward f = attn::scaled_dot_product_attention_forward(q, k, v, o);
            CHECK(test::max_abs_diff(f.output, test::oracle_tensor(c["output"])) < 1e-6);
            const attn::SDPAGradients g =
                attn::scaled_dot_product_attention_backward(test::oracle_tensor(c["grad_output"]), q, k, v, f, o);
            CHECK(test::max_abs_diff(g.grad_query, test::oracle_tensor(c["grad_query"])) < 1e-5);
            CHECK(test::max_abs_diff(g.grad_key, test::oracle_tensor(c["grad_key"])) < 1e-5);
            CHECK(test::max_abs_diff(g.grad_value, test::oracle_tensor(c["grad_value"])) < 1e-5);
            if (c["scale"].get<float>() == 0.0f) {  // no score moves: q and k get no gradient
                CHECK(all_zero(g.grad_query));
                CHECK(all_zero(g.grad_key));
            }
        }
    }
}

TEST_CASE("softmax and log_softmax over a dimension other than the last: PyTorch's bits (oracle)") {
    std::size_t n = 0;
    for (const auto& c : test::oracle_file("edges.json")["cases"]) {
        if (!c.contains("call")) continue;
        INFO(c["name"].get<std::string>());
        const Tensor x = test::oracle_bits_tensor(c["input"]);
        const long dim = c["dim"].get<long>();
        const bool log = c["call"] == "log_softmax";
        const Tensor want = test::oracle_bits_tensor(c["output"]);
        const Tensor got = log ? attn::log_softmax(x, dim) : attn::softmax(x, dim);
        REQUIRE(attn::shape_of(got) == attn::shape_of(want));
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        // The same dimension counted from the end.
        const long negative = dim - long(x.dimension());
        const Tensor again = log ? attn::log_softmax(x, negative) : attn::softmax(x, negative);
        CHECK(std::memcmp(again.data(), want.data(), got.size() * sizeof(float)) == 0);
        ++n;
    }
    CHECK(n == 20);
}

TEST_CASE("a Linear bias of shape [1] is broadcast as PyTorch's addmm broadcasts it, forward and backward (oracle)") {
    const auto& c = test::oracle_case("edges.json", "linear_bias_broadcast");
    attn::nn::Linear l(test::oracle_tensor(c["weight"]), test::oracle_tensor(c["bias"]));
    const Tensor x = test::oracle_tensor(c["x"]);
    CHECK(test::max_abs_diff(l(x), test::oracle_tensor(c["output"])) == 0.0);
    const Tensor dx = l.backward(x, test::oracle_tensor(c["grad_output"]));
    CHECK(test::max_abs_diff(dx, test::oracle_tensor(c["grad_x"])) == 0.0);
    CHECK(test::max_abs_diff(*l.weight_grad, test::oracle_tensor(c["grad_weight"])) == 0.0);
    REQUIRE(attn::shape_of(*l.bias_grad) == Shape({1}));
    CHECK(test::max_abs_diff(*l.bias_grad, test::oracle_tensor(c["grad_bias"])) == 0.0);
    // In a module: a [1] bias on W_query is what PyTorch adds, on the fused and the step paths.
    attn::manual_seed(3);
    attn::MultiHeadAttention m({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2});
    const Tensor input = attn::rand({2, 5, 3});
    m.W_query.bias = Tensor(attn::ones({1}) * 0.25f);
    const Tensor with_one = m(input);
    m.W_query.bias = Tensor(attn::ones({4}) * 0.25f);
    CHECK(test::max_abs_diff(with_one, m(input)) == 0.0);
    CHECK(test::max_abs_diff(with_one, m.forward_steps(input).context_vec) == 0.0);
}

TEST_CASE("nn.MultiheadAttention's 3-D attn_mask [b * H, L, S]: one mask per batch element and head (oracle)") {
    const auto& c = test::oracle_case("edges.json", "mha_mask_3d");
    const attn::MultiheadAttention m(test::oracle_tensor(c["in_proj_weight"]), test::oracle_tensor(c["in_proj_bias"]),
                                     attn::nn::Linear(test::oracle_tensor(c["out_proj_weight"]),
                                                      test::oracle_tensor(c["out_proj_bias"])),
                                     2);
    const Tensor q = test::oracle_tensor(c["query"]), kv = test::oracle_tensor(c["key"]);
    const attn::BoolTensor mask = test::oracle_bool_tensor(c["attn_mask"]);
    for (const bool need_weights : {true, false}) {
        INFO("need_weights " << need_weights);
        const auto out = m(q, kv, kv, {.need_weights = need_weights, .attn_mask = &mask});
        CHECK(test::max_abs_diff(out.attn_output, test::oracle_tensor(c["attn_output"])) < 1e-6);
        if (need_weights)
            CHECK(test::max_abs_diff(*out.attn_output_weights, test::oracle_tensor(c["attn_output_weights"])) < 1e-6);
    }
    // The first [L, S] slice as a 2-D mask, for every head: PyTorch's other result.
    const attn::BoolTensor first = xt::view(mask, 0, xt::all(), xt::all());
    CHECK(test::max_abs_diff(m(q, kv, kv, {.attn_mask = &first}).attn_output, test::oracle_tensor(c["attn_output_mask2d"])) < 1e-6);
}

TEST_CASE("the maps between layouts with biases on only some projections compute what the module computes") {
    attn::manual_seed(5);
    attn::MultiHeadAttention m({.d_in = 4, .d_out = 4, .context_length = 6, .num_heads = 2, .qkv_bias = true});
    m.W_key.bias.reset();  // was: an empty optional read (undefined behaviour)
    m.W_value.bias = Tensor(attn::ones({1}) * -0.5f);  // and a broadcast one
    const Tensor x = attn::rand({2, 6, 4});
    const Tensor want = m(x);
    for (const auto kernel : {attn::AttentionKernel::matmul_softmax, attn::AttentionKernel::tiled})
        CHECK(test::max_abs_diff(attn::combine_qkv(m, kernel)(x), want) < 2e-6);
    CHECK(test::max_abs_diff(attn::to_einsum(m)(x), want) < 2e-6);
    const auto torch_layout = attn::to_torch_layout(m);
    REQUIRE(torch_layout.in_proj_bias.has_value());
    const attn::BoolTensor causal = attn::causal_attn_mask(6);
    CHECK(test::max_abs_diff(torch_layout(x, x, x, {.need_weights = false, .attn_mask = &causal}).attn_output, want) < 2e-6);
}

}  // namespace test_edges
