// Chapter 9: batched causal attention and padding (notebook 000 In [5]-[27]).
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/kv_cache.hpp"
#include "attn/nn.hpp"
#include "attn/padding.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(argc, argv, "chapter_09_padding",
                                                   "Chapter 9: padding and the attention mask");
    textbook::Printer book(options, "Chapter 9 · Padding and the attention mask");
    const float inf = std::numeric_limits<float>::infinity();

    book.prose(
        "Notebook 000 first walks through batched causal self-attention line by line, on a "
        "batch of B = 2 sequences of S = 8 tokens of width E = 16, with biased Linear(E, E) "
        "projections. It sets no seed; this chapter uses torch.manual_seed(5) and draws in "
        "the notebook's order (z, then query_proj, key_proj, value_proj), so PyTorch with "
        "that seed prints the same numbers. The notebook's own numbers are checked through "
        "what must hold between them (the softmax of its printed logits is its printed "
        "weights), in tests/test_padding.cpp.");
    //! [projections]
    std::size_t B = 2, S = 8, E = 16;
    attn::manual_seed(5);
    const attn::Tensor z = attn::rand({B, S, E});
    const attn::nn::Linear query_proj(E, E), key_proj(E, E), value_proj(E, E);
    const attn::Tensor query = query_proj(z), key = key_proj(z), value = value_proj(z);
    //! [projections]
    book.book("000-In08", "query.shape, key.shape, value.shape",
              attn::repr_tuple({attn::repr(attn::shape_of(query)), attn::repr(attn::shape_of(key)),
                                attn::repr(attn::shape_of(value))}));

    //! [logits]
    const attn::Tensor key_t = attn::transpose(key, 1, 2);                 // [B, E, S]
    const attn::Tensor unscaled_attention_logits = attn::matmul(query, key_t);  // [B, S, S]
    const float scale = std::sqrt(static_cast<float>(E));
    const attn::Tensor attention_logits = attn::Tensor(unscaled_attention_logits / scale);
    //! [logits]
    book.book("000-In09", "key_t.shape: key.transpose(1, 2)", attn::repr(attn::shape_of(key_t)));
    book.book("000-In10", "(query @ key_t).shape", attn::repr(attn::shape_of(unscaled_attention_logits)));
    book.book("000-In12", "attention_logits.shape, after dividing by sqrt(E)", attn::repr(attn::shape_of(attention_logits)));

    book.prose("The causal mask: a lower triangle of ones per batch element, -inf where it is 0.");
    //! [causal]
    const attn::Tensor causal_mask = attn::tril(attn::ones({B, S, S}));
    const attn::Tensor masked_attention_logits =
        attn::masked_fill(attention_logits, attn::eq(causal_mask, 0.0f), -inf);
    const attn::Tensor causal_attention_weights = attn::softmax(masked_attention_logits, -1);
    //! [causal]
    book.book("000-In14", "masked_attention_logits[0]", attn::repr(attn::select(masked_attention_logits, 0)));
    book.book("000-In16", "causal_attention_weights = softmax(masked_attention_logits): lower triangular",
              attn::repr(causal_attention_weights));
    const attn::Tensor attention_output = attn::matmul(causal_attention_weights, value);
    book.fresh("attention_output = causal_attention_weights @ value: shape",
               attn::repr(attn::shape_of(attention_output)));

    book.prose(
        "Real batches hold texts of different lengths. The notebook tokenises three texts "
        "with the Mistral-7B tokenizer, pad token = eos token (id 2), padding on the left, "
        "as decoder-only models need for generation (the next token continues the last "
        "column). This program has no tokenizer: the ids are recorded in "
        "data/tokenizer/mistral-7b-v0.1_000.tsv (tools/tokenize/ regenerates them with the "
        "npm package mistral-tokenizer-js); the padding is the library's collator.");
    const auto tokenizer =
        attn::TokenizerData::load(textbook::data_dir() / "tokenizer" / "mistral-7b-v0.1_000.tsv");
    {
        std::string ids;
        for (const auto& t : tokenizer.texts) {
            ids += attn::repr_str(t.text) + " -> [";
            for (std::size_t i = 0; i < t.input_ids.size(); ++i)
                ids += (i ? ", " : "") + std::to_string(t.input_ids[i]);
            ids += "]\n";
        }
        ids.pop_back();
        book.fresh("the recorded ids of the three texts (bos <s> = 1 first)", ids);
    }
    book.book("000-In18", "importing transformers",
              "(not reproduced: the notebook shows the tail of a warning tqdm printed on stderr "
              "while transformers was imported; this program imports nothing)");
    //! [collate]
    const std::int64_t pad_token_id = tokenizer.eos_token_id;  // tokenizer.pad_token = tokenizer.eos_token
    const attn::BatchEncoding encoded_input =
        attn::pad_batch(tokenizer.sequences(), pad_token_id, attn::PaddingSide::left);
    //! [collate]
    {
        std::string keys = "dict_keys([";
        for (const auto& k : attn::BatchEncoding::keys()) keys += (keys.back() == '[' ? "" : ", ") + attn::repr_str(k);
        book.book("000-In19", "encoded_input.keys()", keys + "])");
    }
    book.book("000-In20", "tokenizer.pad_token_id", std::to_string(pad_token_id));
    book.book("000-In21", "encoded_input['input_ids'][0]: left padding, 2 is the pad token",
              attn::repr(attn::LongTensor(xt::view(encoded_input.input_ids, 0, xt::all()))));
    book.book("000-In22", "encoded_input['attention_mask'][0]: zero on the pad tokens",
              attn::repr(attn::LongTensor(xt::view(encoded_input.attention_mask, 0, xt::all()))));
    book.fresh("the whole batch: input_ids and attention_mask [3, 9]",
               attn::repr(encoded_input.input_ids) + "\n" + attn::repr(encoded_input.attention_mask));
    const attn::BatchEncoding right = attn::pad_batch(tokenizer.sequences(), pad_token_id, attn::PaddingSide::right);
    book.fresh("the same with padding on the right", attn::repr(right.input_ids) + "\n" + attn::repr(right.attention_mask));
    {
        std::string error = "(no error)";
        try {
            (void)attn::ids_tensor(tokenizer.sequences());
        } catch (const std::invalid_argument& e) {
            error = e.what();
        }
        book.fresh("without a collator: ids_tensor(ragged ids), torch.tensor's ValueError in PyTorch", error);
    }

    book.prose(
        "The attention mask enters the logits as -inf on the padded keys, for every query: "
        "attention_mask[:, None, :] == 0 is [B, 1, S] and broadcasts over the S query rows. "
        "In [24] shows it on random logits (torch.manual_seed(24) here).");
    //! [attention_mask]
    const attn::LongTensor attention_mask = encoded_input.attention_mask;
    B = attention_mask.shape()[0];
    S = attention_mask.shape()[1];
    attn::manual_seed(24);
    const attn::Tensor dummy_logits = attn::apply_attention_mask(attn::rand({B, S, S}), attention_mask);
    //! [attention_mask]
    book.book("000-In24", "random logits with the attention mask applied", attn::repr(dummy_logits));

    book.prose(
        "BaseSelfAttention (chapter 8) applies the causal mask and then the attention mask. "
        "Together they leave each real token its real predecessors. But look at the first "
        "row of the first text: a pad token may only see itself (causal), and it is a pad "
        "(attention mask), so its whole row is -inf. So are the rows of all six pads. "
        "In [27] runs this (torch.manual_seed(27) here):");
    //! [base]
    attn::manual_seed(27);
    const attn::Tensor z3 = attn::rand({B, S, E});
    attn::BaseSelfAttention self_atten({.embed_dim = E});
    const auto qkv = self_atten.construct_query_key_value(z3);
    const attn::Tensor combined = self_atten.apply_attention_mask(
        attention_mask, self_atten.apply_causal_mask(self_atten.calculate_unmasked_attention_logits(qkv.query, qkv.key)));
    const attn::BaseOutput output = self_atten(z3, attention_mask);
    //! [base]
    book.fresh("causal + attention mask, logits of the first text [9, 9]", attn::repr(attn::select(combined, 0)));
    book.fresh("fully masked query rows per text (6, 4, 0 pads)",
               std::to_string(attn::count_fully_masked_rows(attn::select(combined, 0))) + ", " +
                   std::to_string(attn::count_fully_masked_rows(attn::select(combined, 1))) + ", " +
                   std::to_string(attn::count_fully_masked_rows(attn::select(combined, 2))));
    book.prose(
        "torch.softmax of a row of -inf is 0/0 = NaN (it subtracts the row maximum, -inf, "
        "from -inf). The notebook's assert checks only the shape, so the NaN passes "
        "unseen; here are the weights and the output of the first text:");
    book.fresh("output.attention_output.shape", attn::repr(attn::shape_of(output.attention_output)));
    book.fresh("output.attention_weights[0] with torch.softmax", attn::repr(attn::select(output.attention_weights, 0)));
    book.fresh("output.attention_output[0]", attn::repr(attn::select(output.attention_output, 0)));
    book.prose(
        "Harmless? The real tokens' rows are fine in this one layer. But a model stacks "
        "layers, and the next layer takes the NaN rows as keys and values: a real token "
        "gives a pad key the weight 0, and 0 x NaN = NaN. After two layers every output "
        "of the padded texts is NaN:");
    //! [two_layers]
    const attn::BaseSelfAttention second_layer({.embed_dim = E});
    const attn::BaseOutput layer2 = second_layer(output.attention_output, attention_mask);
    //! [two_layers]
    book.fresh("NaN count: layer 1 output, layer 2 output (of 3 x 9 x 16 = 432 numbers)",
               std::to_string(attn::count_nan(output.attention_output)) + ", " +
                   std::to_string(attn::count_nan(layer2.attention_output)));

    book.prose(
        "The fix: a softmax that gives a query with nothing to attend to zero weights (its "
        "output row is then output_proj(0) = the bias, finite, and ignored by everything "
        "after it, since the mask hides pad keys). Every other row is the ordinary "
        "softmax, bit for bit. (Hugging Face models avoid the NaN differently: they fill "
        "with the most negative finite float instead of -inf, which gives pad rows "
        "uniform weights.)");
    //! [fix]
    self_atten.fully_masked_rows = attn::FullyMaskedRows::zero;  // masked_softmax
    attn::BaseSelfAttention second_fixed = second_layer;
    second_fixed.fully_masked_rows = attn::FullyMaskedRows::zero;
    const attn::BaseOutput fixed = self_atten(z3, attention_mask);
    const attn::BaseOutput fixed2 = second_fixed(fixed.attention_output, attention_mask);
    //! [fix]
    book.fresh("output.attention_weights[0] with masked_softmax", attn::repr(attn::select(fixed.attention_weights, 0)));
    book.fresh("NaN count after the fix: layer 1 output, layer 2 output",
               std::to_string(attn::count_nan(fixed.attention_output)) + ", " +
                   std::to_string(attn::count_nan(fixed2.attention_output)));

    book.prose(
        "Why padding is correct at all: a real token attends only to real tokens, so its "
        "output must be what it would be if its text ran alone, unpadded (no positional "
        "information here, so the shift by the pads changes nothing). Each text is cut out "
        "of the batch, run alone, and compared with its rows in the padded output, for "
        "left padding and for right padding (the same inputs, pads moved to the end, pad "
        "vectors zero).");
    //! [unpadded]
    std::vector<attn::Tensor> inputs;  // each text's own vectors [n_b, E]
    for (std::size_t b = 0; b < B; ++b) inputs.push_back(attn::real_token_rows(z3, attention_mask, b));
    const attn::Tensor z_right = attn::pad_sequences(inputs, attn::PaddingSide::right);
    const attn::BaseOutput fixed_right = self_atten(z_right, right.attention_mask);
    std::ostringstream report;
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t n = inputs[b].shape()[0];
        const attn::Tensor alone = attn::view(
            self_atten(attn::view(inputs[b], {1, static_cast<long>(n), static_cast<long>(E)})).attention_output,
            {static_cast<long>(n), static_cast<long>(E)});
        const attn::Tensor left_rows = attn::real_token_rows(fixed.attention_output, attention_mask, b);
        const attn::Tensor right_rows = attn::real_token_rows(fixed_right.attention_output, right.attention_mask, b);
        report << "text " << b << " (" << n << " tokens): left padding "
               << attn::repr_bool(attn::allclose(left_rows, alone, 0.0, 1e-6)) << ", right padding "
               << attn::repr_bool(attn::allclose(right_rows, alone, 0.0, 1e-6)) << "\n";
    }
    //! [unpadded]
    std::string lines = report.str();
    lines.pop_back();
    book.fresh("allclose(padded output at the real tokens, output of the text alone, rtol=0, atol=1e-6)", lines);
    return 0;
}
