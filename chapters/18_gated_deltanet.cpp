// Chapter 18: linear attention and Gated DeltaNet (Qwen3-Next; rasbt/LLMs-from-scratch
// ch04/08_deltanet with its fix of the output gate). Prose: docs/chapters/.
#include <algorithm>
#include <string>

#include "attn/modules/deltanet.hpp"
#include "attn/modules/gated_attention.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "18_gated_deltanet.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "18_gated_deltanet", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("linear");
        //! [linear]
        const attn::Tensor inputs = textbook::inputs();  // [6, 3]: queries, keys and values at once
        const attn::Tensor scores = attn::tril(attn::matmul(inputs, attn::transpose(inputs, 0, 1)));
        const attn::Tensor parallel = attn::matmul(scores, inputs);  // causal, no softmax
        attn::Tensor S = attn::zeros({3, 3});
        std::vector<attn::Tensor> rows;
        for (long t = 0; t < 6; ++t) {
            const attn::Tensor x_t = attn::slice(inputs, 0, t, t + 1);  // [1, 3]
            S = S + attn::matmul(attn::transpose(x_t, 0, 1), x_t);      // S_t = S_{t-1} + k_t^T v_t
            rows.push_back(attn::matmul(x_t, S));                       // y_t = q_t S_t
        }
        const attn::Tensor recurrent = attn::cat(rows, 0);
        //! [linear]
        ch.show("tril(Q K^T) V: causal attention without softmax", attn::repr(parallel));
        ch.show("max |parallel - recurrent (q_t S_t)|", textbook::max_abs_diff_text(parallel, recurrent));

        ch.step("module");
        //! [module]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::GatedDeltaNet gdn({.d_in = 3, .d_out = 4, .dropout = 0.0, .num_heads = 2});
        attn::DeltaNetState state;
        const attn::Tensor context_vecs = gdn.forward(batch, state);
        //! [module]
        ch.book("o18-In02", "print(gdn)", attn::repr(gdn));
        ch.book("o18-In03", "gdn(batch)", attn::repr(context_vecs));
        ch.book("o18-In04", "the state S after 6 tokens: [b, H, head_dim, head_dim]", attn::repr(state.S));

        ch.step("chunked");
        //! [chunked]
        attn::Generator gen(3);
        const attn::GatedDeltaNet big({.d_in = 8, .d_out = 64, .num_heads = 2}, gen);
        const auto g = big.gates(attn::randn({1, 256, 8}, gen));
        attn::Tensor s_rec, s_chunk;
        const attn::Tensor y_rec = attn::gated_delta_rule(g.queries, g.keys, g.values, g.alpha_log, g.beta, s_rec);
        const attn::Tensor y_chunk =
            attn::gated_delta_rule_chunked(g.queries, g.keys, g.values, g.alpha_log, g.beta, s_chunk, 64);
        //! [chunked]
        ch.show("recurrent against chunks of 64: max |y| difference, max |S| difference",
                textbook::labelled_lines({{"outputs", textbook::max_abs_diff_text(y_rec, y_chunk)},
                                          {"state", textbook::max_abs_diff_text(s_rec, s_chunk)}}));

        ch.step("decode");
        //! [decode]
        const attn::Tensor x = attn::randn({1, 64, 8}, gen);
        std::vector<std::pair<std::string, std::string>> worst;
        for (const long chunk : {1L, 7L, 20L}) {
            attn::DeltaNetState st;
            float diff = 0.0f;
            for (long i = 0; i < 64; i += chunk) {
                const long end = std::min(64L, i + chunk);
                const attn::Tensor step = big.forward(attn::slice(x, 1, i, end), st);
                const attn::Tensor again = attn::slice(big(attn::slice(x, 1, 0, end)), 1, i, end);
                diff = std::max(diff, attn::max_abs_diff(step, again));
            }
            worst.push_back({"chunks of " + std::to_string(chunk), attn::repr(attn::scalar_tensor(diff))});
        }
        //! [decode]
        ch.show("max |state decoding - recomputed| over 64 tokens", textbook::labelled_lines(worst));

        ch.step("gated");
        //! [gated]
        attn::manual_seed(ch.seed(123));
        const attn::GatedMultiHeadAttention gmha({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0,
                                                  .num_heads = 2});
        //! [gated]
        ch.book("o18-In05", "print(gmha)", attn::repr(gmha));
        ch.book("o18-In06", "gmha(batch)", attn::repr(gmha(batch)));

        ch.step("memory");
        //! [memory]
        std::vector<std::pair<std::string, std::string>> sizes;
        for (const std::size_t tokens : {6UL, 1024UL, 32768UL}) {
            attn::KVMemoryConfig cfg{.context_length = tokens, .emb_dim = 4, .num_heads = 2, .num_kv_heads = 2,
                                     .num_layers = 1, .bytes_per_elem = 4};
            const std::size_t kv = attn::kv_cache_total_bytes(cfg);
            cfg.deltanet_state = true;
            sizes.push_back({std::to_string(tokens) + " tokens",
                            std::to_string(kv) + " B KV cache, " + std::to_string(attn::kv_cache_total_bytes(cfg)) +
                                " B state"});
        }
        //! [memory]
        ch.show("one layer, d_out 4, 2 heads, float32, one sequence", textbook::labelled_lines(sizes));

        ch.step("variants");
        //! [variants]
        const attn::KVMemoryConfig base{.context_length = 32768, .emb_dim = 2048, .num_heads = 16,
                                        .num_kv_heads = 16, .num_layers = 24, .bytes_per_elem = 2};
        std::vector<std::pair<std::string, attn::KVMemoryConfig>> variants(7, {"", base});
        variants[0].first = "MHA (16 KV heads)";
        variants[1].first = "GQA (4 KV heads)", variants[1].second.num_kv_heads = 4;
        variants[2].first = "MQA (1 KV head)", variants[2].second.num_kv_heads = 1;
        variants[3].first = "SWA 1024, 5:1", variants[3].second.sliding_window_size = 1024;
        variants[3].second.swa_a = 5;
        variants[4].first = "MLA (latent 512)", variants[4].second.latent_dim = 512;
        variants[5].first = "sharing (12 producers)", variants[5].second.num_kv_producing_layers = 12;
        variants[6].first = "DeltaNet state", variants[6].second.deltanet_state = true;
        std::vector<std::pair<std::string, std::string>> per_token;
        for (const auto& v : variants)
            per_token.push_back({v.first, attn::repr_float(attn::kv_cache_bytes_per_token(v.second)) + " B"});
        //! [variants]
        ch.show("cached bytes per token at 32768 tokens (24 layers, d 2048, 16 heads, bf16)",
                textbook::labelled_lines(per_token), ch18::cache_by_length(variants));
    });
}
