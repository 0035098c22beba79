// The bad-input table (issues 15 and 19), attention modules: configs, heads, too many
// tokens, modules whose public state was replaced, KV caches and masks that do not fit.
// The machinery and the expected values' sources: bad_input.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/modules/base_self_attention.hpp"
#include "attn/modules/causal.hpp"
#include "attn/modules/gpt2.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/masks.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/attention/padding.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/modules/self_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"

namespace test_bad_input_modules {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

std::vector<Case> module_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };
    err("issue: MultiHeadAttention context_length 2^32",
        RUN(MultiHeadAttention({.d_in = 4, .d_out = 4, .context_length = K, .num_heads = 2})), LE,
        "MultiHeadAttention (mask [context_length, context_length]): cannot allocate");
    err("issue: causal_mask(2^32, 2^32)", RUN(causal_mask(K, K)), LE, "zeros: cannot allocate");
    err("CausalAttention context_length 2^32", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = K})), LE,
        "CausalAttention (mask [context_length, context_length])");
    err("MultiHeadAttentionWrapper context_length 2^32",
        RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = K, .num_heads = 2})), LE,
        "MultiHeadAttentionWrapper (mask [context_length, context_length])");
    err("GPT2Attention block_size 2^32", RUN(GPT2Attention({.block_size = K, .n_embd = 4, .n_head = 2})), LE,
        "GPT2Attention (mask [block_size, block_size])");
    err("GPT2Attention n_embd 2^63 (3 * n_embd overflows)",
        RUN(GPT2Attention({.block_size = 4, .n_embd = std::size_t{1} << 63, .n_head = 1})), LE,
        "3 * n_embd = 3 * 9223372036854775808 overflows");
    err("CausalAttention d_in * d_out overflows", RUN(CausalAttention({.d_in = K, .d_out = K, .context_length = 4})), LE,
        "CausalAttention (weight [d_out, d_in])");
    err("BaseSelfAttention embed_dim 2^32", RUN(BaseSelfAttention({.embed_dim = K})), LE,
        "BaseSelfAttention (weight [embed_dim, embed_dim])");
    err("SelfAttention_v1 d_in * d_out overflows", RUN(SelfAttention_v1(K, K)), LE, "rand: cannot allocate");
    err("CausalAttention dropout 1.5", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 1.5})), IA,
        "CausalAttention: expected dropout in [0, 1], got 1.5");
    err("CausalAttention dropout nan", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = std::nan("")})), IA,
        "expected dropout in [0, 1]");
    err("MultiHeadAttention dropout -1", RUN(MultiHeadAttention({.d_in = 4, .d_out = 4, .context_length = 4, .dropout = -1, .num_heads = 2})), IA,
        "MultiHeadAttention: expected dropout in [0, 1]");
    err("Wrapper dropout 2", RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = 4, .dropout = 2, .num_heads = 2})), IA,
        "MultiHeadAttentionWrapper: expected dropout in [0, 1]");
    err("GPT2Attention dropout 1.1", RUN(GPT2Attention({.block_size = 4, .n_embd = 4, .n_head = 2, .dropout = 1.1})), IA,
        "GPT2Attention: expected dropout in [0, 1]");

    // --- config sizes and heads.
    err("CausalAttention d_in 0", RUN(CausalAttention({.d_in = 0, .d_out = 2, .context_length = 6})), IA, "CausalAttention: expected d_in > 0");
    err("CausalAttention d_out 0", RUN(CausalAttention({.d_in = 3, .d_out = 0, .context_length = 6})), IA, "expected d_out > 0");
    err("CausalAttention context_length 0", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 0})), IA, "expected context_length > 0");
    err("MultiHeadAttention heads do not divide", RUN(MultiHeadAttention({.d_in = 3, .d_out = 5, .context_length = 4, .num_heads = 2})), IA,
        "d_out must be divisible by num_heads, got d_out = 5, num_heads = 2");
    err("MultiHeadAttention num_heads 0", RUN(MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 0})), IA,
        "num_heads = 0");
    err("Wrapper num_heads 0", RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = 4, .num_heads = 0})), IA,
        "MultiHeadAttentionWrapper: expected num_heads > 0");
    err("GPT2Attention n_head does not divide", RUN(GPT2Attention({.block_size = 4, .n_embd = 5, .n_head = 2})), IA,
        "GPT2Attention (n_embd, n_head): d_out must be divisible by num_heads");
    err("GPT2Attention block_size 0", RUN(GPT2Attention({.block_size = 0, .n_embd = 4, .n_head = 2})), IA, "GPT2Attention: expected block_size > 0");
    err("BaseSelfAttention embed_dim 0", RUN(BaseSelfAttention({.embed_dim = 0})), IA, "BaseSelfAttention: expected embed_dim > 0");
    ok("a bad config draws nothing", [] {
        manual_seed(0);
        try {
            MultiHeadAttention({.d_in = 4, .d_out = 4, .context_length = K, .num_heads = 2});
        } catch (const std::length_error&) {
        }
        return attn::rand({1}).data()[0] == 0.49625658988952637f;
    });
    err("MultiHeadAttention from layers, heads do not divide",
        RUN(MultiHeadAttention(nn::Linear(3, 5), nn::Linear(3, 5), nn::Linear(3, 5), nn::Linear(5, 5), 4, 2, 0.0)), IA,
        "d_out must be divisible by num_heads");
    err("MultiHeadAttention from layers, W_key differs",
        RUN(MultiHeadAttention(nn::Linear(3, 4), nn::Linear(3, 2), nn::Linear(3, 4), nn::Linear(4, 4), 4, 2, 0.0)), IA,
        "MultiHeadAttention (W_key)");
    err("MultiHeadAttention from layers, context_length 2^32",
        RUN(MultiHeadAttention(nn::Linear(3, 4), nn::Linear(3, 4), nn::Linear(3, 4), nn::Linear(4, 4), K, 2, 0.0)), LE,
        "MultiHeadAttention (mask [context_length, context_length])");

    // --- too many tokens, wrong inputs to modules.
    err("CausalAttention 7 tokens, context_length 6", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6})(attn::zeros({1, 7, 3}))), IA,
        "CausalAttention: got 7 tokens, but context_length is 6");
    err("CausalAttention input 2-D", RUN(CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6})(attn::zeros({6, 3}))), IA,
        "CausalAttention: expected [b, T, 3], got [6, 3]");
    err("MultiHeadAttention 5 tokens, context_length 4",
        RUN(MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2})(attn::zeros({1, 5, 3}))), IA,
        "MultiHeadAttention: got 5 tokens, but context_length is 4");
    err("MultiHeadAttention wrong width", RUN(MultiHeadAttention({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2})(attn::zeros({1, 2, 4}))), IA,
        "MultiHeadAttention: expected [b, T, 3], got [1, 2, 4]");
    err("GPT2Attention 5 tokens, block_size 4", RUN(GPT2Attention({.block_size = 4, .n_embd = 4, .n_head = 2, .dropout = 0})(attn::zeros({1, 5, 4}))), IA,
        "GPT2Attention: got 5 tokens, but block_size is 4");
    err("Wrapper 5 tokens, context_length 4",
        RUN(MultiHeadAttentionWrapper({.d_in = 3, .d_out = 2, .context_length = 4, .num_heads = 2})(attn::zeros({1, 5, 3}))), IA,
        "got 5 tokens, but context_length is 4");
    err("SelfAttention_v1 wrong width", RUN(SelfAttention_v1(3, 2)(attn::zeros({6, 4}))), IA, "SelfAttention_v1: expected [T, 3], got [6, 4]");
    err("SelfAttention_v2 3-D input", RUN(SelfAttention_v2(3, 2)(attn::zeros({1, 6, 3}))), IA, "SelfAttention_v2: expected [T, 3], got [1, 6, 3]");
    err("BaseSelfAttention wrong width", RUN(BaseSelfAttention({.embed_dim = 4})(attn::zeros({1, 2, 3}))), IA, "expected [B, S, 4], got [1, 2, 3]");
    err("decode chunk 0", RUN(decode_with_cache(BaseSelfAttention({.embed_dim = 4}), attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}), 0)), IA,
        "decode: expected chunk >= 1, got 0");
    err("decode empty prompt", RUN(decode_without_cache(BaseSelfAttention({.embed_dim = 4}), attn::zeros({1, 0, 4}), attn::zeros({1, 2, 4}))), IA,
        "decode (prompt): expected [B, S0 >= 1, 4]");
    err("decode tokens of another batch", RUN(decode_with_cache(BaseSelfAttention({.embed_dim = 4}), attn::zeros({1, 2, 4}), attn::zeros({2, 2, 4}))), IA,
        "decode (tokens, the batch size of the prompt)");

    err("CausalAttention mask replaced by a non-square one", [] {
        CausalAttention a({.d_in = 3, .d_out = 2, .context_length = 6});
        a.mask = attn::zeros({6, 3});
        a(attn::zeros({1, 4, 3}));
        return true;
    }, IA, "CausalAttention (mask): expected a square [context_length, context_length], got [6, 3]");
    err("CausalAttention mask replaced by 0-d", [] {
        CausalAttention a({.d_in = 3, .d_out = 2, .context_length = 6});
        a.mask = attn::scalar_tensor(0.0f);
        return a.context_length() == 0;
    }, IA, "CausalAttention (mask)");
    err("MultiHeadAttention W_query replaced by 1-D weight", [] {
        MultiHeadAttention m({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2});
        m.W_query.weight = attn::zeros({12});
        m(attn::zeros({1, 2, 3}));
        return true;
    }, IA, "MultiHeadAttention (W_query.weight): expected [4, 3], got [12]");
    err("MultiHeadAttention out_proj bias replaced (fast path)", [] {
        MultiHeadAttention m({.d_in = 3, .d_out = 4, .context_length = 4, .num_heads = 2});
        m.eval();
        m.out_proj.bias = attn::zeros({2});
        m(attn::zeros({1, 2, 3}));
        return true;
    }, IA, "MultiHeadAttention (out_proj.bias): expected [4] (or [1], broadcast), got [2]");
    err("BaseSelfAttention output_proj bias replaced", [] {
        BaseSelfAttention a({.embed_dim = 4});
        a.output_proj.bias = attn::zeros({3});
        a(attn::zeros({1, 2, 4}));
        return true;
    }, IA, "BaseSelfAttention (output_proj.bias): expected [4] (or [1], broadcast), got [3]");

    // --- KV caches that do not fit.
    err("KVCache key 1-D", RUN(KVCache(attn::zeros({4}), attn::zeros({4}))), IA, "KVCache (key): expected [..., S, hd] (at least 2-D), got [4]");
    err("KVCache value differs", RUN(KVCache(attn::zeros({1, 2, 4}), attn::zeros({1, 3, 4}))), IA, "KVCache (value): expected [1, 2, 4] (a full cache of pos = 2 tokens), got [1, 3, 4]");
    err("KVCache key replaced by a longer one (was: read past the end)", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.key = attn::zeros({1, 50, 4});
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "BaseSelfAttention (kv_cache) (key): expected [1, 2, 4] (a full cache of pos = 2 tokens), got [1, 50, 4]");
    err("KVCache value replaced by a longer one", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.value = attn::zeros({1, 9, 4});
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "BaseSelfAttention (kv_cache) (value): expected [1, 2, 4] (a full cache of pos = 2 tokens), got [1, 9, 4]");
    err("KVCache key replaced by 1-D", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.key = attn::zeros({8});
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "BaseSelfAttention (kv_cache) (key): expected [..., S, hd] (at least 2-D), got [8]");
    err("KVCache length() after key replaced by 1-D", [] {
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.key = attn::zeros({8});
        return c.length() == 0;
    }, IA, "KVCache::length (key)");
    err("KVCache bytes() after value replaced", [] {
        KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        c.value = attn::zeros({1, 3, 4});
        return c.bytes() == 0;
    }, IA, "KVCache::bytes (value): expected [1, 2, 4] (a full cache of pos = 2 tokens), got [1, 3, 4]");
    err("KVCache of another batch size", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        const KVCache c(attn::zeros({2, 2, 4}), attn::zeros({2, 2, 4}));
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "expected [1, S_past, 4], got [2, 2, 4]");
    err("KVCache of another width", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        const KVCache c(attn::zeros({1, 2, 3}), attn::zeros({1, 2, 3}));
        a(attn::zeros({1, 1, 4}), std::nullopt, &c);
        return true;
    }, IA, "expected [1, S_past, 4], got [1, 2, 3]");
    err("attention_mask not covering the cache", [] {
        const BaseSelfAttention a({.embed_dim = 4});
        const KVCache c(attn::zeros({1, 2, 4}), attn::zeros({1, 2, 4}));
        a(attn::zeros({1, 1, 4}), LongTensor(xt::ones<std::int64_t>(Shape{1, 1})), &c);
        return true;
    }, IA, "attention_mask [B, S_past + Sq] for x [1, 1, 4] and a cache of 2 tokens): expected [1, 3], got [1, 1]");

    // --- masks of the wrong shape.
    err("causal_mask Sq > Sk", RUN(causal_mask(3, 2)), IA, "causal_mask: expected Sq <= Sk (new queries among the keys), got Sq = 3, Sk = 2");
    err("apply_causal_mask Sq > Sk", RUN(BaseSelfAttention({.embed_dim = 4}).apply_causal_mask(attn::zeros({1, 3, 2}))), IA, "got Sq = 3, Sk = 2");
    err("apply_causal_mask 2-D", RUN(BaseSelfAttention({.embed_dim = 4}).apply_causal_mask(attn::zeros({3, 3}))), IA,
        "apply_causal_mask (attention_logits)");
    err("apply_causal_mask_square_ with a cache (notebook In [36])", [] {
        Tensor logits = attn::zeros({2, 1, 5});
        BaseSelfAttention({.embed_dim = 4}).apply_causal_mask_square_(logits);
        return true;
    }, IA, "output with shape [2, 1, 5] doesn't match the broadcast shape [2, 5, 5]");
    err("scaled_dot_product_attention attn_mask [3, 3] for [2, 2]", [] { const BoolTensor m = xt::ones<bool>(Shape{3, 3});
        (void)scaled_dot_product_attention(attn::zeros({2, 4}), attn::zeros({2, 4}), attn::zeros({2, 4}), {.attn_mask = &m}); return true; }, IA,
        "scaled_dot_product_attention (attn_mask): expected a shape broadcastable to [2, 2], got [3, 3]");
    err("scaled_dot_product_attention attn_bias [2, 3] for [2, 2]", [] { const Tensor m = attn::zeros({2, 3});
        (void)scaled_dot_product_attention(attn::zeros({2, 4}), attn::zeros({2, 4}), attn::zeros({2, 4}), {.attn_bias = &m}); return true; }, IA,
        "scaled_dot_product_attention (attn_bias): expected a shape broadcastable to [2, 2], got [2, 3]");
    err("scaled_dot_product_attention key width", RUN(scaled_dot_product_attention(attn::zeros({2, 4}), attn::zeros({2, 3}), attn::zeros({2, 4}))), IA,
        "scaled_dot_product_attention (key): expected [..., S, 4], got [2, 3]");
    err("apply_attention_mask [B, Sq] for [B, Sq, Sk]", RUN(apply_attention_mask(attn::zeros({1, 2, 3}), LongTensor(xt::ones<std::int64_t>(Shape{1, 2})))), IA,
        "expected [1, 3], got [1, 2]");
    err("real_token_rows sequence out of range", RUN(real_token_rows(attn::zeros({1, 2, 3}), LongTensor(xt::ones<std::int64_t>(Shape{1, 2})), 1)), IA,
        "real_token_rows: sequence 1 out of range for a batch of 1");
    err("real_token_rows mask shape", RUN(real_token_rows(attn::zeros({1, 2, 3}), LongTensor(xt::ones<std::int64_t>(Shape{1, 3})), 0)), IA,
        "real_token_rows (attention_mask): expected [1, 2], got [1, 3]");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (modules): every case has its exact outcome") {
    run_table("modules", module_cases());
}

}  // namespace test_bad_input_modules
