// Tests for the GPT model's backward pass and training step (chapter 26): every layer's backward
// and the whole model's `.grad` against PyTorch's autograd through Raschka's own chapter 5
// classes, recorded by tools/oracle/gpt_backward.py from Debian's python3-torch 1.13 on the
// reference BLAS (data/oracle/gpt_backward.json): LayerNorm, cross-entropy over flattened
// logits, a TransformerBlock in training mode, three small GPTModels with one AdamW step, and
// his first training step at GPT_CONFIG_124M (SHA-256 of every gradient and parameter).
#include <catch2/catch.hpp>


#include <bit>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/optim.hpp"
#include "attn/print/python.hpp"
#include "attn/text/utf8.hpp"
#include "attn/train/train.hpp"
#include "oracle.hpp"
#include "textbook/text_file.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_gpt_training {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::LongTensor;
using attn::Shape;
using attn::Tensor;

const nlohmann::json& oracle() { return test::oracle_file("gpt_backward.json"); }

std::vector<std::uint32_t> bits_of(const Tensor& t) {
    std::vector<std::uint32_t> out(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) out[i] = std::bit_cast<std::uint32_t>(t.data()[i]);
    return out;
}

// How many elements of `t` differ from the oracle's bits (0: PyTorch's bits exactly).
std::size_t differing(const Tensor& t, const nlohmann::json& bits) {
    REQUIRE(bits.size() == t.size());
    std::size_t n = 0;
    const std::vector<std::uint32_t> ours = bits_of(t);
    for (std::size_t i = 0; i < ours.size(); ++i) n += ours[i] != bits[i].get<std::uint32_t>();
    return n;
}


LongTensor ids(const nlohmann::json& rows) {
    LongTensor t = LongTensor::from_shape({rows.size(), rows[0].size()});
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t j = 0; j < rows[i].size(); ++j) t(i, j) = rows[i][j].get<std::int64_t>();
    return t;
}

attn::GPTConfig config_of(const nlohmann::json& c) {
    return {.vocab_size = c["vocab_size"], .context_length = c["context_length"], .emb_dim = c["emb_dim"],
            .n_heads = c["n_heads"], .n_layers = c["n_layers"], .drop_rate = c["drop_rate"],
            .qkv_bias = c["qkv_bias"]};
}

// His calc_loss_batch and loss.backward(): cross_entropy(logits.flatten(0, 1), targets.flatten())
// through the model's saved forward.
Tensor loss_and_backward(attn::GPTModel& model, const LongTensor& inputs, const LongTensor& targets) {
    attn::GPTModel::Saved saved;
    Tensor logits = model.forward(inputs, saved);
    const Shape s = attn::shape_of(logits);
    Tensor flat = logits;
    flat.reshape({s[0] * s[1], s[2]});
    LongTensor flat_targets = targets;
    flat_targets.reshape({s[0] * s[1]});
    const Tensor loss = attn::cross_entropy(flat, flat_targets);
    Tensor grad = attn::cross_entropy_backward(attn::scalar_tensor(1.0f), flat, flat_targets);
    grad.reshape(s);
    model.backward(saved, grad);
    return loss;
}

}  // namespace

TEST_CASE("LayerNorm's backward gives autograd's bits through his forward", "[gpt_training]") {
    const auto& o = oracle()["layer_norm"];
    attn::LayerNorm ln(24);
    ln.scale = test::oracle_bits_tensor({24}, o["scale_bits"]);
    ln.shift = test::oracle_bits_tensor({24}, o["shift_bits"]);
    const Tensor x = test::oracle_bits_tensor({2, 5, 24}, o["x_bits"]);
    const Tensor g = test::oracle_bits_tensor({2, 5, 24}, o["g_bits"]);
    attn::LayerNorm::Saved saved;
    const Tensor y = ln.forward(x, saved);
    CHECK(differing(y, o["y_bits"]) == 0);
    const Tensor dx = ln.backward(saved, g);
    CHECK(differing(dx, o["x_grad_bits"]) == 0);
    CHECK(differing(*ln.scale_grad, o["scale_grad_bits"]) == 0);
    CHECK(differing(*ln.shift_grad, o["shift_grad_bits"]) == 0);
    // A second backward adds to .grad (AccumulateGrad); a wrong grad_output is refused first.
    CHECK_THROWS_AS(ln.backward(saved, attn::zeros({2, 5, 23})), std::invalid_argument);
}

TEST_CASE("cross_entropy over flattened logits: loss and gradient as autograd's", "[gpt_training]") {
    const auto& o = oracle()["cross_entropy"];
    Tensor logits = test::oracle_bits_tensor({6, 11}, o["logits_bits"]);
    LongTensor targets = ids(o["targets"]);
    targets.reshape({6});
    CHECK(std::bit_cast<std::uint32_t>(attn::cross_entropy(logits, targets)()) == o["loss_bits"][0]);
    CHECK(differing(attn::cross_entropy_backward(attn::scalar_tensor(1.0f), logits, targets), o["logits_grad_bits"]) == 0);
    // The training step's one pass: the same loss and gradient, into a reused buffer.
    Tensor grad;
    CHECK(std::bit_cast<std::uint32_t>(attn::cross_entropy_with_grad(logits, targets, grad)) == o["loss_bits"][0]);
    CHECK(differing(grad, o["logits_grad_bits"]) == 0);
}

TEST_CASE("cross_entropy_with_grad gives the two calls' bits on GPT-2's vocabulary, ignored rows too", "[gpt_training]") {
    attn::manual_seed(35);
    const Tensor logits = attn::randn({7, 50257}) * 3.0f;
    LongTensor targets = attn::randint(0, 50257, {7});
    targets(2) = -100;  // ignore_index
    Tensor grad = attn::zeros({1});  // another shape: resized
    const float loss = attn::cross_entropy_with_grad(logits, targets, grad);
    CHECK(std::bit_cast<std::uint32_t>(loss) == std::bit_cast<std::uint32_t>(attn::cross_entropy(logits, targets)()));
    const Tensor separate = attn::cross_entropy_backward(attn::scalar_tensor(1.0f), logits, targets);
    CHECK(bits_of(grad) == bits_of(separate));
    targets(3) = 50257;
    CHECK_THROWS_AS(attn::cross_entropy_with_grad(logits, targets, grad), std::invalid_argument);
}

TEST_CASE("TransformerBlock's backward in training mode: every gradient as autograd's", "[gpt_training]") {
    const auto& o = oracle()["transformer_block"];
    attn::manual_seed(33);
    attn::TransformerBlock block(config_of(o["config"]));
    const Tensor x = attn::randn({2, 7, 24});
    const Tensor g = attn::randn({2, 7, 24});
    CHECK(differing(x, o["x_bits"]) == 0);
    CHECK(differing(g, o["g_bits"]) == 0);
    attn::TransformerBlock::Saved saved;
    const Tensor y = block.forward(x, saved);  // dropout masks from the default generator, as his
    CHECK(differing(y, o["y_bits"]) == 0);
    CHECK(differing(block.backward(saved, g), o["x_grad_bits"]) == 0);
    for (const auto& p : block.named_parameters()) {
        INFO(p.name);
        REQUIRE(p.grad->has_value());
        CHECK(differing(**p.grad, o["grads"][p.name]) == 0);
    }
}

TEST_CASE("small GPTModels: the loss, every .grad and one AdamW step as PyTorch's", "[gpt_training]") {
    for (const auto& o : oracle()["small_models"]) {
        const attn::GPTConfig cfg = config_of(o["config"]);
        INFO("qkv_bias " << cfg.qkv_bias << ", drop_rate " << cfg.drop_rate);
        attn::manual_seed(34);
        attn::GPTModel model(cfg);
        attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
        const LongTensor inputs = attn::randint(0, 97, {2, 12});
        const LongTensor targets = attn::randint(0, 97, {2, 12});
        CHECK(inputs == ids(o["inputs"]));
        optimizer.zero_grad();
        const Tensor loss = loss_and_backward(model, inputs, targets);
        CHECK(std::bit_cast<std::uint32_t>(loss()) == o["loss_bits"][0]);
        for (const auto& p : model.named_parameters()) {
            INFO(p.name);
            REQUIRE(p.grad->has_value());
            CHECK(differing(**p.grad, o["grads"][p.name]) == 0);
        }
        optimizer.step();
        for (const auto& p : model.named_parameters()) {
            INFO(p.name << " after optimizer.step()");
            CHECK(differing(*p.value, o["after_step"][p.name]) == 0);
        }
    }
}

TEST_CASE("his first training step at GPT_CONFIG_124M: every .grad and parameter as PyTorch's", "[gpt_training][full-size]") {
    const auto& o = oracle()["first_step"];
    // His In [20]: the first 90 % of The Verdict's characters, windows of 256 tokens, stride 256.
    const std::string text = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
    const std::string_view train_data = attn::utf8_slice(text, 0, static_cast<std::size_t>(0.90 * static_cast<double>(attn::utf8_len(text))));
    attn::manual_seed(123);
    const attn::data::DataLoader train_loader = attn::data::create_dataloader_v1(
        train_data, textbook::gpt2_tokenizer(), {.batch_size = 2, .max_length = 256, .stride = 256});
    attn::GPTConfig cfg = attn::GPT_CONFIG_124M;
    cfg.context_length = 256;
    attn::manual_seed(123);  // his In [27]
    attn::GPTModel model(cfg);
    attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    auto it = train_loader.iter();
    const std::optional<attn::data::Batch> batch = it.next();
    REQUIRE(batch);
    for (std::size_t row = 0; row < 2; ++row)
        for (std::size_t t = 0; t < 4; ++t) CHECK(batch->input_ids(row, t) == o["first_window_ids"][row][t]);
    attn::TrainStepState state;
    const Tensor loss = attn::train_step(model, optimizer, batch->input_ids, batch->target_ids, state);
    CHECK(std::bit_cast<std::uint32_t>(loss()) == o["loss_bits"][0]);
    for (const auto& p : model.named_parameters()) {
        INFO(p.name);
        CHECK(test::sha256(*p.value) == o["after_step_sha256"][p.name]);
        REQUIRE(p.grad->has_value());
        CHECK(test::sha256(**p.grad) == o["grads_sha256"][p.name]);
    }
}

// His In [20]: The Verdict split 90 / 10 by characters, torch.manual_seed(123), the two loaders.
std::pair<attn::data::DataLoader, attn::data::DataLoader> his_loaders() {
    const std::string text = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
    const std::size_t split_idx = static_cast<std::size_t>(0.90 * static_cast<double>(attn::utf8_len(text)));
    attn::manual_seed(123);
    attn::data::DataLoader train_loader = attn::data::create_dataloader_v1(
        attn::utf8_slice(text, 0, split_idx), textbook::gpt2_tokenizer(), {.batch_size = 2, .max_length = 256, .stride = 256});
    attn::data::DataLoader val_loader = attn::data::create_dataloader_v1(
        attn::utf8_slice(text, split_idx, attn::utf8_len(text)), textbook::gpt2_tokenizer(),
        {.batch_size = 2, .max_length = 256, .stride = 256, .shuffle = false, .drop_last = false});
    return {std::move(train_loader), std::move(val_loader)};
}

attn::GPTConfig his_config() {
    attn::GPTConfig cfg = attn::GPT_CONFIG_124M;
    cfg.context_length = 256;
    return cfg;
}

TEST_CASE("his In [25]: the untrained model's mean loss over both loaders as Debian's torch 1.13 printed it", "[gpt_training][full-size]") {
    // data/oracle/pretraining.json: tools/oracle/pretraining.py ran his cells on Debian's torch 1.13
    // (reference BLAS); its In [25] printed Python floats, kept as repr.
    const auto& o = test::oracle_file("pretraining.json");
    const auto [train_loader, val_loader] = his_loaders();
    attn::manual_seed(123);  // his In [2]
    attn::GPTModel model(his_config());
    model.eval();
    attn::manual_seed(123);  // his In [25]
    const double train_loss = attn::calc_loss_loader(train_loader, model);
    const double val_loss = attn::calc_loss_loader(val_loader, model);
    CHECK(attn::repr_float(train_loss) == o["initial_losses"]["train_loss"].get<std::string>());
    CHECK(attn::repr_float(val_loss) == o["initial_losses"]["val_loss"].get<std::string>());
}

TEST_CASE("his In [27] run: the first six steps' losses and the first two evaluations as Debian's torch 1.13 computed them", "[gpt_training][full-size]") {
    // data/oracle/pretraining.json: tools/oracle/pretraining.py ran his cells In [2]-[27] on Debian's
    // torch 1.13 (reference BLAS) and noted every loss his calc_loss_batch returned, in order.
    const auto& o = test::oracle_file("pretraining.json");
    std::vector<double> his_steps;
    std::size_t seen = 0;
    for (const auto& e : o["calc_loss_batch"]) {
        if (seen++ < 10) continue;  // his In [25]: the untrained model over both loaders
        if (e["training"].get<bool>()) his_steps.push_back(std::stod(e["loss"].get<std::string>()));
    }
    REQUIRE(his_steps.size() >= 6);
    const auto [train_loader, val_loader] = his_loaders();
    attn::manual_seed(123);  // his In [27]
    attn::GPTModel model(his_config());
    attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    std::vector<float> losses;
    std::ostringstream printed;
    const attn::TrainHistory history = attn::train_model_simple(
        model, train_loader, val_loader, optimizer, {.num_epochs = 10, .eval_freq = 5, .eval_iter = 5, .max_steps = 6},
        textbook::gpt2_tokenizer(), printed, [&](const attn::TrainProgress& p) { losses.push_back(p.loss); });
    REQUIRE(losses.size() == 6);
    for (std::size_t i = 0; i < losses.size(); ++i) {
        INFO("training step " << i + 1);
        CHECK(static_cast<double>(losses[i]) == his_steps[i]);  // loss.item(): the float32 as a double
    }
    REQUIRE(history.train_losses.size() == 2);  // the evaluations after steps 1 and 6 (global_step 0 and 5)
    for (std::size_t i = 0; i < 2; ++i) {
        INFO("evaluation " << i + 1);
        CHECK(history.train_losses[i] == std::stod(o["train_losses"][i].get<std::string>()));
        CHECK(history.val_losses[i] == std::stod(o["val_losses"][i].get<std::string>()));
    }
}

}  // namespace test_gpt_training
