// Chapter 5: dropout (notebook 002 In [12]-[13] on the MKL Bernoulli backend, notebook 004
// In [51] on the portable one). How the two backends draw: appendix A. Prose:
// docs/chapters/05_dropout.md.
#include <cmath>
#include <limits>

#include <xtensor/xoperation.hpp>

#include "attn/attention.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/nn.hpp"
#include "attn/print.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "05_dropout", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
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
        attn::manual_seed(ch.seed(789));  // chapter 4's causal attention weights
        const attn::SelfAttention_v2 sa_v2(3, 2);
        const attn::Tensor keys = sa_v2.W_key(inputs);
        const attn::Tensor attn_scores = attn::matmul(sa_v2.W_query(inputs), attn::T(keys));
        const attn::BoolTensor causal_mask = attn::to_bool(attn::triu(attn::ones({6, 6}), 1));
        const float inf = std::numeric_limits<float>::infinity();
        const float d_k = static_cast<float>(keys.shape().back());
        const attn::Tensor attn_weights = attn::softmax(
            attn::Tensor(attn::masked_fill(attn_scores, causal_mask, -inf) / std::sqrt(d_k)), -1);
        //! [weights]
        //! [weights.2]
        attn::manual_seed(ch.seed(123));
        const attn::Tensor dropped = dropout(attn_weights);
        //! [weights.2]
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
