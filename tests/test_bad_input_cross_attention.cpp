// The bad-input table (issues 15, 19 and 32), chapter 25's pieces: torch.nn.MultiheadAttention
// (attn/modules/torch_mha.hpp) built from bad configs, called with inputs and masks that do not
// fit, its public fields changed half-way, its cross-attention cache and backward misused, the
// empty inputs PyTorch answers, and the encoder-decoder of attn/modules/seq2seq.hpp.
// The machinery and the expected values' sources: bad_input.hpp. PyTorch 1.13's answers to the
// "returns" rows: a source of 0 tokens gives out_proj.bias in every row (softmax over nothing,
// then the bias), 0 queries or 0 sequences give empty results of the right shapes, a fully
// padded sequence gives NaN (Debian's python3-torch 1.13.1).
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/masks.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/seq2seq.hpp"
#include "attn/modules/torch_mha.hpp"

namespace test_bad_input_cross_attention {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

MultiheadAttention mha8() { return MultiheadAttention({.embed_dim = 8, .num_heads = 2, .batch_first = true}); }

// The module called on query [2, 3, 8] and memory [2, 5, 8] (or the given shapes) with `args`.
MultiheadAttentionOutput cross(const MultiheadAttention& m, const Shape& q, const Shape& k, const Shape& v,
                               const MultiheadAttentionArgs& args = {}) {
    return m(attn::rand(q), attn::rand(k), attn::rand(v), args);
}

std::vector<Case> cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    // --- configs: nothing drawn, the field named.
    err("embed_dim 0", RUN(MultiheadAttention({.embed_dim = 0, .num_heads = 2})), IA,
        "MultiheadAttention: expected embed_dim > 0, got 0");
    err("num_heads 0", RUN(MultiheadAttention({.embed_dim = 8, .num_heads = 0})), IA,
        "MultiheadAttention: expected num_heads > 0, got 0");
    err("num_heads does not divide embed_dim", RUN(MultiheadAttention({.embed_dim = 5, .num_heads = 2})), IA,
        "embed_dim must be divisible by num_heads, got embed_dim = 5, num_heads = 2");
    err("dropout 1.5", RUN(MultiheadAttention({.embed_dim = 8, .num_heads = 2, .dropout = 1.5})), IA,
        "MultiheadAttention: expected dropout in [0, 1], got 1.5");
    err("kdim 0", RUN(MultiheadAttention({.embed_dim = 8, .num_heads = 2, .kdim = 0})), IA,
        "MultiheadAttention: expected kdim > 0, got 0");
    err("embed_dim 2^32: the weights cannot be allocated", RUN(MultiheadAttention({.embed_dim = K, .num_heads = 1})), LE,
        "MultiheadAttention (weight [3 * embed_dim, embed_dim]): cannot allocate");

    // --- inputs that do not fit (PyTorch's checks, named).
    err("query 4-D", RUN(cross(mha8(), {1, 2, 3, 8}, {2, 5, 8}, {2, 5, 8})), IA,
        "MultiheadAttention (query): expected unbatched 2-D [L, E] or batched 3-D [B, L, E], got [1, 2, 3, 8]");
    err("batched query, 2-D key", RUN(cross(mha8(), {2, 3, 8}, {5, 8}, {5, 8})), IA,
        "for batched (3-D) query, expected key and value to be 3-D, got key [5, 8] and value [5, 8]");
    err("query of another width", RUN(cross(mha8(), {2, 3, 6}, {2, 5, 8}, {2, 5, 8})), IA,
        "MultiheadAttention: was expecting embedding dimension of 8, but got 6 (query [2, 3, 6])");
    err("packed weights, key of another width", RUN(cross(mha8(), {2, 3, 8}, {2, 5, 6}, {2, 5, 6})), IA,
        "expected the key's last dimension kdim = 8, got key [2, 5, 6]");
    err("kdim mismatch", [] {
        const MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 4, .batch_first = true});
        cross(m, {2, 3, 8}, {2, 5, 5}, {2, 5, 4});
        return true;
    }, IA, "expected the key's last dimension kdim = 6, got key [2, 5, 5]");
    err("vdim mismatch", [] {
        const MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 4, .batch_first = true});
        cross(m, {2, 3, 8}, {2, 5, 6}, {2, 5, 6});
        return true;
    }, IA, "expected the value's last dimension vdim = 4, got value [2, 5, 6]");
    err("key and value of different lengths", RUN(cross(mha8(), {2, 3, 8}, {2, 5, 8}, {2, 4, 8})), IA,
        "key's sequence and batch dims [2, 5, 8] do not match value's [2, 4, 8]");
    err("query and key of different batches", RUN(cross(mha8(), {2, 3, 8}, {3, 5, 8}, {3, 5, 8})), IA,
        "query and key have different batch sizes, query [2, 3, 8], key [3, 5, 8] (batch_first)");
    err("key_padding_mask [2, 4] for 5 source tokens", [] {
        const BoolTensor pad = xt::zeros<bool>(Shape{2, 4});
        cross(mha8(), {2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {.key_padding_mask = &pad});
        return true;
    }, IA, "MultiheadAttention (key_padding_mask): expected [2, 5] ([batch, source tokens]), got [2, 4]");
    err("key_padding_mask transposed", [] {
        const BoolTensor pad = xt::zeros<bool>(Shape{5, 2});
        cross(mha8(), {2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {.key_padding_mask = &pad});
        return true;
    }, IA, "expected [2, 5] ([batch, source tokens]), got [5, 2]");
    err("attn_mask [3, 4] for 3 queries and 5 keys", [] {
        const BoolTensor mask = xt::zeros<bool>(Shape{3, 4});
        cross(mha8(), {2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {.attn_mask = &mask});
        return true;
    }, IA, "MultiheadAttention (attn_mask): expected [3, 5] or [4, 3, 5] ([L, S] or [batch * num_heads, L, S]), got [3, 4]");
    err("attn_mask and attn_bias both", [] {
        const BoolTensor mask = xt::zeros<bool>(Shape{3, 5});
        const Tensor bias = attn::zeros({3, 5});
        cross(mha8(), {2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {.attn_mask = &mask, .attn_bias = &bias});
        return true;
    }, IA, "attn_mask is either boolean or float: got both attn_mask and attn_bias");

    // --- public fields changed half-way (PyTorch raises at the forward).
    err("in_proj_weight replaced by [20, 8]", [] {
        MultiheadAttention m = mha8();
        m.in_proj_weight = attn::zeros({20, 8});
        cross(m, {2, 3, 8}, {2, 5, 8}, {2, 5, 8});
        return true;
    }, IA, "MultiheadAttention (in_proj_weight): expected [3 * embed_dim, E] = [24, 8], got [20, 8]");
    err("in_proj_weight and q_proj_weight both", [] {
        MultiheadAttention m = mha8();
        m.q_proj_weight = attn::zeros({8, 8});
        cross(m, {2, 3, 8}, {2, 5, 8}, {2, 5, 8});
        return true;
    }, IA, "expected either in_proj_weight or q_proj_weight, k_proj_weight and v_proj_weight, got both");
    err("num_heads changed to 3", [] {
        MultiheadAttention m = mha8();
        m.num_heads = 3;
        cross(m, {2, 3, 8}, {2, 5, 8}, {2, 5, 8});
        return true;
    }, IA, "expected num_heads * head_dim = d_out = 8 with both > 0, got num_heads = 3, head_dim = 4");
    err("bias_k without bias_v", [] {
        MultiheadAttention m = mha8();
        m.bias_k = attn::zeros({1, 1, 8});
        cross(m, {2, 3, 8}, {2, 5, 8}, {2, 5, 8});
        return true;
    }, IA, "bias_k and bias_v go together (add_bias_kv), got only bias_k");
    err("out_proj replaced by a Linear(8, 6)", [] {
        MultiheadAttention m = mha8();
        m.out_proj.weight = attn::zeros({6, 8});
        cross(m, {2, 3, 8}, {2, 5, 8}, {2, 5, 8});
        return true;
    }, IA, "MultiheadAttention (out_proj.weight): expected [8, 8], got [6, 8]");
    err("in_proj_bias [16]", [] {
        MultiheadAttention m = mha8();
        m.in_proj_bias = attn::zeros({16});
        cross(m, {2, 3, 8}, {2, 5, 8}, {2, 5, 8});
        return true;
    }, IA, "MultiheadAttention (in_proj_bias): expected [24], got [16]");

    // --- the cross-attention cache and the backward, misused.
    err("a sliding-window cache as the memory", [] {
        const KVCache ring = KVCache::sliding_window(4);
        mha8()(attn::rand({2, 3, 8}), ring);
        return true;
    }, IA, "expected a full KVCache from memory_cache, got a sliding-window one");
    err("another module's memory cache (4 heads)", [] {
        const MultiheadAttention four({.embed_dim = 8, .num_heads = 4, .batch_first = true});
        const Tensor memory = attn::rand({2, 5, 8});
        mha8()(attn::rand({2, 3, 8}), four.memory_cache(memory, memory));
        return true;
    }, IA, "(memory.key): expected [B, num_heads = 2, S, head_dim = 4] keys and values (memory_cache), got [2, 4, 5, 2]");
    err("cache of another batch", [] {
        const MultiheadAttention m = mha8();
        const Tensor memory = attn::rand({3, 5, 8});
        m(attn::rand({2, 3, 8}), m.memory_cache(memory, memory));
        return true;
    }, IA, "query and key have different batch sizes, query [2, 3, 8], key [3, 5, 8]");
    err("backward with grad_output of another shape", [] {
        MultiheadAttention m = mha8();
        MultiheadAttentionSaved saved;
        const Tensor x = attn::rand({2, 3, 8});
        m.forward(x, x, x, {}, saved);
        m.backward(saved, attn::zeros({2, 3, 6}));
        return true;
    }, IA, "MultiheadAttention::backward (grad_output): expected [2, 3, 8], got [2, 3, 6]");
    err("backward of a forward that never ran", [] {
        MultiheadAttention m = mha8();
        m.backward(MultiheadAttentionSaved{}, attn::zeros({2, 3, 8}));
        return true;
    }, IA, "MultiheadAttention::backward (saved): expected a forward of this module");

    // --- what PyTorch answers.
    ok("a source of 0 tokens: out_proj.bias in every row, weights [2, 3, 0]", [] {
        MultiheadAttention m = mha8();
        std::fill_n(m.out_proj.bias->data(), 8, 0.5f);
        const auto out = cross(m, {2, 3, 8}, {2, 0, 8}, {2, 0, 8});
        return all_equal(out.attn_output, {2, 3, 8}, std::vector<float>(48, 0.5f)) &&
               same_shape(*out.attn_output_weights, {2, 3, 0});
    });
    ok("0 queries: [2, 0, 8], weights [2, 0, 5]", [] {
        const auto out = cross(mha8(), {2, 0, 8}, {2, 5, 8}, {2, 5, 8});
        return same_shape(out.attn_output, {2, 0, 8}) && same_shape(*out.attn_output_weights, {2, 0, 5});
    });
    ok("0 sequences: [0, 3, 8], weights [0, 3, 5]", [] {
        const auto out = cross(mha8(), {0, 3, 8}, {0, 5, 8}, {0, 5, 8});
        return same_shape(out.attn_output, {0, 3, 8}) && same_shape(*out.attn_output_weights, {0, 3, 5});
    });
    ok("a fully padded sequence: NaN in its output, the other sequence finite", [] {
        const BoolTensor pad = {{false, false, false, false, false}, {true, true, true, true, true}};
        const auto out = cross(mha8(), {2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {.key_padding_mask = &pad});
        bool first_finite = true, second_nan = true;
        for (std::size_t i = 0; i < 24; ++i) {
            first_finite = first_finite && std::isfinite(out.attn_output.data()[i]);
            second_nan = second_nan && std::isnan(out.attn_output.data()[24 + i]);
        }
        return first_finite && second_nan;
    });
    ok("backward of a cross-attention from 0 source tokens: a key gradient of 0 elements", [] {
        MultiheadAttention m = mha8();
        MultiheadAttentionSaved saved;
        const Tensor q = attn::rand({2, 3, 8}), memory = attn::rand({2, 0, 8});
        const auto out = m.forward(q, memory, memory, {}, saved);
        const MultiheadAttentionGrads g = m.backward(saved, attn::ones({2, 3, 8}));
        return same_shape(g.query, {2, 3, 8}) && g.key && same_shape(*g.key, {2, 0, 8}) && !g.value;
    });
    ok("the encoder-decoder's backward on 0 sequences", [] {
        AttentionOnlySeq2Seq m({.vocab_size = 3, .context_length = 4, .emb_dim = 6, .num_heads = 2});
        AttentionOnlySeq2Seq::Saved saved;
        const LongTensor none = LongTensor::from_shape({0, 2});
        const Tensor logits = m.forward(none, none, saved);
        m.backward(saved, attn::zeros({0, 2, 3}));
        return same_shape(logits, {0, 2, 3}) && m.out_head.weight_grad && same_shape(*m.out_head.weight_grad, {3, 6});
    });
    ok("unbatched 2-D inputs: [3, 8], weights [3, 5]", [] {
        const auto out = cross(mha8(), {3, 8}, {5, 8}, {5, 8});
        return same_shape(out.attn_output, {3, 8}) && same_shape(*out.attn_output_weights, {3, 5});
    });

    // --- the encoder-decoder and its task.
    err("Seq2SeqConfig num_heads does not divide emb_dim",
        RUN(AttentionOnlySeq2Seq({.vocab_size = 11, .context_length = 10, .emb_dim = 30, .num_heads = 4})), IA,
        "AttentionOnlySeq2Seq: emb_dim must be divisible by num_heads, got emb_dim = 30, num_heads = 4");
    err("a source longer than context_length", [] {
        const AttentionOnlySeq2Seq m({.vocab_size = 11, .context_length = 4, .emb_dim = 8, .num_heads = 2});
        m.encode(LongTensor(xt::ones<std::int64_t>(Shape{1, 5})));
        return true;
    }, IA, "AttentionOnlySeq2Seq: src has 5 tokens, beyond context_length 4");
    err("greedy_decode length 0", [] {
        const AttentionOnlySeq2Seq m({.vocab_size = 11, .context_length = 4, .emb_dim = 8, .num_heads = 2});
        m.greedy_decode(LongTensor(xt::ones<std::int64_t>(Shape{1, 4})), 0);
        return true;
    }, IA, "greedy_decode: expected 1 <= length <= context_length = 4, got 0");
    err("copy_batch of a vocabulary of 1", RUN(copy_batch(2, 1, 10)), IA,
        "copy_batch: expected batch_size, length >= 1 and vocab_size >= 2, got 2, 10, 1");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (cross-attention): every case has its exact outcome") {
    run_table("cross_attention", cases());
}

}  // namespace test_bad_input_cross_attention
