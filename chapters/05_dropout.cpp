// Chapter 5: dropout (notebook 002 In [12]-[13], notebook 004 In [51]), with both of PyTorch's
// CPU Bernoulli backends: MKL's MCG31m1 stream (what printed notebook 002) and the portable
// per-element draw (what printed notebook 004).
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "attn/attention.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/nn.hpp"
#include "attn/print.hpp"

namespace {

using attn::nn::BernoulliBackend;

std::string other_name(BernoulliBackend backend) {
    return attn::nn::backend_name(backend == BernoulliBackend::mkl ? BernoulliBackend::portable
                                                         : BernoulliBackend::mkl);
}

// "k of n entries agree": a printed mask (the non-zero entries among the last mask.size()
// numbers of a printed block) against a keep-mask, counted only where `where` is non-zero (a
// zero input prints 0 whether it was kept or not).
std::string agreement(const std::string& book_text, const attn::Tensor& mask,
                      const attn::Tensor& where) {
    const auto numbers = textbook::numbers_in(textbook::strip_grad_fn(book_text));
    const std::size_t skip = numbers.size() - mask.size();  // labels such as "-inf" come first
    std::size_t agree = 0, counted = 0;
    for (std::size_t i = 0; i < mask.size(); ++i) {
        if (where.flat(i) == 0.0f) continue;
        ++counted;
        const bool printed_kept = numbers.at(skip + i).value != 0.0;
        agree += printed_kept == (mask.flat(i) != 0.0f) ? 1 : 0;
    }
    return std::to_string(agree) + " of " + std::to_string(counted) + " entries agree";
}

std::string count(const char* label, std::uint64_t n) {
    return std::string(label) + std::to_string(n);
}

}  // namespace

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_05_dropout",
        "Chapter 5: dropout, with both of PyTorch's CPU Bernoulli backends");
    textbook::Printer book(options, "Chapter 5 · Dropout, and why two machines print different masks");

    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
    // Chapter 4's causal attention weights: SelfAttention_v2 after seed 789, -inf mask, softmax.
    attn::manual_seed(789);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    const attn::Tensor queries = sa_v2.W_query(inputs);
    const attn::Tensor keys = sa_v2.W_key(inputs);
    const attn::Tensor attn_scores = attn::matmul(queries, attn::T(keys));
    const std::size_t context_length = attn_scores.shape()[0];
    const attn::BoolTensor causal_mask =
        attn::to_bool(attn::triu(attn::ones({context_length, context_length}), 1));
    const float inf = std::numeric_limits<float>::infinity();
    const float d_k = static_cast<float>(keys.shape().back());
    const attn::Tensor attn_weights = attn::softmax(
        attn::Tensor(attn::masked_fill(attn_scores, causal_mask, -inf) / std::sqrt(d_k)), -1);

    book.prose(
        "Dropout fights overfitting: during training, every element of a tensor is zeroed "
        "with probability p, at random, so the model cannot lean on any single attention "
        "weight. Applied to the attention weights (the common variant, Raschka's figure "
        "3.22), it makes each token attend to a random subset of the earlier tokens at "
        "each training step.\n\n"
        "nn.Dropout(p) draws a keep-mask from PyTorch's generator: bernoulli_(1 - p). "
        "How it draws depends on the machine. PyTorch's CPU code has two Bernoulli "
        "backends, and this chapter runs both, from the same seed:\n\n"
        "- MKL: one 32-bit draw from the Mersenne Twister seeds Intel MKL's MCG31m1 "
        "generator (x_{i+1} = 1132489760 x_i mod 2^31 - 1); element i is kept when "
        "x_i / (2^31 - 1) < 1 - p. The whole tensor costs one draw.\n\n"
        "- portable: element by element, a 64-bit draw made into a double u in [0, 1); "
        "kept when u < 1 - p. A tensor of n elements costs 2n draws.\n\n"
        "Notebook 002 was printed by the MKL backend, notebook 004 by the portable one.");

    //! [ones]
    attn::manual_seed(123);
    const attn::nn::Dropout dropout_mkl(0.5, BernoulliBackend::mkl);  // dropout rate of 50%
    const attn::Tensor example = attn::ones({6, 6});
    const attn::Tensor dropped_mkl = dropout_mkl(example);
    //! [ones]
    const std::uint64_t draws_mkl = attn::default_generator().draws_since_seed();
    book.book("002-In12", "[MKL backend] torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6))",
              "Example:\n" + attn::repr(example) + "\n\nDropout:\n" + attn::repr(dropped_mkl));

    attn::manual_seed(123);
    const attn::nn::Dropout dropout_portable(0.5, BernoulliBackend::portable);
    const attn::Tensor dropped_portable = dropout_portable(example);
    const std::uint64_t draws_portable = attn::default_generator().draws_since_seed();
    book.fresh("[portable backend] the same cell: torch.manual_seed(123); "
               "nn.Dropout(0.5)(torch.ones(6, 6))",
               "Example:\n" + attn::repr(example) + "\n\nDropout:\n" + attn::repr(dropped_portable));
    book.fresh("32-bit draws the call made, MKL and portable",
               count("MKL:      ", draws_mkl) + "\n" + count("portable: ", draws_portable));

    book.prose(
        "Why 2? Half of the entries are dropped, so the sum of a row would shrink by "
        "half on average; PyTorch scales the kept entries by 1 / (1 - p) = 2 so that the "
        "expected value of every element stays what it was (\"inverted dropout\"). Nothing "
        "then has to change at inference time. A kept 1 prints as 2; a kept attention "
        "weight prints as twice the weight.");

    //! [weights]
    attn::manual_seed(123);
    const attn::Tensor weights_mkl = dropout_mkl(attn_weights);
    //! [weights]
    book.book("002-In13", "[MKL backend] torch.manual_seed(123); dropout(attn_weights)",
              attn::repr(weights_mkl));
    attn::manual_seed(123);
    const attn::Tensor weights_portable = dropout_portable(attn_weights);
    book.fresh("[portable backend] torch.manual_seed(123); dropout(attn_weights)",
               attn::repr(weights_portable));
    book.fresh("kept weights / attn_weights, MKL backend (2 where kept, 0 where dropped)",
               attn::repr(attn::Tensor(xt::where(xt::equal(attn_weights, 0.0f), 0.0f,
                                                 weights_mkl / attn_weights))));
    book.prose(
        "The same seed gives the same mask: row by row, In [13] keeps exactly the entries "
        "In [12] kept (the zeros above the diagonal stay zeros either way). Rows no longer "
        "sum to 1: dropout acts after the softmax, and only the expectation is preserved.");

    book.prose(
        "Notebook 004 In [51] prints dropout of the same weights with no seed in sight: "
        "its execution counts jump from 46 to 51, so cells ran that the export does not "
        "show, and the mask depends on the generator state they left. One history "
        "reproduces it exactly: torch.manual_seed(123), then the cell four times. On the "
        "portable backend each run costs 72 draws; the printed run is the fourth, 216 "
        "draws after the seed. The three runs before it:");
    //! [fourth]
    attn::manual_seed(123);
    const attn::nn::Dropout dropout(0.5, BernoulliBackend::portable);
    std::vector<attn::Tensor> runs;
    std::vector<std::uint64_t> draws_before;
    for (int run = 0; run < 4; ++run) {
        draws_before.push_back(attn::default_generator().draws_since_seed());
        runs.push_back(dropout(attn_weights));
    }
    //! [fourth]
    static const char* ordinal[] = {"first", "second", "third", "fourth"};
    for (int run = 0; run < 3; ++run)
        book.fresh(std::string("[portable backend] the ") + ordinal[run] +
                       " run after torch.manual_seed(123) (" +
                       std::to_string(draws_before[run]) + " draws after the seed)",
                   "Dropout applied to -inf Attention-Weights: \n " + attn::numpy_str(runs[run]));
    book.book("004-In51",
              "[portable backend] the fourth run after torch.manual_seed(123) (" +
                  std::to_string(draws_before[3]) + " draws after the seed)",
              "Dropout applied to -inf Attention-Weights: \n " + attn::numpy_str(runs[3]));

    attn::manual_seed(123);
    attn::Tensor fourth_mkl;
    for (int run = 0; run < 4; ++run) fourth_mkl = dropout_mkl(attn_weights);
    book.fresh("[MKL backend] the fourth run after torch.manual_seed(123) (3 draws after the seed)",
               "Dropout applied to -inf Attention-Weights: \n " + attn::numpy_str(fourth_mkl));
    book.prose(
        "The kept values are the weights of chapter 4 doubled, and doubling a float is "
        "exact: any last-digit difference from the book here is the one chapter 4's "
        "softmax already shows for 004 In [44], not dropout's.");

    book.prose(
        "Dropout is only used in training. In evaluation mode (module.eval(), here "
        "training = false) it returns its input unchanged and draws nothing, so a trained "
        "model gives the same output every time. The same holds for p = 0.");
    //! [eval]
    attn::manual_seed(123);
    attn::nn::Dropout dropout_eval(0.5, options.backend);
    dropout_eval.training = false;  // dropout.eval()
    const attn::Tensor weights_eval = dropout_eval(attn_weights);
    //! [eval]
    book.fresh("[" + attn::nn::backend_name(options.backend) + " backend, --dropout-backend] dropout.eval(); "
                   "dropout(attn_weights), torch.equal(_, attn_weights), draws made",
               attn::repr(weights_eval) + "\n" +
                   attn::repr_bool(xt::all(xt::equal(weights_eval, attn_weights))) + "\n" +
                   std::to_string(attn::default_generator().draws_since_seed()));

    book.prose(
        "Why two machines print different masks for the same seed (rasbt/LLMs-from-scratch "
        "issue 57, pytorch/pytorch issue 121595): bernoulli_scalar_kernel in "
        "aten/src/ATen/native/cpu/DistributionKernels.cpp takes the MKL path only when "
        "PyTorch was built with MKL (the official x86-64 wheels for Linux and Windows, "
        "and the Intel macOS ones) and cpuinfo reports an Intel CPU. Everything else takes "
        "the portable path: AMD CPUs even with the same wheel, Apple silicon and other ARM "
        "machines, and builds without MKL such as Debian's python3-torch. Neither path is "
        "wrong; they are two random streams. They also leave the generator in different "
        "states (1 draw against 2n), so every random number drawn after a dropout differs "
        "too, such as the weights of a layer built next. Raschka's own notebook for this "
        "section shows the portable mask; the reader who opened issue 57 got notebook "
        "002's.\n\n"
        "Chunking cannot change the MKL result: PyTorch splits the tensor among threads "
        "(parallel_for, grain size 800), but every chunk starts a new MCG31m1 stream from "
        "the same seed and skips it ahead to the chunk's first element "
        "(vslSkipAheadStream), so element i always gets x_i. The library does the same "
        "with chunks of 800.");

    book.prose(
        "How to tell from a printed mask which path printed it: take the same generator "
        "state (here right after torch.manual_seed(123)) and draw the mask both ways. A "
        "wrong guess agrees with a 6x6 mask in about half of the entries; the right one "
        "in all. With seed 123 and p = 0.5 it is visible at a glance: the MKL backend's "
        "first row of ones(6, 6) is all 2s, the portable one's is 2, 2, 0, 2, 2, 0. The "
        "book's masks against both backends:");
    const attn::Tensor all = attn::ones({6, 6});
    book.fresh("002 In [12]'s printed mask against each backend (seed 123, first call)",
               "MKL:      " + agreement(book.data().at("002-In12").text, dropped_mkl, all) +
                   "\nportable: " +
                   agreement(book.data().at("002-In12").text, dropped_portable, all));
    book.fresh("004 In [51]'s printed mask against each backend (seed 123, fourth call; "
               "only entries below the diagonal count)",
               "MKL:      " + agreement(book.data().at("004-In51").text, fourth_mkl, attn_weights) +
                   "\nportable: " +
                   agreement(book.data().at("004-In51").text, runs[3], attn_weights));

    book.prose(
        "Both backends keep each element with probability 1 - p. Over a million elements "
        "the kept fraction is within 0.05 percentage points of it:");
    std::string fractions;
    for (const double p : {0.1, 0.5, 0.9}) {
        for (const auto backend : {BernoulliBackend::mkl, BernoulliBackend::portable}) {
            attn::manual_seed(123);
            const attn::Tensor mask = attn::nn::Dropout(p, backend).keep_mask({1000000});
            char line[128];
            std::snprintf(line, sizeof line, "p = %.1f  %-8s  kept %.6f  (1 - p = %.1f)\n", p,
                          attn::nn::backend_name(backend).c_str(),
                          static_cast<double>(xt::sum(mask)()) / 1e6, 1.0 - p);
            fractions += line;
        }
    }
    fractions.pop_back();
    book.fresh("kept fraction of 10^6 elements after torch.manual_seed(123)", fractions);

    book.prose(
        "Dropout, in short. nn::Dropout(p, backend) mirrors torch.nn.Dropout(p): in "
        "training mode, with 0 < p < 1, it draws a keep-mask with keep probability 1 - p "
        "and returns x * mask / (1 - p), the divisor rounded to float32 as PyTorch does; "
        "p = 0, evaluation mode and empty tensors return the input and draw nothing; p = 1 "
        "returns x * 0 and draws nothing; any other p throws std::invalid_argument. The "
        "backend is the caller's choice, because PyTorch's is the machine's: "
        "BernoulliBackend::mkl reproduces Intel machines with MKL builds (notebook 002), "
        "BernoulliBackend::portable every other machine (notebook 004). Both draw from the "
        "shared generator and so interleave with other draws exactly as in PyTorch: one "
        "32-bit draw per call for MKL, two per element for portable. Chapters 6 and 7 use "
        "the backend given by --dropout-backend=portable|mkl (default portable, as "
        "notebook 004); this chapter always shows both. This run's choice: " +
        attn::nn::backend_name(options.backend) + " (the other one: " + other_name(options.backend) + ").");
    return 0;
}
