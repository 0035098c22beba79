// Chapter 28: ring attention, one sequence across the ranks of an MPI job (Liu et al. 2023).
// Prose: docs/chapters/28_ring_attention.md. Started alone, it starts itself under
// `mpirun -np 4` (textbook/ranks.hpp); rank 0 prints.
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/dist/ring_attention.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"
#include "textbook/ranks_display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "28_ring_attention", .seeded = true, .ranks = 4}, [](textbook::Chapter& ch) {
        attn::dist::Session mpi;
        const attn::dist::Communicator world = attn::dist::Communicator::world();
        const std::size_t P = std::size_t(world.size()), rank = std::size_t(world.rank());
        using attn::dist::SequenceSplit;

        ch.step("collectives");
        //! [collectives]
        attn::Tensor x = attn::zeros({4});
        for (std::size_t i = 0; i < 4; ++i) x(i) = 10.0f * float(rank) + float(i);  // rank r: 10 r + [0, 1, 2, 3]
        attn::Tensor from_previous = attn::zeros({4}), summed = x, exchanged = attn::zeros({4});
        const auto shifted_bytes = textbook::bytes_sent(world, [&] { world.ring_shift(x.data(), from_previous.data(), 4); });
        const auto summed_bytes = textbook::bytes_sent(world, [&] { world.all_reduce_sum(summed.data(), 4); });
        const auto exchanged_bytes = textbook::bytes_sent(world, [&] { world.all_to_all(x.data(), exchanged.data(), 4 / P); });
        //! [collectives]
        ch.show("each rank's x, and what ring_shift, all_reduce_sum and all_to_all leave there",
                textbook::per_rank(world, {{"x", x}, {"ring_shift", from_previous}, {"all_reduce_sum", summed},
                                       {"all_to_all", exchanged}}));
        ch.show("bytes sent by ranks 0-3: ring_shift, all_reduce_sum, all_to_all (float32: 4 bytes)",
                textbook::labelled_lines({{"ring_shift", textbook::bytes_line(shifted_bytes, 4 * 4)},
                                          {"all_reduce_sum", textbook::bytes_line(summed_bytes, 2 * (P - 1) * 4 * 4 / P)},
                                          {"all_to_all", textbook::bytes_line(exchanged_bytes, (P - 1) * 4 * 4 / P)}}));

        ch.step("split");
        ch.show("the positions each rank holds, T = 16 tokens on 4 ranks", ch28::positions(16, P));

        ch.step("ring");
        //! [ring]
        attn::manual_seed(ch.seed(123));  // every rank draws the same tensors
        const attn::Tensor queries = attn::randn({1, 1, 8, 4}), keys = attn::randn({1, 1, 8, 4}),
                           values = attn::randn({1, 1, 8, 4});
        const attn::SDPAForward one = attn::scaled_dot_product_attention_forward(queries, keys, values, {.is_causal = true});
        attn::dist::RingOptions options{.is_causal = true, .split = SequenceSplit::contiguous};
        const attn::dist::RingForward ring = attn::dist::ring_attention_forward(
            world, attn::dist::shard(queries, P, rank, options.split), attn::dist::shard(keys, P, rank, options.split),
            attn::dist::shard(values, P, rank, options.split), options);
        const attn::Tensor context_vec = attn::dist::unshard(world, ring.output, options.split);
        //! [ring]
        ch.show("one process: F.scaled_dot_product_attention(queries, keys, values, is_causal=True)", attn::repr(one.output));
        ch.show("ring attention on 4 ranks, each holding 2 of the 8 tokens, unshard()", attn::repr(context_vec));
        ch.show("max |ring - one process| / max |one process|, 4 ranks", textbook::distance(context_vec, one.output, 4.0 + 2.0 * double(P)));
        //! [two ranks]
        const attn::dist::Communicator pair = world.split(rank < 2 ? 0 : -1);  // ranks 0 and 1 only
        if (pair.valid()) {
            const attn::dist::RingForward ring2 = attn::dist::ring_attention_forward(
                pair, attn::dist::shard(queries, 2, rank, options.split), attn::dist::shard(keys, 2, rank, options.split),
                attn::dist::shard(values, 2, rank, options.split), options);
            const attn::Tensor context_vec2 = attn::dist::unshard(pair, ring2.output, options.split);
            //! [two ranks]
            ch.show("the same on 2 ranks, 4 tokens each: max |ring - one process| / max |one process|",
                    textbook::distance(context_vec2, one.output, 8.0));
        }

        ch.step("causal");
        //! [causal]
        attn::manual_seed(ch.seed(123));
        const attn::Tensor q16 = attn::randn({1, 1, 16, 4}), k16 = attn::randn({1, 1, 16, 4}), v16 = attn::randn({1, 1, 16, 4});
        const attn::SDPAForward one16 = attn::scaled_dot_product_attention_forward(q16, k16, v16, {.is_causal = true});
        for (const SequenceSplit split : {SequenceSplit::contiguous, SequenceSplit::zigzag, SequenceSplit::striped}) {
            const attn::dist::RingOptions causal{.is_causal = true, .split = split};
            const attn::dist::RingForward fwd = attn::dist::ring_attention_forward(
                world, attn::dist::shard(q16, P, rank, split), attn::dist::shard(k16, P, rank, split),
                attn::dist::shard(v16, P, rank, split), causal);
            //! [causal]
            const attn::Tensor pairs = ch28::pairs_matrix(world, fwd);
            ch.show(std::string(attn::dist::split_name(split)) + ": (query, key) pairs per rank and step, T = 16 on 4 ranks",
                    ch28::pairs(pairs) + "\nmax |ring - one process| / max |one process|: " +
                        textbook::distance(attn::dist::unshard(world, fwd.output, split), one16.output, 4.0 + 2.0 * double(P)),
                    {{"pairs", pairs}});
        }

        ch.step("backward");
        //! [backward]
        const attn::Tensor grad_output = attn::randn({1, 1, 16, 4});
        const attn::SDPAGradients grads = attn::scaled_dot_product_attention_backward(grad_output, q16, k16, v16, one16, {.is_causal = true});
        for (const SequenceSplit split : {SequenceSplit::contiguous, SequenceSplit::zigzag, SequenceSplit::striped}) {
            const attn::dist::RingOptions causal{.is_causal = true, .split = split};
            const attn::Tensor ql = attn::dist::shard(q16, P, rank, split), kl = attn::dist::shard(k16, P, rank, split),
                               vl = attn::dist::shard(v16, P, rank, split);
            const attn::dist::RingForward fwd = attn::dist::ring_attention_forward(world, ql, kl, vl, causal);
            attn::dist::RingGradients g;
            const auto sent = textbook::bytes_sent(world, [&] {
                g = attn::dist::ring_attention_backward(world, attn::dist::shard(grad_output, P, rank, split), ql, kl, vl, fwd, causal);
            });
            //! [backward]
            const auto dist = [&](const attn::Tensor& local, const attn::Tensor& whole) {
                return textbook::distance(attn::dist::unshard(world, local, split), whole, 4.0 + 2.0 * double(P));
            };
            ch.show(std::string(attn::dist::split_name(split)) + ": dQ, dK, dV against one process's, and bytes sent",
                    textbook::labelled_lines({{"dQ", dist(g.grad_query, grads.grad_query)},
                                              {"dK", dist(g.grad_key, grads.grad_key)},
                                              {"dV", dist(g.grad_value, grads.grad_value)},
                                              {"bytes", textbook::bytes_line(sent, (P - 1) * 4 * 4 * 4 * 4 + 2 * 4 * 4 * 4)}}));
        }

        ch.step("memory");
        //! [memory]
        const auto forward_bytes = textbook::bytes_sent(world, [&] {
            attn::dist::ring_attention_forward(world, attn::dist::shard(q16, P, rank, SequenceSplit::zigzag),
                                               attn::dist::shard(k16, P, rank, SequenceSplit::zigzag),
                                               attn::dist::shard(v16, P, rank, SequenceSplit::zigzag), {.is_causal = true, .split = SequenceSplit::zigzag});
        });
        //! [memory]
        ch.show("a forward's bytes per rank, zigzag: (P - 1) shifts of 2 x 4 tokens x 4 numbers x 4 bytes",
                textbook::bytes_line(forward_bytes, (P - 1) * 2 * 4 * 4 * 4));
        ch.show("what one rank holds, 6 b c h numbers, for T = 1,048,576 tokens, b = 1, h = 4096",
                ch28::memory_table(1u << 20, 4096));
    });
}
