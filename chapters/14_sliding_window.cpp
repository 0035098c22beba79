// Chapter 14: sliding-window attention with a ring-buffer KV cache (Raschka's ch04/06_swa). Prose: docs/chapters/.
#include <algorithm>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/print/print.hpp"
#include "attn/modules/swa.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "14_sliding_window", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("mask");
        //! [mask]
        const attn::BoolTensor window_mask = attn::sliding_window_mask(0, 6, 0, 6, /*window=*/3);
        const attn::BoolTensor causal_mask = attn::sliding_window_mask(0, 6, 0, 6, /*window=*/6);
        //! [mask]
        ch.show("masked (True) with W = 3", attn::repr(window_mask));
        ch.show("masked (True) with W = 6: the causal mask", attn::repr(causal_mask));

        ch.step("module");
        //! [module]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWithSWA swa({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0,
                                                   .num_heads = 2, .sliding_window_size = 3});
        const attn::Tensor context_vecs = swa(batch);
        //! [module]
        ch.show("print(swa)", attn::repr(swa));
        ch.show("swa(batch)", attn::repr(context_vecs));

        ch.step("ring");
        //! [ring]
        attn::KVCache cache = swa.make_cache();
        std::vector<attn::Tensor> outs;
        for (long t = 0; t < 6; ++t) outs.push_back(swa.forward(attn::slice(batch, 1, t, t + 1), cache));
        const attn::Tensor decoded = attn::cat(outs, 1);
        //! [ring]
        ch.show("cache.key.shape, cache.pos, cache.length()",
                attn::repr(attn::shape_of(cache.key)) + ", " + std::to_string(cache.pos) + ", " +
                    std::to_string(cache.length()));
        ch.show("max |token by token - swa(batch)|", textbook::max_abs_diff_text(decoded, context_vecs));

        ch.step("prefill");
        //! [prefill]
        attn::KVCache chunked = swa.make_cache();
        const attn::Tensor first = swa.forward(attn::slice(batch, 1, 0, 2), chunked);
        const attn::Tensor rest = swa.forward(attn::slice(batch, 1, 2, 6), chunked);  // 4 tokens > W
        //! [prefill]
        ch.show("max |chunks of 2 and 4 - swa(batch)|",
                textbook::max_abs_diff_text(attn::cat({first, rest}, 1), context_vecs));

        ch.step("overflow");
        //! [overflow]
        long ptr_cur = 2;                  // tokens in the old pre-allocated cache
        const long num_tokens = 5, window_size = 3;
        if (ptr_cur + num_tokens > window_size) {
            const long overflow = ptr_cur + num_tokens - window_size;
            ptr_cur -= overflow;           // the shift of gpt_with_kv_cache_optimized.py before its fix
        }
        const std::string beyond = textbook::error_text(
            [&] { swa.forward(attn::slice(batch, 1, 0, 1), cache); });  // position 6, context_length 6
        //! [overflow]
        ch.show("ptr_cur after the shift, before the fix", std::to_string(ptr_cur));
        ch.show("a seventh token through this library", beyond);

        ch.step("decode");
        //! [decode]
        attn::Generator gen(14);
        const attn::MultiHeadAttentionWithSWA dec({.d_in = 6, .d_out = 8, .context_length = 64,
                                                   .num_heads = 2, .sliding_window_size = 8}, gen);
        const attn::Tensor x = attn::rand({1, 64, 6}, gen);
        attn::Tensor worst = attn::zeros({20});
        for (long chunk = 1; chunk <= 20; ++chunk) {
            attn::KVCache ring = dec.make_cache();
            for (long i = 0; i < 64; i += chunk) {
                const long end = std::min(64L, i + chunk);
                const attn::Tensor step = dec.forward(attn::slice(x, 1, i, end), ring);
                const attn::Tensor again = attn::slice(dec(attn::slice(x, 1, 0, end)), 1, i, end);
                worst(chunk - 1) = std::max(worst(chunk - 1), attn::max_abs_diff(step, again));
            }
        }
        //! [decode]
        ch.show("max |cached - recomputed| for chunks of 1, 2, ..., 20", attn::repr(worst));

        ch.step("memory");
        //! [memory]
        attn::KVCache ring = dec.make_cache();
        attn::KVCache growing;  // a cache that keeps everything, for comparison
        const attn::GroupedQueryAttention full({.d_in = 6, .d_out = 8, .context_length = 64,
                                                .num_heads = 2, .num_kv_groups = 2}, gen);
        std::vector<std::pair<std::string, std::string>> bytes;
        for (long t = 0; t < 64; ++t) {
            dec.forward(attn::slice(x, 1, t, t + 1), ring);
            full.forward(attn::slice(x, 1, t, t + 1), growing);
            if (t + 1 == 1 || t + 1 == 8 || t + 1 == 16 || t + 1 == 64)
                bytes.push_back({"after " + std::to_string(t + 1),
                                 std::to_string(ring.bytes()) + " B ring, " + std::to_string(growing.bytes()) + " B full"});
        }
        //! [memory]
        ch.show("cache bytes (W = 8, 2 heads of width 4, float32)", textbook::labelled_lines(bytes));
    });
}
