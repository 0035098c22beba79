// Every attention module's forward at GPT-2 sizes, one case per (module, T, threads): the
// library's side of benchmarks/run/record_attention.py, which runs PyTorch (the same Raschka
// class, the same seed) and ONNX Runtime beside it. A Google Benchmark program: it measures
// and asserts nothing; `meson test` does not run it.
//
//   module_benchmark [--module=mha,gqa] [--T=256,1024] [--threads=1,2] [--output=FILE]
//                    [--arithmetic=exact|fma] [Google Benchmark flags]
//
// Registers `forward/<module>/T:<T>/threads:<n>` for each combination (default: every
// module, T = 1024, 1 thread). Each case calls `attn::manual_seed(0)`, builds the module
// from its config (B = 1, d_in = d_out = 768, 12 heads, dropout 0, evaluation mode),
// draws `x = attn::rand({1, T, 768})` (PyTorch draws the same numbers after
// `torch.manual_seed(0)`), and times `module(x)`: the module's `operator()`, whatever path
// it takes. --output=FILE writes the first case's result (raw float32, [1, T, 768]) before
// timing, for the driver's comparison with PyTorch. --arithmetic=fma runs every case under
// ArithmeticGuard(Arithmetic::fma) (kernels/arithmetic.hpp: the products by fused
// multiply-adds), said in each case's label; the default is exact.
//
// The table below is benchmarks/run/table.py's ENTRIES, key for key: a new module is one
// line here and one entry there.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/modules/causal.hpp"
#include "attn/modules/deltanet.hpp"
#include "attn/modules/dsa.hpp"
#include "attn/modules/gated_attention.hpp"
#include "attn/modules/gpt2.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/kv_sharing.hpp"
#include "attn/modules/mla.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/swa.hpp"
#include "attn/core/generator.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "bench.hpp"

namespace {

constexpr std::size_t D = 768, H = 12, HD = D / H;
using Forward = std::function<attn::Tensor(const attn::Tensor&)>;

// Builds a module (in evaluation mode) and returns its forward; the module lives in the
// closure.
template <class M, class Config>
Forward module_of(const Config& config) {
    auto m = std::make_shared<M>(config);
    m->eval();
    return [m](const attn::Tensor& x) { return (*m)(x); };
}

struct Module {
    const char* key;
    std::function<Forward(std::size_t T)> make;
};

const std::vector<Module>& modules() {
    static const std::vector<Module> table = {
        {"mha",
         [](std::size_t T) {
             return module_of<attn::MultiHeadAttention>(attn::MultiHeadAttentionConfig{
                 .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H});
         }},
        {"gqa",
         [](std::size_t T) {
             return module_of<attn::GroupedQueryAttention>(attn::GroupedQueryAttentionConfig{
                 .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H,
                 .num_kv_groups = 4});
         }},
        {"causal",
         [](std::size_t T) {
             return module_of<attn::CausalAttention>(attn::CausalAttentionConfig{
                 .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0});
         }},
        {"wrapper",
         [](std::size_t T) {
             return module_of<attn::MultiHeadAttentionWrapper>(
                 attn::MultiHeadAttentionWrapperConfig{
                     .d_in = D, .d_out = HD, .context_length = T, .dropout = 0.0, .num_heads = H});
         }},
        {"gpt2",
         [](std::size_t T) {
             return module_of<attn::GPT2Attention>(attn::GPT2Config{
                 .block_size = T, .n_embd = D, .n_head = H, .dropout = 0.0, .bias = true});
         }},
        {"swa",
         [](std::size_t T) {
             return module_of<attn::MultiHeadAttentionWithSWA>(
                 attn::MultiHeadAttentionWithSWAConfig{
                     .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H,
                     .sliding_window_size = 256});
         }},
        {"mla",
         [](std::size_t T) {
             return module_of<attn::MultiHeadLatentAttention>(attn::MultiHeadLatentAttentionConfig{
                 .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H,
                 .latent_dim = std::nullopt});
         }},
        {"kv_sharing",
         [](std::size_t T) {
             return module_of<attn::MultiHeadAttentionWithKVSharing>(
                 attn::MultiHeadAttentionWithKVSharingConfig{
                     .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H});
         }},
        {"dsa",
         [](std::size_t T) {
             return module_of<attn::MultiHeadAttentionWithDSA>(attn::MultiHeadAttentionWithDSAConfig{
                 .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H,
                 .index_n_heads = 4, .index_head_dim = 64, .topk = 64});
         }},
        {"deltanet",
         [](std::size_t) {
             return module_of<attn::GatedDeltaNet>(
                 attn::GatedDeltaNetConfig{.d_in = D, .d_out = D, .dropout = 0.0, .num_heads = H});
         }},
        {"gated",
         [](std::size_t T) {
             return module_of<attn::GatedMultiHeadAttention>(attn::GatedMultiHeadAttentionConfig{
                 .d_in = D, .d_out = D, .context_length = T, .dropout = 0.0, .num_heads = H});
         }},
    };
    return table;
}

std::string output_path;  // --output: where the first case writes its result
attn::Arithmetic arithmetic = attn::Arithmetic::exact;  // --arithmetic

void write_output(const attn::Tensor& y) {
    if (output_path.empty()) return;
    std::ofstream out(output_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(y.data()), std::streamsize(y.size() * sizeof(float)));
    if (!out) throw std::runtime_error("cannot write " + output_path);
    output_path.clear();
}

void forward_case(benchmark::State& state, const Module* module, std::size_t T, int threads) {
    const attn::ArithmeticGuard guard(arithmetic);
    attn::manual_seed(0);
    const Forward forward = module->make(T);
    const attn::Tensor x = attn::rand({1, T, D});
    bench::Run run(state, threads);
    {
        const attn::Tensor warm = forward(x);
        write_output(warm);
        benchmark::DoNotOptimize(warm.data());
    }
    run.start();
    for (auto _ : state) {
        attn::Tensor y = forward(x);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    run.finish();
    state.SetLabel(std::string("arithmetic=") + attn::arithmetic_name(arithmetic));
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        const std::size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

[[noreturn]] void usage(const std::string& message) {
    std::fprintf(stderr,
                 "module_benchmark: %s\nusage: module_benchmark [--module=K,..] [--T=N,..] "
                 "[--threads=N,..] [--output=FILE] [--arithmetic=exact|fma] [Google Benchmark "
                 "flags]\nmodules:",
                 message.c_str());
    for (const Module& m : modules()) std::fprintf(stderr, " %s", m.key);
    std::fprintf(stderr, "\n");
    std::exit(2);
}

std::vector<std::size_t> numbers(const std::string& flag, const std::string& value) {
    std::vector<std::size_t> out;
    for (const std::string& v : split(value)) {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || n == 0) usage("bad value '" + v + "' for " + flag);
        out.push_back(std::size_t(n));
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> keys;
    std::vector<std::size_t> sizes{1024}, threads{1};
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string v;
        const auto take = [&](const char* flag) {
            if (arg.rfind(flag, 0) != 0) return false;
            v = arg.substr(std::strlen(flag));
            return true;
        };
        if (take("--module=")) keys = split(v);
        else if (take("--T=")) sizes = numbers("--T", v);
        else if (take("--threads=")) threads = numbers("--threads", v);
        else if (take("--output=")) output_path = v;
        else if (take("--arithmetic=")) {
            if (v == "exact") arithmetic = attn::Arithmetic::exact;
            else if (v == "fma") arithmetic = attn::Arithmetic::fma;
            else usage("bad value '" + v + "' for --arithmetic (exact or fma)");
        }
        else if (arg == "--help" || arg == "-h") usage("the library's attention modules' forward");
        else rest.push_back(argv[i]);
    }
    if (keys.empty())
        for (const Module& m : modules()) keys.emplace_back(m.key);
    for (const std::string& key : keys) {
        const Module* module = nullptr;
        for (const Module& m : modules())
            if (key == m.key) module = &m;
        if (!module) usage("unknown module '" + key + "'");
        for (const std::size_t T : sizes)
            for (const std::size_t n : threads) {
                const std::string name = "forward/" + key + "/T:" + std::to_string(T) +
                                         "/threads:" + std::to_string(n);
                benchmark::RegisterBenchmark(name.c_str(), forward_case, module, T, int(n))
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
            }
    }
    return bench::main(int(rest.size()), rest.data(),
                       "attention modules' forward, B=1, d_in=d_out=768, 12 heads, dropout 0, "
                       "eval, float32, seed 0",
                       "module_benchmark [--module=K,..] [--T=N,..] [--threads=N,..] "
                       "[--output=FILE] [--arithmetic=exact|fma] [Google Benchmark flags]");
}
