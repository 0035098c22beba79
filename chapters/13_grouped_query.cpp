// Chapter 13: grouped-query and multi-query attention (Raschka's ch04/04_gqa). Prose: docs/chapters/.
#include <algorithm>
#include <cstdint>
#include <string>

#include <xtensor/xoperation.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "13_grouped_query", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("module");
        //! [module]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::GroupedQueryAttention gqa({.d_in = 3, .d_out = 8, .context_length = 6,
                                               .dropout = 0.0, .num_heads = 4, .num_kv_groups = 2});
        const attn::Tensor context_vecs = gqa(batch);
        //! [module]
        ch.show("print(gqa)", attn::repr(gqa));
        ch.show("gqa(batch)", attn::repr(context_vecs));

        ch.step("mqa");
        //! [mqa]
        attn::manual_seed(ch.seed(123));
        const attn::GroupedQueryAttention mqa({.d_in = 3, .d_out = 8, .context_length = 6,
                                               .dropout = 0.0, .num_heads = 4, .num_kv_groups = 1});
        //! [mqa]
        ch.show("print(mqa)", attn::repr(mqa));
        ch.show("mqa(batch)", attn::repr(mqa(batch)));

        ch.step("cache");
        //! [cache]
        std::vector<std::pair<std::string, attn::Tensor>> cached_keys;
        for (const std::size_t groups : {4, 2, 1}) {
            const attn::GroupedQueryAttention layer({.d_in = 3, .d_out = 8, .context_length = 6,
                                                     .num_heads = 4, .num_kv_groups = groups});
            attn::KVCache cache;
            layer.forward(batch, cache);
            const std::string name = groups == 4 ? "MHA" : groups == 1 ? "MQA" : "GQA";
            cached_keys.push_back({name + " cache.key", cache.key});
        }
        //! [cache]
        ch.show("cached keys after 6 tokens: [b, kv heads, T, head_dim]", textbook::shape_lines(cached_keys));

        ch.step("equivalence");
        //! [equivalence]
        const attn::MultiHeadAttention mha = attn::expand_kv_groups(gqa);
        const attn::Tensor mha_out = mha(batch);
        //! [equivalence]
        ch.show("mha.W_key.weight (rows of each group repeated)", attn::repr(mha.W_key.weight));
        ch.show("max |gqa(batch) - mha(batch)|", textbook::max_abs_diff_text(context_vecs, mha_out));

        ch.step("repeat");
        //! [repeat]
        const attn::Tensor kv_heads = attn::tensor({0.0f, 1.0f});  // key/value heads 0 and 1
        const attn::Tensor interleaved = attn::repeat_interleave(kv_heads, 2, 0);
        const attn::Tensor tiled = attn::repeat_along(kv_heads, 2, 0);
        attn::MultiHeadAttention wrong = mha;
        const auto tile = [&](const attn::Tensor& w) {
            return attn::view(attn::repeat_along(attn::view(w, {2, 2, 3}), 2, 0), {8, 3});
        };
        wrong.W_key.weight = tile(gqa.W_key.weight);
        wrong.W_value.weight = tile(gqa.W_value.weight);
        //! [repeat]
        const auto heads = [](const attn::Tensor& t) { return attn::repr(attn::LongTensor(xt::cast<std::int64_t>(t))); };
        ch.show("key head serving query heads 0-3: repeat_interleave, repeat", heads(interleaved) + "\n" + heads(tiled));
        ch.show("max |gqa(batch) - heads paired by repeat|", textbook::max_abs_diff_text(context_vecs, wrong(batch)));

        ch.step("decode");
        //! [decode]
        attn::Generator gen(13);
        const attn::GroupedQueryAttention dec({.d_in = 6, .d_out = 16, .context_length = 64,
                                               .num_heads = 8, .num_kv_groups = 2}, gen);
        const attn::Tensor x = attn::rand({1, 64, 6}, gen);
        std::vector<std::pair<std::string, std::string>> worst;
        for (const long chunk : {1L, 7L, 20L}) {
            attn::KVCache cache;
            float diff = 0.0f;
            for (long i = 0; i < 64; i += chunk) {
                const long end = std::min(64L, i + chunk);
                const attn::Tensor step = dec.forward(attn::slice(x, 1, i, end), cache);
                const attn::Tensor again = attn::slice(dec(attn::slice(x, 1, 0, end)), 1, i, end);
                diff = std::max(diff, attn::max_abs_diff(step, again));
            }
            worst.push_back({"chunks of " + std::to_string(chunk), attn::repr(attn::scalar_tensor(diff))});
        }
        //! [decode]
        ch.show("max |cached - recomputed| over 64 tokens", textbook::labelled_lines(worst));

        ch.step("estimator");
        //! [estimator]
        attn::KVMemoryConfig cfg{.batch = 1, .context_length = 32768, .emb_dim = 4096, .num_heads = 32,
                                 .num_kv_heads = 32, .num_layers = 32, .bytes_per_elem = attn::dtype_bytes("bf16")};
        const std::size_t mha_total = attn::kv_cache_total_bytes(cfg);
        cfg.num_kv_heads = 8;
        const std::size_t gqa_total = attn::kv_cache_total_bytes(cfg);
        cfg.sliding_window_size = 1024, cfg.swa_a = 5, cfg.swa_b = 1;
        const std::size_t gqa_swa = attn::kv_cache_total_bytes(cfg);
        cfg.num_kv_heads = 32;
        const std::size_t mha_swa = attn::kv_cache_total_bytes(cfg);
        const auto [swa_layers, full_layers] = attn::distribute_layers(32, 5, 1);
        //! [estimator]
        ch.show("KV cache, 32 layers, context 32768, bf16, batch 1",
                textbook::labelled_lines({{"MHA (32 KV heads)", textbook::gb_text(mha_total)},
                                          {"GQA (8 KV heads)", textbook::gb_text(gqa_total)},
                                          {"MHA + SWA 1024 (5:1)", textbook::gb_text(mha_swa)},
                                          {"GQA + SWA 1024 (5:1)", textbook::gb_text(gqa_swa)},
                                          {"SWA, full layers", std::to_string(swa_layers) + ", " +
                                                                   std::to_string(full_layers)}}));

        ch.step("measured");
        //! [measured]
        attn::KVCache cache;
        dec.forward(x, cache);
        const std::size_t per_token = cache.bytes() / cache.length();
        const std::size_t formula = attn::kv_bytes_per_layer(1, 1, dec.head_dim, dec.num_kv_heads, sizeof(float));
        //! [measured]
        ch.show("bytes per token: measured, formula (2 KV heads, head_dim 2, float32)",
                std::to_string(per_token) + ", " + std::to_string(formula));
    });
}
