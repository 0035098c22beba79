// Attention across processes (lib/attn/dist), run under `mpirun -np P` for P = 1 to 4
// (tests/meson.build): every rank runs every test case, so the collectives meet. The results
// are checked against one process's attention core on the whole sequence, which every rank
// computes itself from the same seeded tensors.
//
//   mpirun -np 4 build/tests/test_distributed [--exit-early]
//
// `--exit-early`: rank 1 leaves without MPI_Finalize before a collective; the others must not
// hang (tests/check_mpi_exit.py runs this and expects mpirun's failure and message).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/dist/ring_attention.hpp"
#include "attn/dist/tensor_parallel.hpp"
#include "attn/dist/ulysses.hpp"

namespace {

using attn::Tensor;
using namespace attn::dist;

// The largest |a - b| over the elements, relative to the largest |b|: the merges of ring
// attention round a product and a sum more per step than one process's kernel, so the two
// agree to a few float32 epsilons of the values' scale, not to the bit.
double scaled_distance(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isinf(b.data()[i]) && a.data()[i] == b.data()[i]) continue;  // -inf lse of an empty row
        worst = std::max(worst, double(std::fabs(a.data()[i] - b.data()[i])));
        scale = std::max(scale, double(std::fabs(b.data()[i])));
    }
    return scale == 0 ? worst : worst / scale;
}

// The bound on `scaled_distance`: (4 + 2 P) float32 epsilons. One process's fast forward and
// tiled backward already differ from its own other backends by a few epsilons (2.8 measured
// with P = 1); each of the P - 1 merges rounds a weight exp(L_part - L), a product and a sum
// per element, about 2 more (5.1 measured with P = 4, on random normal tensors).
double bound(int ranks) { return (4.0 + 2.0 * ranks) * std::numeric_limits<float>::epsilon(); }

// The bound for the tensor-parallel logits, relative to the largest: each block's output
// projection and second feed-forward layer sum their terms in P parts, then add the parts
// (the ring all-reduce's order), where one process sums them in one run; about an epsilon per
// sum, carried through the layers: (2 + 2 n_layers) epsilons (1.9 measured with 2 layers on
// 2, 3 and 4 ranks; 0 on one rank, whose sums are the model's).
double tp_bound(std::size_t n_layers) { return (2.0 + 2.0 * double(n_layers)) * std::numeric_limits<float>::epsilon(); }

struct Problem {
    std::size_t B, H, Hkv, T, E, Ev;
    bool causal;
    SequenceSplit split;
};

TEST_CASE("ring attention: forward and backward equal one process's, every split") {
    const Communicator world = Communicator::world();
    const std::size_t P = std::size_t(world.size()), r = std::size_t(world.rank());
    const Problem problems[] = {
        {1, 1, 1, 8 * P, 4, 4, false, SequenceSplit::contiguous},
        {2, 4, 2, 8 * P, 8, 6, true, SequenceSplit::contiguous},
        {1, 2, 2, 6 * P, 8, 8, true, SequenceSplit::zigzag},
        {2, 4, 1, 4 * P, 8, 8, true, SequenceSplit::striped},
        {1, 3, 3, 40 * P, 16, 16, true, SequenceSplit::zigzag},    // more than one tile a block
        {1, 2, 1, 34 * P, 16, 12, true, SequenceSplit::striped},
    };
    attn::Generator gen(123);
    for (const Problem& p : problems) {
        CAPTURE(P, r, p.B, p.H, p.Hkv, p.T, p.E, p.Ev, p.causal, split_name(p.split));
        const Tensor q = attn::randn({p.B, p.H, p.T, p.E}, gen), k = attn::randn({p.B, p.Hkv, p.T, p.E}, gen),
                     v = attn::randn({p.B, p.Hkv, p.T, p.Ev}, gen), dout = attn::randn({p.B, p.H, p.T, p.Ev}, gen);
        attn::SDPAOptions one;
        one.is_causal = p.causal;
        const attn::SDPAForward whole = attn::scaled_dot_product_attention_forward(q, k, v, one);
        const attn::SDPAGradients grads = attn::scaled_dot_product_attention_backward(dout, q, k, v, whole, one);

        RingOptions options;
        options.is_causal = p.causal;
        options.split = p.split;
        const Tensor ql = shard(q, P, r, p.split), kl = shard(k, P, r, p.split), vl = shard(v, P, r, p.split);
        const RingForward fwd = ring_attention_forward(world, ql, kl, vl, options);
        CHECK(scaled_distance(unshard(world, fwd.output, p.split), whole.output) <= bound(int(P)));
        auto column = [](Tensor lse) {  // [B, H, T] as [B, H, T, 1], for shard and unshard
            const attn::Shape s = attn::shape_of(lse);
            lse.reshape({s[0], s[1], s[2], std::size_t(1)});
            return lse;
        };
        CHECK(scaled_distance(unshard(world, column(fwd.logsumexp), p.split), column(whole.logsumexp)) <= bound(int(P)));
        REQUIRE(fwd.steps.size() == P);

        // Without the overlap: the same sums in the same order, so the same bits.
        RingOptions serial = options;
        serial.overlap = false;
        const bool same_bits = ring_attention_forward(world, ql, kl, vl, serial).output == fwd.output;
        CHECK(same_bits);

        const RingGradients g = ring_attention_backward(world, shard(dout, P, r, p.split), ql, kl, vl, fwd, options);
        CHECK(scaled_distance(unshard(world, g.grad_query, p.split), grads.grad_query) <= bound(int(P)));
        CHECK(scaled_distance(unshard(world, g.grad_key, p.split), grads.grad_key) <= bound(int(P)));
        CHECK(scaled_distance(unshard(world, g.grad_value, p.split), grads.grad_value) <= bound(int(P)));
    }
}

TEST_CASE("ring attention: (query, key) pairs per step under a causal mask") {
    const Communicator world = Communicator::world();
    const std::size_t P = std::size_t(world.size()), r = std::size_t(world.rank()), c = 8, T = c * P;
    attn::Generator gen(7);
    const Tensor x = attn::randn({1, 1, T, 4}, gen);
    for (SequenceSplit split : {SequenceSplit::contiguous, SequenceSplit::zigzag, SequenceSplit::striped}) {
        CAPTURE(P, r, split_name(split));
        RingOptions options;
        options.is_causal = true;
        options.split = split;
        const Tensor xl = shard(x, P, r, split);
        const RingForward fwd = ring_attention_forward(world, xl, xl, xl, options);
        std::uint64_t total = 0;
        for (const RingStep& s : fwd.steps) {
            total += s.pairs;
            // Brandon et al.: a striped step computes c (c + 1) / 2 pairs when the keys' stripe
            // is not after the queries', else c (c - 1) / 2. Contiguous: c^2, c (c + 1) / 2 or 0.
            if (split == SequenceSplit::striped)
                CHECK(s.pairs == (s.key_rank <= r ? c * (c + 1) / 2 : c * (c - 1) / 2));
            if (split == SequenceSplit::contiguous)
                CHECK(s.pairs == (s.key_rank < r ? c * c : s.key_rank == r ? c * (c + 1) / 2 : 0));
            if (split == SequenceSplit::zigzag)  // two half-chunks against two: 2 (c/2)^2 + ... per step
                CHECK(s.pairs == (s.key_rank == r ? 2 * (c / 2) * (c / 2 + 1) / 2 + (c / 2) * (c / 2) : c * c / 2));
        }
        // Every rank's pairs over all steps: the whole triangle, T (T + 1) / 2, between them.
        const std::vector<float> all = world.all_gather(std::vector<float>{float(total)}.data(), 1);
        double sum = 0;
        for (float t : all) sum += t;
        CHECK(sum == double(T) * (T + 1) / 2);
    }
}

TEST_CASE("collectives: ring all-reduce in its stated order, bytes as the formulas say") {
    const Communicator world = Communicator::world();
    const std::size_t P = std::size_t(world.size()), r = std::size_t(world.rank());
    const std::size_t n = 6 * P + 1;  // blocks of 7 and 6 elements
    auto value = [](std::size_t rank, std::size_t i) { return 1.0f / float(3 + rank) + float(i) * 1e-3f; };
    std::vector<float> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = value(r, i);
    const Traffic before = traffic_so_far();
    world.all_reduce_sum(data.data(), n);
    const Traffic after = traffic_so_far();
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t b = i < (n % P) * (n / P + 1) ? i / (n / P + 1) : n % P + (i - (n % P) * (n / P + 1)) / (n / P);
        float sum = value(b, i);  // block b starts at rank b and adds b + 1, ..., b - 1
        for (std::size_t s = 1; s < P; ++s) sum = sum + value((b + s) % P, i);
        CAPTURE(i, b);
        CHECK(data[i] == sum);
    }
    // Each block leaves this rank twice per ring pass but one: 2 (P - 1) blocks' worth.
    std::uint64_t expected = 0;
    for (std::size_t s = 0; s + 1 < P; ++s) {
        auto len = [&](std::size_t blk) { return n / P + (blk < n % P ? 1 : 0); };
        expected += 4 * (len((r + P - s) % P) + len((r + 1 + P - s) % P));
    }
    CHECK(after.bytes - before.bytes == expected);

    // The ring forward sends its key and value block P - 1 times.
    const std::size_t c = 4;
    attn::Generator gen(5);
    const Tensor x = attn::randn({1, 2, c, 8}, gen);
    const Traffic t0 = traffic_so_far();
    ring_attention_forward(world, x, x, x);
    CHECK(traffic_so_far().bytes - t0.bytes == (P - 1) * 2 * x.size() * sizeof(float));
}

TEST_CASE("ring attention: bad splits and shapes are refused by name") {
    const Communicator world = Communicator::world();
    const std::size_t P = std::size_t(world.size());
    attn::Generator gen(1);
    const Tensor x = attn::randn({1, 1, 2 * P + 1, 4}, gen);
    if (P > 1)  // one rank takes any length
        CHECK_THROWS_WITH(shard(x, P, 0, SequenceSplit::contiguous),
                          Catch::Contains("needs T a positive multiple of " + std::to_string(P)));
    CHECK_THROWS_WITH(shard(attn::randn({1, 1, 3 * P, 4}, gen), P, 0, SequenceSplit::zigzag),
                      Catch::Contains("multiple of " + std::to_string(2 * P)));
    const Tensor q = attn::randn({1, 2, 4, 8}, gen), k = attn::randn({1, 3, 4, 8}, gen);
    CHECK_THROWS_WITH(ring_attention_forward(world, q, k, k), Catch::Contains("(key)") && Catch::Contains("[1, 3, 4, 8]"));
    // Blocks of different sizes on different ranks: refused on every rank, none left waiting.
    if (P > 1) {
        const Tensor mine = attn::randn({1, 1, world.rank() == 0 ? std::size_t(4) : std::size_t(2), 4}, gen);
        CHECK_THROWS_WITH(ring_attention_forward(world, mine, mine, mine),
                          Catch::Contains("the tokens each rank holds: 4 on rank 0, 2 on rank 1"));
        const Tensor heads = attn::randn({1, P, world.rank() == 0 ? std::size_t(4) : std::size_t(2), 4}, gen);
        CHECK_THROWS_WITH(ulysses_attention_forward(world, heads, heads, heads), Catch::Contains("on rank 1"));
        // One rank's bad shapes: its own message there, the first failing rank named elsewhere.
        const Tensor bad = attn::randn({1, 1, 2, 4}, gen);
        const Tensor bad_key = world.rank() == 1 ? attn::randn({1, 1, 2, 3}, gen) : bad;
        CHECK_THROWS_WITH(ring_attention_forward(world, bad, bad_key, bad),
                          world.rank() == 1 ? Catch::Contains("(key)") : Catch::Contains("rank 1 refused its inputs"));
    }
    // Counts are compared exactly, beyond float32's 2^24 (16777217 would round to 16777216).
    const std::uint64_t big = (std::uint64_t{1} << 24) + (world.rank() == 1 ? 1 : 0);
    if (P > 1)
        CHECK_THROWS_WITH(world.require_same(big, "big"), Catch::Contains("16777216 on rank 0, 16777217 on rank 1"));
    CHECK(world.all_gather_count(big)[0] == std::uint64_t{1} << 24);
    RingOptions zig;
    zig.split = SequenceSplit::zigzag;
    const Tensor odd = attn::randn({1, 1, 3, 4}, gen);
    CHECK_THROWS_WITH(ring_attention_forward(world, odd, odd, odd, zig), Catch::Contains("positive even number"));
}

TEST_CASE("Ulysses: one process's bits, forward and backward; ring attention within its bound of it") {
    const Communicator world = Communicator::world();
    const std::size_t P = std::size_t(world.size()), r = std::size_t(world.rank());
    attn::Generator gen(31);
    for (const std::size_t Hkv : {std::size_t(12), P}) {
        for (const bool causal : {false, true}) {
            CAPTURE(P, r, Hkv, causal);
            const std::size_t B = 2, H = 12, T = 6 * P, E = 8;
            const Tensor q = attn::randn({B, H, T, E}, gen), k = attn::randn({B, Hkv, T, E}, gen),
                         v = attn::randn({B, Hkv, T, E}, gen), dout = attn::randn({B, H, T, E}, gen);
            attn::SDPAOptions options;
            options.is_causal = causal;
            const attn::SDPAForward whole = attn::scaled_dot_product_attention_forward(q, k, v, options);
            const attn::SDPAGradients grads = attn::scaled_dot_product_attention_backward(dout, q, k, v, whole, options);
            const auto mine = [&](const Tensor& x) { return shard(x, P, r, SequenceSplit::contiguous); };
            const Traffic before = traffic_so_far();
            const UlyssesForward fwd = ulysses_attention_forward(world, mine(q), mine(k), mine(v), options);
            const Traffic after = traffic_so_far();
            const bool same_output = fwd.output == mine(whole.output);
            CHECK(same_output);
            const UlyssesGradients g = ulysses_attention_backward(world, mine(dout), fwd, options);
            const bool same_grads = g.grad_query == mine(grads.grad_query) && g.grad_key == mine(grads.grad_key) &&
                                    g.grad_value == mine(grads.grad_value);
            CHECK(same_grads);
            // Four all-to-alls (q, k, v to the heads, the output back), each sending (P - 1) / P
            // of a [B, H, c, E] block: the paper's 4 N h / P elements per all-to-all, times (P - 1) / P.
            const std::size_t c = T / P, q_block = B * H * c * E, kv_block = B * Hkv * c * E;
            CHECK(after.bytes - before.bytes == 4 * (P - 1) * (2 * q_block + 2 * kv_block) / P);

            RingOptions ring_options;
            ring_options.is_causal = causal;
            const RingForward ring = ring_attention_forward(world, mine(q), mine(k), mine(v), ring_options);
            CHECK(scaled_distance(ring.output, fwd.output) <= bound(int(P)));
        }
    }
    if (P > 1) {
        const Tensor odd = attn::randn({1, P + 1, P, 4}, gen);
        CHECK_THROWS_WITH(ulysses_attention_forward(world, odd, odd, odd),
                          Catch::Contains(std::to_string(P + 1) + " query heads do not split over " + std::to_string(P) + " ranks"));
    }
}

TEST_CASE("tensor parallelism: a small GPT's logits on every rank, within the split sums' rounding") {
    const Communicator world = Communicator::world();
    const std::size_t P = std::size_t(world.size());
    attn::GPTConfig cfg;
    cfg.vocab_size = 50;
    cfg.context_length = 16;
    cfg.emb_dim = 48;
    cfg.n_heads = 12;  // divisible by 1, 2, 3 and 4
    cfg.n_layers = 2;
    cfg.drop_rate = 0.1;
    cfg.qkv_bias = true;
    attn::Generator gen(123);
    attn::GPTModel model(cfg, gen);
    model.eval();
    attn::LongTensor ids = attn::LongTensor::from_shape({2, 6});
    for (std::size_t i = 0; i < ids.size(); ++i) ids.data()[i] = std::int64_t((7 * i + 3) % cfg.vocab_size);
    const Tensor logits = model(ids);
    const TensorParallelGPT tp(world, model);
    const Tensor split = tp(ids);
    CAPTURE(P, scaled_distance(split, logits));
    CHECK(scaled_distance(split, logits) <= (P == 1 ? 0.0 : tp_bound(cfg.n_layers)));
    // Every rank holds the same logits (the all-reduce gives every rank the same bits).
    const std::vector<float> all = world.all_gather(split.data(), split.size());
    bool same_everywhere = true;
    for (std::size_t r = 0; r < P; ++r)
        same_everywhere = same_everywhere && std::equal(split.begin(), split.end(), all.begin() + long(r * split.size()));
    CHECK(same_everywhere);
    if (P > 1) {
        attn::GPTConfig odd = cfg;
        odd.n_heads = P + 1;
        odd.emb_dim = 4 * (P + 1);
        CHECK_THROWS_WITH(TensorParallelGPT(world, attn::GPTModel(odd, gen)),
                          Catch::Contains(std::to_string(P + 1) + " heads do not split over " + std::to_string(P) + " ranks"));
    }
}

}  // namespace

int main(int argc, char** argv) {
    Session mpi;
    const Communicator world = Communicator::world();
    if (argc > 1 && std::strcmp(argv[1], "--exit-early") == 0) {
        if (world.rank() == 1) std::_Exit(3);  // gone, without MPI_Finalize
        std::vector<float> x(4, 1.0f);
        world.all_reduce_sum(x.data(), x.size());  // waits for rank 1
        return 0;
    }
    Catch::Session session;
    session.configData().filenamesAsTags = true;
    if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
    const int failed = session.run();
    // Any rank's failure fails every rank's exit status, so mpirun reports it.
    return world.max(failed) > 0 ? 1 : 0;
}
