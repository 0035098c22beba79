// Chapter 10: from context vectors to the next-token loss (notebook 001 In [1]-[21]):
// one head of causal attention over embedded tokens, a classification head, cross-entropy.
#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/nn.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_10_loss", "Chapter 10: from context vectors to the next-token loss");
    textbook::Printer book(options, "Chapter 10 · From context vectors to the next-token loss");
    const float inf = std::numeric_limits<float>::infinity();

    book.prose(
        "Notebook 001 takes one head of causal attention all the way to a loss: five random "
        "tokens from a vocabulary of 100 are embedded in 768 dimensions, projected to "
        "queries, keys and values, mixed by causally masked attention, and a classification "
        "head turns each context vector into 100 logits that cross-entropy compares with "
        "the next token. No mini-batches, no padding, one head. It prints with two decimals "
        "on lines of up to 200 characters.");
    //! [printoptions]
    attn::set_printoptions(/*precision=*/2, /*linewidth=*/200);
    //! [printoptions]

    book.prose(
        "The notebook never calls torch.manual_seed: its numbers came from a random seed "
        "and cannot be drawn again (PyTorch seeds the default generator from /dev/urandom; "
        "finding those 32 bits would mean replaying about 1.9 million draws per candidate "
        "seed). This chapter picks torch.manual_seed(123), so its numbers differ from the "
        "notebook's; under each block the notebook's own output follows for comparison, "
        "and the tests check the relations between the notebook's printed blocks. "
        "tools/oracle/ch10_print_cases.py ran the same cells with seed 123 in PyTorch "
        "1.13: the tests check this chapter's numbers against that run.");
    //! [modules]
    const std::size_t V = 100;  // vocabulary size
    const std::size_t d = 768;  // embedding dimension
    const std::size_t T = 5;    // sequence length
    attn::manual_seed(123);
    const attn::nn::Embedding emb(V, d);  // weight [V, d] ~ normal_(0, 1)
    const attn::nn::Linear clf(d, V);     // classification head
    const attn::nn::Linear q_proj(d, d), k_proj(d, d), v_proj(d, d);
    //! [modules]

    //! [tokens]
    const attn::LongTensor tokens = attn::randint(static_cast<std::int64_t>(V), {T});
    //! [tokens]
    book.book("001-In05", "tokens = torch.randint(V, (T,)); tokens, tokens.shape",
              attn::repr_tuple({attn::repr(tokens), attn::repr(attn::shape_of(tokens))}));

    //! [qkv]
    const attn::Tensor x = emb(tokens);  // [T, d]: row i is emb.weight[tokens[i]]
    const attn::Tensor q = q_proj(x), k = k_proj(x), v = v_proj(x);  // [T, d] each
    //! [qkv]
    book.book("001-In07", "q, k, v = q_proj(x), k_proj(x), v_proj(x); q.shape",
              attn::repr(attn::shape_of(q)));

    book.prose(
        "All T x T scores at once: row i holds how strongly token i's query matches every "
        "key, scaled by 1/sqrt(d) so the softmax does not saturate.");
    //! [raw_att]
    const attn::Tensor raw_att = attn::matmul(q, attn::T(k)) / std::sqrt(static_cast<float>(d));
    //! [raw_att]
    book.book("001-In08", "raw_att = q @ k.t() / sqrt(d); raw_att, raw_att.shape",
              attn::repr_tuple({attn::repr(raw_att), attn::repr(attn::shape_of(raw_att))}));

    book.prose(
        "Row i may only use positions 0..i: tril keeps the lower triangle and writes 0 "
        "above it. The notebook then turns those zeros into -inf by looking for values "
        "equal to 0.");
    //! [tril]
    const attn::Tensor tril_att = attn::tril(raw_att);
    //! [tril]
    book.book("001-In09", "masked_att = torch.tril(raw_att); masked_att, masked_att.shape",
              attn::repr_tuple({attn::repr(tril_att), attn::repr(attn::shape_of(tril_att))}));
    //! [fill_eq0]
    const attn::Tensor masked_att = attn::masked_fill(tril_att, attn::eq(tril_att, 0.0f), -inf);
    //! [fill_eq0]
    book.book("001-In10", "masked_att.masked_fill_(masked_att == 0., float('-inf'))",
              attn::repr_tuple({attn::repr(masked_att), attn::repr(attn::shape_of(masked_att))}));
    //! [softmax]
    const attn::Tensor attn_weights = attn::softmax(masked_att, -1);
    //! [softmax]
    book.book("001-In11", "masked_att = torch.softmax(masked_att, -1): rows sum to 1, 0 above the diagonal",
              attn::repr_tuple({attn::repr(attn_weights), attn::repr(attn::shape_of(attn_weights))}));
    book.prose(
        "The notebook's own numbers obey the same step: the softmax of the scores it "
        "printed in In [10] gives the weights it printed in In [11], up to the rounding "
        "of two printed decimals.");
    const attn::Tensor printed_scores = textbook::printed_matrix(book.data().at("001-In10"), T, T);
    book.fresh("softmax of the notebook's printed In [10] (compare with its In [11] above)",
               attn::repr(attn::softmax(printed_scores, -1)));

    //! [new_v]
    const attn::Tensor new_v = attn::matmul(attn_weights, v);  // [T, T] @ [T, d] -> [T, d]
    //! [new_v]
    book.book("001-In12", "new_v = masked_att @ v; new_v, new_v.shape (columns summarised)",
              attn::repr_tuple({attn::repr(new_v), attn::repr(attn::shape_of(new_v))}));

    book.prose(
        "A fragile step. In [10] masks every score that equals 0 after tril, but a genuine "
        "score can be exactly 0 too: a query orthogonal to an earlier key. It is then "
        "masked as if it lay in the future, and its row of weights is wrong. With random "
        "float32 scores an exact 0 is very unlikely, which is why the notebook never sees "
        "it. Crafted queries and keys (d = 4, so sqrt(d) = 2 exactly) make query 2 "
        "orthogonal to key 1:");
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
    // the notebook's way: "== 0 after tril" also hits the genuine 0 at [2, 1]
    const attn::Tensor weights_eq0 =
        attn::softmax(attn::masked_fill(scores_tril, attn::eq(scores_tril, 0.0f), -inf), -1);
    // the robust way: a boolean mask that says where the future is, whatever the scores
    const std::size_t n = scores.shape()[0];
    const attn::BoolTensor causal_mask = attn::eq(attn::triu(attn::ones({n, n}), 1), 1.0f);
    const attn::Tensor weights_bool = attn::softmax(attn::masked_fill(scores, causal_mask, -inf), -1);
    //! [fragile]
    book.fresh("scores = queries @ keys.T / 2: the 0.00 at [2, 1] is a real score",
               attn::repr(scores));
    book.fresh("tril(scores).masked_fill(tril(scores) == 0, -inf): [2, 1] is masked too",
               attn::repr(attn::masked_fill(scores_tril, attn::eq(scores_tril, 0.0f), -inf)));
    book.fresh("softmax of that: row 2 ignores position 1 (wrong)", attn::repr(weights_eq0));
    book.fresh("scores.masked_fill(triu(ones, 1) == 1, -inf), softmax: row 2 attends to 0, 1, 2",
               attn::repr(attn::masked_fill(scores, causal_mask, -inf)) + "\n" +
                   attn::repr(weights_bool));
    book.fresh("context vectors weights @ values: == 0 mask, then boolean mask (row 2 differs)",
               attn::repr(attn::matmul(weights_eq0, values)) + "\n" +
                   attn::repr(attn::matmul(weights_bool, values)));
    book.prose(
        "On this chapter's random scores the two masks agree, since no score below the "
        "diagonal is exactly 0:");
    const attn::BoolTensor future = attn::eq(attn::triu(attn::ones({T, T}), 1), 1.0f);
    const attn::Tensor attn_weights_bool = attn::softmax(attn::masked_fill(raw_att, future, -inf), -1);
    book.fresh("weights from the boolean mask == weights from the == 0 mask, element for element",
               attn::repr_bool(attn::allclose(attn_weights_bool, attn_weights, 0.0, 0.0)));

    book.prose(
        "Sanity check against PyTorch's fused scaled_dot_product_attention (PyTorch 2.x): "
        "it takes a boolean attn_mask where True means \"may attend\" (the lower triangle, "
        "tril(ones) == 1), or is_causal=True. Both give the manual result.");
    //! [sdpa]
    const attn::BoolTensor attn_mask = attn::eq(attn::tril(attn::ones({T, T})), 1.0f);
    const attn::Tensor sdpa_mask = attn::scaled_dot_product_attention(q, k, v, attn_mask);
    const attn::Tensor sdpa_causal =
        attn::scaled_dot_product_attention(q, k, v, std::nullopt, /*is_causal=*/true);
    //! [sdpa]
    book.book("001-In13", "attn_mask = torch.tril(torch.ones(T, T)) == 1", attn::repr(attn_mask));
    book.book("001-In14", "scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)",
              attn::repr(sdpa_mask));
    book.book("001-In15", "torch.allclose(_, new_v, atol=1e-5)",
              attn::repr_bool(attn::allclose(sdpa_mask, new_v, 1e-5, 1e-5)));
    book.book("001-In16", "scaled_dot_product_attention(q, k, v, is_causal=True)",
              attn::repr(sdpa_causal));
    book.book("001-In17", "torch.allclose(_, new_v, atol=1e-5)",
              attn::repr_bool(attn::allclose(sdpa_causal, new_v, 1e-5, 1e-5)));

    book.prose(
        "Next-token prediction. A linear head maps each 768-dimensional context vector to "
        "100 logits, one per vocabulary entry; the argmax of a row is the predicted token "
        "(untrained, so arbitrary).");
    book.book("001-In18", "new_v.shape, clf",
              attn::repr_tuple({attn::repr(attn::shape_of(new_v)), attn::nn::repr(clf)}));
    //! [logits]
    const attn::Tensor logits = clf(new_v);  // [T, V]
    const attn::LongTensor predicted = attn::argmax(logits, -1);  // [T]
    //! [logits]
    book.book("001-In19", "logits = clf(new_v); logits.argmax(-1), logits.shape, logits.argmax(-1).shape",
              attn::repr_tuple({attn::repr(predicted), attn::repr(attn::shape_of(logits)),
                                attn::repr(attn::shape_of(predicted))}));

    book.prose(
        "Cross-entropy: for each position, the negative log-probability that the softmax "
        "of its logits gives the target token, averaged over the positions whose target is "
        "not ignore_index. Untrained logits are nearly equal, so each probability is about "
        "1/100 and the loss about ln 100 = 4.61.");
    //! [loss]
    const attn::LongTensor targets = attn::arange(static_cast<std::int64_t>(T));  // dummy targets
    const attn::Tensor loss = attn::cross_entropy(logits, targets, /*ignore_index=*/-1);
    //! [loss]
    book.book("001-In20", "targets = torch.arange(0, T)", attn::repr(targets));
    book.book("001-In21", "nn.functional.cross_entropy(logits, targets, ignore_index=-1)",
              attn::repr(loss));

    book.prose(
        "The same number by hand: log_softmax of each row, the entry at the target, "
        "negated and averaged.");
    //! [by_hand]
    const attn::Tensor log_probs = attn::log_softmax(logits, -1);  // [T, V]
    float total = 0.0f;
    for (std::size_t i = 0; i < T; ++i) total -= log_probs(i, static_cast<std::size_t>(targets(i)));
    //! [by_hand]
    book.fresh("-mean(log_softmax(logits)[i, targets[i]]), and ln(V)",
               attn::repr(attn::scalar_tensor(total / static_cast<float>(T))) + "\n" +
                   attn::repr(attn::scalar_tensor(std::log(static_cast<float>(V)))));

    book.prose(
        "ignore_index marks positions that carry no target, such as padding: they leave "
        "both the sum and the count. With the last target set to -1 the loss is the mean "
        "over four positions; with every target ignored it is 0 / 0 = nan, as in PyTorch. "
        "A target outside [0, V) that is not ignore_index is an error (PyTorch raises "
        "IndexError: Target 100 is out of bounds.).");
    //! [ignore]
    attn::LongTensor targets_pad = targets;
    targets_pad(T - 1) = -1;
    const attn::Tensor loss_pad = attn::cross_entropy(logits, targets_pad, -1);
    attn::LongTensor targets_none = targets;
    targets_none.fill(-1);
    const attn::Tensor loss_none = attn::cross_entropy(logits, targets_none, -1);
    //! [ignore]
    book.fresh("targets[-1] = -1; cross_entropy(logits, targets, ignore_index=-1)",
               attn::repr(targets_pad) + "\n" + attn::repr(loss_pad));
    book.fresh("every target -1: cross_entropy(...) is nan", attn::repr(loss_none));
    std::string error;
    try {
        attn::LongTensor bad = targets;
        bad(T - 1) = static_cast<std::int64_t>(V);
        attn::cross_entropy(logits, bad, -1);
        error = "(no error)";
    } catch (const std::invalid_argument& e) {
        error = std::string("std::invalid_argument: ") + e.what();
    }
    book.fresh("a target of 100 (not ignore_index)", error);
    return 0;
}
