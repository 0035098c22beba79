// Chapter 8: the KV cache (notebook 000 In [28]-[46], notebook 003's reasoning). Prose: docs/chapters/.
#include <algorithm>
#include <limits>
#include <sstream>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/decoding.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "08_kv_cache", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("plan");
        ch.book("000-In28", "the notebook's note, a string",
                attn::repr_str("\nWith KV caching:\nInput: (B,1,E), kv_cache\nOutput: (B,1,E)\n\n"));

        ch.step("setup");
        //! [setup]
        const std::size_t B = 2, S = 4, E = 16;
        attn::manual_seed(ch.seed(8));
        const attn::Tensor z_old = attn::rand({B, S, E});
        const attn::Tensor z = attn::rand({B, 1, E});  // the new token
        const attn::Tensor z_new = attn::cat({z_old, z}, 1);
        const attn::BaseSelfAttention self_atten({.embed_dim = E});
        const attn::BaseOutput output_old = self_atten(z_old);
        const attn::BaseOutput output_new = self_atten(z_new);
        //! [setup]
        ch.book("000-In29-1", "z.shape: the new token", attn::repr(attn::shape_of(z)));
        ch.book("000-In29-2", "z_old.shape: the tokens so far", attn::repr(attn::shape_of(z_old)));
        ch.book("000-In29-3", "z_new.shape", attn::repr(attn::shape_of(z_new)));

        ch.step("cache");
        //! [cache]
        const attn::KVCache cache(output_old.key, output_old.value);
        const attn::Tensor new_key = self_atten.key_proj(z);
        const attn::Tensor new_value = self_atten.value_proj(z);
        const attn::Tensor query = self_atten.query_proj(z);
        const attn::Tensor key = attn::cat({cache.key, new_key}, 1);
        const attn::Tensor value = attn::cat({cache.value, new_value}, 1);
        //! [cache]
        ch.show("cache.key.shape, cache.value.shape",
                attn::repr_tuple({attn::repr(attn::shape_of(cache.key)),
                                  attn::repr(attn::shape_of(cache.value))}));
        ch.book("000-In34", "query.shape: one query", attn::repr(attn::shape_of(query)));
        ch.book("000-In35", "key.shape: cached keys + the new key", attn::repr(attn::shape_of(key)));

        ch.step("bug");
        //! [bug]
        attn::Tensor unmasked_attention_logits = self_atten.calculate_unmasked_attention_logits(query, key);
        const std::string error = textbook::error_text(
            [&] { self_atten.apply_causal_mask_square_(unmasked_attention_logits); }, "RuntimeError: ");
        //! [bug]
        ch.book("000-In36", "the square causal mask with Sq = 1, Sk = 5", error);

        ch.step("fix");
        //! [fix]
        const attn::Tensor& attention_logits = unmasked_attention_logits;  // not modified by the failed fill
        const std::size_t Sq = attention_logits.shape()[1], Sk = attention_logits.shape()[2];
        attn::Tensor causal_mask = attn::tril(attn::ones({B, Sk, Sk}));
        const attn::Shape full_shape = attn::shape_of(causal_mask);
        causal_mask = attn::slice(causal_mask, 1, -static_cast<long>(Sq), static_cast<long>(Sk));
        const attn::Tensor masked_attention_logits = attn::masked_fill(
            attention_logits, attn::eq(causal_mask, 0.0f), -std::numeric_limits<float>::infinity());
        //! [fix]
        ch.book("000-In37-1", "causal_mask.shape: the full triangle", attn::repr(full_shape));
        ch.book("000-In37-2", "causal_mask[:, -Sq:, -Sk:].shape", attn::repr(attn::shape_of(causal_mask)));

        ch.step("causal_mask");
        ch.show("causal_mask(1, 5)", attn::repr(attn::causal_mask(1, 5)));
        ch.show("causal_mask(3, 7)", attn::repr(attn::causal_mask(3, 7)));

        ch.step("top_left");
        ch.show("tril(ones(1, 5)): the top-left mask of is_causal",
                attn::repr(attn::tril(attn::ones({1, 5}))));

        ch.step("finish");
        //! [finish]
        const attn::Tensor attention_weights = self_atten.calculate_attention_weights(masked_attention_logits);
        const attn::Tensor attention_output = self_atten.calculate_final_output(attention_weights, value);
        //! [finish]
        ch.book("000-In39", "output_new.attention_output[:, -1:, :], without the cache",
                attn::repr(attn::slice(output_new.attention_output, 1, -1, static_cast<long>(S) + 1)));
        ch.book("000-In40", "output_with_caching.attention_output", attn::repr(attention_output));

        ch.step("merged");
        //! [merged]
        attn::manual_seed(ch.seed(43));
        const attn::Tensor z2 = attn::rand({B, S, E});
        const attn::BaseSelfAttention merged({.embed_dim = E});
        const attn::BaseOutput output = merged(z2);
        const attn::KVCache kv_cache(output.key, output.value);  // construct kv cache
        const attn::Tensor _z = attn::rand({B, 1, E});             // new token
        // Without KV caching
        const attn::BaseOutput output_new2 = merged(attn::cat({z2, _z}, 1));
        // With KV caching
        const attn::BaseOutput output_with_caching = merged(_z, std::nullopt, &kv_cache);
        //! [merged]
        const attn::Tensor last = attn::slice(output_new2.attention_output, 1, -1, static_cast<long>(S) + 1);
        ch.book("000-In44", "output_new.attention_output[:, -1, :]",
                attn::repr(attn::view(last, {static_cast<long>(B), static_cast<long>(E)})));
        ch.book("000-In45", "output_with_caching.attention_output",
                attn::repr(output_with_caching.attention_output));
        ch.book("000-In46", "uncached minus cached: float32 rounding only",
                attn::repr(attn::Tensor(last - output_with_caching.attention_output)));

        ch.step("decode");
        //! [decode]
        attn::manual_seed(ch.seed(32));
        const attn::BaseSelfAttention decoder({.embed_dim = E});
        const attn::Tensor prompt = attn::rand({B, S, E});
        const attn::Tensor tokens = attn::rand({B, 32, E});
        const auto steps = textbook::compare_decoding(decoder, prompt, tokens, /*chunk=*/1);
        //! [decode]
        attn::Tensor per_step = attn::zeros({steps.max_abs_diff.size()});
        for (std::size_t n = 0; n < steps.max_abs_diff.size(); ++n) per_step(n) = steps.max_abs_diff[n];
        const float worst = *std::max_element(steps.max_abs_diff.begin(), steps.max_abs_diff.end());
        ch.show("max |cached - recomputed| at each of the 32 steps", attn::repr(per_step));
        ch.show("allclose(cached, recomputed, rtol=0, atol=1e-5); the largest difference",
                attn::repr_bool(attn::allclose(steps.cached, steps.recomputed, 0.0, 1e-5)) + "\n" +
                    attn::repr(attn::scalar_tensor(worst)));

        ch.step("chunks");
        //! [chunks]
        const auto chunks = textbook::compare_decoding(decoder, prompt, tokens, /*chunk=*/5);
        //! [chunks]
        ch.show("allclose(chunks of 5, recomputed), allclose(chunks of 5, one at a time)",
                attn::repr_bool(attn::allclose(chunks.cached, chunks.recomputed, 0.0, 1e-5)) + "\n" +
                    attn::repr_bool(attn::allclose(chunks.cached, steps.cached, 0.0, 1e-5)));

        ch.step("costs");
        //! [costs]
        const std::size_t per_token = attn::kv_cache_bytes_per_token(1, 1, E);  // L, H, head_dim
        const std::size_t gpt2_small = attn::kv_cache_bytes_per_token(12, 12, 64);
        const std::size_t mistral_7b = attn::kv_cache_bytes_per_token(32, 8, 128, /*bytes=*/2);  // float16
        //! [costs]
        std::ostringstream costs;
        costs << "this chapter (L=1, H=1, head_dim=16, float32): " << per_token << " bytes per token\n"
              << "the cache of In [31], keys and values [2, 4, 16]: cache.bytes() = " << cache.bytes()
              << " bytes\n"
              << "the cache at the end of the decoding above, B = 2 sequences of " << steps.cache_length
              << " tokens: " << per_token * B * steps.cache_length << " bytes\n"
              << "GPT-2 small (L=12, H=12, head_dim=64, float32): " << gpt2_small << " bytes per token\n"
              << "Mistral-7B (L=32, 8 KV heads, head_dim=128, float16): " << mistral_7b << " bytes per token";
        ch.show("kv_cache_bytes_per_token(L, H, head_dim, bytes)", costs.str());
    });
}
