// The bad-input table, chapter 26's training (attn/train/, the model's backward, the optimizer's
// options): batches that do not fit, token ids and targets beyond the vocabulary, a learning
// rate that is NaN, a training loader that gives no batch, his options out of range, gradients
// of the wrong shape. The machinery and the expected values' sources: bad_input.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/optim.hpp"
#include "attn/train/train.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_bad_input_training {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

// A small GPT: 97 tokens, 8 positions, 8 wide, 2 heads, 2 blocks, dropout 0.1.
constexpr GPTConfig kSmall{.vocab_size = 97, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2,
                           .drop_rate = 0.1};

LongTensor ids(std::size_t rows, std::size_t cols, std::int64_t value) {
    LongTensor t = xt::empty<std::int64_t>(Shape{rows, cols});
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = (value + std::int64_t(i)) % 97;
    return t;
}

// A story of 30 GPT-2 tokens, too short for windows of 8 with batches of 4 and drop_last (3 windows).
data::DataLoader short_loader(std::size_t batch_size) {
    std::vector<std::int64_t> tokens(30);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::int64_t(i % 97);
    return data::DataLoader(data::GPTDatasetV1(tokens, 8, 8), {.batch_size = batch_size, .shuffle = false, .drop_last = true});
}

std::vector<Case> training_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    err("train_step: targets of another shape", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
        TrainStepState s;
        (void)train_step(m, opt, ids(2, 4, 1), ids(2, 3, 2), s);
        return true;
    }, IA, "train_step (target_batch): expected [2, 4], got [2, 3]");
    err("train_step: a target beyond the vocabulary", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        TrainStepState s;
        LongTensor targets = ids(1, 4, 1);
        targets(0, 2) = 97;
        (void)train_step(m, opt, ids(1, 4, 1), targets, s);
        return true;
    }, IA, "cross_entropy: target 97 at position 2 is out of bounds: expected a class in [0, 97)");
    err("train_step: a token id beyond the vocabulary", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        TrainStepState s;
        LongTensor inputs = ids(1, 4, 1);
        inputs(0, 1) = -1;
        (void)train_step(m, opt, inputs, ids(1, 4, 2), s);
        return true;
    }, IA, "GPTModel: token id -1 at [0, 1] is out of range [0, vocab_size = 97)");
    err("train_step: more tokens than the context holds", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        TrainStepState s;
        (void)train_step(m, opt, ids(1, 9, 1), ids(1, 9, 2), s);
        return true;
    }, IA, "GPTModel: 9 tokens, but the context holds context_length = 8");
    err("AdamW: a learning rate that is NaN", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = std::numeric_limits<double>::quiet_NaN()});
        return true;
    }, IA, "AdamW: Invalid learning rate: nan");
    ok("AdamW: a learning rate made NaN between steps is refused before any parameter moves", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
        TrainStepState s;
        (void)train_step(m, opt, ids(2, 4, 1), ids(2, 4, 2), s);
        const Tensor before = m.out_head.weight;
        opt.options.lr = std::numeric_limits<double>::quiet_NaN();
        try {
            opt.step();
            return false;
        } catch (const std::invalid_argument& e) {
            return std::string(e.what()).find("Invalid learning rate: nan") != std::string::npos &&
                   m.out_head.weight == before;
        }
    });
    err("train_model_simple: a training loader with no batch (batch_size 4 > 3 windows, drop_last)", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        std::ostringstream out;
        (void)train_model_simple(m, short_loader(4), short_loader(1), opt, {}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model_simple: the training loader gives no batch: 3 windows, batch_size 4 with drop_last");
    ok("calc_loss_loader of a loader with no batch is NaN, as his", [] {
        GPTModel m(kSmall);
        m.eval();
        return std::isnan(calc_loss_loader(short_loader(4), m));
    });
    err("train_model_simple: eval_freq 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        std::ostringstream out;
        (void)train_model_simple(m, short_loader(1), short_loader(1), opt, {.eval_freq = 0}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model_simple: eval_freq must be positive, got 0");
    err("train_model_simple: eval_iter 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        std::ostringstream out;
        (void)train_model_simple(m, short_loader(1), short_loader(1), opt, {.eval_iter = 0}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model_simple: eval_iter must be positive, got 0");
    err("train_model_simple: max_steps 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {});
        std::ostringstream out;
        (void)train_model_simple(m, short_loader(1), short_loader(1), opt, {.max_steps = 0}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model_simple: max_steps must be positive, got 0");
    err("GPTModel::backward: logits' gradient of another shape", [] {
        GPTModel m(kSmall);
        GPTModel::Saved saved;
        (void)m.forward(ids(1, 4, 1), saved);
        m.backward(saved, zeros({1, 4, 96}));
        return true;
    }, IA, "GPTModel::backward (grad_logits): expected [1, 4, 97], got [1, 4, 96]");
    err("GPTModel::backward before any forward", [] {
        GPTModel m(kSmall);
        m.backward(GPTModel::Saved{}, zeros({1, 4, 97}));
        return true;
    }, IA, "GPTModel::backward (saved.in_idx)");
    err("LayerNorm::backward: a gradient of another shape", [] {
        LayerNorm ln(8);
        LayerNorm::Saved saved;
        (void)ln.forward(zeros({2, 8}), saved);
        (void)ln.backward(saved, zeros({2, 7}));
        return true;
    }, IA, "LayerNorm::backward (grad_output): expected [2, 8], got [2, 7]");
    err("token_ids_to_text: two rows", [] {
        (void)token_ids_to_text(ids(2, 3, 1), textbook::gpt2_tokenizer());
        return true;
    }, IA, "token_ids_to_text (token_ids): expected [n] or [1, n]");
    err("text_to_token_ids: text that is not UTF-8", [] {
        (void)text_to_token_ids("caf\xe9", textbook::gpt2_tokenizer());
        return true;
    }, IA, "UTF-8");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (training): every case has its exact outcome") {
    run_table("training", training_cases());
}

}  // namespace test_bad_input_training
