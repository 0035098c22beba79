// Tests for chapter 21's first fit: chapter 7's MultiHeadAttention trained 20 steps by
// optim::SGD and optim::AdamW on mse_loss, through the library's backward pass.
//
// Expected values come from the oracle: Debian's python3-torch 1.13.1 on the reference BLAS,
// recorded by tools/oracle/attention_learns.py into data/oracle/attention_learns.json (every
// step's loss and every parameter after step 20, as float32 bits). Bound: 0 ulp. The control
// trains with one step fewer and must differ.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "oracle.hpp"
#include "support.hpp"
#include "attn/modules/attention_only.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/ulp.hpp"
#include "attn/nn/optim.hpp"

namespace test_attention_learns {  // every test file is a namespace of its own (tests/meson.build)

using json = nlohmann::json;
using attn::Tensor;

namespace {

struct Fit {
    std::vector<float> losses;
    std::vector<std::pair<std::string, Tensor>> params;
};

// tools/oracle/attention_learns.py's fit(): seed 123, the module, target = rand(2, 6, 2),
// `steps` steps of zero_grad, forward, mse_loss, backward, step.
Fit fit(bool adamw, int steps = 20) {
    const Tensor inputs = attn::tensor({{0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f},
                                        {0.22f, 0.58f, 0.33f}, {0.77f, 0.25f, 0.10f}, {0.05f, 0.80f, 0.55f}});
    const Tensor batch = attn::stack({inputs, inputs}, 0);
    attn::manual_seed(123);
    attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
    const Tensor target = attn::rand({2, 6, 2});
    attn::optim::SGD sgd(mha.named_parameters(), {.lr = 0.5});
    attn::optim::AdamW adam(mha.named_parameters(), {.lr = 0.01, .weight_decay = 0.1});
    attn::optim::Optimizer& optimizer = adamw ? static_cast<attn::optim::Optimizer&>(adam) : sgd;
    Fit out;
    for (int step = 0; step < steps; ++step) {
        optimizer.zero_grad();
        attn::AttentionSaved saved;
        const Tensor context_vecs = mha.forward(batch, saved);
        const Tensor loss = attn::mse_loss(context_vecs, target);
        mha.backward(saved, attn::mse_loss_backward(attn::scalar_tensor(1.0f), context_vecs, target));
        optimizer.step();
        out.losses.push_back(loss());
    }
    for (const auto& p : mha.named_parameters()) out.params.emplace_back(p.name, *p.value);
    return out;
}

std::int64_t max_ulp_from_oracle(const Fit& f, const json& run) {
    std::int64_t worst = 0;
    const json& losses = run["loss_bits"];
    REQUIRE(losses.size() == f.losses.size());
    for (std::size_t i = 0; i < f.losses.size(); ++i)
        worst = std::max(worst, attn::ulp_distance(f.losses[i], std::bit_cast<float>(losses[i].get<std::uint32_t>())));
    const json& params = run["params_after"];
    REQUIRE(params.size() == f.params.size());
    for (const auto& named : f.params) {
        const std::string& name = named.first;
        INFO("parameter " << name);
        REQUIRE(params.contains(name));
        const json& p = params[name];
        const Tensor expected = test::oracle_bits_tensor(p);
        worst = std::max(worst, attn::max_ulp_distance(named.second, expected));
    }
    return worst;
}

const json& run(const std::string& name) {
    for (const json& r : test::oracle_file("attention_learns.json")["runs"])
        if (r["name"] == name) return r;
    FAIL("no run " << name << " in attention_learns.json");
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("first fit: 20 steps of SGD and AdamW give PyTorch's losses and weights (0 ulp)") {
    CHECK(max_ulp_from_oracle(fit(false), run("sgd")) == 0);
    CHECK(max_ulp_from_oracle(fit(true), run("adamw")) == 0);
}

TEST_CASE("first fit: control, 19 AdamW steps and a repeated last loss differ", "[!shouldfail]") {
    Fit f = fit(true, 19);
    f.losses.push_back(f.losses.back());
    CHECK(max_ulp_from_oracle(f, run("adamw")) == 0);
}

// ---------------------------------------------------------------- the induction head

namespace {

constexpr std::size_t V = 32, HALF = 12, B = 32, STEPS = 1000;

struct Curve {
    std::vector<float> loss, first, second;
};

// The oracle's cells 8-9: seed 123, AttentionOnlyTransformer(32, 23, 32, 2), AdamW(lr=0.01),
// each step a fresh batch of 6 to 12 random tokens repeated, from the default generator.
Curve train(attn::AttentionOnlyTransformer& model, std::size_t steps) {
    attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.01});
    Curve c;
    for (std::size_t step = 0; step < steps; ++step) {
        const auto half = static_cast<std::size_t>(attn::randint(6, 13, {1})(0));
        const auto pair = attn::next_token_pairs(attn::repeated_tokens(B, half, V));
        attn::AttentionOnlyTransformer::Saved saved;
        const Tensor logits = model.forward(pair.first, saved);
        const Tensor loss = attn::sequence_cross_entropy(logits, pair.second);
        optimizer.zero_grad();
        model.backward(saved, attn::sequence_cross_entropy_backward(logits, pair.second));
        optimizer.step();
        c.loss.push_back(loss());
        c.first.push_back(attn::sequence_cross_entropy(logits, pair.second, 0, half - 1)());
        c.second.push_back(attn::sequence_cross_entropy(logits, pair.second, half, 2 * half - 1)());
    }
    return c;
}

attn::AttentionOnlyTransformer make_model() {
    attn::manual_seed(123);
    return attn::AttentionOnlyTransformer({.vocab_size = V, .context_length = 23, .emb_dim = 32, .num_heads = 2});
}

}  // namespace

TEST_CASE("induction head: all 1000 AdamW steps give PyTorch's losses bit for bit") {
    attn::AttentionOnlyTransformer model = make_model();
    const Curve c = train(model, STEPS);
    const json& o = test::oracle_file("attention_learns.json")["induction"];
    REQUIRE(o["loss_bits"].size() == STEPS);
    const auto torch_float = [&](const char* key, std::size_t i) {
        return std::bit_cast<float>(o[key][i].get<std::uint32_t>());
    };
    std::size_t identical = 0;  // steps from the start whose three losses have PyTorch's bits
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < STEPS; ++i) {
        const std::int64_t d = std::max({attn::ulp_distance(c.loss[i], torch_float("loss_bits", i)),
                                          attn::ulp_distance(c.first[i], torch_float("first_half_bits", i)),
                                          attn::ulp_distance(c.second[i], torch_float("second_half_bits", i))});
        if (d == 0 && identical == i) ++identical;
        worst = std::max(worst, d);
    }
    WARN("identical steps from the start: " << identical << ", worst ulp " << worst);
    // Every float operation of the forward, the backward and AdamW is PyTorch's, in its order
    // (the softmax's sum included: 8 lanes and AVX2's tree for rows of 8 keys or more), so
    // training does not amplify any difference: the whole run is PyTorch's, step for step.
    CHECK(identical == STEPS);
    CHECK(worst == 0);
}

TEST_CASE("induction head: the trained model predicts >= 90% of second-half tokens on held-out sequences") {
    attn::AttentionOnlyTransformer model = make_model();
    train(model, STEPS);
    attn::Generator held_out(2024);
    const auto pair = attn::next_token_pairs(attn::repeated_tokens(256, HALF, V, held_out));
    const Tensor logits = model(pair.first);
    const attn::LongTensor predicted = attn::argmax(logits, -1);
    std::size_t right = 0, total = 0;
    for (std::size_t i = 0; i < 256; ++i)
        for (std::size_t t = HALF; t < 2 * HALF - 1; ++t, ++total) right += predicted(i, t) == pair.second(i, t) ? 1 : 0;
    const double accuracy = static_cast<double>(right) / static_cast<double>(total);
    WARN("second-half accuracy on 256 held-out sequences: " << accuracy);
    CHECK(accuracy >= 0.9);
    // the first half is unpredictable: about 1 in 32
    std::size_t first_right = 0;
    for (std::size_t i = 0; i < 256; ++i)
        for (std::size_t t = 0; t + 1 < HALF; ++t) first_right += predicted(i, t) == pair.second(i, t) ? 1 : 0;
    CHECK(static_cast<double>(first_right) / (256.0 * (HALF - 1)) < 0.15);
}

}  // namespace test_attention_learns
