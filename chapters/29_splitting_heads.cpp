// Chapter 29: splitting the heads across the ranks of an MPI job: DeepSpeed-Ulysses (Jacobs et
// al. 2023) and Megatron-LM's tensor parallelism of GPT-2's blocks (Shoeybi et al. 2019).
// Prose: docs/chapters/29_splitting_heads.md. Started alone, it starts itself under
// `mpirun -np 4` (textbook/ranks.hpp); rank 0 prints.
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/dist/ring_attention.hpp"
#include "attn/dist/tensor_parallel.hpp"
#include "attn/dist/ulysses.hpp"
#include "attn/model/config.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"
#include "textbook/ranks_display.hpp"
#include "textbook/tokenizer_data.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "29_splitting_heads", .seeded = true, .ranks = 4}, [](textbook::Chapter& ch) {
        attn::dist::Session mpi;
        const attn::dist::Communicator world = attn::dist::Communicator::world();
        const std::size_t P = std::size_t(world.size()), rank = std::size_t(world.rank());

        ch.step("all-to-all");
        //! [all-to-all]
        attn::Tensor tokens = attn::zeros({1, 4, 2, 1});  // rank r: tokens 2r, 2r + 1 of heads 0-3
        for (std::size_t h = 0; h < 4; ++h)
            for (std::size_t t = 0; t < 2; ++t) tokens(0, h, t, 0) = float(10 * h + 2 * rank + t);
        const attn::Tensor heads = attn::dist::sequence_to_heads(world, tokens);  // [1, 1, 8, 1]
        const attn::Tensor back = attn::dist::heads_to_sequence(world, heads);    // [1, 4, 2, 1]
        //! [all-to-all]
        ch.show("each rank's numbers 10 h + t: its tokens of every head, its head of every token, and back",
                textbook::per_rank(world, {{"sequence split [1, 4, 2, 1]", tokens}, {"sequence_to_heads [1, 1, 8, 1]", heads},
                                           {"heads_to_sequence", back}}),
                {{"owner_before", ch29::owners(world, tokens, 4, 8)}, {"owner_after", ch29::owners(world, heads, 4, 8)}});

        ch.step("ulysses");
        //! [ulysses]
        attn::manual_seed(ch.seed(123));  // every rank draws the same tensors
        const attn::Tensor queries = attn::randn({1, 4, 8, 4}), keys = attn::randn({1, 4, 8, 4}), values = attn::randn({1, 4, 8, 4});
        const attn::SDPAOptions causal{.is_causal = true};
        const attn::Tensor one = attn::scaled_dot_product_attention(queries, keys, values, causal);
        const auto mine = [&](const attn::Tensor& x) { return attn::dist::shard(x, P, rank, attn::dist::SequenceSplit::contiguous); };
        attn::dist::UlyssesForward ulysses;
        const auto sent = textbook::bytes_sent(world, [&] {
            ulysses = attn::dist::ulysses_attention_forward(world, mine(queries), mine(keys), mine(values), causal);
        });
        const attn::Tensor context_vec = attn::dist::unshard(world, ulysses.output, attn::dist::SequenceSplit::contiguous);
        const attn::dist::RingForward ring = attn::dist::ring_attention_forward(world, mine(queries), mine(keys), mine(values),
                                                                                {.is_causal = true});
        //! [ulysses]
        ch.show("Ulysses on 4 ranks, unshard(): the causal attention of 4 heads over 8 tokens", attn::repr(context_vec));
        ch.show("the same bits as one process's scaled_dot_product_attention", attn::repr_bool(context_vec == one));
        ch.show("ring attention (chapter 28) on the same ranks: max |ring - Ulysses| / max |Ulysses|",
                textbook::distance(attn::dist::unshard(world, ring.output, attn::dist::SequenceSplit::contiguous), context_vec,
                                   4.0 + 2.0 * double(P)));
        ch.show("bytes each rank sent: 4 all-to-alls of (P - 1) / P of 2 tokens x 16 numbers x 4 bytes",
                textbook::bytes_line(sent, 4 * (P - 1) * 2 * 16 * 4 / P));
        //! [three ranks]
        const attn::dist::Communicator three = world.split(rank < 3 ? 0 : -1);
        if (three.valid()) {
            const std::string refused = textbook::error_text([&] {
                attn::dist::ulysses_attention_forward(three, attn::zeros({1, 4, 2, 4}), attn::zeros({1, 4, 2, 4}),
                                                      attn::zeros({1, 4, 2, 4}));
            });
            //! [three ranks]
            ch.show("4 heads on 3 ranks", refused);
        }

        ch.step("tensor-parallel");
        //! [tensor-parallel]
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();
        const attn::LongTensor batch = textbook::ids_tensor({tokenizer.encode("Every effort moves you"),
                                                             tokenizer.encode("Every day holds a")});
        attn::manual_seed(ch.seed(123));
        attn::GPTModel model(attn::GPT_CONFIG_124M);  // chapter 22's model, on every rank
        model.eval();
        const attn::Tensor logits = model(batch);
        world.barrier_sleeping();  // the ranks that built it first sleep until the last is done
        const attn::LongTensor next_tokens = attn::argmax(logits, -1);
        std::vector<textbook::Row> rows{{"ranks", "numbers each rank holds", "max |split - one| / max |one|", "next tokens"}};
        for (const int ranks : {1, 2, 3, 4}) {
            world.barrier_sleeping();  // the ranks left out of the last split sleep until it is done
            const attn::dist::Communicator part = world.split(int(rank) < ranks ? 0 : -1);  // ranks 0 .. ranks - 1
            if (!part.valid()) continue;
            const attn::dist::TensorParallelGPT tp(part, model);
            const attn::Tensor split_logits = tp(batch);
            //! [tensor-parallel]
            rows.push_back({std::to_string(ranks), std::to_string(tp.parameters_held()),
                            textbook::distance(split_logits, logits, 2.0 + 2.0 * double(attn::GPT_CONFIG_124M.n_layers)),
                            attn::argmax(split_logits, -1) == next_tokens ? "the same" : "DIFFERENT"});
        }
        ch.show("one process: next tokens, argmax of GPTModel(GPT_CONFIG_124M)(batch) in eval mode", attn::repr(next_tokens));
        ch.show("the model split over 1 to 4 ranks", textbook::table(rows));
    });
}
