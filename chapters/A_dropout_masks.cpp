// Appendix A: why two machines print different masks. PyTorch's two CPU Bernoulli backends
// side by side (notebook 002 was printed by MKL's, notebook 004 by the portable one), and the
// generator histories behind notebook 004 In [51] and In [64]. Prose:
// docs/chapters/A_dropout_masks.md.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xmath.hpp>

#include "attn/modules/causal.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "A_dropout_masks.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "A_dropout_masks", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
        using attn::nn::BernoulliBackend;

        ch.step("ones");
        //! [ones]
        const attn::Tensor example = attn::ones({6, 6});
        const attn::nn::Dropout dropout_mkl(0.5, BernoulliBackend::mkl);
        const attn::nn::Dropout dropout_portable(0.5, BernoulliBackend::portable);
        attn::manual_seed(ch.seed(123));
        const attn::Tensor ones_mkl = dropout_mkl(example);
        const std::string draws_mkl = textbook::draws_since_seed();
        attn::manual_seed(ch.seed(123));
        const attn::Tensor ones_portable = dropout_portable(example);
        const std::string draws_portable = textbook::draws_since_seed();
        //! [ones]
        ch.show("[portable backend] 002 In [12]'s cell: nn.Dropout(0.5)(torch.ones(6, 6))",
                "Example:\n" + attn::repr(example) + "\n\nDropout:\n" + attn::repr(ones_portable));
        ch.book("rch03-In31", "[portable backend] Raschka's same cell, print(dropout(example))",
                attn::repr(ones_portable));
        ch.show("32-bit draws the call made, MKL and portable",
                "MKL:      " + draws_mkl + "\nportable: " + draws_portable);

        ch.step("weights");
        //! [weights]
        const attn::Tensor attn_weights = textbook::causal_attention_weights(ch.seed(789));  // chapter 4
        attn::manual_seed(ch.seed(123));
        const attn::Tensor weights_portable = dropout_portable(attn_weights);
        //! [weights]
        ch.book("rch03-In32", "[portable backend] 002 In [13]'s cell: dropout(attn_weights)",
                attn::repr(weights_portable));

        ch.step("fourth");
        //! [fourth]
        attn::manual_seed(ch.seed(123));
        std::vector<attn::Tensor> runs;
        std::vector<std::string> draws_before;
        for (int run = 0; run < 4; ++run) {  // 004 In [51], four times
            draws_before.push_back(textbook::draws_since_seed());
            runs.push_back(dropout_portable(attn_weights));
        }
        attn::manual_seed(ch.seed(123));
        attn::Tensor fourth_mkl;
        for (int run = 0; run < 4; ++run) fourth_mkl = dropout_mkl(attn_weights);
        //! [fourth]
        for (int run = 0; run < 3; ++run)
            ch.show("[portable backend] run " + std::to_string(run + 1) + " of In [51]'s cell, " +
                        draws_before[run] + " draws after the seed",
                    "Dropout applied to -inf Attention-Weights: \n " + attn::numpy_str(runs[run]));
        ch.show("[MKL backend] run 4 of In [51]'s cell after torch.manual_seed(123)",
                "Dropout applied to -inf Attention-Weights: \n " + attn::numpy_str(fourth_mkl));

        ch.step("agreement");
        const std::string& in12 = ch.data().at("002-In12").text;
        const std::string& in51 = ch.data().at("004-In51").text;
        ch.show("002 In [12]'s printed mask against each backend (seed 123, first call)",
                "MKL:      " + chA::mask_agreement(in12, ones_mkl, example) +
                    "\nportable: " + chA::mask_agreement(in12, ones_portable, example));
        ch.show("004 In [51]'s printed mask against each backend (fourth call, below the diagonal)",
                "MKL:      " + chA::mask_agreement(in51, fourth_mkl, attn_weights) +
                    "\nportable: " + chA::mask_agreement(in51, runs[3], attn_weights),
                {{"runs[3]", runs[3]}});

        ch.step("fractions");
        std::vector<textbook::Row> kept;
        for (const double p : {0.1, 0.5, 0.9})
            for (const auto backend : {BernoulliBackend::mkl, BernoulliBackend::portable}) {
                attn::manual_seed(123);
                const attn::Tensor mask = attn::nn::Dropout(p, backend).keep_mask({1000000});
                kept.push_back({"p = " + textbook::fixed(p, 1), attn::nn::backend_name(backend),
                                "kept " + textbook::fixed(static_cast<double>(xt::sum(mask)()) / 1e6, 6),
                                "(1 - p = " + textbook::fixed(1.0 - p, 1) + ")"});
            }
        ch.show("kept fraction of 10^6 elements after torch.manual_seed(123)", textbook::table(kept));

        ch.step("history");
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // [2, 6, 3], chapter 6
        //! [history]
        attn::manual_seed(ch.seed(123));
        const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5, .backend = ch.backend()});
        (void)ca(batch);  // In [62]
        const std::string after_62 = textbook::draws_since_seed();
        std::vector<attn::Tensor> outputs;
        std::vector<std::string> after_run;
        for (int run = 0; run < 2; ++run) {  // In [64], twice
            const attn::MultiHeadAttention multi({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.2, .num_heads = 2, .out_bias = false, .backend = ch.backend()});
            outputs.push_back(multi(batch));
            after_run.push_back(textbook::draws_since_seed());
        }
        //! [history]
        const std::string backend = std::string("[") + ch.backend_name() + " backend] ";
        ch.show(backend + "32-bit draws since torch.manual_seed(123)",
                "after In [62]:             " + after_62 + "\nafter In [64], first run:  " +
                    after_run[0] + "\nafter In [64], second run: " + after_run[1]);
        ch.show(backend + "In [64], first run (the notebook overwrote it)",
                "First head Context Matrix: \n" + attn::numpy_str(attn::select(outputs[0], 0)) +
                    "\n\nSecond head Context Matrix: \n" + attn::numpy_str(attn::select(outputs[0], 1)));
        ch.book("004-In64-1", backend + "In [64], second run: batch element 0",
                "First head Context Matrix: \n" + attn::numpy_str(attn::select(outputs[1], 0)));
        ch.book("004-In64-2", backend + "In [64], second run: batch element 1",
                "Second head Context Matrix: \n" + attn::numpy_str(attn::select(outputs[1], 1)));
    });
}
