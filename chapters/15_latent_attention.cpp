// Chapter 15: multi-head latent attention (Raschka's ch04/05_mla). Prose: docs/chapters/.
#include <algorithm>
#include <string>

#include "attn/modules/gqa.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/modules/mla.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "15_latent_attention.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "15_latent_attention", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("module");
        //! [module]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadLatentAttention mla({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0,
                                                  .num_heads = 2, .latent_dim = 2});
        const attn::Tensor context_vecs = mla(batch);
        //! [module]
        ch.book("o15-In02", "print(mla)", attn::repr(mla));
        ch.book("o15-In03", "mla(batch)", attn::repr(context_vecs));

        ch.step("cache");
        //! [cache]
        attn::KVCache cache = mla.make_cache();
        mla.forward(batch, cache);  // cache.key holds the latents W_DKV x: [b, T, latent_dim]
        //! [cache]
        ch.book("o15-In04", "mla.cache_c_kv after forward(batch, use_cache=True)", attn::repr(cache.key));
        ch.show("what the cache holds after 6 tokens",
                textbook::shape_lines({{"cache.key (latents)", cache.key}, {"cache.value", cache.value}}));

        ch.step("default");
        //! [default]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadLatentAttention mla_default({.d_in = 3, .d_out = 4, .context_length = 6,
                                                          .dropout = 0.0, .num_heads = 2, .latent_dim = {}});
        //! [default]
        ch.book("o15-In05", "print(mla_default): latent_dim = max(16, d_out // 8)", attn::repr(mla_default));
        ch.book("o15-In06", "mla_default(batch)", attn::repr(mla_default(batch)));

        ch.step("bytes");
        //! [bytes]
        attn::Generator gen(15);
        const attn::Tensor x = attn::rand({1, 64, 64}, gen);
        const attn::GroupedQueryAttention mha({.d_in = 64, .d_out = 64, .context_length = 64, .num_heads = 8,
                                               .num_kv_groups = 8}, gen);
        const attn::GroupedQueryAttention gqa({.d_in = 64, .d_out = 64, .context_length = 64, .num_heads = 8,
                                               .num_kv_groups = 2}, gen);
        const attn::MultiHeadLatentAttention latent({.d_in = 64, .d_out = 64, .context_length = 64,
                                                     .num_heads = 8, .latent_dim = 16}, gen);
        attn::KVCache mha_cache, gqa_cache, mla_cache;
        mha.forward(x, mha_cache);
        gqa.forward(x, gqa_cache);
        latent.forward(x, mla_cache);
        //! [bytes]
        const auto per_token = [](const attn::KVCache& c) { return std::to_string(c.bytes() / c.length()); };
        ch.show("float32 bytes cached per token, one layer (d_out 64, 8 heads)",
                textbook::labelled_lines({{"MHA (8 KV heads)", per_token(mha_cache)},
                                          {"GQA (2 KV heads)", per_token(gqa_cache)},
                                          {"MLA (latent_dim 16)", per_token(mla_cache)}}));

        ch.step("absorb");
        //! [absorb]
        const attn::AbsorbedLatentAttention absorbed = attn::absorb(mla);
        const attn::Tensor absorbed_out = absorbed(batch);
        //! [absorb]
        ch.show("absorbed.W_query.weight: W_UK_h^T W_query_h per head [H * latent_dim, d_in]",
                attn::repr(absorbed.W_query.weight));
        ch.show("max |absorbed(batch) - mla(batch)|", textbook::max_abs_diff_text(absorbed_out, context_vecs));

        ch.step("decode");
        //! [decode]
        const attn::MultiHeadLatentAttention dec({.d_in = 6, .d_out = 16, .context_length = 64, .num_heads = 4,
                                                  .latent_dim = 6}, gen);
        const attn::Tensor tokens = attn::rand({1, 64, 6}, gen);
        std::vector<std::pair<std::string, std::string>> worst;
        for (const long chunk : {1L, 7L, 20L}) {
            attn::KVCache c = dec.make_cache();
            float diff = 0.0f;
            for (long i = 0; i < 64; i += chunk) {
                const long end = std::min(64L, i + chunk);
                const attn::Tensor step = dec.forward(attn::slice(tokens, 1, i, end), c);
                const attn::Tensor again = attn::slice(dec(attn::slice(tokens, 1, 0, end)), 1, i, end);
                diff = std::max(diff, attn::max_abs_diff(step, again));
            }
            worst.push_back({"chunks of " + std::to_string(chunk), attn::repr(attn::scalar_tensor(diff))});
        }
        //! [decode]
        ch.show("max |cached - recomputed| over 64 tokens", textbook::labelled_lines(worst));

        ch.step("estimator");
        //! [estimator]
        const textbook::EstimatorArgs args{.context_length = 8192, .emb_dim = 2048, .n_heads = 24, .n_layers = 48,
                                           .n_kv_groups = 4, .latent_dim = 1024, .batch_size = 1, .dtype = "bf16"};
        //! [estimator]
        ch.book("o15-In07", "memory_estimator_mla.py with his README's arguments",
                ch15::mla_estimator_report(args));
    });
}
