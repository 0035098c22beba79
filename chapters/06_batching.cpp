// Chapter 6: batches and the CausalAttention class (notebook 002 In [14]-[19], notebook 004
// In [52]-[62]). Prose: docs/chapters/06_batching.md.
#include <stdexcept>
#include <string>

#include "attn/modules/causal.hpp"
#include "attn/attention/masks.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "06_batching", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        const std::string backend = std::string("[") + ch.backend_name() + " backend] ";

        ch.step("batch");
        //! [batch]
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // torch.stack((inputs, inputs), dim=0)
        //! [batch]
        ch.book("002-In14", "inputs.shape", attn::repr(attn::shape_of(inputs)));
        const std::string batch_text = attn::repr(batch) + "\n=====\n" + attn::repr(attn::shape_of(batch));
        ch.book("002-In15", "batch = torch.stack((inputs, inputs), dim=0), and its shape", batch_text);
        ch.book("rch03-In33", "batch.shape", attn::repr(attn::shape_of(batch)));

        ch.step("sizes");
        //! [sizes]
        const std::size_t d_in = inputs.shape().back();  // inputs.shape[-1]
        const std::size_t d_out = 2;
        //! [sizes]
        ch.book("002-In17-1", "the batch again (the cell re-runs In [15])", batch_text);
        ch.book("002-In17-2", "d_in and d_out",
                "d_in: " + std::to_string(d_in) + ", d_out: " + std::to_string(d_out));

        ch.step("causal");
        //! [causal]
        attn::manual_seed(ch.seed(123));
        const std::size_t context_length = batch.shape()[1];  // batch.shape[1]
        const attn::CausalAttention ca({.d_in = d_in, .d_out = d_out, .context_length = context_length, .backend = ch.backend()});
        const attn::Tensor context_vecs = ca(batch);
        //! [causal]
        ch.book("002-In19", "context_vecs = ca(batch), seed 123, dropout 0",
                "Context vectors:\n" + attn::repr(context_vecs) + "\n\nShape: " +
                    attn::repr(attn::shape_of(context_vecs)));
        ch.show("32-bit draws since the seed (3 Linear(3, 2) layers of 6)", textbook::draws_since_seed());
        ch.book("rch03-In34", "the same, as Raschka prints it",
                attn::repr(context_vecs) + "\ncontext_vecs.shape: " + attn::repr(attn::shape_of(context_vecs)));

        ch.step("steps");
        //! [steps]
        const auto steps = ca.forward_steps(batch);
        //! [steps]
        ch.show("the shapes of each step",
                "queries:               " + attn::repr(attn::shape_of(steps.queries)) +
                    "\nkeys.transpose(1, 2):  " + attn::repr(attn::shape_of(attn::transpose(steps.keys, 1, 2))) +
                    "\nattn_scores:           " + attn::repr(attn::shape_of(steps.attn_scores)) +
                    "\nattn_weights:          " + attn::repr(attn::shape_of(steps.attn_weights)) +
                    "\ncontext_vec:           " + attn::repr(attn::shape_of(steps.context_vec)));
        ch.show("masked scores and weights of batch element 0",
                attn::repr(attn::select(steps.attn_scores, 0)) + "\n\n" +
                    attn::repr(attn::select(steps.attn_weights, 0)));
        ch.show("ca.mask.bool()[:6, :6]: True = masked", attn::repr(attn::causal_mask_for("ca", ca.mask, 6)));

        ch.step("dropout");
        //! [dropout]
        attn::manual_seed(ch.seed(123));
        const attn::CausalAttention ca_dropout({.d_in = 3, .d_out = 2, .context_length = context_length, .dropout = 0.5, .backend = ch.backend()});
        const auto dropped = ca_dropout.forward_steps(batch);
        //! [dropout]
        ch.book("004-In62", backend + "CausalAttention(3, 2, 6, dropout=0.5)(batch), seed 123",
                "Batched Context Matrices: \n\n " + attn::numpy_str(dropped.context_vec));
        ch.show(backend + "32-bit draws since the seed", textbook::draws_since_seed());

        ch.step("dropped");
        ch.show(backend + "the weights after dropout, batch element 1",
                attn::repr(attn::select(dropped.dropped_weights, 1)), {{"dropped_weights", dropped.dropped_weights}});

        ch.step("too_long");
        //! [too_long]
        const attn::Tensor seven = attn::cat({batch, attn::slice(batch, 1, 0, 1)}, 1);  // [2, 7, 3]
        std::string error;
        try {
            (void)ca(seven);
        } catch (const std::invalid_argument& e) {
            error = std::string("std::invalid_argument: ") + e.what();
        }
        //! [too_long]
        ch.show("ca(batch of 7 tokens) with context_length = 6",
                "input: " + attn::repr(attn::shape_of(seven)) + "\n" +
                    (error.empty() ? "no error (unexpected)" : error));
    });
}
