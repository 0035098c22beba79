// Chapter 10: from context vectors to the next-token loss (notebook 001 In [1]-[21]). Prose: docs/chapters/.
#include <cmath>
#include <limits>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "10_loss.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "10_loss", .seeded = true}, [](textbook::Chapter& ch) {
        const float inf = std::numeric_limits<float>::infinity();

        ch.step("modules");
        //! [modules]
        attn::set_printoptions(/*precision=*/2, /*linewidth=*/200);
        const std::size_t V = 100, d = 768, T = 5;  // vocabulary size, embedding dimension, sequence length
        attn::manual_seed(ch.seed(123));
        const attn::nn::Embedding emb(V, d);  // weight [V, d] ~ normal_(0, 1)
        const attn::nn::Linear clf(d, V);     // classification head
        const attn::nn::Linear q_proj(d, d), k_proj(d, d), v_proj(d, d);
        const attn::LongTensor tokens = attn::randint(static_cast<std::int64_t>(V), {T});
        //! [modules]
        ch.book("001-In05", "tokens, tokens.shape", ch10::with_shape(tokens));
        //! [modules.2]
        const attn::Tensor x = emb(tokens);  // [T, d]: row i is emb.weight[tokens[i]]
        const attn::Tensor q = q_proj(x), k = k_proj(x), v = v_proj(x);  // [T, d] each
        //! [modules.2]
        ch.book("001-In07", "q.shape", attn::repr(attn::shape_of(q)));

        ch.step("raw_att");
        //! [raw_att]
        const attn::Tensor raw_att = attn::matmul(q, attn::T(k)) / std::sqrt(static_cast<float>(d));
        //! [raw_att]
        ch.book("001-In08", "raw_att, raw_att.shape", ch10::with_shape(raw_att));

        ch.step("tril");
        //! [tril]
        const attn::Tensor tril_att = attn::tril(raw_att);
        //! [tril]
        ch.book("001-In09", "torch.tril(raw_att)", ch10::with_shape(tril_att));
        //! [tril.2]
        const attn::Tensor masked_att = attn::masked_fill(tril_att, attn::eq(tril_att, 0.0f), -inf);
        //! [tril.2]
        ch.book("001-In10", "masked_fill_(masked_att == 0., float('-inf'))", ch10::with_shape(masked_att));

        ch.step("softmax");
        //! [softmax]
        const attn::Tensor attn_weights = attn::softmax(masked_att, -1);
        //! [softmax]
        ch.book("001-In11", "torch.softmax(masked_att, -1)", ch10::with_shape(attn_weights));
        const attn::Tensor printed_scores = textbook::printed_matrix(ch.data().at("001-In10"), T, T);
        ch.show("softmax of the notebook's printed In [10]", attn::repr(attn::softmax(printed_scores, -1)));

        ch.step("new_v");
        //! [new_v]
        const attn::Tensor new_v = attn::matmul(attn_weights, v);  // [T, T] @ [T, d] -> [T, d]
        //! [new_v]
        ch.book("001-In12", "new_v, new_v.shape", ch10::with_shape(new_v));

        ch.step("fragile");
        //! [fragile]
        const attn::Tensor queries = attn::tensor({{1.0f, 0.0f, 0.0f, 0.0f},
                                                   {0.5f, 1.0f, 0.0f, 0.0f},
                                                   {1.0f, -1.0f, 0.5f, 0.0f},
                                                   {0.5f, 0.0f, 1.0f, 1.0f}});
        const attn::Tensor keys = attn::tensor({{1.0f, 0.0f, 0.0f, 0.5f},
                                                {1.0f, 1.0f, 0.0f, 0.0f},
                                                {0.0f, 0.0f, 2.0f, 0.0f},
                                                {0.5f, 0.5f, 0.5f, 0.5f}});
        const attn::Tensor values = attn::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}, {-1.0f, 2.0f}});
        const attn::Tensor scores = attn::matmul(queries, attn::T(keys)) / 2.0f;
        const attn::Tensor scores_tril = attn::tril(scores);
        const attn::Tensor masked_eq0 = attn::masked_fill(scores_tril, attn::eq(scores_tril, 0.0f), -inf);
        const attn::Tensor weights_eq0 = attn::softmax(masked_eq0, -1);
        const attn::BoolTensor causal_mask = attn::eq(attn::triu(attn::ones({4, 4}), 1), 1.0f);  // the future
        const attn::Tensor masked_bool = attn::masked_fill(scores, causal_mask, -inf);
        const attn::Tensor weights_bool = attn::softmax(masked_bool, -1);
        //! [fragile]
        ch.show("scores: the 0.00 at [2, 1] is a real score", attn::repr(scores));
        ch.show("masked where tril(scores) == 0: [2, 1] too", attn::repr(masked_eq0));
        ch.show("softmax of that: row 2 ignores position 1", attn::repr(weights_eq0));
        ch.show("masked by triu(ones, 1), softmax", attn::repr(masked_bool) + "\n" + attn::repr(weights_bool));
        ch.show("weights @ values: == 0 mask, then boolean mask",
                attn::repr(attn::matmul(weights_eq0, values)) + "\n" +
                    attn::repr(attn::matmul(weights_bool, values)));
        //! [fragile.2]
        const attn::BoolTensor future = attn::eq(attn::triu(attn::ones({T, T}), 1), 1.0f);
        const attn::Tensor attn_weights_bool = attn::softmax(attn::masked_fill(raw_att, future, -inf), -1);
        //! [fragile.2]
        ch.show("here: boolean-mask weights == the == 0 mask's",
                attn::repr_bool(attn::allclose(attn_weights_bool, attn_weights, 0.0, 0.0)));

        ch.step("sdpa");
        //! [sdpa]
        const attn::BoolTensor attn_mask = attn::eq(attn::tril(attn::ones({T, T})), 1.0f);
        const attn::Tensor sdpa_mask = attn::scaled_dot_product_attention(q, k, v, {.attn_mask = &attn_mask});
        const attn::Tensor sdpa_causal = attn::scaled_dot_product_attention(q, k, v, {.is_causal = true});
        //! [sdpa]
        ch.book("001-In13", "attn_mask = torch.tril(torch.ones(T, T)) == 1", attn::repr(attn_mask));
        ch.book("001-In14", "sdpa(q, k, v, attn_mask=attn_mask)", attn::repr(sdpa_mask));
        ch.book("001-In15", "allclose(_, new_v)", attn::repr_bool(attn::allclose(sdpa_mask, new_v, 1e-5, 1e-5)));
        ch.book("001-In16", "sdpa(q, k, v, is_causal=True)", attn::repr(sdpa_causal));
        ch.book("001-In17", "allclose(_, new_v)", attn::repr_bool(attn::allclose(sdpa_causal, new_v, 1e-5, 1e-5)));

        ch.step("logits");
        ch.book("001-In18", "new_v.shape, clf", attn::repr_tuple({attn::repr(attn::shape_of(new_v)), attn::nn::repr(clf)}));
        //! [logits]
        const attn::Tensor logits = clf(new_v);  // [T, V]
        const attn::LongTensor predicted = attn::argmax(logits, -1);  // [T]
        //! [logits]
        ch.book("001-In19", "logits.argmax(-1), logits.shape, logits.argmax(-1).shape",
                attn::repr_tuple({attn::repr(predicted), attn::repr(attn::shape_of(logits)),
                                  attn::repr(attn::shape_of(predicted))}));

        ch.step("loss");
        //! [loss]
        const attn::LongTensor targets = attn::arange(static_cast<std::int64_t>(T));  // dummy targets
        const attn::Tensor loss = attn::cross_entropy(logits, targets, /*ignore_index=*/-1);
        //! [loss]
        ch.book("001-In20", "targets = torch.arange(0, T)", attn::repr(targets));
        ch.book("001-In21", "cross_entropy(logits, targets, ignore_index=-1)", attn::repr(loss));
        //! [loss.2]
        const attn::Tensor log_probs = attn::log_softmax(logits, -1);  // [T, V]
        float total = 0.0f;
        for (std::size_t i = 0; i < T; ++i) total -= log_probs(i, static_cast<std::size_t>(targets(i)));
        //! [loss.2]
        ch.show("-mean(log_softmax(logits)[i, targets[i]]), and ln(V)",
                attn::repr(attn::scalar_tensor(total / static_cast<float>(T))) + "\n" +
                    attn::repr(attn::scalar_tensor(std::log(static_cast<float>(V)))));

        ch.step("ignore");
        //! [ignore]
        attn::LongTensor targets_pad = targets;
        targets_pad(T - 1) = -1;
        const attn::Tensor loss_pad = attn::cross_entropy(logits, targets_pad, -1);
        attn::LongTensor targets_none = targets;
        targets_none.fill(-1);
        const attn::Tensor loss_none = attn::cross_entropy(logits, targets_none, -1);
        attn::LongTensor targets_bad = targets;
        targets_bad(T - 1) = static_cast<std::int64_t>(V);
        //! [ignore]
        ch.show("targets[-1] = -1: targets, loss", attn::repr(targets_pad) + "\n" + attn::repr(loss_pad));
        ch.show("every target -1: cross_entropy is nan", attn::repr(loss_none));
        ch.show("a target of 100 (not ignore_index)",
                textbook::error_text([&] { attn::cross_entropy(logits, targets_bad, -1); }));
    });
}
