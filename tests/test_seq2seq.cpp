// Tests for chapter 25's encoder-decoder (attn/modules/seq2seq.hpp) trained on the copy task and
// its reversal through the library's backward pass and optim::AdamW.
//
// Expected values come from the oracle: Debian's python3-torch 1.13.1 on the reference BLAS,
// recorded by tools/oracle/cross_attention.py into data/oracle/cross_attention.json (`training`:
// every step's loss and every parameter after the 200 steps, as float32 bits). Bound: 0 ulp.
// The held-out accuracy is the requirement (>= 99 % of sequences decoded exactly).
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "oracle.hpp"
#include "support.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/attention_only.hpp"
#include "attn/modules/seq2seq.hpp"
#include "attn/nn/optim.hpp"

namespace test_seq2seq {  // every test file is a namespace of its own (tests/meson.build)

using json = nlohmann::json;
using attn::Tensor;

namespace {

constexpr std::size_t V = 11, kLength = 10;

// tools/oracle/cross_attention.py's train(): seed 123, the model, AdamW(lr=0.01), `steps` steps
// of copy_batch(32), forward, cross-entropy, zero_grad, backward, step.
struct Run {
    attn::AttentionOnlySeq2Seq model;
    std::vector<float> losses;
};

Run train(bool reverse, int steps = 200) {
    attn::manual_seed(123);
    Run run{attn::AttentionOnlySeq2Seq({.vocab_size = V, .context_length = kLength, .emb_dim = 32, .num_heads = 2}), {}};
    attn::optim::AdamW optimizer(run.model.named_parameters(), {.lr = 0.01});
    for (int step = 0; step < steps; ++step) {
        const attn::CopyBatch batch = attn::copy_batch(32, V, kLength, reverse);
        const auto [input, target] = attn::next_token_pairs(batch.tgt);
        attn::AttentionOnlySeq2Seq::Saved saved;
        const Tensor logits = run.model.forward(batch.src, input, saved);
        const Tensor loss = attn::sequence_cross_entropy(logits, target);
        optimizer.zero_grad();
        run.model.backward(saved, attn::sequence_cross_entropy_backward(logits, target));
        optimizer.step();
        run.losses.push_back(loss());
    }
    return run;
}

const Run& trained(bool reverse) {
    static const Run copy = train(false), reversal = train(true);
    return reverse ? reversal : copy;
}

}  // namespace

TEST_CASE("the encoder-decoder trains as PyTorch trains it: every loss and parameter, copy and reversal (0 ulp)") {
    for (const auto& r : test::oracle_file("cross_attention.json")["training"]) {
        const std::string name = r["name"];
        INFO(name << ": " << r["python"].get<std::string>());
        const Run& run = trained(name == "reversal");
        const auto& bits = r["loss_bits"];
        REQUIRE(bits.size() == run.losses.size());
        std::size_t first_diff = bits.size();
        for (std::size_t i = 0; i < bits.size(); ++i)
            if (std::bit_cast<std::uint32_t>(run.losses[i]) != bits[i].get<std::uint32_t>()) {
                first_diff = i;
                break;
            }
        INFO("first differing step: " << first_diff);
        CHECK(first_diff == bits.size());
        attn::AttentionOnlySeq2Seq model = run.model;
        const auto params = model.named_parameters();
        CHECK(params.size() == r["params_after"].size());
        for (const auto& p : params) {
            INFO(p.name);
            CHECK(test::max_abs_diff(*p.value, test::oracle_bits_tensor(r["params_after"][p.name])) == 0.0);
        }
    }
}

TEST_CASE("control: one training step fewer gives other parameters") {
    const Run fewer = train(false, 199);
    attn::AttentionOnlySeq2Seq a = fewer.model, b = trained(false).model;
    CHECK(test::max_abs_diff(a.cross_attn.out_proj.weight, b.cross_attn.out_proj.weight) > 0.0);
}

TEST_CASE("greedy decoding reproduces at least 99 % of 1000 held-out sequences, copy and reversal") {
    for (const bool reverse : {false, true}) {
        INFO((reverse ? "reversal" : "copy"));
        attn::Generator held_out(2024);
        const attn::CopyBatch batch = attn::copy_batch(1000, V, kLength, reverse, held_out);
        const attn::LongTensor decoded = trained(reverse).model.greedy_decode(batch.src, kLength);
        std::size_t exact = 0;
        for (std::size_t b = 0; b < 1000; ++b) {
            bool same = true;
            for (std::size_t j = 0; j < kLength; ++j) same = same && decoded(b, j) == batch.tgt(b, j);
            exact += same;
        }
        CHECK(exact >= 990);
    }
}

TEST_CASE("decoding with the cross-attention cache gives the uncached logits bit for bit") {
    const attn::AttentionOnlySeq2Seq& model = trained(true).model;
    attn::Generator gen(7);
    const attn::CopyBatch batch = attn::copy_batch(5, V, kLength, true, gen);
    const Tensor memory = model.encode(batch.src);
    const attn::KVCache cache = model.cross_attn.memory_cache(memory, memory);
    for (long t = 1; t <= static_cast<long>(kLength); ++t) {
        attn::LongTensor prefix = attn::LongTensor::from_shape({5, static_cast<std::size_t>(t)});
        for (std::size_t b = 0; b < 5; ++b)
            for (long j = 0; j < t; ++j) prefix(b, j) = batch.tgt(b, j);
        const Tensor cached = model.decode(cache, prefix), full = model.decode(memory, prefix);
        CHECK(test::max_abs_diff(cached, full) == 0.0);
    }
}

// PyTorch's argmax takes the first NaN as the largest value (torch 1.13:
// tensor([[1., nan, 2., nan]]).argmax(-1, keepdim=True) is tensor([[1]])): with the output head's
// row 3 all NaN, every logit of token 3 is NaN and tools/oracle/reference/seq2seq.py's greedy_decode
// decodes [1, 3, 3, 3]; a maximum that passes NaNs over (std::max_element) decoded a finite token.
TEST_CASE("greedy decoding takes a NaN logit as the largest, as PyTorch's argmax does") {
    attn::Generator gen(3);
    attn::AttentionOnlySeq2Seq model({.vocab_size = 11, .context_length = 4, .emb_dim = 8, .num_heads = 2}, gen);
    for (std::size_t j = 0; j < 8; ++j) model.out_head.weight(3, j) = std::numeric_limits<float>::quiet_NaN();
    const attn::LongTensor ys = model.greedy_decode(attn::LongTensor(xt::ones<std::int64_t>(attn::Shape{2, 4})), 4);
    for (std::size_t b = 0; b < 2; ++b) {
        CHECK(ys(b, 0) == 1);
        for (std::size_t t = 1; t < 4; ++t) CHECK(ys(b, t) == 3);
    }
}

TEST_CASE("the trained cross-attention is the diagonal for copying and the anti-diagonal for reversal") {
    for (const bool reverse : {false, true}) {
        attn::Generator gen(11);
        const attn::CopyBatch batch = attn::copy_batch(200, V, kLength, reverse, gen);
        const auto [input, target] = attn::next_token_pairs(batch.tgt);
        const Tensor w = trained(reverse).model.cross_attention_weights(batch.src, input);  // [200, 9, 10]
        // decoder position t predicts target token t + 1: source position t + 1 (copy) or
        // length - 1 - t (reversal)
        double on = 0.0;
        for (std::size_t b = 0; b < 200; ++b)
            for (std::size_t t = 0; t + 1 < kLength; ++t) on += w(b, t, reverse ? kLength - 1 - t : t + 1);
        CHECK(on / (200.0 * (kLength - 1)) > 0.9);
    }
}

}  // namespace test_seq2seq
