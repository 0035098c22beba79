// Tests for Raschka's appendix D ("Adding bells and whistles to the training loop"): his
// learning-rate warmup and cosine decay, torch.nn.utils.clip_grad_norm_, his
// find_highest_gradient and his train_model, against his own cells run on Debian's python3-torch
// 1.13 (reference BLAS, one thread) by tools/oracle/appendix_d.py (data/oracle/appendix_d.json):
// every learning rate as the same double, every total norm, loss and gradient as the same float32
// bits, the parameters after every training step by SHA-256.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor_dict.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/clip_grad.hpp"
#include "attn/nn/optim.hpp"
#include "attn/nn/state_dict.hpp"
#include "attn/print/python.hpp"
#include "attn/print/torch.hpp"
#include "attn/text/utf8.hpp"
#include "attn/train/lr_schedule.hpp"
#include "attn/train/train.hpp"
#include "attn/train/train_model.hpp"
#include "oracle.hpp"
#include "textbook/text_file.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_appendix_d {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::LongTensor;
using attn::Shape;
using attn::Tensor;

const nlohmann::json& oracle() { return test::oracle_file("appendix_d.json"); }

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }
std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

std::vector<std::uint32_t> bits_of(const Tensor& t) {
    std::vector<std::uint32_t> out(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) out[i] = bits(t.data()[i]);
    return out;
}

// Python floats compared as doubles, bit for bit.
void check_doubles(const std::vector<double>& ours, const nlohmann::json& theirs) {
    REQUIRE(ours.size() == theirs.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        INFO("entry " << i << ": " << attn::repr_float(ours[i]) << " against " << attn::repr_float(theirs[i].get<double>()));
        CHECK(bits(ours[i]) == bits(theirs[i].get<double>()));
    }
}

// SHA-256 of every parameter's float32 bytes, one after the other (the oracle's per-step digest).
std::string parameters_sha256(attn::GPTModel& model) {
    std::vector<float> all;
    for (const auto& p : model.named_parameters()) all.insert(all.end(), p.value->begin(), p.value->end());
    return test::sha256(attn::Tensor(xt::adapt(all, Shape{all.size()})));
}

attn::GPTConfig config() {
    const auto& c = oracle()["config"];
    return {.vocab_size = c["vocab_size"], .context_length = c["context_length"], .emb_dim = c["emb_dim"],
            .n_heads = c["n_heads"], .n_layers = c["n_layers"], .drop_rate = c["drop_rate"],
            .qkv_bias = c["qkv_bias"]};
}

// His In [3]: torch.manual_seed(123); the training loader (the first 90 % of The Verdict's
// characters: shuffled, drop_last) and the validation loader, windows of the context length.
struct Loaders {
    attn::data::DataLoader train, val;
};

Loaders his_loaders() {
    static const std::string text = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
    const std::size_t split_idx = static_cast<std::size_t>(0.90 * static_cast<double>(attn::utf8_len(text)));
    const std::size_t context = config().context_length;
    attn::manual_seed(123);
    return {attn::data::create_dataloader_v1(attn::utf8_slice(text, 0, split_idx), textbook::gpt2_tokenizer(),
                                             {.batch_size = 2, .max_length = context, .stride = context}),
            attn::data::create_dataloader_v1(attn::utf8_slice(text, split_idx, attn::utf8_len(text)),
                                             textbook::gpt2_tokenizer(),
                                             {.batch_size = 2, .max_length = context, .stride = context,
                                              .shuffle = false, .drop_last = false})};
}

// One parameter of a clip case: its value (zeros) and its gradient, if any.
struct Param {
    Tensor value;
    std::optional<Tensor> grad;
};

}  // namespace

TEST_CASE("his learning-rate schedules (In [6] warmup, In [8] warmup and cosine decay) as his Python floats",
          "[appendix_d]") {
    CHECK(oracle()["printed"]["In [5]"] == "27\n");  // his warmup_steps = int(0.2 * total_steps), 135 steps
    for (const auto& s : oracle()["schedules"]) {
        INFO("n_epochs " << s["n_epochs"] << ", initial_lr " << s["initial_lr"] << ", peak_lr " << s["peak_lr"]);
        attn::LrSchedule schedule{.peak_lr = s["peak_lr"], .warmup_steps = s["warmup_steps"],
                                  .total_training_steps = s["total_training_steps"],
                                  .initial_lr = s["initial_lr"], .min_lr = s["min_lr"]};
        check_doubles(schedule.lrs(), s["in8_track_lrs"]);
        schedule.cosine_decay = false;
        check_doubles(schedule.lrs(), s["in6_track_lrs"]);
    }
}

TEST_CASE("clip_grad_norm_: the total norm and every clipped gradient as torch 1.13's, errors as its", "[appendix_d]") {
    for (const auto& c : oracle()["clip_grad_norm"]) {
        INFO(c["name"].get<std::string>());
        attn::manual_seed(c["seed"].get<std::uint64_t>());
        std::vector<Param> params;
        for (const auto& shape : c["shapes"]) {
            if (shape.is_null()) {
                params.push_back({attn::zeros({1}), std::nullopt});
                continue;
            }
            const Shape s = shape.get<Shape>();
            Tensor g = attn::randn(s) * static_cast<float>(c["scale"].get<double>());
            params.push_back({attn::zeros(s), std::move(g)});
        }
        for (const auto& special : c["specials"])  // [gradient, flat index, repr, float32 bits]
            params[special[0].get<std::size_t>()].grad->data()[special[1].get<std::size_t>()] =
                std::bit_cast<float>(special[3].get<std::uint32_t>());
        std::vector<attn::nn::NamedParameter> named;
        for (std::size_t i = 0; i < params.size(); ++i)
            named.push_back({std::to_string(i), &params[i].value, &params[i].grad});
        // his find_highest_gradient of the set: its bits, None, or PyTorch's error (max() of an empty .grad)
        const auto check_highest = [&](const nlohmann::json& expected) {
            if (expected.contains("error")) {
                CHECK_THROWS_AS(attn::find_highest_gradient(named), std::invalid_argument);
                return;
            }
            const std::optional<Tensor> highest = attn::find_highest_gradient(named);
            REQUIRE(highest.has_value() == !expected.contains("none"));
            if (highest.has_value()) CHECK(bits((*highest)()) == expected["bits"].get<std::uint32_t>());
        };
        check_highest(c["highest_before"]);
        const double norm_type = std::stod(c["norm_type"].get<std::string>());
        const std::vector<std::optional<Tensor>> before = [&] {
            std::vector<std::optional<Tensor>> out;
            for (const Param& p : params) out.push_back(p.grad);
            return out;
        }();
        if (c.contains("error")) {
            try {
                (void)attn::nn::utils::clip_grad_norm_(named, c["max_norm"], norm_type, c["error_if_nonfinite"]);
                FAIL("no error");
            } catch (const std::runtime_error& e) {
                CHECK(std::string(e.what()) == c["error"].get<std::string>());
            }
        } else {
            const Tensor total = attn::nn::utils::clip_grad_norm_(named, c["max_norm"], norm_type, c["error_if_nonfinite"]);
            CHECK(attn::shape_of(total).empty());
            CHECK(bits(total()) == c["total_norm_bits"].get<std::uint32_t>());
        }
        check_highest(c["highest_after"]);
        REQUIRE(c["grads_after"].size() == params.size());
        for (std::size_t i = 0; i < params.size(); ++i) {
            INFO("gradient " << i);
            const auto& after = c["grads_after"][i];
            REQUIRE(after.is_null() == !params[i].grad.has_value());
            if (after.is_null()) continue;
            if (after.contains("sha256"))
                CHECK(test::sha256(*params[i].grad) == after["sha256"]);
            else
                CHECK(bits_of(*params[i].grad) == after["bits"].get<std::vector<std::uint32_t>>());
            if (c.contains("error")) CHECK(bits_of(*params[i].grad) == bits_of(*before[i]));  // untouched
        }
    }
}

TEST_CASE("find_highest_gradient before and after clip_grad_norm_ (his In [10]-[12]) as PyTorch's", "[appendix_d]") {
    const auto& o = oracle()["find_highest_gradient"];
    Loaders loaders = his_loaders();
    // His In [6] and In [8] each loop 15 times over the training loader (each pass draws its
    // order); his In [10] takes the batch the last pass left in input_batch, target_batch.
    std::optional<attn::data::Batch> last;
    for (int pass = 0; pass < 30; ++pass)
        for (const auto& batch : loaders.train) last = batch;
    REQUIRE(last.has_value());
    REQUIRE(last->input_ids.size() == o["input_batch"].size() * o["input_batch"][0].size());
    for (std::size_t r = 0; r < o["input_batch"].size(); ++r)
        for (std::size_t t = 0; t < o["input_batch"][r].size(); ++t)
            CHECK(last->input_ids(r, t) == o["input_batch"][r][t].get<std::int64_t>());
    attn::manual_seed(123);
    attn::GPTModel model(config());  // training mode: dropout draws, as his
    attn::TrainStepState state;
    const Tensor loss = attn::forward_backward(model, last->input_ids, last->target_ids, state);
    CHECK(bits(loss()) == o["loss_bits"].get<std::uint32_t>());
    for (const auto& p : model.named_parameters()) {
        INFO(p.name);
        CHECK(test::sha256(**p.grad) == o["grads_sha256"][p.name]);
    }
    const std::optional<Tensor> before = attn::find_highest_gradient(model);
    REQUIRE(before.has_value());
    CHECK(bits((*before)()) == o["before_bits"].get<std::uint32_t>());
    CHECK(attn::repr(*before) + "\n" == oracle()["printed"]["In [11]"]);  // his print(find_highest_gradient(model))
    const Tensor total = attn::nn::utils::clip_grad_norm_(model.named_parameters(), 0.1);
    CHECK(bits(total()) == o["total_norm_bits"].get<std::uint32_t>());
    const std::optional<Tensor> after = attn::find_highest_gradient(model);
    REQUIRE(after.has_value());
    CHECK(bits((*after)()) == o["after_bits"].get<std::uint32_t>());
    CHECK(attn::repr(*after) + "\n" == oracle()["printed"]["In [12]"]);
    for (const auto& p : model.named_parameters()) {
        INFO(p.name << " after clipping");
        CHECK(test::sha256(**p.grad) == o["clipped_grads_sha256"][p.name]);
    }
    model.zero_grad(true);
    CHECK_FALSE(attn::find_highest_gradient(model).has_value());  // his None
}

TEST_CASE("train_model (his In [13]-[14]): every step's learning rate, loss, clipping and parameters as PyTorch's",
          "[appendix_d]") {
    for (const auto& o : oracle()["train_model"]) {
        INFO(o["python"].get<std::string>());
        const bool book = o["book_version"];
        Loaders loaders = his_loaders();
        attn::manual_seed(123);  // his In [14]
        attn::GPTModel model(config());
        attn::optim::AdamW optimizer(model.named_parameters(), {.lr = o["peak_lr"], .weight_decay = 0.1});
        attn::TrainModelOptions options{.n_epochs = o["n_epochs"], .eval_freq = o["eval_freq"],
                                        .eval_iter = o["eval_iter"], .warmup_steps = o["warmup_steps"],
                                        .initial_lr = o["initial_lr"], .min_lr = o["min_lr"],
                                        .clip_from_warmup_step = !book, .max_norm = o["max_norm"]};
        std::ostringstream out;
        std::size_t step = 0;
        const auto& steps = o["steps"];
        const attn::TrainModelHistory history = attn::train_model(
            model, loaders.train, loaders.val, optimizer, options, textbook::gpt2_tokenizer(), out,
            [&](const attn::TrainProgress& p) {
                INFO("step " << step);
                REQUIRE(step < steps.size());
                const auto& s = steps[step];
                CHECK(p.global_step == static_cast<std::int64_t>(step));
                CHECK(bits(p.lr) == bits(s["lr"].get<double>()));
                CHECK(bits(p.loss) == s["loss_bits"].get<std::uint32_t>());
                CHECK(p.grad_norm.has_value() == !s["clip_total_norm_bits"].is_null());
                if (p.grad_norm && !s["clip_total_norm_bits"].is_null())
                    CHECK(bits(*p.grad_norm) == s["clip_total_norm_bits"].get<std::uint32_t>());
                CHECK(parameters_sha256(model) == s["parameters_sha256"]);
                ++step;
            });
        CHECK(step == steps.size());
        CHECK(out.str() == o["printed"].get<std::string>());
        check_doubles(history.train_losses, o["train_losses"]);
        check_doubles(history.val_losses, o["val_losses"]);
        CHECK(history.tokens_seen == o["tokens_seen"].get<std::vector<std::int64_t>>());
        check_doubles(history.track_lrs, o["track_lrs"]);
        for (const auto& p : model.named_parameters()) {
            INFO(p.name);
            CHECK(test::sha256(*p.value) == o["parameters_sha256"][p.name]);
        }
    }
}

TEST_CASE("his exercise 5.4: model and AdamW saved, loaded into fresh ones, one more epoch equal to the run continued",
          "[appendix_d]") {
    // The oracle's small GPT on his loaders, train_model_simple (his chapter 5 loop) as his
    // exercise runs it: one epoch, the model's state_dict and AdamW's state written as safetensors
    // files; then torch.manual_seed(123), new loaders, one more epoch -- by the same model and
    // optimizer (the uninterrupted run) and by a model and optimizer made otherwise and loaded
    // from the files (the continued one, as a fresh process would). The two must print the same
    // loss lines and sample and end with the same parameters and AdamW state, bit for bit.
    // (A relation between two runs of the library, as issue 44 states it; no PyTorch value.)
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("attn_appendix_d_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const attn::TrainOptions options{.num_epochs = 1, .eval_freq = 5, .eval_iter = 1};
    const auto one_more_epoch = [&](attn::GPTModel& model, attn::optim::AdamW& optimizer) {
        Loaders loaders = his_loaders();  // torch.manual_seed(123), new loaders
        std::ostringstream out;
        (void)attn::train_model_simple(model, loaders.train, loaders.val, optimizer, options,
                                       textbook::gpt2_tokenizer(), out);
        return out.str();
    };

    std::string first_epoch, uninterrupted;
    attn::TensorDict model_after, optimizer_after;
    {
        Loaders loaders = his_loaders();
        attn::manual_seed(123);
        attn::GPTModel model(config());
        attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
        std::ostringstream out;
        (void)attn::train_model_simple(model, loaders.train, loaders.val, optimizer, options,
                                       textbook::gpt2_tokenizer(), out);
        first_epoch = out.str();
        attn::io::save_safetensors(dir / "model.pth.safetensors", attn::nn::state_dict(model));
        const attn::optim::AdamWStateDict saved = attn::optim::state_dict(optimizer);
        attn::io::save_safetensors(dir / "optimizer.safetensors", saved.state, saved.param_groups);
        uninterrupted = one_more_epoch(model, optimizer);
        model_after = attn::nn::state_dict(model);
        optimizer_after = attn::optim::state_dict(optimizer).state;
    }
    attn::manual_seed(7);  // other initial weights, default hyperparameters: all from the files
    attn::GPTModel model(config());
    attn::optim::AdamW optimizer(model.named_parameters());
    attn::nn::load_state_dict(model, attn::io::load_safetensors(dir / "model.pth.safetensors").tensors);
    const auto optimizer_file = attn::io::load_safetensors(dir / "optimizer.safetensors");
    attn::optim::load_state_dict(optimizer, optimizer_file.tensors, optimizer_file.metadata);
    const std::string continued = one_more_epoch(model, optimizer);
    std::filesystem::remove_all(dir);

    CHECK(first_epoch.find("Ep 1 (Step 000000)") != std::string::npos);
    CHECK(uninterrupted != first_epoch);  // trained on: other losses, so the files were not a no-op
    CHECK(continued == uninterrupted);
    CHECK(attn::bitwise_equal(attn::nn::state_dict(model), model_after));
    CHECK(attn::bitwise_equal(attn::optim::state_dict(optimizer).state, optimizer_after));
}

}  // namespace test_appendix_d
