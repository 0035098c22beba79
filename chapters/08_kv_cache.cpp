// Chapter 8: the KV cache (notebook 000 In [28]-[46]; the reasoning of notebook 003's
// "Key-Value Caching" section).
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/kv_cache.hpp"
#include "textbook/decoding.hpp"
#include "attn/padding.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(argc, argv, "chapter_08_kv_cache",
                                                   "Chapter 8: the KV cache");
    textbook::Printer book(options, "Chapter 8 · The KV cache");

    book.prose(
        "A decoder generates one token at a time, and each new token runs the whole "
        "sequence through attention again. Notebook 003 looks at what that recomputes: "
        "to predict the next token only the last row of the attention output is used; that "
        "row needs the last query only, but every key and value. The keys and values of "
        "the earlier tokens do not change when a token is appended, so they can be kept: "
        "compute query, key and value for the new token only and reuse the rest. That "
        "store is the KV cache. Notebook 000 builds it on its BaseSelfAttention: four "
        "Linear(E, E) projections with bias (query_proj, key_proj, value_proj, "
        "output_proj), causal mask, optional attention mask.");
    book.book("000-In28", "the notebook's note, a string displayed as its repr",
              attn::repr_str("\nWith KV caching:\nInput: (B,1,E), kv_cache\nOutput: (B,1,E)\n\n"));

    book.prose(
        "Notebook 000 sets no seed, so its numbers cannot be reproduced; this chapter uses "
        "torch.manual_seed(8) and draws in the notebook's order (z_old, z, then the four "
        "Linear layers), so PyTorch with the same seed gives the same numbers. What must "
        "hold, and is checked, are the relations: cached == uncached.");
    //! [setup]
    const std::size_t B = 2, S = 4, E = 16;
    attn::manual_seed(8);
    const attn::Tensor z_old = attn::rand({B, S, E});
    const attn::Tensor z = attn::rand({B, 1, E});  // the new token
    const attn::Tensor z_new = attn::cat({z_old, z}, 1);

    const attn::BaseSelfAttention self_atten({.embed_dim = E});
    const attn::BaseOutput output_old = self_atten(z_old);
    const attn::BaseOutput output_new = self_atten(z_new);
    //! [setup]
    book.book("000-In29-1", "z.shape: the new token", attn::repr(attn::shape_of(z)));
    book.book("000-In29-2", "z_old.shape: the tokens seen so far", attn::repr(attn::shape_of(z_old)));
    book.book("000-In29-3", "z_new.shape = concat([z_old, z], dim=1)", attn::repr(attn::shape_of(z_new)));

    book.prose(
        "The cache holds the keys and values of the four earlier tokens, [B, S_past, E]. "
        "For the new token only its query, key and value are computed, and its key and "
        "value are appended after the cached ones.");
    //! [cache]
    const attn::KVCache cache(output_old.key, output_old.value);
    const attn::Tensor new_key = self_atten.key_proj(z);
    const attn::Tensor new_value = self_atten.value_proj(z);
    const attn::Tensor query = self_atten.query_proj(z);
    const attn::Tensor key = attn::cat({cache.key, new_key}, 1);
    const attn::Tensor value = attn::cat({cache.value, new_value}, 1);
    //! [cache]
    book.fresh("cache.key.shape, cache.value.shape",
               attn::repr_tuple({attn::repr(attn::shape_of(cache.key)),
                                 attn::repr(attn::shape_of(cache.value))}));
    book.book("000-In34", "query.shape: one query, for the new token", attn::repr(attn::shape_of(query)));
    book.book("000-In35", "key.shape: cached keys + the new key", attn::repr(attn::shape_of(key)));

    book.prose(
        "The rest should stay the same. It does not: the logits are now [B, Sq, Sk] = "
        "[2, 1, 5], one row for the one query, but the first apply_causal_mask unpacks "
        "`B,S,S = attention_logits.shape` (the second S wins, S = Sk = 5) and builds a "
        "[B, 5, 5] triangle. masked_fill_ works in place and cannot grow its tensor to "
        "the broadcast shape. PyTorch raises RuntimeError; the library throws "
        "std::invalid_argument with PyTorch's words, printed here under PyTorch's name.");
    //! [bug]
    attn::Tensor unmasked_attention_logits = self_atten.calculate_unmasked_attention_logits(query, key);
    std::string error = "(no error)";
    try {
        self_atten.apply_causal_mask_square_(unmasked_attention_logits);
    } catch (const std::invalid_argument& e) {
        error = std::string("RuntimeError: ") + e.what();
    }
    //! [bug]
    book.book("000-In36", "the square causal mask with Sq = 1, Sk = 5", error);

    book.prose(
        "The fix (In [37]): build the [Sk, Sk] triangle, then keep its last Sq rows. The "
        "new tokens are the last Sq positions, and row i of the cut is row Sk - Sq + i of "
        "the triangle: token Sk - Sq + i sees keys 0..Sk - Sq + i.");
    //! [fix]
    const attn::Tensor& attention_logits = unmasked_attention_logits;  // not modified by the failed fill
    const std::size_t Sq = attention_logits.shape()[1], Sk = attention_logits.shape()[2];
    attn::Tensor causal_mask = attn::tril(attn::ones({B, Sk, Sk}));
    const attn::Shape full_shape = attn::shape_of(causal_mask);
    causal_mask = attn::slice(causal_mask, 1, -static_cast<long>(Sq), static_cast<long>(Sk));
    const attn::Tensor masked_attention_logits = attn::masked_fill(
        attention_logits, attn::eq(causal_mask, 0.0f), -std::numeric_limits<float>::infinity());
    //! [fix]
    book.book("000-In37-1", "causal_mask.shape, the full [B, Sk, Sk] triangle", attn::repr(full_shape));
    book.book("000-In37-2", "causal_mask[:, -Sq:, -Sk:].shape", attn::repr(attn::shape_of(causal_mask)));
    book.prose("The library's causal_mask(Sq, Sk) is this cut without the batch dimension. For "
               "one new token it is a row of ones; for three new tokens after four cached ones, "
               "the bottom-right of the 7 x 7 triangle:");
    book.fresh("causal_mask(1, 5)", attn::repr(attn::causal_mask(1, 5)));
    book.fresh("causal_mask(3, 7)", attn::repr(attn::causal_mask(3, 7)));
    book.prose(
        "A trap with the same cause: PyTorch's scaled_dot_product_attention(is_causal=True) "
        "builds tril(ones(Sq, Sk)), aligned to the top left (its documentation says so; "
        "torch.nn.attention.bias.causal_lower_right is the bottom-right variant). For a "
        "cached step that lets the new token see only the first key:");
    book.fresh("tril(ones(1, 5)): the top-left mask is_causal would use, against causal_mask(1, 5)",
               attn::repr(attn::tril(attn::ones({1, 5}))));

    //! [finish]
    const attn::Tensor attention_weights = self_atten.calculate_attention_weights(masked_attention_logits);
    const attn::Tensor attention_output = self_atten.calculate_final_output(attention_weights, value);
    //! [finish]
    book.book("000-In39", "output_new.attention_output[:, -1:, :], without the cache",
              attn::repr(attn::slice(output_new.attention_output, 1, -1, static_cast<long>(S) + 1)));
    book.book("000-In40", "output_with_caching.attention_output", attn::repr(attention_output));

    book.prose(
        "The notebook then merges the fix into the class (In [41]): forward(x, "
        "attention_mask, kv_cache) concatenates the cache in construct_query_key_value and "
        "cuts the causal mask to [Sq, Sk]; the returned key and value are the next cache. "
        "In [43]-[46] check it on fresh weights (here torch.manual_seed(43)).");
    //! [merged]
    attn::manual_seed(43);
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
    const attn::Tensor last = attn::view(attn::slice(output_new2.attention_output, 1, -1, static_cast<long>(S) + 1),
                                         {static_cast<long>(B), static_cast<long>(E)});
    book.book("000-In44", "output_new.attention_output[:, -1, :]", attn::repr(last));
    book.book("000-In45", "output_with_caching.attention_output", attn::repr(output_with_caching.attention_output));
    const attn::Tensor difference = attn::Tensor(
        attn::slice(output_new2.attention_output, 1, -1, static_cast<long>(S) + 1) - output_with_caching.attention_output);
    book.book("000-In46", "uncached minus cached: float32 rounding only", attn::repr(difference));
    book.prose(
        "The notebook's differences are not zero: a few units in the last place of float32 "
        "(1.5e-08 is 2^-26). The two paths compute the same sums, but BLAS libraries pick "
        "different kernels for different matrix sizes (a [10, 16] x [16, 16] product "
        "without the cache, [2, 16] x [16, 16] with it), and a different kernel may group "
        "the additions differently. Here the difference is exactly 0: OpenBLAS adds each "
        "dot product in the same order for both sizes, and the softmax is the same row "
        "loop. Either way the relation to check is equality up to float32 rounding, not "
        "to the bit.");
    book.prose(
        "Generation repeats this step. Starting from the 4-token prompt, 32 new tokens are "
        "fed one at a time, each with the cache of everything before it, and compared with "
        "a full recomputation of the whole prefix at every step (torch.manual_seed(32) for "
        "the inputs and weights).");
    //! [decode]
    attn::manual_seed(32);
    const attn::BaseSelfAttention decoder({.embed_dim = E});
    const attn::Tensor prompt = attn::rand({B, S, E});
    const attn::Tensor tokens = attn::rand({B, 32, E});
    const textbook::DecodeComparison steps = textbook::compare_decoding(decoder, prompt, tokens, /*chunk=*/1);
    //! [decode]
    {
        attn::Tensor per_step = attn::zeros({steps.max_abs_diff.size()});
        float worst = 0.0f;
        for (std::size_t n = 0; n < steps.max_abs_diff.size(); ++n) {
            per_step(n) = steps.max_abs_diff[n];
            worst = std::max(worst, steps.max_abs_diff[n]);
        }
        book.fresh("max |cached - recomputed| at each of the 32 steps (cache of 5 ... 36 tokens)",
                   attn::repr(per_step));
        book.fresh("allclose(cached, recomputed, rtol=0, atol=1e-5) over all 32 steps; the largest difference",
                   attn::repr_bool(attn::allclose(steps.cached, steps.recomputed, 0.0, 1e-5)) + "\n" +
                       attn::repr(attn::scalar_tensor(worst)));
    }

    book.prose(
        "Nothing limits a step to one token: a chunk [B, Sq, E] with Sq > 1 (a prompt fed "
        "in pieces, or several tokens accepted at once) uses the same forward, and the "
        "[Sq, Sk] mask lets each new token see the cache and the new tokens before it. The "
        "same 32 tokens in chunks of 5 (the last chunk has 2):");
    //! [chunks]
    const textbook::DecodeComparison chunks = textbook::compare_decoding(decoder, prompt, tokens, /*chunk=*/5);
    //! [chunks]
    book.fresh("allclose(cached in chunks of 5, recomputed, rtol=0, atol=1e-5); outputs equal to one-at-a-time",
               attn::repr_bool(attn::allclose(chunks.cached, chunks.recomputed, 0.0, 1e-5)) + "\n" +
                   attn::repr_bool(attn::allclose(chunks.cached, steps.cached, 0.0, 1e-5)));

    book.prose(
        "What the cache costs: for every token, its key and its value, E numbers each, in "
        "every layer. Here one layer, E = 16, float32: 2 x 16 x 4 = 128 bytes per token and "
        "sequence. In general, with L layers, H key/value heads of head_dim each and b "
        "bytes per number: 2 x L x H x head_dim x b bytes per token, times the tokens in "
        "the context, times the batch. GPT-2 small (L = 12, H = 12, head_dim = 64) in "
        "float32 needs 72 KiB per token, 72 MiB for its 1024-token context; Mistral-7B "
        "(L = 32, 8 key/value heads of 128) in float16 needs 128 KiB per token.");
    {
        std::ostringstream costs;
        costs << "this chapter (L=1, H=1, head_dim=16, float32): "
              << attn::kv_cache_bytes_per_token(1, 1, E) << " bytes per token\n"
              << "the cache of In [31], keys and values [2, 4, 16]: cache.bytes() = " << cache.bytes()
              << " bytes\n"
              << "the cache at the end of the decoding above, B = 2 sequences of " << steps.cache_length
              << " tokens: " << attn::kv_cache_bytes_per_token(1, 1, E) * B * steps.cache_length << " bytes\n"
              << "GPT-2 small (L=12, H=12, head_dim=64, float32): "
              << attn::kv_cache_bytes_per_token(12, 12, 64) << " bytes per token\n"
              << "Mistral-7B (L=32, 8 KV heads, head_dim=128, float16): "
              << attn::kv_cache_bytes_per_token(32, 8, 128, 2) << " bytes per token";
        book.fresh("kv_cache_bytes_per_token(L, H, head_dim, bytes) = 2 * L * H * head_dim * bytes", costs.str());
    }
    book.prose(
        "What it saves: without the cache, the token at position S costs the projections "
        "of all S tokens (S x E^2 multiply-adds per projection) and an S x S attention; "
        "with it, one token's projections (E^2) and one row of attention (S x E). The "
        "benchmark in benchmarks/kv_cache_benchmark.cpp measures the time per generated "
        "token for contexts of 64 to 1024 tokens; its recorded results and a summary are in "
        "data/benchmarks/ (timings are never part of the tests).");
    return 0;
}
