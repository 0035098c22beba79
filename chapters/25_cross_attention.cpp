// Chapter 25: cross-attention, queries from one sequence and keys and values from another.
// Prose: docs/chapters/25_cross_attention.md.
#include <string>
#include <utility>
#include <vector>
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/masks.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/attention_only.hpp"
#include "attn/modules/seq2seq.hpp"
#include "attn/modules/torch_mha.hpp"
#include "attn/nn/optim.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"
#include "25_cross_attention.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "25_cross_attention", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("module");
        //! [module]
        attn::manual_seed(ch.seed(123));
        attn::MultiheadAttention mha({.embed_dim = 8, .num_heads = 2, .batch_first = true});
        const attn::Tensor decoder_x = attn::rand({2, 3, 8});  // the target's tokens: queries
        const attn::Tensor memory = attn::rand({2, 5, 8});     // the source's (the encoder's output): keys, values
        const attn::BoolTensor key_padding_mask = {{false, false, false, false, false},
                                                   {false, false, false, true, true}};  // true: padding
        //! [module]
        ch.book("o25-In02", "print(mha)", attn::repr(mha));
        ch.book("o25-In03", "its parameters: names and shapes", ch25::named_shapes(mha));

        ch.step("cross");
        //! [cross]
        const auto [attn_output, attn_weights] = mha(decoder_x, memory, memory, {.key_padding_mask = &key_padding_mask});
        const auto per_head = mha(decoder_x, memory, memory,
                                  {.key_padding_mask = &key_padding_mask, .average_attn_weights = false});
        //! [cross]
        ch.book("o25-In04", "attn_output: [2, 3, 8]", attn::repr(attn_output));
        ch.book("o25-In05", "attn_weights, averaged over the heads: [2, 3, 5]", attn::repr(*attn_weights));
        ch.book("o25-In06", "per head (average_attn_weights=False): [2, 2, 3, 5]",
                attn::repr(*per_head.attn_output_weights));

        ch.step("causal");
        //! [causal]
        const attn::BoolTensor causal = attn::causal_attn_mask(3);  // true above the diagonal: may not attend
        const auto [self_output, self_weights] = mha(decoder_x, decoder_x, decoder_x, {.attn_mask = &causal});
        //! [causal]
        ch.book("o25-In07", "the same module as causal self-attention", attn::repr(self_output));
        ch.book("o25-In08", "its weights", attn::repr(*self_weights));

        ch.step("dropout");
        //! [dropout]
        attn::manual_seed(ch.seed(123));
        const attn::MultiheadAttention mha_dropout({.embed_dim = 8, .num_heads = 2, .dropout = 0.5, .batch_first = true});
        const auto [dropout_output, dropout_weights] =
            mha_dropout(decoder_x, memory, memory, {.key_padding_mask = &key_padding_mask});  // training mode
        //! [dropout]
        ch.book("o25-In09", "dropout=0.5 in training: the weights after dropout, averaged", attn::repr(*dropout_weights));
        ch.book("o25-In10", "and the output", attn::repr(dropout_output));

        ch.step("padded");
        //! [padded]
        const attn::BoolTensor all_padded = {{false, false, false, false, false}, {true, true, true, true, true}};
        const auto [padded_output, padded_weights] = mha(decoder_x, memory, memory, {.key_padding_mask = &all_padded});
        //! [padded]
        ch.book("o25-In11", "every source token of sequence 1 padded", attn::repr(padded_output));
        ch.book("o25-In12", "its weights", attn::repr(*padded_weights));

        ch.step("kdim");
        //! [kdim]
        attn::manual_seed(ch.seed(123));
        attn::MultiheadAttention mha_kv({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 4, .batch_first = true});
        const attn::Tensor memory_k = attn::rand({2, 5, 6}), memory_v = attn::rand({2, 5, 4});
        const attn::Tensor kv_output = mha_kv(decoder_x, memory_k, memory_v, {.key_padding_mask = &key_padding_mask}).attn_output;
        //! [kdim]
        ch.book("o25-In13", "kdim=6, vdim=4: three projection weights", ch25::named_shapes(mha_kv));
        ch.book("o25-In14", "mha_kv(decoder_x, memory_k, memory_v)", attn::repr(kv_output));

        ch.step("cache");
        //! [cache]
        const attn::KVCache memory_kv = mha.memory_cache(memory, memory);  // projected once: [2, 2, 5, 4] each
        std::vector<std::pair<std::string, std::string>> steps;
        for (long t = 1; t <= 3; ++t) {  // a decoder's queries, one more at each step
            const attn::Tensor queries = attn::slice(decoder_x, 1, 0, t);
            const attn::Tensor cached = mha(queries, memory_kv, {.key_padding_mask = &key_padding_mask}).attn_output;
            const attn::Tensor full = mha(queries, memory, memory, {.key_padding_mask = &key_padding_mask}).attn_output;
            steps.push_back({"step " + std::to_string(t) + ": max |cached - recomputed|", textbook::max_abs_diff_text(cached, full)});
        }
        //! [cache]
        ch.show("memory_cache(memory, memory): keys " + attn::shape_str(attn::shape_of(memory_kv.key)) + ", values " +
                    attn::shape_str(attn::shape_of(memory_kv.value)) + ", projected once",
                textbook::labelled_lines(steps));

        ch.step("train");
        //! [train]
        const std::size_t V = 11, LENGTH = 10;
        const attn::Seq2SeqConfig config{.vocab_size = V, .context_length = LENGTH, .emb_dim = 32, .num_heads = 2};
        const auto train = [&](bool reverse, std::vector<float>& losses) {
            attn::manual_seed(ch.seed(123));
            attn::AttentionOnlySeq2Seq model(config);
            attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.01});
            for (int step = 0; step < 200; ++step) {
                const auto [src, tgt] = attn::copy_batch(32, V, LENGTH, reverse);
                const auto [input, target] = attn::next_token_pairs(tgt);  // tgt[:, :-1], tgt[:, 1:]
                attn::AttentionOnlySeq2Seq::Saved saved;
                const attn::Tensor logits = model.forward(src, input, saved);
                losses.push_back(attn::sequence_cross_entropy(logits, target)());
                optimizer.zero_grad();
                model.backward(saved, attn::sequence_cross_entropy_backward(logits, target));
                optimizer.step();
            }
            return model;
        };
        std::vector<float> copy_losses, reverse_losses;
        const attn::AttentionOnlySeq2Seq copy_model = train(false, copy_losses);
        const attn::AttentionOnlySeq2Seq reverse_model = train(true, reverse_losses);
        //! [train]
        ch.book("o25-In16", "train(reverse=False): the copy task", ch25::loss_lines(copy_losses), {{"losses", copy_losses}});
        ch.book("o25-In17", "train(reverse=True): the reversal", ch25::loss_lines(reverse_losses), {{"losses", reverse_losses}});

        ch.step("decode");
        //! [decode]
        const auto exact_sequences = [&](const attn::AttentionOnlySeq2Seq& model, bool reverse) {
            attn::Generator held_out(2024);
            const auto [src, tgt] = attn::copy_batch(1000, V, LENGTH, reverse, held_out);
            return ch25::exact_rows(model.greedy_decode(src, LENGTH), tgt);  // the memory's K, V once a sequence
        };
        //! [decode]
        ch.book("o25-In18", "greedy decoding of 1000 held-out sequences",
                "copy: " + std::to_string(exact_sequences(copy_model, false)) + " of 1000 held-out sequences decoded exactly\n" +
                    "reversal: " + std::to_string(exact_sequences(reverse_model, true)) +
                    " of 1000 held-out sequences decoded exactly");

        ch.step("map");
        //! [map]
        const auto cross_map = [&](const attn::AttentionOnlySeq2Seq& model, bool reverse) {
            attn::Generator held_out(2024);
            const auto [src, tgt] = attn::copy_batch(1, V, LENGTH, reverse, held_out);
            return attn::select(model.cross_attention_weights(src, attn::next_token_pairs(tgt).first), 0);
        };
        //! [map]
        attn::Generator init(ch.seed(123));  // the models before training, for the figure
        const attn::AttentionOnlySeq2Seq untrained(config, init);
        ch.book("o25-In19", "the copy model's cross-attention on a held-out sequence: [9, 10]",
                attn::repr(cross_map(copy_model, false)), {{"untrained", cross_map(untrained, false)}});
        ch.book("o25-In20", "the reversal model's", attn::repr(cross_map(reverse_model, true)),
                {{"untrained", cross_map(untrained, true)}});
    });
}
