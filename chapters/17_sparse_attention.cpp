// Chapter 17: sparse attention with a lightning indexer (DeepSeek V3.2; rasbt/LLMs-from-scratch
// ch04/09_dsa, pull request #1014). Prose: docs/chapters/.
#include <algorithm>
#include <string>

#include "attn/modules/dsa.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "17_sparse_attention", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("module");
        //! [module]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWithDSA dsa({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0,
                                                   .num_heads = 2, .index_n_heads = 2, .index_head_dim = 4,
                                                   .topk = 2});
        const attn::Tensor context_vecs = dsa(batch);
        //! [module]
        ch.book("o17-In02", "print(dsa)", attn::repr(dsa));
        ch.book("o17-In03", "dsa(batch)", attn::repr(context_vecs));

        ch.step("indexer");
        //! [indexer]
        const auto selection = dsa.select(batch);
        const attn::Tensor index_scores = attn::select(selection.index_scores, 0);
        const attn::Tensor kept = attn::select(attn::to_float(selection.selected), 0);
        //! [indexer]
        ch.book("o17-In04", "index_scores[0] (query rows, key columns)", attn::repr(index_scores));
        ch.show("keys each query keeps (topk = 2; 1 = kept)", attn::repr(kept));

        ch.step("dense");
        //! [dense]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWithDSA dense({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0,
                                                     .num_heads = 2, .index_n_heads = 2, .index_head_dim = 4,
                                                     .topk = 6});
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2});
        const attn::Tensor dense_out = dense(batch);
        //! [dense]
        ch.book("o17-In05", "dense(batch), topk = 6", attn::repr(dense_out));
        ch.show("max |dense(batch) - MultiHeadAttention(batch)|", textbook::max_abs_diff_text(dense_out, mha(batch)));

        ch.step("ties");
        //! [ties]
        attn::Generator gen(41);
        attn::MultiHeadAttentionWithDSA dec({.d_in = 6, .d_out = 16, .context_length = 64, .num_heads = 4,
                                             .qkv_bias = true, .index_n_heads = 2, .index_head_dim = 4,
                                             .topk = 5}, gen);
        const attn::Tensor x = attn::rand({2, 64, 6}, gen) - 0.5f;  // many index scores exactly 0
        const auto decode_gap = [&](long chunk) {
            attn::DSACache cache;
            float diff = 0.0f;
            for (long i = 0; i < 64; i += chunk) {
                const long end = std::min(64L, i + chunk);
                const attn::Tensor step = dec.forward(attn::slice(x, 1, i, end), cache);
                const attn::Tensor again = attn::slice(dec(attn::slice(x, 1, 0, end)), 1, i, end);
                diff = std::max(diff, attn::max_abs_diff(step, again));
            }
            return attn::repr(attn::scalar_tensor(diff));
        };
        const auto cached_vs_full = [&] {  // token by token, against one forward over all 64
            attn::DSACache cache;
            std::vector<attn::Tensor> outs;
            for (long t = 0; t < 64; ++t) outs.push_back(dec.forward(attn::slice(x, 1, t, t + 1), cache));
            return textbook::max_abs_diff_text(attn::cat(outs, 1), dec(x));
        };
        const attn::Tensor scores = dec.select(x).index_scores;
        const auto zeros = std::count(scores.begin(), scores.end(), 0.0f);
        dec.ties = attn::IndexTies::torch_topk;
        const std::string his = cached_vs_full();
        dec.ties = attn::IndexTies::earliest;
        //! [ties]
        ch.show("index scores exactly 0, of 2 x 64 x 64",
                std::to_string(zeros) + " of " + std::to_string(scores.size()));
        ch.show("max |decoded token by token - dec(x)|: his topk, earliest first",
                textbook::labelled_lines({{"torch.topk", his}, {"earliest", cached_vs_full()}}));

        ch.step("decode");
        //! [decode]
        std::vector<std::pair<std::string, std::string>> worst;
        for (const long chunk : {1L, 7L, 20L}) worst.push_back({"chunks of " + std::to_string(chunk), decode_gap(chunk)});
        //! [decode]
        ch.show("max |cached - recomputed| over 64 tokens", textbook::labelled_lines(worst));

        ch.step("memory");
        //! [memory]
        attn::DSACache cache;
        dec.forward(x, cache);
        const std::size_t per_token = cache.bytes() / (2 * cache.length());
        const std::size_t kv_part = cache.kv.bytes() / (2 * cache.length());
        //! [memory]
        ch.show("cached bytes per token: keys and values + index key (float32)",
                std::to_string(per_token) + " = " + std::to_string(kv_part) + " + " +
                    std::to_string(per_token - kv_part));
    });
}
