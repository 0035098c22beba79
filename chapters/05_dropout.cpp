// Chapter 5: dropout (notebook 002 In [12]-[13] on the MKL Bernoulli backend, notebook 004
// In [51] on the portable one). How the two backends draw: appendix A. Prose:
// docs/chapters/05_dropout.md.
#include <cmath>
#include <limits>

#include <xtensor/xoperation.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "05_dropout", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        using attn::nn::BernoulliBackend;

        ch.step("ones");
        //! [ones]
        attn::manual_seed(ch.seed(123));
        const attn::nn::Dropout dropout(0.5, BernoulliBackend::mkl);  // dropout rate of 50%
        const attn::Tensor example = attn::ones({6, 6});
        //! [ones]
        ch.book("002-In12", "[MKL backend] torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6))",
                "Example:\n" + attn::repr(example) + "\n\nDropout:\n" + attn::repr(dropout(example)));

        ch.step("weights");
        //! [weights]
        const attn::Tensor attn_weights = textbook::causal_attention_weights(ch.seed(789));  // chapter 4
        attn::manual_seed(ch.seed(123));
        const attn::Tensor dropped = dropout(attn_weights);
        //! [weights]
        ch.book("002-In13", "[MKL backend] torch.manual_seed(123); dropout(attn_weights)",
                attn::repr(dropped));
        ch.show("[MKL backend] dropout(attn_weights) / attn_weights (2 where kept)",
                attn::repr(attn::Tensor(xt::where(xt::equal(attn_weights, 0.0f), 0.0f,
                                                  dropped / attn_weights))));

        ch.step("fourth");
        //! [fourth]
        attn::manual_seed(ch.seed(123));
        const attn::nn::Dropout dropout_portable(0.5, BernoulliBackend::portable);
        attn::Tensor fourth;
        for (int run = 0; run < 4; ++run) fourth = dropout_portable(attn_weights);
        //! [fourth]
        ch.book("004-In51", "[portable backend] the fourth run after torch.manual_seed(123)",
                "Dropout applied to -inf Attention-Weights: \n " + attn::numpy_str(fourth));

        ch.step("eval");
        //! [eval]
        attn::manual_seed(ch.seed(123));
        attn::nn::Dropout dropout_eval(0.5, ch.backend());
        dropout_eval.training = false;  // dropout.eval()
        const attn::Tensor weights_eval = dropout_eval(attn_weights);
        //! [eval]
        ch.show(std::string("[") + ch.backend_name() + " backend] dropout.eval(): output, torch.equal, draws made",
                attn::repr(weights_eval) + "\n" +
                    attn::repr_bool(xt::all(xt::equal(weights_eval, attn_weights))) + "\n" +
                    textbook::draws_since_seed());
    });
}
