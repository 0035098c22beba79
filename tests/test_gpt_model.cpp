// Tests for lib/attn/model/ (Raschka's chapter 4 GPT, chapters 22 and 23): every piece against
// Debian's python3-torch 1.13 (data/oracle/gpt_model.json and generation.json, written by
// tools/oracle/gpt_model.py and generation.py: float32 bits, or SHA-256 digests of whole
// tensors), the fast attention backend against the step one at GPT-2 size, the KV-cached
// decode against recomputation at every step, the skinny products against the BLAS, and the
// parameter counts. The 200 tokens generated without the cache at GPT-2 size take minutes:
// that test runs only with ATTN_SLOW_TESTS=1.
#include <catch2/catch.hpp>

#include <cblas.h>
#include <omp.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/kernels/gemm.hpp"
#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"
#include "oracle.hpp"

namespace test_gpt_model {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::LongTensor;
using attn::Shape;
using attn::Tensor;

const nlohmann::json& gpt_oracle() { return test::oracle_file("gpt_model.json"); }
const nlohmann::json& generation_oracle() { return test::oracle_file("generation.json"); }


// The number of elements whose bits differ.
std::size_t bit_differences(const Tensor& a, const Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    std::size_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        n += std::bit_cast<std::uint32_t>(a.data()[i]) != std::bit_cast<std::uint32_t>(b.data()[i]);
    return n;
}

std::vector<std::int64_t> ids_of(const LongTensor& t) { return {t.begin(), t.end()}; }

// The small GPT of the cache tests: 61 tokens, a context of 40, 24 wide, 3 heads.
attn::GPTConfig small_config(std::size_t n_layers) {
    return {.vocab_size = 61, .context_length = 40, .emb_dim = 24, .n_heads = 3, .n_layers = n_layers};
}

// GPT_CONFIG_124M after manual_seed(123), built once (163 million draws), and the generator as
// it was right after the model's draws (for his In [24]'s dropout masks).
struct Gpt2 {
    attn::GPTModel model;
    attn::Generator after_init;
};
Gpt2& gpt2_and_generator() {
    static Gpt2 g = [] {
        attn::manual_seed(123);
        attn::GPTModel model(attn::GPT_CONFIG_124M);
        return Gpt2{std::move(model), attn::default_generator()};
    }();
    return g;
}

// The model in evaluation mode.
attn::GPTModel& gpt2() {
    attn::GPTModel& m = gpt2_and_generator().model;
    m.eval();
    return m;
}

const LongTensor& batch() {
    static const LongTensor b = {{6109, 3626, 6100, 345}, {6109, 1110, 6622, 257}};
    return b;
}

const LongTensor& hello() {
    static const LongTensor h = {{15496, 11, 314, 716}};
    return h;
}

// One token id as a [1, 1] tensor.
LongTensor one_id(std::int64_t id) {
    LongTensor t = xt::empty<std::int64_t>(Shape{1, 1});
    t(0, 0) = id;
    return t;
}

// The last position's logits [b, 1, V].
Tensor last(const Tensor& logits) { return attn::slice(logits, 1, -1, long(logits.shape()[1])); }

}  // namespace

TEST_CASE("GELU and its backward are PyTorch's bits on 4,100 inputs") {
    const auto& g = gpt_oracle()["gelu"];
    const Tensor x = test::oracle_bits_tensor({4100}, g["x_bits"]);
    const Tensor grad = test::oracle_bits_tensor({4100}, g["g_bits"]);
    CHECK(bit_differences(attn::gelu(x), test::oracle_bits_tensor({4100}, g["y_bits"])) == 0);
    CHECK(bit_differences(attn::gelu_backward(grad, x), test::oracle_bits_tensor({4100}, g["grad_bits"])) == 0);
    // A tanh with two roundings (1 - t * t) would differ in about a third of the gradients.
}

TEST_CASE("LayerNorm, mean and var are PyTorch's bits") {
    const auto& l = gpt_oracle()["layer_norm"];
    attn::LayerNorm ln(768);
    ln.scale = test::oracle_bits_tensor({768}, l["scale_bits"]);
    ln.shift = test::oracle_bits_tensor({768}, l["shift_bits"]);
    const Tensor x = test::oracle_bits_tensor({2, 3, 768}, l["x_bits"]);
    const Tensor want = test::oracle_bits_tensor({2, 3, 768}, l["y_bits"]);
    CHECK(bit_differences(ln(x), want) == 0);
    CHECK(bit_differences(ln.forward_steps(x).output, want) == 0);
    CHECK(bit_differences(attn::mean(x, -1, true), test::oracle_bits_tensor({2, 3, 1}, l["mean_bits"])) == 0);
    CHECK(bit_differences(attn::var(x, -1, false, true), test::oracle_bits_tensor({2, 3, 1}, l["var_bits"])) == 0);
    CHECK(bit_differences(attn::var(x, -1, true, true), test::oracle_bits_tensor({2, 3, 1}, l["var_unbiased_bits"])) == 0);
}

TEST_CASE("FeedForward and TransformerBlock after manual_seed(123) are PyTorch's bits") {
    const attn::GPTConfig cfg = attn::GPT_CONFIG_124M;
    attn::manual_seed(123);
    const attn::FeedForward ffn(cfg);
    const Tensor x = attn::rand({2, 3, 768});
    CHECK(test::sha256(ffn(x)) == gpt_oracle()["feed_forward"]["sha256"]);
    attn::manual_seed(123);
    const Tensor xb = attn::rand({2, 4, 768});
    attn::TransformerBlock block(cfg);
    const auto& t = gpt_oracle()["transformer_block"];
    attn::Generator after = attn::default_generator();
    CHECK(test::sha256(block(xb)) == t["train_sha256"]);                     // training mode: dropout 0.1
    CHECK(test::sha256(block.forward_steps(xb, after).output) == t["train_sha256"]);  // the same draws
    block.eval();
    CHECK(test::sha256(block(xb)) == t["eval_sha256"]);
    Tensor kept = xb, a, normed;  // the model's forward: in memory it keeps
    block.forward_into(kept, a, normed);
    CHECK(test::sha256(kept) == t["eval_sha256"]);
}

TEST_CASE("GPTModel(GPT_CONFIG_124M): PyTorch's logits, parameters and generated ids", "[full-size]") {
    const auto& o = gpt_oracle()["gpt_model"];
    attn::GPTModel& model = gpt2();
    CHECK(parameter_count(attn::GPT_CONFIG_124M).total == o["num_parameters"].get<std::size_t>());
    std::size_t numel = 0;
    for (const auto& p : model.named_parameters()) numel += p.value->size();
    CHECK(numel == o["num_parameters"].get<std::size_t>());
    // his In [24]: training mode, the dropout masks drawn right after the weights
    model.train();
    attn::Generator gen = gpt2_and_generator().after_init;
    CHECK(test::sha256(model(batch(), gen)) == o["train_sha256"]);
    model.eval();
    CHECK(test::sha256(model(batch())) == o["eval_sha256"]);
    CHECK(ids_of(attn::generate_text_simple(model, hello(), 10, 1024)) == o["generated_10"][0].get<std::vector<std::int64_t>>());
}

TEST_CASE("GPT-2's forward on the fast backend equals the step backend bit for bit", "[full-size]") {
    attn::GPTModel& model = gpt2();
    Tensor fast, step;
    {
        const attn::SDPABackendGuard guard(attn::SDPABackend::fast);
        fast = model(batch());
    }
    {
        const attn::SDPABackendGuard guard(attn::SDPABackend::step);
        step = model(batch());
    }
    CHECK(bit_differences(fast, step) == 0);
    CHECK(test::sha256(fast) == gpt_oracle()["gpt_model"]["eval_sha256"]);
}

TEST_CASE("GPT-2 with the KV cache: the prefill and 6 decode steps are PyTorch's, cached and recomputed", "[full-size]") {
    const auto& o = generation_oracle();
    attn::GPTModel& model = gpt2();
    const std::vector<std::int64_t> cached_ids = o["cached_ids"].get<std::vector<std::int64_t>>();
    CHECK(cached_ids == o["recomputed_ids"].get<std::vector<std::int64_t>>());  // PyTorch's own check
    for (const auto backend : {attn::SDPABackend::fast, attn::SDPABackend::step}) {
        INFO("backend " << attn::backend_name(backend));
        const attn::SDPABackendGuard guard(backend);
        attn::GPTCache cache;
        Tensor logits = model.forward(hello(), cache);
        for (std::size_t step = 0; step <= 6; ++step) {
            INFO("step " << step);
            LongTensor so_far = xt::empty<std::int64_t>(Shape{1, 4 + step});
            std::copy_n(cached_ids.begin(), 4 + step, so_far.data());
            const Tensor full = last(model(so_far));
            CHECK(test::sha256(last(logits)) == o["step_logits_sha256"][step]);       // PyTorch's cached step
            CHECK(test::sha256(full) == o["recomputed_logits_sha256"][step]);         // PyTorch's recomputation
            CHECK(attn::max_abs_diff(last(logits), full) <= 1e-5f);
            if (step < 6) logits = model.forward(one_id(cached_ids[4 + step]), cache);
        }
    }
}

TEST_CASE("a small GPT decodes with the cache as recomputation gives, at every step, in chunks") {
    // Not bit for bit in general, in PyTorch as here: a forward of the whole sequence computes
    // the earlier tokens' rows with masked keys in their softmax, whose sum then runs over the
    // whole row's length (8 lanes from 8 keys on, in order below), while the cached steps
    // computed those rows with their own length. The hidden states of earlier tokens, and so
    // the later blocks' keys and values, differ in their last bits.
    attn::Generator gen(22);
    attn::GPTModel model(small_config(3), gen);
    model.eval();
    LongTensor seq = attn::randint(61, {2, 40}, gen);
    for (const auto backend : {attn::SDPABackend::fast, attn::SDPABackend::step})
        for (const std::size_t chunk : {1, 3, 7}) {
            INFO("backend " << attn::backend_name(backend) << ", chunks of " << chunk);
            const attn::SDPABackendGuard guard(backend);
            attn::GPTCache cache;
            for (std::size_t i = 0; i < 40; i += chunk) {
                const std::size_t end = std::min<std::size_t>(40, i + chunk);
                LongTensor part = xt::view(seq, xt::all(), xt::range(i, end));
                LongTensor prefix = xt::view(seq, xt::all(), xt::range(0, end));
                const Tensor cached = model.forward(part, cache);
                const Tensor full = attn::slice(model(prefix), 1, long(i), long(end));
                CHECK(attn::max_abs_diff(cached, full) <= 2e-6f);
                if (end <= 7)  // every row's softmax in order on both sides: the same bits
                    CHECK(bit_differences(cached, full) == 0);
            }
            CHECK(cache.current_pos() == 40);
        }
    // and greedy generation: the same tokens with the cache and without
    attn::GPTCache cache;
    const LongTensor prompt = xt::view(seq, xt::range(0, 1), xt::range(0, 5));
    CHECK(ids_of(attn::generate_text_simple_cached(model, prompt, 30, cache)) ==
          ids_of(attn::generate_text_simple_cached(model, prompt, 30, cache, 0, false)));
    CHECK(ids_of(attn::generate_text_simple(model, prompt, 30, 40)) ==
          ids_of(attn::generate_text_simple_cached(model, prompt, 30, cache)));
}

TEST_CASE("a preallocated GPTCache (his gpt_with_kv_cache_optimized.py) gives the grown cache's bits") {
    attn::Generator gen(23);
    attn::GPTModel model(small_config(3), gen);
    model.eval();
    LongTensor seq = attn::randint(61, {2, 40}, gen);
    for (const auto backend : {attn::SDPABackend::fast, attn::SDPABackend::step})
        for (const std::size_t chunk : {1, 6}) {
            INFO("backend " << attn::backend_name(backend) << ", chunks of " << chunk);
            const attn::SDPABackendGuard guard(backend);
            attn::GPTCache grown, slots;
            slots.capacity = 40;
            const float* storage = nullptr;
            for (std::size_t i = 0; i < 40; i += chunk) {
                const std::size_t end = std::min<std::size_t>(40, i + chunk);
                LongTensor part = xt::view(seq, xt::all(), xt::range(i, end));
                CHECK(bit_differences(model.forward(part, slots), model.forward(part, grown)) == 0);
                if (!storage) storage = slots.layers[0].key.data();
                CHECK(slots.layers[0].key.data() == storage);  // allocated once, at the first forward
                CHECK(attn::shape_of(slots.layers[2].value) == Shape{2, 3, 40, 8});
                CHECK(bit_differences(slots.layers[2].recent_keys(end), grown.layers[2].key) == 0);
            }
            CHECK(slots.current_pos() == 40);
            slots.reset();  // his reset_kv_cache: position 0, the memory kept
            CHECK(slots.current_pos() == 0);
            CHECK(slots.layers[0].key.data() == storage);
        }
    // What does not fit is refused before anything changes.
    attn::GPTCache small;
    small.capacity = 4;
    LongTensor three = xt::view(seq, xt::all(), xt::range(0, 3)), two = xt::view(seq, xt::all(), xt::range(3, 5));
    test::require_invalid([&] {
        attn::GPTCache tiny;
        tiny.capacity = 2;
        model.forward(three, tiny);
    }, {"3 tokens", "capacity = 2"});
    model.forward(three, small);
    test::require_invalid([&] { model.forward(two, small); }, {"positions 3..4", "capacity = 4"});
    CHECK(small.current_pos() == 3);
    test::require_invalid([] { attn::KVCache::preallocated(0); }, {"capacity > 0"});
    attn::KVCache both = attn::KVCache::preallocated(4);
    both.window = 2;
    test::require_invalid([&] { both.validate(); }, {"not both"});
    attn::KVCache c = attn::KVCache::preallocated(3);
    c.append(attn::ones({1, 2, 2, 4}), attn::ones({1, 2, 2, 4}));
    CHECK_THROWS_AS(c.append(attn::ones({1, 2, 2, 4}), attn::ones({1, 2, 2, 4})), std::length_error);
    CHECK(c.pos == 2);
    attn::KVCache huge = attn::KVCache::preallocated(std::size_t{1} << 60);  // slots that cannot exist
    CHECK_THROWS_WITH(huge.append(attn::ones({1, 2, 1, 4}), attn::ones({1, 2, 1, 4})),
                      Catch::Contains("preallocated keys") && Catch::Contains("cannot allocate"));
    CHECK(huge.pos == 0);
    // and greedy generation: the same tokens
    attn::GPTCache grown, slots;
    slots.capacity = 40;
    const LongTensor prompt = xt::view(seq, xt::range(0, 1), xt::range(0, 5));
    CHECK(ids_of(attn::generate_text_simple_cached(model, prompt, 30, slots)) ==
          ids_of(attn::generate_text_simple_cached(model, prompt, 30, grown)));
}

TEST_CASE("forward_into: operator()'s bits into logits the caller keeps, their memory reused") {
    attn::Generator gen(24);
    attn::GPTModel model(small_config(2), gen);
    model.eval();
    const LongTensor a = attn::randint(61, {2, 9}, gen), b = attn::randint(61, {3, 6}, gen);  // 18 rows each
    Tensor logits;
    model.forward_into(a, logits);
    CHECK(bit_differences(logits, model(a)) == 0);
    const float* memory = logits.data();
    model.forward_into(b, logits);
    CHECK(attn::shape_of(logits) == Shape{3, 6, 61});
    CHECK(bit_differences(logits, model(b)) == 0);
    CHECK(logits.data() == memory);  // as many floats: the same memory
    LongTensor bad = b;
    bad(0, 0) = 61;
    test::require_invalid([&] { model.forward_into(bad, logits); }, {"out of range"});
    CHECK(bit_differences(logits, model(b)) == 0);  // unchanged
}

TEST_CASE("the model's names, repr and counts are his") {
    attn::Generator gen(1);
    const attn::GPTConfig cfg{.vocab_size = 11, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 2,
                              .drop_rate = 0.1, .qkv_bias = true};
    attn::GPTModel model(cfg, gen);
    const auto params = model.named_parameters();
    std::vector<std::string> names;
    std::size_t numel = 0;
    for (const auto& p : params) names.push_back(p.name), numel += p.value->size();
    CHECK(names.front() == "tok_emb.weight");
    CHECK(names[2] == "trf_blocks.0.att.W_query.weight");
    CHECK(names[3] == "trf_blocks.0.att.W_query.bias");
    CHECK(std::find(names.begin(), names.end(), "trf_blocks.1.ff.layers.2.bias") != names.end());
    CHECK(std::find(names.begin(), names.end(), "trf_blocks.1.norm2.shift") != names.end());
    CHECK(names[names.size() - 3] == "final_norm.scale");
    CHECK(names.back() == "out_head.weight");
    CHECK(numel == attn::parameter_count(cfg).total);
    for (const char* name : {"gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl"})
        CHECK_NOTHROW(attn::parameter_count(attn::get_config(attn::GPT_CONFIG_124M, name)));
    const std::string r = attn::repr(model);
    CHECK(r.rfind("GPTModel(\n  (tok_emb): Embedding(11, 8)\n  (pos_emb): Embedding(6, 8)\n"
                  "  (drop_emb): Dropout(p=0.1, inplace=False)\n  (trf_blocks): Sequential(\n"
                  "    (0): TransformerBlock(\n      (att): MultiHeadAttention(", 0) == 0);
    CHECK(r.find("      (ff): FeedForward(\n        (layers): Sequential(\n"
                 "          (0): Linear(in_features=8, out_features=32, bias=True)\n          (1): GELU()\n") !=
          std::string::npos);
    CHECK(r.find("  (final_norm): LayerNorm()\n  (out_head): Linear(in_features=8, out_features=11, bias=False)\n)") !=
          std::string::npos);
}

TEST_CASE("x @ W^T of a few rows (the skinny kernels) equals the BLAS's sgemm, every instruction set") {
    std::mt19937 rng(29);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::string saved = attn::fast::isa_name();
    for (const auto& isa : attn::fast::available_isas()) {
        attn::fast::use_isa(isa);
        for (const std::size_t m : {1, 2, 3, 4, 5, 9, 16})
            for (const std::size_t n : {1, 15, 16, 17, 64, 257})
                for (const std::size_t k : {1, 7, 16, 33, 771})
                    for (const int threads : {1, 2}) {
                        INFO(isa << ": m=" << m << " n=" << n << " k=" << k << " threads=" << threads);
                        std::vector<float> A(m * k), B(n * k), ours(m * n), blas(m * n);
                        for (auto& v : A) v = u(rng);
                        for (auto& v : B) v = u(rng);
                        attn::fast::gemm(m, n, k, A.data(), k, false, B.data(), k, true, ours.data(), n, threads);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, A.data(),
                                    int(k), B.data(), int(k), 0.0f, blas.data(), int(n));
#if ATTN_BLAS_REFERENCE
                        CHECK(std::memcmp(ours.data(), blas.data(), ours.size() * sizeof(float)) == 0);
#else
                        for (std::size_t i = 0; i < ours.size(); ++i) CHECK(ours[i] == Approx(blas[i]).margin(1e-4));
#endif
                    }
    }
    attn::fast::use_isa(saved);
}

// Chapter 23's o23 In [3]: his run generates the 200 tokens again without the cache and finds
// the same ids; the chapter recomputes only the first 6 (step 3). The relation: the library's
// cached generation gives the ids his run got without the cache.
TEST_CASE("relation:cached_ids_equal_recomputed: 200 cached tokens are PyTorch's uncached ids", "[full-size]") {
    const auto& o = generation_oracle();
    attn::GPTCache cache;
    CHECK(ids_of(attn::generate_text_simple_cached(gpt2(), hello(), 200, cache)) ==
          o["recomputed_ids"].get<std::vector<std::int64_t>>());
}

TEST_CASE("200 tokens with and without the cache are his (minutes: with ATTN_SLOW_TESTS=1)", "[full-size]") {
    // His gpt_ch04.py: the whole sequence through the model for every new token, about 5 TFLOP.
    if (!std::getenv("ATTN_SLOW_TESTS")) {
        WARN("skipped: set ATTN_SLOW_TESTS=1 to generate 200 tokens without the cache (minutes)");
        return;
    }
    const auto& o = generation_oracle();
    attn::GPTCache cache;
    CHECK(ids_of(attn::generate_text_simple_cached(gpt2(), hello(), 200, cache, 0, false)) ==
          o["recomputed_ids"].get<std::vector<std::int64_t>>());
    CHECK(ids_of(attn::generate_text_simple_cached(gpt2(), hello(), 200, cache)) ==
          o["cached_ids"].get<std::vector<std::int64_t>>());
}

}  // namespace test_gpt_model
