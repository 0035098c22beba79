// Raschka's chapter 5 training step (chapter 26): the library's side of the pretraining
// benchmark. A Google Benchmark program: it measures and asserts nothing; `meson test` does not
// run it.
//
//   pretraining_benchmark [Google Benchmark flags]
//
// Every case builds GPTModel(GPT_CONFIG_124M with context_length 256) after
// attn::manual_seed(123) in training mode (his In [27]; PyTorch draws the same weights), with
// AdamW(lr=0.0004, weight_decay=0.1), and feeds it his batch shape: 2 windows of 256 token ids of
// The Verdict (the first two windows of his training data, stride 256). Select one case with e.g.
// --benchmark_filter='^train_step/threads:1/real_time$':
//   train_step/threads:{1,2}
//       one iteration is one step of his train_model_simple: zero_grad, the forward keeping what
//       the backward needs (dropout 0.1 drawn on the portable path), cross-entropy over the 512
//       tokens, the backward of the loss through the whole model, optimizer.step().
//   forward/threads:{1,2}, backward/threads:{1,2}, optimizer/threads:{1,2}
//       its parts: the training forward; cross-entropy with its gradient and the model's
//       backward; AdamW's update of the 163 million parameters.
//   eval_forward/threads:{1,2}
//       calc_loss_batch in evaluation mode: what each of his evaluations runs 6 times.
//   sample/threads:{1,2}
//       the sample printed after each epoch (generate_and_print_sample without its tokenizer):
//       in evaluation mode, 50 greedy tokens by generate_text_simple after "Every effort moves
//       you" (ids 6109 3626 6100 345), the whole context every time (no cache): forwards of
//       4 to 53 tokens at batch 1.
//   part_head, part_projections, part_attention, part_feed_forward /threads:{1,2}
//       a step's parts by kind of layer, each its forward and backward on the step's shapes with
//       the model's own layers (over all 12 blocks): the output head; W_query, W_key, W_value and
//       out_proj alone; MultiHeadAttention whole (those four and the core between them: causal,
//       dropout 0.1 on the weights), so the core is the difference of the two; FeedForward (GELU
//       inside). Their times over train_step's are their shares of a step; what remains is the
//       layer norms, shortcuts, dropouts, embeddings, loss and optimizer.
//
// Counters: bench.hpp's (faults, peak_rss_MB, rss_before_MB, threads), GFLOPs (the products'
// multiply-adds, 2 flops each: the forward's as generation_benchmark counts them, the
// backward's twice as many), tokens_per_s (512 tokens per iteration; sample: the 50 new ones).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/optim.hpp"
#include "attn/train/train.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t kBatch = 2, kTokens = 256;

attn::GPTConfig config() {
    attn::GPTConfig c = attn::GPT_CONFIG_124M;
    c.context_length = kTokens;  // his In [2]
    return c;
}

// Products of a forward of `batch` x `tokens` ids (2 flops per multiply-add), the attention on
// its causal pairs: per block 12 E^2 per token, and per head 2 * hd * T (T + 1) / 2 twice.
double forward_flops(std::size_t batch = kBatch, std::size_t tokens = kTokens) {
    const attn::GPTConfig c = config();
    const double E = double(c.emb_dim), L = double(c.n_layers), V = double(c.vocab_size);
    const double T = double(tokens), rows = double(batch) * T;
    return 2 * rows * (L * 12 * E * E + E * V) + double(batch) * L * 2 * 2 * E * T * (T + 1) / 2;
}

// His sample: 50 new tokens after the 4 of "Every effort moves you" (his In [26]).
constexpr std::size_t kSampleTokens = 50;
constexpr std::int64_t kStartContext[] = {6109, 3626, 6100, 345};

// Token ids with The Verdict's statistics are not needed for the time: a fixed pattern of ids
// over the vocabulary (the step's cost does not depend on which ids).
attn::LongTensor ids(std::int64_t offset) {
    attn::LongTensor t = attn::LongTensor::from_shape({kBatch, kTokens});
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = std::int64_t((i * 7919 + std::size_t(offset)) % 50257);
    return t;
}

struct Setup {
    attn::GPTModel model;
    attn::optim::AdamW optimizer;
    Setup() : model((attn::manual_seed(123), config())), optimizer(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1}) {}
};

void tokens_counter(benchmark::State& state) {
    state.counters["tokens_per_s"] =
        benchmark::Counter(double(kBatch * kTokens) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_train_step(benchmark::State& state) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    attn::TrainStepState step;
    const attn::LongTensor x = ids(0), y = ids(1);
    attn::train_step(s.model, s.optimizer, x, y, step);  // warm-up: buffers and the optimizer's state
    run.start();
    for (auto _ : state) benchmark::DoNotOptimize(attn::train_step(s.model, s.optimizer, x, y, step));
    run.finish(3 * forward_flops());
    tokens_counter(state);
}

void BM_forward(benchmark::State& state) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    attn::GPTModel::Saved saved;
    const attn::LongTensor x = ids(0);
    benchmark::DoNotOptimize(s.model.forward(x, saved));
    run.start();
    for (auto _ : state) benchmark::DoNotOptimize(s.model.forward(x, saved));
    run.finish(forward_flops());
    tokens_counter(state);
}

void BM_backward(benchmark::State& state) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    attn::GPTModel::Saved saved;
    attn::Tensor logits = s.model.forward(ids(0), saved);
    const attn::Shape shape = attn::shape_of(logits);
    logits.reshape({shape[0] * shape[1], shape[2]});
    attn::LongTensor targets = ids(1);
    targets.reshape({shape[0] * shape[1]});
    attn::Tensor grad;
    const auto backward = [&] {
        attn::cross_entropy_with_grad(logits, targets, grad);  // loss.backward()'s first node, as train_step
        grad.reshape(shape);
        s.model.backward(saved, grad);
    };
    backward();  // warm-up, as the other cases and PyTorch's side: every .grad exists
    run.start();
    for (auto _ : state) backward();
    run.finish(2 * forward_flops());
    tokens_counter(state);
}

void BM_optimizer(benchmark::State& state) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    attn::TrainStepState step;
    attn::train_step(s.model, s.optimizer, ids(0), ids(1), step);  // every .grad and the state exist
    run.start();
    for (auto _ : state) s.optimizer.step();
    run.finish();
}

void BM_eval_forward(benchmark::State& state) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    s.model.eval();
    const attn::LongTensor x = ids(0), y = ids(1);
    benchmark::DoNotOptimize(attn::calc_loss_batch(x, y, s.model));
    run.start();
    for (auto _ : state) benchmark::DoNotOptimize(attn::calc_loss_batch(x, y, s.model));
    run.finish(forward_flops());
    tokens_counter(state);
}

void BM_sample(benchmark::State& state) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    s.model.eval();
    const std::size_t n = std::size(kStartContext);
    attn::LongTensor prompt = attn::LongTensor::from_shape({1, n});
    std::copy_n(kStartContext, n, prompt.data());
    const std::size_t context = config().context_length;  // his model.pos_emb.weight.shape[0]
    benchmark::DoNotOptimize(attn::generate_text_simple(s.model, prompt, kSampleTokens, context));
    double flops = 0;
    for (std::size_t t = n; t < n + kSampleTokens; ++t) flops += forward_flops(1, t);
    run.start();
    for (auto _ : state) benchmark::DoNotOptimize(attn::generate_text_simple(s.model, prompt, kSampleTokens, context));
    run.finish(flops);
    state.counters["tokens_per_s"] =
        benchmark::Counter(double(kSampleTokens) * double(state.iterations()), benchmark::Counter::kIsRate);
}

// A step's parts by kind of layer, each forward and backward on the step's shapes (2 x 256
// rows) with the model's own layers (their .grad existing, as from the second step on), over
// all 12 blocks where there is one per block; their times over train_step's are their shares.
enum class Part { head, projections, attention, feed_forward };

void BM_part(benchmark::State& state, Part part) {
    bench::Run run(state, int(state.range(0)));
    Setup s;
    const attn::GPTConfig c = config();
    const std::size_t rows = kBatch * kTokens, E = c.emb_dim;
    const attn::Tensor x = attn::rand({kBatch, kTokens, E}), dy = attn::rand({kBatch, kTokens, E});
    std::vector<float> out(rows * std::max(E, c.vocab_size)), grad(out.size()), grad_x(rows * E);
    const auto linear = [&](attn::nn::Linear& l) {  // y = x W^T + b, then dW, db, dx
        l.forward_into(x.data(), rows, out.data());
        l.backward_into(x.data(), rows, grad.data(), grad_x.data());
    };
    std::vector<attn::FeedForward::Saved> ff_saved(c.n_layers);
    std::vector<attn::AttentionSaved> att_saved(c.n_layers);
    const auto layer = [&](auto& module, auto& saved) {  // the forward keeping what the backward needs
        benchmark::DoNotOptimize(module.forward(x, saved));
        benchmark::DoNotOptimize(module.backward(saved, dy));
    };
    const auto once = [&] {
        switch (part) {
            case Part::head: linear(s.model.out_head); break;
            case Part::projections:
                for (attn::TransformerBlock& b : s.model.trf_blocks)
                    for (attn::nn::Linear* l : {&b.att.W_query, &b.att.W_key, &b.att.W_value, &b.att.out_proj}) linear(*l);
                break;
            case Part::attention:
                for (std::size_t i = 0; i < c.n_layers; ++i) layer(s.model.trf_blocks[i].att, att_saved[i]);
                break;
            case Part::feed_forward:
                for (std::size_t i = 0; i < c.n_layers; ++i) layer(s.model.trf_blocks[i].ff, ff_saved[i]);
                break;
        }
    };
    once();  // warm-up: every .grad and buffer exists
    run.start();
    for (auto _ : state) once();
    const double blocks = double(c.n_layers), T = double(kTokens), R = double(rows), Ed = double(E);
    const double flops = part == Part::head           ? 3 * 2 * R * Ed * double(c.vocab_size)
                         : part == Part::projections  ? blocks * 3 * 2 * R * 4 * Ed * Ed
                         : part == Part::feed_forward ? blocks * 3 * 2 * R * 8 * Ed * Ed
                                                      : blocks * 3 * (2 * R * 4 * Ed * Ed + double(kBatch) * 2 * 2 * Ed * T * (T + 1) / 2);
    run.finish(flops);
    tokens_counter(state);
}

}  // namespace

BENCHMARK_CAPTURE(BM_part, head, Part::head)->Name("part_head")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_part, projections, Part::projections)->Name("part_projections")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_part, attention, Part::attention)->Name("part_attention")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_part, feed_forward, Part::feed_forward)->Name("part_feed_forward")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_train_step)->Name("train_step")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_forward)->Name("forward")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_backward)->Name("backward")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_optimizer)->Name("optimizer")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_eval_forward)->Name("eval_forward")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_sample)->Name("sample")->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
    return bench::main(argc, argv,
                       "Raschka's chapter 5 training step: GPTModel(GPT_CONFIG_124M, context 256), seed 123, "
                       "AdamW(lr=0.0004, weight_decay=0.1), a batch of 2 x 256 tokens; his sample: 50 greedy tokens "
                       "after 4 without a cache",
                       "pretraining_benchmark [Google Benchmark flags]");
}
