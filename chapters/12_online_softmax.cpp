// Chapter 12: from three passes to one (online softmax, tiled attention). Prose: docs/chapters/.
#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>

#include "attn/attention/masks.hpp"
#include "attn/attention/online_softmax.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/ulp.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/attention/padding.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"
#include "12_online_softmax.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "12_online_softmax", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]

        ch.step("three_pass");
        //! [three_pass]
        const attn::Tensor query = attn::select(inputs, 1);  // "journey", chapter 1's x^(2)
        const attn::Tensor scores = attn::matmul(inputs, query);
        const attn::Tensor weights = attn::flash::softmax_three_pass(scores);
        //! [three_pass]
        ch.show("scores of x^(2), and softmax in three passes", attn::repr(scores) + "\n" + attn::repr(weights));

        ch.step("online");
        //! [online]
        std::vector<attn::flash::Normalizer> trace;
        attn::flash::online_normalizer(scores.data(), scores.size(), &trace);
        const attn::Tensor weights_online = attn::flash::softmax_online(scores);
        //! [online]
        std::vector<textbook::Row> states{{"j", "x_j", "m", "l"}};
        for (std::size_t j = 0; j < trace.size(); ++j)
            states.push_back({std::to_string(j), textbook::fixed(scores.flat(j)), textbook::fixed(trace[j].m),
                              textbook::fixed(trace[j].l)});
        ch.show("(m, l) after each score", textbook::table(states, {3, 9, 9}));
        ch.show("softmax_online(scores); max |difference| to three passes",
                attn::repr(weights_online) + "\n" + textbook::max_abs_diff_text(weights_online, weights));

        ch.step("fused");
        //! [fused]
        const auto row = attn::flash::fused_row_trace(query, inputs, inputs, /*block_k=*/2);
        const auto& last = row.back();
        const attn::Tensor context_2 = attn::Tensor(xt::adapt(last.O)) / last.l;
        //! [fused]
        std::vector<std::pair<std::string, std::string>> blocks;
        for (std::size_t first = 0; const auto& st : row) {
            blocks.push_back({"keys " + std::to_string(first) + ".." + std::to_string(st.keys_seen - 1),
                              ch12::fields({{"m", textbook::fixed(st.m)}, {"l", textbook::fixed(st.l)},
                                            {"O", ch12::fixed_list(st.O)},
                                            {"O / l", ch12::fixed_list(attn::Tensor(xt::adapt(st.O)) / st.l)}})});
            first = st.keys_seen;
        }
        ch.show("m, l and O after each block of two keys", textbook::labelled_lines(blocks, {.separator = ": ", .align = false}));
        ch.show("context_vec_2 = O / l (chapter 1: tensor([0.4419, 0.6515, 0.5683]))",
                attn::repr(context_2));

        ch.step("tiled");
        //! [tiled]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // [2, 6, 3], chapter 6
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttention mha(
            {.d_in = 3, .d_out = 2, .context_length = batch.shape()[1], .num_heads = 2});
        // MultiHeadAttention's forward with the core's tiled backend and tiles of 2 x 2:
        const auto heads = [&](const attn::Tensor& y) { return attn::HeadsView::split(y, mha.num_heads, mha.head_dim); };
        const attn::Tensor context = attn::attend(
            heads(mha.W_query(batch)), heads(mha.W_key(batch)), heads(mha.W_value(batch)),
            {.is_causal = true, .scale = attn::ScoreScale::divide_by(std::sqrt(float(mha.head_dim))),
             .backend = attn::SDPABackend::tiled, .block_q = 2, .block_k = 2});
        const attn::Tensor context_vecs = mha.out_proj(context);
        //! [tiled]
        ch.show("(b) context_vecs = mha(batch), tiled, and its shape",
                attn::repr(context_vecs) + "\ncontext_vecs.shape: " + attn::repr(attn::shape_of(context_vecs)));

        ch.step("masks");
        //! [masks]
        const attn::LongTensor attention_mask = {{0, 0, 0, 1, 1, 1}, {1, 1, 1, 1, 1, 1}};  // left padding
        const attn::Tensor x = attn::transpose(attn::view(batch, {2, 6, 1, 3}), 1, 2);  // [2, 1, 6, 3]
        const attn::BoolTensor padding = attn::key_padding_mask(attention_mask);      // [2, 1, 1, 6]
        attn::SDPAOptions causal{.attn_mask = &padding, .is_causal = true,
                                 .scale = attn::ScoreScale::divide_by(std::sqrt(3.0f)),
                                 .fully_masked_rows = attn::FullyMaskedRows::zero,
                                 .backend = attn::SDPABackend::tiled, .block_q = 2, .block_k = 2};
        const attn::Tensor padded = attn::scaled_dot_product_attention(x, x, x, causal);
        const float inf = std::numeric_limits<float>::infinity();
        const attn::Tensor no_key = {-inf, -inf, -inf};  // a query whose every key is masked
        const auto none = attn::flash::online_normalizer(no_key.data(), no_key.size());
        //! [masks]
        ch.show("a row of -inf: torch.softmax, masked_softmax, and the online state (m, l)",
                attn::repr(attn::softmax(no_key)) + "\n" + attn::repr(attn::masked_softmax(no_key)) + "\n(" +
                    attn::repr(attn::scalar_tensor(none.m)) + ", " + attn::repr(attn::scalar_tensor(none.l)) + ")");
        ch.show("attention over a left-padded batch, causal: sequence 0",
                attn::repr(attn::select(attn::select(padded, 0), 0)));
        causal.backend = attn::SDPABackend::step;  // every [B, H, T, T] intermediate, chapter 7's way
        const attn::Tensor padded_naive = attn::scaled_dot_product_attention(x, x, x, causal);
        ch.show("NaN in the tiled result, and in the naive one (masked_softmax)",
                textbook::join_counts({attn::count_nan(padded), attn::count_nan(padded_naive)}));

        ch.step("ulp");
        //! [ulp]
        attn::Generator gen(12);

        std::vector<std::pair<std::string, double>> cases;
        for (const auto [B, H, T, d] : {std::array<std::size_t, 4>{1, 2, 50, 8}, {2, 3, 97, 16}, {3, 4, 130, 64}}) {
            const attn::Tensor q = attn::randn({B, H, T, d}, gen), k = attn::randn({B, H, T, d}, gen),
                               v = attn::randn({B, H, T, d}, gen);
            attn::SDPAOptions o{.is_causal = true, .scale = attn::ScoreScale::divide_by(std::sqrt(float(d))),
                                .fully_masked_rows = attn::FullyMaskedRows::zero,
                                .backend = attn::SDPABackend::tiled, .block_q = 32, .block_k = 16};
            const attn::Tensor tiled = attn::scaled_dot_product_attention(q, k, v, o);
            o.backend = attn::SDPABackend::step;
            const attn::Tensor naive = attn::scaled_dot_product_attention(q, k, v, o);
            const std::string label = "B=" + std::to_string(B) + " H=" + std::to_string(H) +
                                      " T=" + std::to_string(T) + " d=" + std::to_string(d);
            cases.emplace_back(label, attn::max_diff_in_ulps(tiled, naive, xt::amax(xt::abs(v))()));
        }
        //! [ulp]
        double largest = 0.0;
        for (const auto& [label, ulps] : cases) largest = std::max(largest, ulps);
        cases.emplace_back("largest", largest);
        ch.show("largest |tiled - naive| on random sizes (blocks 32 x 16, causal), in ulp of max |v|",
                textbook::labelled_lines(cases, [](double ulps) { return textbook::fixed(ulps, 1) + " ulp"; },
                                         {.separator = ": ", .align = false}));
    });
}
