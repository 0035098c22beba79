// The bad-input table (issues 15, 19, 32), the GPT model's room (attn/model/): configs, token
// ids out of range, a context longer than context_length (with and without the cache), layers
// replaced by ones that do not fit, caches of another shape, and PyTorch's empty results.
// The machinery and the expected values' sources: bad_input.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"

namespace test_bad_input_model {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

// A small GPT: 97 tokens, 8 positions, 8 wide, 2 heads, 2 blocks, no dropout.
constexpr GPTConfig kSmall{.vocab_size = 97, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2};

GPTModel small() {
    Generator gen(7);
    GPTModel m(kSmall, gen);
    m.eval();
    return m;
}

LongTensor ids(std::vector<std::int64_t> row) {
    LongTensor t = xt::empty<std::int64_t>(Shape{1, row.size()});
    std::copy(row.begin(), row.end(), t.data());
    return t;
}

std::vector<Case> model_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    // --- configs: refused before anything is drawn
    err("GPTConfig vocab_size 0", RUN(GPTModel({.vocab_size = 0, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 1})), IA,
        "GPTModel: expected vocab_size > 0, got 0");
    err("GPTConfig n_layers 0", RUN(GPTModel({.vocab_size = 5, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 0})), IA,
        "GPTModel: expected n_layers > 0, got 0 (PyTorch's empty nn.Sequential would pass the embeddings straight to "
        "final_norm");
    err("GPTModel with its trf_blocks emptied", [] {
        GPTModel m = small();
        m.trf_blocks = attn::nn::SequentialList<attn::TransformerBlock>(std::vector<attn::TransformerBlock>{});
        (void)m(ids({1}));
        return true;
    }, IA, "GPTModel: trf_blocks is empty (PyTorch's empty nn.Sequential would pass the embeddings straight to final_norm");
    err("GPTModel with an out_head of another width", [] {
        GPTModel m = small();
        m.out_head = attn::nn::Linear(m.out_head.in_features() + 1, m.out_head.out_features(), false);
        (void)m(ids({1}));
        return true;
    }, IA, "GPTModel: out_head takes");
    err("GPTModel with a final_norm of another width", [] {
        GPTModel m = small();
        m.final_norm = attn::LayerNorm(m.final_norm.emb_dim() + 1);
        (void)m(ids({1}));
        return true;
    }, IA, "LayerNorm: expected [...");
    err("GPTConfig heads do not divide emb_dim", RUN(GPTModel({.vocab_size = 5, .context_length = 8, .emb_dim = 768, .n_heads = 5, .n_layers = 1})), IA,
        "GPTModel: emb_dim must be divisible by n_heads, got emb_dim = 768, n_heads = 5");
    err("GPTConfig drop_rate 1.5", RUN(GPTModel({.vocab_size = 5, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 1, .drop_rate = 1.5})), IA,
        "GPTModel: expected drop_rate in [0, 1], got 1.5");
    err("GPTConfig vocab_size * emb_dim 2^64", RUN(GPTModel({.vocab_size = K, .context_length = 8, .emb_dim = K, .n_heads = 1, .n_layers = 1})), LE,
        "GPTModel (weight [vocab_size, emb_dim]): cannot allocate");
    err("GPTConfig context_length 2^32 (its mask)", RUN(GPTModel({.vocab_size = 5, .context_length = K, .emb_dim = 1, .n_heads = 1, .n_layers = 1})), LE,
        "GPTModel (mask [context_length, context_length]): cannot allocate");
    err("GPTConfig n_layers 2^40 (found by fuzz_model: a vector of 2^40 blocks)",
        RUN(GPTModel({.vocab_size = 5, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = std::size_t{1} << 40})), LE,
        "GPTModel: cannot allocate the model");
    err("TransformerBlock emb_dim 0", RUN(TransformerBlock({.vocab_size = 5, .context_length = 8, .emb_dim = 0, .n_heads = 1, .n_layers = 1})), IA,
        "TransformerBlock: expected emb_dim > 0, got 0");
    err("get_config unknown name", RUN(get_config(GPT_CONFIG_124M, "gpt2-tiny")), IA, "Incorrect model name gpt2-tiny");
    err("parameter_count heads do not divide", RUN(parameter_count({.vocab_size = 5, .context_length = 8, .emb_dim = 8, .n_heads = 3, .n_layers = 1})), IA,
        "parameter_count: emb_dim must be divisible by n_heads, got emb_dim = 8, n_heads = 3");
    ok("parameter_count of GPT_CONFIG_124M: his 163,009,536", [] { return parameter_count(GPT_CONFIG_124M).total == 163009536; });
    err("LayerNorm emb_dim 0", RUN(LayerNorm(0)), IA, "LayerNorm: expected emb_dim > 0, got 0");

    // --- token ids and the context
    err("token id = vocab_size", [] { (void)small()(ids({1, 2, 97})); return true; }, IA,
        "GPTModel: token id 97 at [0, 2] is out of range [0, vocab_size = 97)");
    err("token id -1", [] { (void)small()(ids({-1})); return true; }, IA,
        "GPTModel: token id -1 at [0, 0] is out of range [0, vocab_size = 97)");
    err("context longer than context_length", [] { (void)small()(ids({1, 2, 3, 4, 5, 6, 7, 8, 9})); return true; }, IA,
        "GPTModel: 9 tokens, but the context holds context_length = 8 (pos_emb has 8 positions)");
    err("in_idx 1-D", [] { (void)small()(LongTensor{1, 2, 3}); return true; }, IA,
        "GPTModel (in_idx): expected [batch_size, seq_len], got [3]");
    err("cached decode past context_length", [] {
        const GPTModel m = small();
        GPTCache cache;
        (void)m.forward(ids({1, 2, 3, 4, 5, 6, 7, 8}), cache);
        (void)m.forward(ids({9}), cache);
        return true;
    }, IA, "GPTModel: a token beyond the context: positions 8..8 but context_length = 8");
    ok("cached decode past context_length changes nothing", [] {
        const GPTModel m = small();
        GPTCache cache;
        (void)m.forward(ids({1, 2, 3, 4, 5, 6, 7, 8}), cache);
        try { (void)m.forward(ids({9}), cache); } catch (const std::invalid_argument&) {}
        return cache.current_pos() == 8 && cache.layers[1].key.shape()[2] == 8;
    });
    err("cached token id out of range changes nothing", [] {
        const GPTModel m = small();
        GPTCache cache;
        (void)m.forward(ids({1, 2}), cache);
        (void)m.forward(ids({200}), cache);
        return true;
    }, IA, "GPTModel: token id 200 at [0, 0] is out of range [0, vocab_size = 97)");
    err("cache of a batch of 1 used for a batch of 2", [] {
        const GPTModel m = small();
        GPTCache cache;
        (void)m.forward(ids({1, 2}), cache);
        (void)m.forward(LongTensor(xt::ones<std::int64_t>(Shape{2, 1})), cache);
        return true;
    }, IA, "GPTModel (block 0's cache)");
    err("cache with another number of blocks", [] {
        const GPTModel m = small();
        GPTCache cache;
        cache.layers.resize(5);
        (void)m.forward(ids({1}), cache);
        return true;
    }, IA, "GPTModel: the cache holds 5 blocks' keys and values, the model has 2 blocks");
    err("generate_text_simple context_size 0", [] { (void)generate_text_simple(small(), ids({1}), 1, 0); return true; }, IA,
        "generate_text_simple: expected context_size > 0, got 0");
    err("generate_text_simple context_size > context_length", [] { (void)generate_text_simple(small(), ids({1}), 1, 9); return true; }, IA,
        "generate_text_simple: context_size 9 exceeds the model's context_length 8");
    err("generate_text_simple_cached past context_length", [] {
        GPTCache cache;
        (void)generate_text_simple_cached(small(), ids({1, 2, 3, 4, 5, 6}), 3, cache);
        return true;
    }, IA, "a token beyond the context: positions 8..8 but context_length = 8");
    ok("generate_text_simple crops the context as he does", [] {
        const LongTensor out = generate_text_simple(small(), ids({1, 2, 3, 4, 5, 6, 7, 8}), 3, 8);
        return out.shape()[1] == 11;
    });

    // --- public fields replaced by ones that do not fit
    err("FeedForward layers[2] of another width", [] {
        GPTModel m = small();
        m.trf_blocks[0].ff.layers.get<2>() = nn::Linear(32, 5);
        (void)m(ids({1}));
        return true;
    }, IA, "FeedForward: layers[2] must map layers[0]'s 32 outputs back to its 8 inputs, got Linear(32, 5) (PyTorch's "
           "FeedForward would compute it, with another width than its input");
    err("TransformerBlock norm2 of another width", [] {
        GPTModel m = small();
        m.trf_blocks[1].norm2 = LayerNorm(4);
        (void)m(ids({1}));
        return true;
    }, IA, "TransformerBlock: norm2 is 4 wide, but norm1 normalises 8");
    err("LayerNorm shift of another size", [] {
        LayerNorm ln(3);
        ln.shift = attn::zeros({4});
        (void)ln(attn::zeros({2, 3}));
        return true;
    }, IA, "LayerNorm: scale is [3] and shift [4]: expected both [emb_dim], one value per feature");
    err("LayerNorm scale of another size (it blamed the shift)", [] {
        LayerNorm ln(4);
        ln.scale = attn::ones({1});
        (void)ln(attn::zeros({2, 4}));
        return true;
    }, IA, "LayerNorm: scale is [1] and shift [4]: expected both [emb_dim], one value per feature (PyTorch would "
           "broadcast a [1] scale or shift; this LayerNorm does not)");
    err("LayerNorm scale 2-D", [] {
        LayerNorm ln(3);
        ln.scale = attn::ones({1, 3});
        (void)ln(attn::zeros({2, 3}));
        return true;
    }, IA, "LayerNorm (scale): expected [emb_dim], emb_dim > 0, got [1, 3]");
    err("LayerNorm input of another width", RUN(LayerNorm(3)(attn::zeros({2, 4}))), IA, "LayerNorm: expected [..., 3], got [2, 4]");
    err("GPTModel pos_emb of another width", [] {
        GPTModel m = small();
        m.pos_emb.weight = attn::zeros({8, 4});
        (void)m(ids({1}));
        return true;
    }, IA, "GPTModel: pos_emb is 4 wide, tok_emb 8");
    err("gelu_backward shapes differ", RUN(gelu_backward(attn::zeros({2}), attn::zeros({3}))), IA,
        "gelu_backward (grad_output): expected [3], got [2]");
    err("var dim out of range", RUN(attn::var(attn::zeros({2, 3}), 2)), IA, "var");
    ok("var of one element, unbiased: NaN (0 / 0), as PyTorch", [] { return std::isnan(attn::var(attn::ones({1, 1}), -1)(0)); });
    ok("var over an empty dimension: NaN, as PyTorch", [] { return std::isnan(attn::var(attn::zeros({1, 0}), -1)(0)); });
    ok("mean over an empty dimension: NaN, as PyTorch", [] { return std::isnan(attn::mean(attn::zeros({1, 0}), -1)(0)); });
    ok("LayerNorm of a constant row: the shift (var 0, divided by sqrt(eps))", [] {
        return all_equal(LayerNorm(3)(attn::ones({1, 3})), {1, 3}, {0.0f, 0.0f, 0.0f});
    });
    ok("GPTModel on no token in a batch of 2^40: logits [2^40, 0, vocab_size], the empty rows not walked", [] {
        const std::size_t b = std::size_t{1} << 40;
        const Tensor logits = small()(xt::empty<std::int64_t>(Shape{b, 0}));
        return attn::shape_of(logits) == Shape({b, 0, kSmall.vocab_size});
    });
    ok("GELU of -inf, inf, NaN: NaN (-inf * 0), inf, NaN, as PyTorch", [] {
        const float i = std::numeric_limits<float>::infinity();
        const Tensor y = gelu(attn::tensor({-i, i, nan_f}));
        return std::isnan(y(0)) && y(1) == i && std::isnan(y(2));
    });
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (model): every case has its exact outcome") {
    run_table("model", model_cases());
}

}  // namespace test_bad_input_model
