// Chapter 16: keys and values shared across layers (Raschka's ch04/10_kv-sharing). Prose: docs/chapters/.
#include <algorithm>
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/modules/kv_sharing.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "16_kv_sharing.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "16_kv_sharing", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("layers");
        //! [layers]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWithKVSharingConfig config{.d_in = 3, .d_out = 4, .context_length = 6,
                                                                 .dropout = 0.0, .num_heads = 2};
        const attn::MultiHeadAttentionWithKVSharing producer(config);
        const attn::MultiHeadAttentionWithKVSharing consumer(config);  // built after it: other weights
        //! [layers]
        ch.book("o16-In02", "print(consumer)", attn::repr(consumer));

        ch.step("producer");
        //! [producer]
        attn::KVCache shared_kv;  // his shared_kv: what the producer computed for this batch
        const attn::Tensor out_p = producer.forward(batch, shared_kv);
        //! [producer]
        ch.book("o16-In03", "out_p, the producer's output", attn::repr(out_p));
        ch.book("o16-In04", "shared_kv[0] as [b, num_heads, T, head_dim]: the producer's keys",
                attn::repr(shared_kv.key));

        ch.step("consumer");
        //! [consumer]
        const auto [out_c, new_shared_kv] = consumer.forward_with_kv(batch, &shared_kv);  // its queries only
        //! [consumer]
        ch.book("o16-In05", "out_c, the consumer on the producer's keys and values", attn::repr(out_c));
        ch.book("o16-In06", "new_shared_kv of a consumer", new_shared_kv ? "(keys, values)" : "None");

        ch.step("stack");
        //! [stack]
        attn::Generator gen(16);
        std::vector<attn::MultiHeadAttentionWithKVSharing> layers;
        for (int i = 0; i < 6; ++i)
            layers.emplace_back(attn::MultiHeadAttentionWithKVSharingConfig{
                .d_in = 8, .d_out = 8, .context_length = 64, .num_heads = 4}, gen);
        const attn::Tensor x = attn::rand({1, 64, 8}, gen);
        std::vector<attn::KVCache> caches;  // one per producer
        attn::forward_kv_sharing(layers, 2, x, caches);
        //! [stack]
        std::vector<std::pair<std::string, attn::Tensor>> held;
        for (std::size_t i = 0; i < caches.size(); ++i)
            held.push_back({"caches[" + std::to_string(i) + "].key", caches[i].key});
        ch.show("6 layers, 2 producing: the caches that exist after 64 tokens", textbook::shape_lines(held));

        ch.step("decode");
        //! [decode]
        std::vector<std::pair<std::string, std::string>> worst;
        for (const long chunk : {1L, 7L, 20L}) {
            std::vector<attn::KVCache> cached;
            float diff = 0.0f;
            for (long i = 0; i < 64; i += chunk) {
                const long end = std::min(64L, i + chunk);
                const attn::Tensor step = attn::forward_kv_sharing(layers, 2, attn::slice(x, 1, i, end), cached);
                std::vector<attn::KVCache> fresh;
                const attn::Tensor full = attn::forward_kv_sharing(layers, 2, attn::slice(x, 1, 0, end), fresh);
                diff = std::max(diff, attn::max_abs_diff(step, attn::slice(full, 1, i, end)));
            }
            worst.push_back({"chunks of " + std::to_string(chunk), attn::repr(attn::scalar_tensor(diff))});
        }
        //! [decode]
        ch.show("max |cached - recomputed| over 64 tokens, 6 layers", textbook::labelled_lines(worst));

        ch.step("estimator");
        //! [estimator]
        const textbook::EstimatorArgs e2b{.context_length = 131072, .emb_dim = 2048, .n_heads = 8, .n_layers = 35,
                                          .n_kv_groups = 8, .n_kv_producing_layers = 15, .dtype = "bf16"};
        const textbook::EstimatorArgs e4b{.context_length = 131072, .emb_dim = 2560, .n_heads = 8, .n_layers = 42,
                                          .n_kv_groups = 4, .n_kv_producing_layers = 24, .dtype = "bf16"};
        //! [estimator]
        ch.book("o16-In07", "memory_estimator_kv_sharing.py, Gemma 3n E2B's sizes",
                ch16::kv_sharing_estimator_report(e2b));
        ch.book("o16-In08", "the same, E4B's sizes", ch16::kv_sharing_estimator_report(e4b));

        ch.step("per_token");
        //! [per_token]
        attn::KVMemoryConfig cfg{.batch = 1, .context_length = 131072, .emb_dim = 2048, .num_heads = 8,
                                 .num_kv_heads = 1, .num_layers = 35, .bytes_per_elem = attn::dtype_bytes("bf16")};
        const double gqa = attn::kv_cache_bytes_per_token(cfg);
        cfg.num_kv_producing_layers = 15;
        const double shared = attn::kv_cache_bytes_per_token(cfg);
        //! [per_token]
        ch.show("E2B, bf16: cached bytes per token of context, all layers",
                textbook::labelled_lines({{"GQA, 35 layers cached", std::to_string(static_cast<long>(gqa))},
                                          {"GQA + sharing, 15 cached", std::to_string(static_cast<long>(shared))}}));
    });
}
