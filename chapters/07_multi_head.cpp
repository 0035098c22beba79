// Chapter 7: multi-head attention in three layouts: Raschka's wrapper of CausalAttention
// heads, the weight-split MultiHeadAttention (notebook 004 In [58]-[64]), and GPT-2's fused
// c_attn (notebook 003 In [2]-[8]); and why all three compute the same thing.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xmath.hpp>

#include "attn/attention.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/multihead.hpp"
#include "attn/nn.hpp"
#include "attn/print.hpp"

namespace {

using attn::nn::BernoulliBackend;

std::string draws_now() {
    return std::to_string(attn::default_generator().draws_since_seed());
}

// "label  torch.Size([...])" lines, labels padded to one column.
std::string shape_lines(const std::vector<std::pair<std::string, attn::Tensor>>& rows) {
    std::size_t width = 0;
    for (const auto& r : rows) width = std::max(width, r.first.size());
    std::string out;
    for (const auto& r : rows)
        out += r.first + std::string(width - r.first.size() + 2, ' ') +
               attn::repr(attn::shape_of(r.second)) + "\n";
    out.pop_back();
    return out;
}

std::string max_abs_diff(const attn::Tensor& a, const attn::Tensor& b) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(xt::amax(xt::abs(a - b))()));
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_07_multi_head", "Chapter 7: multi-head attention in three layouts");
    textbook::Printer book(options, "Chapter 7 · Multi-head attention, in three layouts");
    const std::string backend = attn::nn::backend_name(options.backend);

    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
    const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // [2, 6, 3], chapter 6

    // ------------------------------------------------------------------ (a) the wrapper
    book.prose(
        "One CausalAttention is one head: one way of weighting the earlier tokens. "
        "Multi-head attention runs several heads side by side, each with its own weights, "
        "and joins their outputs. The notebooks write it three ways.\n\n"
        "(a) The wrapper (Raschka section 3.6.1): a list of num_heads CausalAttention "
        "modules, each run on the whole input, outputs concatenated along the last "
        "dimension: torch.cat([head(x) for head in self.heads], dim=-1). Two heads of "
        "d_out = 2 give 4 features per token. The book's configuration: "
        "torch.manual_seed(123), d_in = 3, d_out = 2, two heads, dropout 0.");
    //! [wrapper]
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWrapper wrapper({.d_in = 3, .d_out = 2, .context_length = batch.shape()[1], .dropout = 0.0, .num_heads = 2, .qkv_bias = false, .backend = options.backend});
    const auto wrapped = wrapper.forward_steps(batch);
    //! [wrapper]
    book.fresh("(a) shapes: each head's output, and torch.cat(..., dim=-1)",
               shape_lines({{"heads[0](batch)", wrapped.head_outputs[0]},
                            {"heads[1](batch)", wrapped.head_outputs[1]},
                            {"torch.cat(..., dim=-1)", wrapped.context_vec}}));
    book.fresh("(a) context_vecs = mha(batch), and context_vecs.shape",
               attn::repr(wrapped.context_vec) + "\ncontext_vecs.shape: " +
                   attn::repr(attn::shape_of(wrapped.context_vec)));
    book.prose(
        "The first two columns are chapter 6's CausalAttention (002 In [19]): the first "
        "head is built first after the same seed, so it draws the same weights. The second "
        "head draws the next 18 numbers.");
    book.fresh("torch.equal(heads[0](batch), chapter 6's context_vecs)",
               attn::repr_bool(xt::all(xt::equal(
                   wrapped.head_outputs[0],
                   [&] {
                       attn::manual_seed(123);
                       return attn::CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .qkv_bias = false, .backend = options.backend})(batch);
                   }()))));

    // ------------------------------------------------------------------ (b) weight split
    book.prose(
        "(b) Weight splits (Raschka section 3.6.2, notebook 004's MultiHeadAtt): instead of "
        "num_heads small layers, one W_query, W_key and W_value of width d_out, whose "
        "output columns are cut into num_heads groups of head_dim = d_out / num_heads. "
        "view(b, T, num_heads, head_dim) makes the groups a dimension, transpose(1, 2) "
        "moves it in front of the tokens, [b, num_heads, T, head_dim], and from there one "
        "batched product computes every head's [T, T] scores. The mask broadcasts over "
        "batch and heads. After softmax, dropout and the product with the values, "
        "transpose(1, 2) puts the tokens back in front and contiguous().view(b, T, d_out) "
        "glues the heads' columns together again. Last comes an output projection "
        "Linear(d_out, d_out): the book's MultiHeadAttention gives it a bias, notebook "
        "004's MultiHeadAtt does not (its bias follows qkv_bias, False).\n\n"
        "The book's configuration: torch.manual_seed(123), d_in = 3, d_out = 2, two heads "
        "(head_dim 1), dropout 0, out_proj with bias.");
    //! [mha]
    attn::manual_seed(123);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = batch.shape()[1], .dropout = 0.0, .num_heads = 2, .qkv_bias = false, .out_bias = true, .backend = options.backend});
    const auto split_steps = mha.forward_steps(batch);
    //! [mha]
    book.fresh("(b) shapes, step by step (b = 2, T = 6, num_heads = 2, head_dim = 1)",
               shape_lines({{"queries = W_query(x)", split_steps.queries},
                            {"queries.view(b, T, num_heads, head_dim)", split_steps.queries_split},
                            {"queries.transpose(1, 2)", split_steps.queries_heads},
                            {"attn_scores = queries @ keys.transpose(2, 3)", split_steps.attn_scores},
                            {"attn_weights (softmax, dropout)", split_steps.dropped_weights},
                            {"(attn_weights @ values)", split_steps.context_heads},
                            {"  .transpose(1, 2)", split_steps.context_transposed},
                            {"  .contiguous().view(b, T, d_out)", split_steps.context_merged},
                            {"out_proj(context_vec)", split_steps.context_vec}}));
    book.fresh("(b) the module", attn::repr(mha));
    book.fresh("(b) context_vecs = mha(batch), and context_vecs.shape",
               attn::repr(split_steps.context_vec) + "\ncontext_vecs.shape: " +
                   attn::repr(attn::shape_of(split_steps.context_vec)));

    book.prose(
        "d_out must split evenly into heads; the book asserts it, the library throws:");
    std::string error;
    try {
        //! [divisible]
        const attn::MultiHeadAttention bad({.d_in = 3, .d_out = 3, .context_length = 6, .dropout = 0.0, .num_heads = 2});
        //! [divisible]
    } catch (const std::invalid_argument& e) {
        error = std::string("std::invalid_argument: ") + e.what();
    }
    book.fresh("MultiHeadAttention(d_in=3, d_out=3, ..., num_heads=2)",
               error.empty() ? "no error (unexpected)" : error);

    book.prose(
        "Notebook 004 In [64] builds MultiHeadAtt(d_in=3, d_out=2, dropout=0.2, conlen=6, "
        "num_heads=2) and prints its output, with no seed of its own: the generator is "
        "wherever the cells before it left it. One execution count is missing between "
        "In [62] and In [64], and this history reproduces the printed values: "
        "torch.manual_seed(123), In [62] (chapter 6: 18 + 144 draws on the portable "
        "backend), then the cell of In [64] twice (the first run would have been In [63]; "
        "its numbers, printed below, are not the book's). Each run "
        "draws 22 uniforms for its four bias-free layers (3 x 6 + 4) and, on the portable "
        "backend, 288 for the dropout of the [2, 2, 6, 6] weights. The notebook shows the "
        "second run. (Its labels say \"head\"; they are the two sequences of the batch.) "
        "This run uses the " + backend + " backend" +
        (options.backend == BernoulliBackend::mkl
             ? " (one draw per dropout): the history and the printed values differ from the "
               "notebook's, which was printed by the portable backend."
             : "."));
    //! [history]
    attn::manual_seed(123);
    const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5, .qkv_bias = false, .backend = options.backend});
    (void)ca(batch);  // In [62]
    const std::string after_62 = draws_now();
    std::vector<attn::Tensor> runs;
    std::vector<std::string> after_run;
    for (int run = 0; run < 2; ++run) {  // In [64], twice
        const attn::MultiHeadAttention multi({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.2, .num_heads = 2, .qkv_bias = false, .out_bias = false, .backend = options.backend});
        runs.push_back(multi(batch));
        after_run.push_back(draws_now());
    }
    //! [history]
    book.fresh("[" + backend + " backend] 32-bit draws since torch.manual_seed(123)",
               "after In [62]:             " + after_62 + "\nafter In [64], first run:  " +
                   after_run[0] + "\nafter In [64], second run: " + after_run[1]);
    book.fresh("[" + backend + " backend] In [64], first run (the notebook overwrote it)",
               "First head Context Matrix: \n" + attn::numpy_str(attn::select(runs[0], 0)) +
                   "\n\nSecond head Context Matrix: \n" +
                   attn::numpy_str(attn::select(runs[0], 1)));
    book.book("004-In64-1", "[" + backend + " backend] In [64], second run: batch element 0",
              "First head Context Matrix: \n" + attn::numpy_str(attn::select(runs[1], 0)));
    book.book("004-In64-2", "[" + backend + " backend] In [64], second run: batch element 1",
              "Second head Context Matrix: \n" + attn::numpy_str(attn::select(runs[1], 1)));

    // ------------------------------------------------------------------ (c) GPT-2
    book.prose(
        "(c) The GPT-2 layout (notebook 003, nanoGPT's CausalSelfAttention): one fused "
        "Linear(S, 3S) named c_attn computes queries, keys and values in a single product, "
        "split(S, dim=2) cuts them apart; the causal mask is a [1, 1, T, T] lower-triangular "
        "buffer named bias (1 = may attend), and c_proj is the output projection. Both "
        "layers have no bias in the notebook's configuration, and the layer runs in "
        "evaluation mode, so neither dropout acts. Notebook 003's sizes: B = 16 sequences, "
        "T = 5 tokens, S = 12 features, H = 3 heads of 4.\n\n"
        "The notebook drew its weights and input without a seed, so its numbers cannot be "
        "reproduced; what it printed are shapes and checks, and those come out the same "
        "for any seed. This chapter takes torch.manual_seed(123) before building the layer.");
    //! [gpt2]
    attn::GPT2Config cfg;
    cfg.block_size = 5;  // T
    cfg.n_embd = 12;     // S
    cfg.n_head = 3;      // H
    attn::manual_seed(123);
    attn::GPT2Attention layer(cfg, options.backend);
    layer.eval();
    //! [gpt2]
    book.book("003-In02", "layer = GPT2Attention(cfg); layer.eval()", attn::repr(layer));

    //! [gpt2_forward]
    const attn::Tensor input_tensor = attn::randn({16, cfg.block_size, cfg.n_embd});  // (B, T, S)
    const long B = 16, T = 5, S = 12;
    const attn::Tensor original_output = layer(input_tensor);
    //! [gpt2_forward]
    book.book("003-In03", "input_tensor.size() == original_output.size()",
              attn::repr_bool(attn::shape_of(input_tensor) == attn::shape_of(original_output)));

    //! [gpt2_split]
    const auto qkv = attn::split(layer.c_attn(input_tensor), S, 2);
    attn::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    //! [gpt2_split]
    book.book("003-In04", "q, k, v = layer.c_attn(input_tensor).split(S, dim=2): all (B, T, S)",
              attn::repr_bool(attn::shape_of(q) == attn::shape_of(k) &&
                              attn::shape_of(k) == attn::shape_of(v) &&
                              attn::shape_of(v) == attn::shape_of(input_tensor)));

    //! [gpt2_heads]
    const long H = static_cast<long>(layer.num_heads), hs = static_cast<long>(layer.head_dim);
    q = attn::transpose(attn::view(q, {B, T, H, hs}), 1, 2);
    k = attn::transpose(attn::view(k, {B, T, H, hs}), 1, 2);
    v = attn::transpose(attn::view(v, {B, T, H, hs}), 1, 2);
    //! [gpt2_heads]
    book.book("003-In05", "q.view(B, T, H, S // H).transpose(1, 2): (B, H, T, S // H)",
              attn::repr(attn::shape_of(q)));

    //! [gpt2_attention]
    attn::Tensor att = attn::matmul(q, attn::transpose(k, -2, -1)) *
                       static_cast<float>(1.0 / std::sqrt(static_cast<double>(k.shape().back())));
    const attn::Tensor bias = attn::slice(attn::slice(layer.bias, 2, 0, T), 3, 0, T);  // bias[:, :, :T, :T]
    att = attn::masked_fill(att, attn::eq(bias, 0.0f), -std::numeric_limits<float>::infinity());
    att = attn::softmax(att, -1);
    attn::Tensor y = attn::matmul(att, v);
    //! [gpt2_attention]
    book.book("003-In06", "y = softmax(masked scaled scores) @ v: (B, H, T, S // H)",
              attn::repr(attn::shape_of(y)));

    //! [gpt2_merge]
    y = attn::view(attn::transpose(y, 1, 2), {B, T, S});  // y.transpose(1, 2).contiguous().view(B, T, S)
    //! [gpt2_merge]
    book.book("003-In07", "y.transpose(1, 2).contiguous().view(B, T, S)", attn::repr(attn::shape_of(y)));
    book.book("003-In08", "torch.allclose(layer.c_proj(y), original_output)",
              attn::repr_bool(attn::allclose(layer.c_proj(y), original_output)));
    book.fresh("max |c_proj(y) - original_output| (the walk repeats the layer's own steps)",
               max_abs_diff(layer.c_proj(y), original_output));
    book.fresh("[seed 123] the first sequence's attention weights, head 0: att[0, 0]",
               attn::repr(attn::select(attn::select(att, 0), 0)));
    book.fresh("[seed 123] original_output[0]: the first sequence's output (T, S)",
               attn::repr(attn::select(original_output, 0)));

    // ------------------------------------------------------------------ equivalences
    book.prose(
        "The three layouts are one computation. (a) -> (b): stack the heads' W_query "
        "weights along their output dimension (head h owns rows h * head_dim onwards, "
        "which view(b, T, num_heads, head_dim) hands back to head h), likewise W_key and "
        "W_value, and make out_proj the identity: torch.cat of the heads is then exactly "
        "the merged context. (c) -> (b): c_attn's [3S, S] weight is W_query, W_key and "
        "W_value on top of each other, split(S) cuts its output where those rows end, and "
        "c_proj is out_proj. The only arithmetic difference: GPT-2 multiplies the scores by "
        "1 / sqrt(head_dim), the book divides by sqrt(head_dim); with head_dim = 4 both are "
        "exact, so here the two agree to the bit. The tests check both maps on random "
        "sizes, to 1e-6.");
    //! [equivalence]
    const attn::MultiHeadAttention from_wrapper = attn::stack_heads(wrapper);
    const attn::Tensor b_of_a = from_wrapper(batch);
    const attn::MultiHeadAttention from_gpt2 = attn::split_c_attn(layer);
    const attn::Tensor b_of_c = from_gpt2(input_tensor);
    //! [equivalence]
    book.fresh("(a) -> (b): W_query of the weight-split module = the heads' W_query stacked",
               attn::repr(from_wrapper.W_query.weight) + "\n\n" +
                   attn::repr(wrapper.heads[0].W_query.weight) + "\n" +
                   attn::repr(wrapper.heads[1].W_query.weight));
    book.fresh("(a) -> (b): max |wrapper(batch) - stacked(batch)|, allclose(atol=1e-6)",
               max_abs_diff(wrapped.context_vec, b_of_a) + "\n" +
                   attn::repr_bool(attn::allclose(wrapped.context_vec, b_of_a, 0.0, 1e-6)));
    book.fresh("(c) -> (b): max |layer(x) - split(x)|, allclose(atol=1e-6)",
               max_abs_diff(original_output, b_of_c) + "\n" +
                   attn::repr_bool(attn::allclose(original_output, b_of_c, 0.0, 1e-6)));
    book.prose(
        "Why the weight-split layout won: (a) runs num_heads small products one after "
        "another; (b) and (c) run one product for all heads' queries (and GPT-2 one for "
        "queries, keys and values together), and one batched product for all heads' "
        "scores. Same numbers, fewer and larger matrix products.");
    return 0;
}
