// Chapter 9: batched causal attention and padding (notebook 000 In [5]-[27]). Prose: docs/chapters/.
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include <xtensor/xview.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/masks.hpp"
#include "attn/modules/base_self_attention.hpp"
#include "attn/attention/padding.hpp"
#include "textbook/tokenizer_data.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "09_padding.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "09_padding", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("projections");
        //! [projections]
        std::size_t B = 2, S = 8, E = 16;
        attn::manual_seed(ch.seed(5));
        const attn::Tensor z = attn::rand({B, S, E});
        const attn::nn::Linear query_proj(E, E), key_proj(E, E), value_proj(E, E);
        const attn::Tensor query = query_proj(z), key = key_proj(z), value = value_proj(z);
        //! [projections]
        ch.book("000-In08", "query.shape, key.shape, value.shape", ch09::shapes_tuple(query, key, value));

        ch.step("logits");
        //! [logits]
        const attn::Tensor key_t = attn::transpose(key, 1, 2);                      // [B, E, S]
        const attn::Tensor unscaled_attention_logits = attn::matmul(query, key_t);  // [B, S, S]
        const float scale = std::sqrt(static_cast<float>(E));
        const attn::Tensor attention_logits = attn::Tensor(unscaled_attention_logits / scale);
        //! [logits]
        ch.book("000-In09", "key_t.shape", attn::repr(attn::shape_of(key_t)));
        ch.book("000-In10", "(query @ key_t).shape", attn::repr(attn::shape_of(unscaled_attention_logits)));
        ch.book("000-In12", "attention_logits.shape", attn::repr(attn::shape_of(attention_logits)));

        ch.step("causal");
        //! [causal]
        const attn::Tensor causal_mask = attn::tril(attn::ones({B, S, S}));
        const float inf = std::numeric_limits<float>::infinity();
        const attn::Tensor masked_attention_logits =
            attn::masked_fill(attention_logits, attn::eq(causal_mask, 0.0f), -inf);
        const attn::Tensor causal_attention_weights = attn::softmax(masked_attention_logits, -1);
        const attn::Tensor attention_output = attn::matmul(causal_attention_weights, value);
        //! [causal]
        ch.book("000-In14", "masked_attention_logits[0]", attn::repr(attn::select(masked_attention_logits, 0)));
        ch.book("000-In16", "causal_attention_weights: lower triangular", attn::repr(causal_attention_weights));
        ch.show("attention_output.shape", attn::repr(attn::shape_of(attention_output)));

        ch.step("tokenizer");
        //! [tokenizer]
        const auto tokenizer =
            textbook::TokenizerData::load(textbook::data_dir() / "tokenizer" / "mistral-7b-v0.1_000.tsv");
        //! [tokenizer]
        ch.show("the recorded ids (bos <s> = 1 first)", ch09::id_lines(tokenizer.texts));
        ch.book("000-In18", "importing transformers", ch09::not_reproduced("the notebook shows the tail of a warning tqdm "
                "printed on stderr while transformers was imported; this program imports nothing"));

        ch.step("collate");
        //! [collate]
        const std::int64_t pad_token_id = tokenizer.eos_token_id;  // pad_token = eos_token
        const auto encoded_input = attn::pad_batch(tokenizer.sequences(), pad_token_id, attn::PaddingSide::left);
        //! [collate]
        ch.book("000-In19", "encoded_input.keys()", ch09::dict_keys_repr(attn::BatchEncoding::keys()));
        ch.book("000-In20", "tokenizer.pad_token_id", std::to_string(pad_token_id));
        ch.book("000-In21", "encoded_input['input_ids'][0]: left padding with 2",
                attn::repr(attn::LongTensor(xt::view(encoded_input.input_ids, 0, xt::all()))));
        ch.book("000-In22", "encoded_input['attention_mask'][0]",
                attn::repr(attn::LongTensor(xt::view(encoded_input.attention_mask, 0, xt::all()))));
        ch.show("the whole batch: input_ids and attention_mask [3, 9]",
                attn::repr(encoded_input.input_ids) + "\n" + attn::repr(encoded_input.attention_mask));
        const auto right = attn::pad_batch(tokenizer.sequences(), pad_token_id, attn::PaddingSide::right);
        ch.show("padding on the right", attn::repr(right.input_ids) + "\n" + attn::repr(right.attention_mask));
        ch.show("without a collator: ids_tensor(ragged ids), ValueError in PyTorch",
                textbook::error_text([&] { attn::ids_tensor(tokenizer.sequences()); }, ""));

        ch.step("attention_mask");
        //! [attention_mask]
        const attn::LongTensor attention_mask = encoded_input.attention_mask;
        B = attention_mask.shape()[0], S = attention_mask.shape()[1];  // B, S = attention_mask.shape
        attn::manual_seed(ch.seed(24));
        const attn::Tensor dummy_logits = attn::apply_attention_mask(attn::rand({B, S, S}), attention_mask);
        //! [attention_mask]
        ch.book("000-In24", "random logits with the attention mask applied", attn::repr(dummy_logits));

        ch.step("base");
        //! [base]
        attn::manual_seed(ch.seed(27));
        const attn::Tensor z3 = attn::rand({B, S, E});
        attn::BaseSelfAttention self_atten({.embed_dim = E});
        const auto qkv = self_atten.construct_query_key_value(z3);
        const attn::Tensor logits = self_atten.calculate_unmasked_attention_logits(qkv.query, qkv.key);
        const auto combined = self_atten.apply_attention_mask(attention_mask, self_atten.apply_causal_mask(logits));
        const attn::BaseOutput output = self_atten(z3, attention_mask);
        //! [base]
        ch.show("both masks: the first text's logits [9, 9]", attn::repr(attn::select(combined, 0)));
        ch.show("fully masked query rows per text (6, 4, 0 pads)",
                textbook::join_counts({attn::count_fully_masked_rows(attn::select(combined, 0)),
                                       attn::count_fully_masked_rows(attn::select(combined, 1)),
                                       attn::count_fully_masked_rows(attn::select(combined, 2))}));
        ch.show("output.attention_output.shape", attn::repr(attn::shape_of(output.attention_output)));
        ch.show("attention_weights[0], torch.softmax", attn::repr(attn::select(output.attention_weights, 0)));
        ch.show("output.attention_output[0]", attn::repr(attn::select(output.attention_output, 0)));

        ch.step("two_layers");
        //! [two_layers]
        const attn::BaseSelfAttention second_layer({.embed_dim = E});
        const attn::BaseOutput layer2 = second_layer(output.attention_output, attention_mask);
        //! [two_layers]
        ch.show("NaN count: layer 1 output, layer 2 output (of 3 x 9 x 16 = 432 numbers)",
                textbook::join_counts({attn::count_nan(output.attention_output), attn::count_nan(layer2.attention_output)}));

        ch.step("fix");
        //! [fix]
        self_atten.fully_masked_rows = attn::FullyMaskedRows::zero;  // masked_softmax
        attn::BaseSelfAttention second_fixed = second_layer;
        second_fixed.fully_masked_rows = attn::FullyMaskedRows::zero;
        const attn::BaseOutput fixed = self_atten(z3, attention_mask);
        const attn::BaseOutput fixed2 = second_fixed(fixed.attention_output, attention_mask);
        //! [fix]
        ch.show("attention_weights[0], masked_softmax", attn::repr(attn::select(fixed.attention_weights, 0)),
                {{"attention_weights", fixed.attention_weights}});
        ch.show("NaN count after the fix: layer 1 output, layer 2 output",
                textbook::join_counts({attn::count_nan(fixed.attention_output), attn::count_nan(fixed2.attention_output)}));

        ch.step("unpadded");
        //! [unpadded]
        std::vector<attn::Tensor> inputs;  // each text's own vectors [n_b, E]
        for (std::size_t b = 0; b < B; ++b) inputs.push_back(attn::real_token_rows(z3, attention_mask, b));
        const auto fixed_right =
            self_atten(attn::pad_sequences(inputs, attn::PaddingSide::right), right.attention_mask);
        std::ostringstream report;
        for (std::size_t b = 0; b < B; ++b) {
            const attn::Tensor alone = attn::select(self_atten(attn::stack({inputs[b]}, 0)).attention_output, 0);
            const auto left_rows = attn::real_token_rows(fixed.attention_output, attention_mask, b);
            const auto right_rows = attn::real_token_rows(fixed_right.attention_output, right.attention_mask, b);
            report << (b ? "\n" : "") << "text " << b << " (" << inputs[b].shape()[0] << " tokens): left padding "
                   << attn::repr_bool(attn::allclose(left_rows, alone, 0.0, 1e-6))
                   << ", right padding " << attn::repr_bool(attn::allclose(right_rows, alone, 0.0, 1e-6));
        }
        //! [unpadded]
        ch.show("padded output at the real tokens == the text alone (atol=1e-6)", report.str());
    });
}
