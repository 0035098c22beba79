// Training, not inference: a forward that keeps what the backward needs, the
// backward, and an optimizer step. A Google Benchmark program: it measures and asserts
// nothing; `meson test` does not run it. benchmarks/run/record_training.py runs each case in a
// process of its own beside PyTorch's autograd (benchmarks/peers/torch_training.py) and
// records both in data/benchmarks/training.json.
//
//   training_benchmark [--output=FILE] [Google Benchmark flags]
//
// Cases (select one with e.g. --benchmark_filter='^mha_train/T:1024/threads:1/real_time$'):
//   mha_train/T:1024/threads:{1,2}, mha_train_fresh/...
//       Raschka's MultiHeadAttention at GPT-2 sizes (B = 1, d_in = d_out = 768, 12 heads of
//       64, causal, dropout 0), built after attn::manual_seed(0), x = attn::rand({1, T, 768})
//       (PyTorch draws the same after torch.manual_seed(0)). One iteration: zero_grad(),
//       out = forward(x, saved) (`saved` reused from step to step), loss = out.pow(2).mean(),
//       dL/dout = out * (2 / numel), backward (every parameter's .grad and dL/dx).
//       mha_train_fresh: the same with a new `saved` and zero_grad(set_to_none) every step, so
//       that each step allocates what it keeps (page faults: allocation's cost).
//       mha_train_fma: mha_train under ArithmeticGuard(Arithmetic::fma): every product of the
//       forward and the backward (projections, scores, weights @ values, their gradients) by
//       fused multiply-adds (kernels/arithmetic.hpp).
//       --output=FILE writes the warm-up's dL/dx (raw float32, [1, T, 768]) for the driver's
//       comparison with PyTorch's x.grad.
//   sdpa_backward/{naive,tiled,fast}/T:N
//       the attention core alone, q, k, v, dL/dout [1, 12, T, 64] ~ randn, causal: the forward
//       keeping FlashAttention's O and L, then the backward, once (one iteration); naive is the
//       step backend (every [T, T] intermediate: T <= 4096), tiled FlashAttention-2's (never a
//       [T, T]), fast the kernels the modules run. Read for peak_rss_MB: one case per process.
//   induction_train/steps:300/threads:1
//       chapter 21's loop: AttentionOnlyTransformer(vocab 32, context 23, width 32, 2 heads,
//       2 layers) after attn::manual_seed(123), AdamW(lr = 0.01), B = 32; each step draws
//       half ~ randint(6, 13), a batch of random tokens repeated twice, then forward, cross
//       entropy, zero_grad, backward, step. One iteration is the first 300 steps of that run
//       (the same draws as PyTorch's); steps_per_s is the counter to read.
//
// Counters: bench.hpp's (faults, peak_rss_MB, rss_before_MB, threads); GFLOPs for mha_train
// credit three times the forward's products (the backward computes two per forward product),
// the causal products on the visible pairs only, as attention_benchmark.cpp counts them.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "attn/modules/attention_only.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "attn/nn/optim.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t D = 768, H = 12, HD = 64;

std::string output_path;  // --output: where mha_train's warm-up writes dL/dx

double flops_forward(double T) {
    return 4 * 2 * T * D * D + 2 * H * 2.0 * HD * T * (T + 1) / 2;
}

// Fresh: every step allocates what it keeps (a new AttentionSaved, .grad set to None), as a
// loop written without care for memory does; otherwise the buffers of the last step are reused.
// A: the products' arithmetic.
template <bool Fresh, attn::Arithmetic A = attn::Arithmetic::exact>
void BM_mha_train(benchmark::State& state) {
    const attn::ArithmeticGuard arithmetic(A);
    const auto T = std::size_t(state.range(0));
    attn::manual_seed(0);
    attn::MultiHeadAttention mha({.d_in = D, .d_out = D, .context_length = T, .dropout = 0.0,
                                  .num_heads = H, .qkv_bias = false, .out_bias = true});
    const attn::Tensor x = attn::rand({1, T, D});
    attn::AttentionSaved kept;
    const auto step = [&] {
        attn::AttentionSaved fresh;
        attn::AttentionSaved& saved = Fresh ? fresh : kept;
        mha.zero_grad(/*set_to_none=*/Fresh);
        attn::Tensor out = mha.forward(x, saved);
        out *= 2.0f / float(out.size());  // d mean(out^2) / d out, in place
        return mha.backward(saved, out);
    };
    bench::Run run(state, int(state.range(1)));
    {
        const attn::Tensor grad_x = step();
        if (!output_path.empty()) {
            std::ofstream out(output_path, std::ios::binary);
            out.write(reinterpret_cast<const char*>(grad_x.data()),
                      std::streamsize(grad_x.size() * sizeof(float)));
            if (!out) throw std::runtime_error("cannot write " + output_path);
        }
    }
    run.start();
    for (auto _ : state) {
        attn::Tensor grad_x = step();
        benchmark::DoNotOptimize(grad_x.data());
        benchmark::ClobberMemory();
    }
    run.finish(3 * flops_forward(double(T)));
}

template <attn::SDPABackend Backend>
void BM_sdpa_backward(benchmark::State& state) {
    const auto T = std::size_t(state.range(0));
    attn::Generator gen(0);
    const attn::Tensor q = attn::randn({1, H, T, HD}, gen), k = attn::randn({1, H, T, HD}, gen),
                       v = attn::randn({1, H, T, HD}, gen), grad_out = attn::randn({1, H, T, HD}, gen);
    const attn::SDPAOptions options{.is_causal = true,
                                    .scale = attn::ScoreScale::divide_by(std::sqrt(float(HD))),
                                    .backend = Backend};
    bench::Run run(state, 1);
    run.start();
    for (auto _ : state) {
        const attn::SDPAForward saved = attn::scaled_dot_product_attention_forward(q, k, v, options);
        attn::SDPAGradients g =
            attn::scaled_dot_product_attention_backward(grad_out, q, k, v, saved, options);
        benchmark::DoNotOptimize(g.grad_query.data());
        benchmark::ClobberMemory();
    }
    run.finish();
    state.counters["inputs_MB"] = 4.0 * double(H * T * HD * sizeof(float)) / 1e6;
}

// The products of one training step of chapter 21's model on `tokens` input tokens a sequence:
// per layer the four projections and the two causal attention products, then the unembedding;
// three times the forward's, as for mha_train.
double induction_step_flops(double B, double tokens, double d, double V, double layers) {
    const double N = B * tokens;
    const double layer = 4 * 2 * N * d * d + 2 * 2 * d * B * tokens * (tokens + 1) / 2;
    return 3 * (layers * layer + 2 * N * d * V);
}

void BM_induction_train(benchmark::State& state) {
    const auto steps = int(state.range(0));
    const std::size_t V = 32, B = 32, d = 32, layers = 2;
    bench::Run run(state, int(state.range(1)));
    double flops = 0;  // of the first run (every run makes the same draws)
    run.start();
    for (auto _ : state) {
        const bool first = flops == 0;
        attn::manual_seed(123);
        attn::AttentionOnlyTransformer model(
            {.vocab_size = V, .context_length = 23, .emb_dim = d, .num_heads = 2, .num_layers = layers});
        attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.01});
        float last = 0;
        for (int step = 0; step < steps; ++step) {
            const auto half = static_cast<std::size_t>(attn::randint(6, 13, {1})(0));
            const auto [input, targets] = attn::next_token_pairs(attn::repeated_tokens(B, half, V));
            if (first) flops += induction_step_flops(double(B), double(input.shape()[1]), double(d),
                                                     double(V), double(layers));
            attn::AttentionOnlyTransformer::Saved saved;
            const attn::Tensor logits = model.forward(input, saved);
            last = attn::sequence_cross_entropy(logits, targets)();
            optimizer.zero_grad();
            model.backward(saved, attn::sequence_cross_entropy_backward(logits, targets));
            optimizer.step();
        }
        // (not benchmark::DoNotOptimize(last): Debian's Google Benchmark 1.7.1 under GCC may
        // keep a float in a general register through it and hand back garbage)
        state.counters["last_loss"] = last;
    }
    run.finish(flops);
    state.counters["steps_per_s"] = benchmark::Counter(double(steps) * double(state.iterations()),
                                                       benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK_TEMPLATE(BM_mha_train, false)->Name("mha_train")->ArgNames({"T", "threads"})
    ->Args({1024, 1})->Args({1024, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_mha_train, true)->Name("mha_train_fresh")->ArgNames({"T", "threads"})
    ->Args({1024, 1})->Args({1024, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_mha_train, false, attn::Arithmetic::fma)->Name("mha_train_fma")
    ->ArgNames({"T", "threads"})->Args({1024, 1})->Args({1024, 2})->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_sdpa_backward, attn::SDPABackend::step)->Name("sdpa_backward/naive")
    ->ArgName("T")->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_TEMPLATE(BM_sdpa_backward, attn::SDPABackend::tiled)->Name("sdpa_backward/tiled")
    ->ArgName("T")->Arg(1024)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->Iterations(1);
BENCHMARK_TEMPLATE(BM_sdpa_backward, attn::SDPABackend::fast)->Name("sdpa_backward/fast")
    ->ArgName("T")->Arg(1024)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->Iterations(1);
BENCHMARK(BM_induction_train)->Name("induction_train")->ArgNames({"steps", "threads"})
    ->Args({300, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--output=", 9) == 0) output_path = argv[i] + 9;
        else rest.push_back(argv[i]);
    }
    return bench::main(int(rest.size()), rest.data(),
                       "training: forward keeping what the backward needs, backward, optimizer "
                       "step, float32",
                       "training_benchmark [--output=FILE] [Google Benchmark flags]");
}
