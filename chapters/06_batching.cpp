// Chapter 6: batches and the CausalAttention class (notebook 002 In [14]-[19], notebook 004
// In [52]-[62]).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attn/attention.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/nn.hpp"
#include "attn/print.hpp"

namespace {

using attn::nn::BernoulliBackend;

std::string draws_now() {
    return std::to_string(attn::default_generator().draws_since_seed());
}

}  // namespace

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_06_batching", "Chapter 6: batches and the CausalAttention class");
    textbook::Printer book(options, "Chapter 6 · Batches and the CausalAttention class");
    const std::string backend = attn::nn::backend_name(options.backend);

    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]

    book.prose(
        "So far one sequence of six tokens, a [6, 3] tensor, went through attention at a "
        "time. Models train on batches: several sequences of the same length stacked along "
        "a new first dimension. The sentence of the earlier chapters, twice, makes a batch "
        "of two.");
    book.book("002-In14", "inputs.shape", attn::repr(attn::shape_of(inputs)));

    //! [batch]
    const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // torch.stack((inputs, inputs), dim=0)
    //! [batch]
    const std::string batch_text = attn::repr(batch) + "\n=====\n" + attn::repr(attn::shape_of(batch));
    book.book("002-In15", "batch = torch.stack((inputs, inputs), dim=0), and its shape", batch_text);
    book.prose(
        "A three-dimensional tensor: two input texts (the batch size), six tokens each, "
        "each token a three-dimensional embedding. The notebook builds the batch once more "
        "next to the class, and fixes the sizes of the layer:");
    const std::size_t d_in = inputs.shape().back();  // inputs.shape[-1]
    const std::size_t d_out = 2;
    book.book("002-In17-1", "the batch again (the cell re-runs In [15])", batch_text);
    book.book("002-In17-2", "d_in and d_out",
              "d_in: " + std::to_string(d_in) + ", d_out: " + std::to_string(d_out));

    book.prose(
        "CausalAttention (notebook 002 In [16], 004 In [52], Raschka section 3.5.3) puts "
        "chapters 2 to 5 into one module that takes a batch [b, T, d_in]:\n\n"
        "- three bias-free Linear(d_in, d_out) layers, built in the order query, key, "
        "value, give queries, keys and values [b, T, d_out] (Linear acts on the last "
        "dimension, whatever comes before it);\n\n"
        "- attn_scores = queries @ keys.transpose(1, 2): the keys' token and feature "
        "dimensions swap, [b, T, d_out] -> [b, d_out, T], so the product is one [T, T] "
        "score matrix per sequence, [b, T, T];\n\n"
        "- the mask is a buffer triu(ones(context_length, context_length), diagonal=1) "
        "(register_buffer: it is state, not a weight, and moves with the module); "
        "mask.bool()[:T, :T] cuts it to the tokens at hand, and masked_fill_ puts -inf "
        "above the diagonal; the [T, T] mask broadcasts over the batch;\n\n"
        "- softmax(attn_scores / sqrt(d_k)), then dropout on the weights (chapter 5), then "
        "context_vec = attn_weights @ values, [b, T, d_out].\n\n"
        "With torch.manual_seed(123) and dropout 0, notebook 002 In [18] and [19]:");
    //! [causal]
    attn::manual_seed(123);
    const std::size_t context_length = batch.shape()[1];  // batch.shape[1]
    const attn::CausalAttention ca({.d_in = d_in, .d_out = d_out, .context_length = context_length, .dropout = 0.0, .qkv_bias = false, .backend = options.backend});
    const attn::Tensor context_vecs = ca(batch);
    //! [causal]
    book.book("002-In19", "context_vecs = ca(batch), seed 123, dropout 0",
              "Context vectors:\n" + attn::repr(context_vecs) + "\n\nShape: " +
                  attn::repr(attn::shape_of(context_vecs)));
    book.fresh("32-bit draws since the seed: 3 Linear(3, 2) layers of 6, dropout 0 draws nothing",
               draws_now());

    book.prose(
        "Each step, with the shapes PyTorch would print. The two sequences of the batch "
        "are the same sentence, so their results are the same too: the batch dimension "
        "only carries sequences side by side, nothing mixes across it.");
    //! [steps]
    const auto steps = ca.forward_steps(batch);
    //! [steps]
    book.fresh("queries, keys.transpose(1, 2), attn_scores, attn_weights, context_vec: shapes",
               "queries:               " + attn::repr(attn::shape_of(steps.queries)) +
                   "\nkeys.transpose(1, 2):  " +
                   attn::repr(attn::shape_of(attn::transpose(steps.keys, 1, 2))) +
                   "\nattn_scores:           " + attn::repr(attn::shape_of(steps.attn_scores)) +
                   "\nattn_weights:          " + attn::repr(attn::shape_of(steps.attn_weights)) +
                   "\ncontext_vec:           " + attn::repr(attn::shape_of(steps.context_vec)));
    book.fresh("the masked scores and the weights of the first sequence (batch element 0)",
               attn::repr(attn::select(steps.attn_scores, 0)) + "\n\n" +
                   attn::repr(attn::select(steps.attn_weights, 0)));
    book.fresh("ca.mask.bool()[:6, :6]: True = masked", attn::repr(attn::causal_mask_for("ca", ca.mask, 6)));

    book.prose(
        "Notebook 004 runs the same class with dropout 0.5 (In [62]), right after "
        "torch.manual_seed(123). Dropout acts on the [2, 6, 6] weights: on the portable "
        "backend (notebook 004's) that is 72 elements, two 32-bit draws each, after the 18 "
        "draws of the layers. Every sequence gets its own part of the mask, so the two "
        "identical sequences now give different context vectors. This run uses the " +
        backend + " backend (--dropout-backend)" +
        (options.backend == BernoulliBackend::mkl
             ? "; notebook 004 was printed by the portable one, so the block below cannot "
               "match the book on this backend."
             : "."));
    //! [dropout]
    attn::manual_seed(123);
    const attn::CausalAttention ca_dropout({.d_in = 3, .d_out = 2, .context_length = context_length, .dropout = 0.5, .qkv_bias = false, .backend = options.backend});
    const auto dropped = ca_dropout.forward_steps(batch);
    //! [dropout]
    book.book("004-In62",
              "[" + backend + " backend] CausalAttention(d_in=3, d_out=2, context_length=6, "
              "dropout=0.5) on the batch, seed 123",
              "Batched Context Matrices: \n\n " + attn::numpy_str(dropped.context_vec));
    book.fresh("[" + backend + " backend] 32-bit draws since the seed", draws_now());
    book.fresh("[" + backend + " backend] the weights after dropout (kept ones doubled), "
                   "batch element 1",
               attn::repr(attn::select(dropped.dropped_weights, 1)));
    book.prose(
        "The first row of the second sequence is all zeros: token 0 attends only to "
        "itself, dropout removed that one weight, and nothing is left to average. Its "
        "context vector prints as [0. 0.].\n\n"
        "NumPy prints (.detach().numpy()) show every float32 to its last bit, so the "
        "comparison with the book is number by number: the last bits depend on the order "
        "in which the matrix products add their terms and on how exp is computed, which "
        "differ between machines and builds (see \"Last bits\" in the notes).");

    book.prose(
        "The mask has context_length rows. A longer input cannot be masked: in PyTorch, "
        "mask.bool()[:7, :7] silently returns the 6 x 6 mask and masked_fill_ then fails "
        "to broadcast it over [2, 7, 7] (\"The size of tensor a (7) must match the size of "
        "tensor b (6)\"). The library checks first and says what is wrong:");
    //! [too_long]
    const attn::Tensor seven = attn::cat({batch, attn::slice(batch, 1, 0, 1)}, 1);  // [2, 7, 3]
    std::string error;
    try {
        (void)ca(seven);
    } catch (const std::invalid_argument& e) {
        error = std::string("std::invalid_argument: ") + e.what();
    }
    //! [too_long]
    book.fresh("ca(batch of 7 tokens) with context_length = 6",
               "input: " + attn::repr(attn::shape_of(seven)) + "\n" +
                   (error.empty() ? "no error (unexpected)" : error));
    return 0;
}
