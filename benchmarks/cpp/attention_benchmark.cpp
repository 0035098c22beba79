// Multi-head attention at GPT-2 sizes: the library's MultiHeadAttention forward
// against itself in pieces and against a matrix-product baseline. A Google Benchmark
// program: it measures, asserts nothing, and `meson test` does not run it.
// benchmarks/run/record_attention.py runs it beside PyTorch and records both.
//
// Configuration (Raschka's GPT-2 small attention): B = 1, d_in = d_out = 768, 12 heads of
// 64, causal, dropout 0, eval mode, float32; T = 256, 1024, 4096 tokens; 1 or 2 OpenMP
// threads (the argument `threads`, set with omp_set_num_threads).
//
// Families (select one with e.g. --benchmark_filter='mha_forward/T:1024/threads:1$'):
//   mha_forward         MultiHeadAttention::operator(): the core's fast backend (sdpa.hpp)
//   mha_forward_fma     the same under ArithmeticGuard(Arithmetic::fma): every product (the
//                       projections, scores, weights @ values) by fused multiply-adds
//                       (kernels/arithmetic.hpp); compare with mha_forward in one run
//   mha_forward_steps   forward_steps(...).context_vec, the teaching path (T = 256 only)
//   mha_projections     the four Linear layers: q, k, v in one fast::gemm_multi, then out
//   mha_scores          per head, queries @ keys^T on the visible (causal) blocks
//   mha_mask_softmax    per head, the fused mask + scale + softmax on those blocks
//   mha_weights_values  per head, weights @ values on those blocks
//   mha_projections_fma, mha_scores_fma, mha_weights_values_fma   the products in fma
//   sgemm_1024          fast::gemm, 1024^3
//   sgemm_1024_fma      fast::gemm in Arithmetic::fma, 1024^3
//   blas_sgemm_1024     the linked BLAS's cblas_sgemm, 1024^3
//
// Counters:
//   GFLOPs      flops / time. Products count 2 flops per multiply-add; the causal products
//               count only the visible pairs (key j <= query i): 2 * T (T + 1) / 2 * 64 per
//               head and product, i.e. half of a full T x T product plus the diagonal.
//               Softmax is not counted. PyTorch is credited with the same count (it
//               computes the full T x T and masks it), so the ratios are ratios of time.
//   peak_rss_MB the process's peak resident set (getrusage ru_maxrss) after the run; run
//               one benchmark per process to read it per configuration.
//   rss_before_MB  resident set before the timed loop (model, input and mask built).
//   faults      minor + major page faults per iteration during the timed loop.
//   threads     OpenMP threads.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include "attn/kernels/arithmetic.hpp"
#include "attn/kernels/fused_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/kernels/gemm.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t D = 768, H = 12, HD = 64;

double flops_projections(double T) { return 4 * 2 * T * D * D; }
double flops_causal_product(double T) { return H * 2.0 * HD * T * (T + 1) / 2; }
double flops_forward(double T) { return flops_projections(T) + 2 * flops_causal_product(T); }

// The counters every case reports (bench.hpp), plus the fast kernel's instruction set.
struct Run : bench::Run {
    Run(benchmark::State& s, int threads) : bench::Run(s, threads) {}
    void finish(double flops) {
        bench::Run::finish(flops);
        state.SetLabel("isa=" + attn::fast::isa_name());
    }
};

attn::MultiHeadAttention gpt2_attention(std::size_t T) {
    attn::manual_seed(0);
    attn::MultiHeadAttention m({.d_in = D, .d_out = D, .context_length = T, .dropout = 0.0,
                                .num_heads = H, .qkv_bias = false, .out_bias = true});
    m.eval();
    return m;
}

template <attn::Arithmetic A>
void BM_mha_forward(benchmark::State& state) {
    const attn::ArithmeticGuard arithmetic(A);
    const auto T = std::size_t(state.range(0));
    const auto m = gpt2_attention(T);
    const attn::Tensor x = attn::rand({1, T, D});
    Run run(state, int(state.range(1)));
    { const attn::Tensor warm = m(x); benchmark::DoNotOptimize(warm.data()); }
    run.start();
    for (auto _ : state) {
        attn::Tensor y = m(x);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    run.finish(flops_forward(double(T)));
}

void BM_mha_forward_steps(benchmark::State& state) {
    const auto T = std::size_t(state.range(0));
    const auto m = gpt2_attention(T);
    const attn::Tensor x = attn::rand({1, T, D});
    Run run(state, int(state.range(1)));
    run.start();
    for (auto _ : state) {
        attn::Tensor y = m.forward_steps(x).context_vec;
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    run.finish(flops_forward(double(T)));
}

// The pieces, on the buffers the forward uses: q, k, v as [T, 768] (heads side by side);
// each head's stages as fast::attend_head runs them (one workspace per thread).
struct Pieces {
    std::size_t T;
    attn::Arithmetic arithmetic;
    attn::MultiHeadAttention m;
    attn::Tensor x;
    std::vector<float> q, k, v, ctx, out;

    Pieces(std::size_t T_, attn::Arithmetic a)
        : T(T_), arithmetic(a), m(gpt2_attention(T_)), x(attn::rand({1, T_, D})), q(T_ * D), k(T_ * D),
          v(T_ * D), ctx(T_ * D), out(T_ * D) {}

    // A Linear layer as the forward hands it to fast::gemm_multi (weight^T, bias in the pass).
    static attn::fast::GemmRight right(const attn::nn::Linear& l, float* y) {
        return {l.weight.data(), D, true, D, y, D, l.bias ? l.bias->data() : nullptr};
    }
    // As the forward: q, k, v in one product over x, then out_proj over the merged heads.
    void projections() {
        const attn::fast::GemmRight qkv[] = {right(m.W_query, q.data()), right(m.W_key, k.data()),
                                             right(m.W_value, v.data())};
        attn::fast::gemm_multi(T, D, x.data(), D, false, qkv, 3, 0, arithmetic);
        const attn::fast::GemmRight o = right(m.out_proj, out.data());
        attn::fast::gemm_multi(T, D, ctx.data(), D, false, &o, 1, 0, arithmetic);
    }
    // Every head through the given stages, in parallel as the forward does. A stage run on
    // its own works on what the workspace holds (the same amount of work).
    void heads(unsigned stages) {
        const attn::fast::HeadMask mask{.causal = true, .divide = true, .scale = 8.0f};
#pragma omp parallel for schedule(dynamic, 1)
        for (std::size_t h = 0; h < H; ++h) {
            thread_local attn::fast::HeadWorkspace ws;
            const attn::fast::HeadArgs args{.K = k.data() + h * HD, .ldk = D, .V = v.data() + h * HD,
                                            .ldv = D, .ldq = D, .ldo = D, .Tq = T, .Tk = T,
                                            .hd = HD, .dv = HD};
            const attn::fast::QueryHead head{.Q = q.data() + h * HD, .O = ctx.data() + h * HD};
            attn::fast::attend_head(args, mask, &head, 1, ws, stages, arithmetic);
        }
    }
};

// One head stage, after a full pass that fills the workspaces.
void head_stage(benchmark::State& state, unsigned stage, double flops,
                attn::Arithmetic a = attn::Arithmetic::exact) {
    Pieces p(std::size_t(state.range(0)), a);
    Run run(state, int(state.range(1)));
    p.projections();
    p.heads(attn::fast::stage_all);
    run.start();
    for (auto _ : state) {
        p.heads(stage);
        benchmark::ClobberMemory();
    }
    run.finish(flops);
}

template <attn::Arithmetic A>
void BM_mha_projections(benchmark::State& state) {
    Pieces p(std::size_t(state.range(0)), A);
    Run run(state, int(state.range(1)));
    p.projections();
    run.start();
    for (auto _ : state) {
        p.projections();
        benchmark::ClobberMemory();
    }
    run.finish(flops_projections(double(p.T)));
}

template <attn::Arithmetic A>
void BM_mha_scores(benchmark::State& state) {
    head_stage(state, attn::fast::stage_scores, flops_causal_product(double(state.range(0))), A);
}

// Softmax in place, again and again on its own output: the same work every time.
void BM_mha_mask_softmax(benchmark::State& state) {
    head_stage(state, attn::fast::stage_softmax, 0);
}

template <attn::Arithmetic A>
void BM_mha_weights_values(benchmark::State& state) {
    head_stage(state, attn::fast::stage_weights_values,
               flops_causal_product(double(state.range(0))), A);
}

constexpr std::size_t N = 1024;

template <attn::Arithmetic A>
void BM_sgemm_1024(benchmark::State& state) {
    const attn::Tensor a = attn::rand({N, N}), b = attn::rand({N, N});
    std::vector<float> c(N * N);
    const int threads = int(state.range(0));
    Run run(state, threads);
    run.start();
    for (auto _ : state) {
        attn::fast::gemm(N, N, N, a.data(), N, false, b.data(), N, false, c.data(), N, threads, A);
        benchmark::ClobberMemory();
    }
    run.finish(2.0 * N * N * N);
}

void BM_blas_sgemm_1024(benchmark::State& state) {
    const attn::Tensor a = attn::rand({N, N}), b = attn::rand({N, N});
    std::vector<float> c(N * N);
    Run run(state, int(state.range(0)));
    run.start();
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(N), int(N), int(N), 1.0f,
                    a.data(), int(N), b.data(), int(N), 0.0f, c.data(), int(N));
        benchmark::ClobberMemory();
    }
    run.finish(2.0 * N * N * N);
}

void sizes(benchmark::internal::Benchmark* b) {
    for (const std::int64_t T : {256, 1024, 4096})
        for (const std::int64_t threads : {1, 2}) b->Args({T, threads});
    b->ArgNames({"T", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

void threads_only(benchmark::internal::Benchmark* b) {
    b->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

using attn::Arithmetic;
BENCHMARK_TEMPLATE(BM_mha_forward, Arithmetic::exact)->Name("mha_forward")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_mha_forward, Arithmetic::fma)->Name("mha_forward_fma")->Apply(sizes);
BENCHMARK(BM_mha_forward_steps)
    ->Name("mha_forward_steps")
    ->Args({256, 1})
    ->ArgNames({"T", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_mha_projections, Arithmetic::exact)->Name("mha_projections")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_mha_scores, Arithmetic::exact)->Name("mha_scores")->Apply(sizes);
BENCHMARK(BM_mha_mask_softmax)->Name("mha_mask_softmax")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_mha_weights_values, Arithmetic::exact)->Name("mha_weights_values")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_mha_projections, Arithmetic::fma)->Name("mha_projections_fma")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_mha_scores, Arithmetic::fma)->Name("mha_scores_fma")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_mha_weights_values, Arithmetic::fma)->Name("mha_weights_values_fma")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_sgemm_1024, Arithmetic::exact)->Name("sgemm_1024")->Apply(threads_only);
BENCHMARK_TEMPLATE(BM_sgemm_1024, Arithmetic::fma)->Name("sgemm_1024_fma")->Apply(threads_only);
BENCHMARK(BM_blas_sgemm_1024)->Name("blas_sgemm_1024")->Apply(threads_only);

int main(int argc, char** argv) {
    return bench::main(argc, argv,
                       "causal MultiHeadAttention forward, B=1, d_in=d_out=768, 12 heads, dropout "
                       "0, eval, float32; GFLOPs count the causal products' visible pairs");
}
