// Chapter 23: generating with the KV cache (Raschka's ch04/03_kv-cache): one prefill, then one
// token at a time through every block's cache. Prose: docs/chapters/23_generation.md.
#include <string>
#include <vector>

#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/print/python.hpp"
#include "textbook/progress.hpp"
#include "textbook/record.hpp"
#include "textbook/tokenizer_data.hpp"
#include "23_generation.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "23_generation", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("prompt");
        //! [prompt]
        attn::manual_seed(ch.seed(123));
        attn::GPTModel model(attn::GPT_CONFIG_124M);
        model.eval();  // disable dropout
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();
        const attn::LongTensor encoded_tensor = textbook::ids_tensor({tokenizer.encode("Hello, I am")});
        //! [prompt]
        ch.book("o23-In01", "encoded_tensor.shape", "encoded_tensor.shape: " + attn::repr(attn::shape_of(encoded_tensor)));

        ch.step("prefill");
        //! [prefill]
        attn::GPTCache cache;  // one KVCache per block, empty
        attn::Tensor logits = model.forward(encoded_tensor, cache);  // the prompt's 4 tokens at once
        //! [prefill]
        ch.show("after the prefill: logits, block 0's keys and values, the position, the cache's bytes",
                textbook::shape_lines({{"logits", logits}, {"cache.layers[0].key", cache.layers[0].key},
                                       {"cache.layers[0].value", cache.layers[0].value}}) +
                    "\ncache.current_pos(): " + std::to_string(cache.current_pos()) + "\ncache.bytes(): " +
                    std::to_string(cache.bytes()) + " (12 blocks x 2 x [1, 12, 4, 64] float32)");

        ch.step("decode");
        //! [decode]
        const auto last = [](const attn::Tensor& l) { return attn::slice(l, 1, -1, long(l.shape()[1])); };  // l[:, -1:]
        std::vector<std::int64_t> recomputed = tokenizer.encode("Hello, I am");  // grown without the cache
        std::string diffs;
        for (int step = 0; step <= 6; ++step) {
            const attn::Tensor full = last(model(textbook::ids_tensor({recomputed})));  // the whole sequence again
            diffs += std::string(step ? ", " : "") + attn::repr_float(attn::max_abs_diff(last(logits), full));
            if (step == 6) break;
            recomputed.push_back(attn::argmax(full, -1)(0, 0));  // generate_text_simple's next token
            logits = model.forward(textbook::ids_tensor({{recomputed.back()}}), cache);  // one token, cached
        }
        //! [decode]
        ch.book("o23-In04", "the prefill and 6 decode steps: cached against recomputed logits",
                "max |cached - recomputed| at the prefill and 6 decode steps: [" + diffs + "]");

        ch.step("generate");
        textbook::Progress progress("generating", 200, "tokens");  // stderr, on a terminal only
        //! [generate]
        const attn::LongTensor token_ids = attn::generate_text_simple_cached(model, encoded_tensor, 200, cache, progress.tick());
        const std::vector<std::int64_t> ids = textbook::row_ids(token_ids, 0);
        const std::string decoded_text = tokenizer.decode(ids, attn::DecodeErrors::replace);
        //! [generate]
        const double seconds = progress.seconds();
        progress.finish();
        ch.book("o23-In02", "generate_text_simple_cached(model, encoded_tensor, max_new_tokens=200)",
                "Output: " + attn::repr(token_ids) + "\nOutput length: " + std::to_string(ids.size()));
        std::string wrapped = textbook::wrap_line("Output text: " + decoded_text, "", 80);  // one line in Python
        wrapped.pop_back();
        ch.show("print(\"Output text:\", decoded_text), wrapped at 80 columns", wrapped);
        ch.book("rch04kv-Output", "the first 23 new tokens, as his README quotes them",
                "> Output text: " + tokenizer.decode({ids.begin(), ids.begin() + 4 + 23}, attn::DecodeErrors::replace) + " ...");
        ch.book("o23-In03", "without the cache: the tokens of the decode steps above, recomputed",
                "the first 6 tokens without the cache: " +
                    attn::repr_bool(std::equal(recomputed.begin(), recomputed.end(), ids.begin())));

        ch.step("memory");
        //! [memory]
        const std::size_t per_token = cache.bytes() / cache.current_pos();
        //! [memory]
        ch.show("the cache after the 200 tokens: tokens held, bytes, bytes per token (2 x 12 blocks x 768 float32)",
                std::to_string(cache.current_pos()) + " tokens, " + std::to_string(cache.bytes()) + " bytes, " +
                    std::to_string(per_token) + " bytes per token");

        ch.step("speed");
        textbook::terminal_note(ch23::this_run_note(model, 200, seconds, cache.bytes()));
    });
}
