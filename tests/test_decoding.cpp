// Tests for Raschka's decoding strategies (ch05 §5.3): exponential_, topk and multinomial
// (lib/attn/core/sampling.hpp, generator.hpp), the top-k filter, temperature sampling and his
// generate with and without the KV cache (lib/attn/model/decoding.hpp). Expected values come
// from data/oracle/decoding.json (tools/oracle/decoding.py: his cells and his generate on
// Debian's python3-torch 1.13) and from his printed notebook (data/sources/raschka/
// raschka_ch05.txt); bad inputs are checked for their exception type and message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "bad_input.hpp"
#include "oracle.hpp"

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/sampling.hpp"
#include "attn/model/decoding.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/print/torch.hpp"

namespace test_decoding {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::LongTensor;
using attn::Shape;
using attn::Tensor;

const nlohmann::json& oracle() {
    return test::oracle_file("decoding.json");
}
const nlohmann::json& his() {
    return oracle()["his_cells"];
}

// The number of elements whose bits differ (shapes must agree).
std::size_t bit_differences(const Tensor& a, const Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    std::size_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        n += std::bit_cast<std::uint32_t>(a.data()[i]) != std::bit_cast<std::uint32_t>(b.data()[i]);
    return n;
}

std::vector<std::int64_t> values_of(const LongTensor& t) {
    return {t.begin(), t.end()};
}
std::vector<std::int64_t> oracle_values(const nlohmann::json& rec) {
    return rec["values"].get<std::vector<std::int64_t>>();
}

// His print_sampled_tokens (In [32]): torch.manual_seed(123), 1000 times multinomial(probas, 1),
// the counts per token (his bincount).
std::vector<int> sampled_counts(const Tensor& probas) {
    attn::manual_seed(123);
    std::vector<int> counts(probas.size(), 0);
    for (int i = 0; i < 1000; ++i) {
        const LongTensor idx = attn::multinomial(probas, 1);
        REQUIRE(attn::shape_of(idx) == Shape{1});
        counts.at(static_cast<std::size_t>(idx(0))) += 1;
    }
    return counts;
}

// The "N x word" lines printed under `In [n]:` in his notebook's export: (counts, words).
std::pair<std::vector<int>, std::vector<std::string>> book_counts(int cell) {
    std::ifstream in(textbook::data_dir() / "sources" / "raschka" / "raschka_ch05.txt");
    REQUIRE(in.good());
    const std::string header = "In [" + std::to_string(cell) + "]:";
    const std::regex line_re(R"(^(\d+) x (\S+)$)");
    std::vector<int> counts;
    std::vector<std::string> words;
    std::string line;
    bool in_cell = false;
    while (std::getline(in, line)) {
        if (line == header) {
            in_cell = true;
            continue;
        }
        if (!in_cell) continue;
        std::smatch m;
        if (std::regex_match(line, m, line_re)) {
            counts.push_back(std::stoi(m[1]));
            words.push_back(m[2]);
        } else if (!counts.empty()) {
            break;  // the block of counts ended
        }
    }
    return {counts, words};
}

// The oracle's GPTModel: his small config after torch.manual_seed(123), evaluation mode.
attn::GPTModel& small_model() {
    static attn::GPTModel model = [] {
        const auto& c = oracle()["small_config"];
        const attn::GPTConfig cfg{.vocab_size = c["vocab_size"].get<std::size_t>(),
                                  .context_length = c["context_length"].get<std::size_t>(),
                                  .emb_dim = c["emb_dim"].get<std::size_t>(),
                                  .n_heads = c["n_heads"].get<std::size_t>(),
                                  .n_layers = c["n_layers"].get<std::size_t>(),
                                  .drop_rate = c["drop_rate"].get<double>(),
                                  .qkv_bias = c["qkv_bias"].get<bool>()};
        attn::manual_seed(123);
        attn::GPTModel m(cfg);
        m.eval();
        return m;
    }();
    return model;
}

std::optional<std::size_t> top_k_of(const nlohmann::json& c) {
    if (c["top_k"].is_null()) return std::nullopt;
    return c["top_k"].get<std::size_t>();
}
std::optional<std::int64_t> eos_of(const nlohmann::json& c) {
    if (c["eos_id"].is_null()) return std::nullopt;
    return c["eos_id"].get<std::int64_t>();
}

}  // namespace

TEST_CASE("exponential_ draws torch 1.13's exponentials bit for bit, float32 and float64") {
    for (const auto& c : oracle()["exponential"]) {
        const auto n = c["n"].get<std::size_t>();
        const auto lambd = c["lambd"].get<double>();
        INFO(c["dtype"].get<std::string>() << " n=" << n << " lambd=" << lambd << " seed=" << c["seed"]);
        attn::Generator gen(c["seed"].get<std::uint64_t>());
        if (c["dtype"] == "float32") {
            Tensor t = Tensor::from_shape(Shape{n});
            attn::exponential_(t, lambd, gen);
            CHECK(bit_differences(t, test::oracle_bits_tensor(Shape{n}, c["bits"])) == 0);
        } else {
            const auto& bits = c["bits"];
            REQUIRE(bits.size() == n);
            std::size_t differ = 0;
            for (std::size_t i = 0; i < n; ++i)
                differ +=
                    std::bit_cast<std::uint64_t>(attn::exponential_double(lambd, gen)) != bits[i].get<std::uint64_t>();
            CHECK(differ == 0);
        }
        CHECK(gen.draws_since_seed() == c["draws"].get<std::uint64_t>());  // two 32-bit draws per element
    }
}

TEST_CASE("his softmax with temperature (In [30], [33]) is PyTorch's bits") {
    const Tensor logits = test::oracle_bits_tensor(his()["next_token_logits"]);
    CHECK(bit_differences(attn::softmax(logits, -1), test::oracle_bits_tensor(his()["probas"])) == 0);
    const auto& temperatures = his()["temperatures"];
    REQUIRE(temperatures.size() == 3);
    for (std::size_t i = 0; i < temperatures.size(); ++i) {
        const auto T = static_cast<float>(temperatures[i].get<double>());
        INFO("temperature " << T);
        Tensor scaled = logits;
        for (float& v : scaled) v = v / T;  // logits / temperature in float32
        CHECK(bit_differences(attn::softmax(scaled, -1), test::oracle_bits_tensor(his()["scaled_probas"][i])) == 0);
    }
}

TEST_CASE("print_sampled_tokens (In [31], [32], [35], [36]): his printed counts and Debian's torch's") {
    const Tensor logits = test::oracle_bits_tensor(his()["next_token_logits"]);
    const std::vector<std::pair<int, Tensor>> cells = {
        {32, attn::softmax(logits, -1)},
        {35, attn::softmax(Tensor(logits / 0.1F), -1)},
        {36, attn::softmax(Tensor(logits / 5.0F), -1)},
    };
    for (const auto& [cell, probas] : cells) {
        INFO("In [" << cell << "]");
        const std::vector<int> counts = sampled_counts(probas);
        const auto [book, words] = book_counts(cell);
        CHECK(book.size() == 9);
        CHECK(counts == book);  // his printed notebook
        CHECK(counts == his()["sample_counts"]["In [" + std::to_string(cell) + "]"].get<std::vector<int>>());
    }
    // In [31]: the first sample after manual_seed(123), printed as its word
    attn::manual_seed(123);
    const LongTensor first = attn::multinomial(attn::softmax(logits, -1), 1);
    const auto words = book_counts(32).second;
    REQUIRE(words.size() == 9);
    CHECK(words.at(static_cast<std::size_t>(first(0))) == his()["printed"]["In [31]"].get<std::string>());
}

TEST_CASE("topk and the top-k filter (In [37]-[39]) print as his notebook") {
    const Tensor logits = test::oracle_bits_tensor(his()["next_token_logits"]);
    const attn::TopK top = attn::topk(logits, 3);
    CHECK(bit_differences(top.values, test::oracle_bits_tensor(his()["top_logits"])) == 0);
    CHECK(values_of(top.indices) == oracle_values(his()["top_pos"]));
    CHECK("Top logits: " + attn::repr(top.values) + "\nTop positions: " + attn::repr(top.indices) ==
          his()["printed"]["In [37]"].get<std::string>());
    const Tensor new_logits = attn::top_k_filter(logits, 3);
    CHECK(bit_differences(new_logits, test::oracle_bits_tensor(his()["new_logits"])) == 0);
    CHECK(attn::repr(new_logits) == his()["printed"]["In [38]"].get<std::string>());
    const Tensor topk_probas = attn::softmax(new_logits, -1);
    CHECK(bit_differences(topk_probas, test::oracle_bits_tensor(his()["topk_probas"])) == 0);
    CHECK(attn::repr(topk_probas) == his()["printed"]["In [39]"].get<std::string>());
}

TEST_CASE("topk: PyTorch's values and indices, equal values in its order, NaN first") {
    for (const auto& c : oracle()["topk"]) {
        INFO("case " << c["name"].get<std::string>());
        const attn::TopK top = attn::topk(test::oracle_bits_tensor(c["x"]), c["k"].get<std::size_t>());
        CHECK(bit_differences(top.values, test::oracle_bits_tensor(c["values"])) == 0);
        CHECK(attn::shape_of(top.indices) == c["indices"]["shape"].get<Shape>());
        CHECK(values_of(top.indices) == oracle_values(c["indices"]));
    }
}

TEST_CASE("multinomial: PyTorch's indices for 1-D and 2-D probabilities, one sample and several") {
    for (const auto& c : oracle()["multinomial"]) {
        INFO("case " << c["name"].get<std::string>() << " num_samples=" << c["num_samples"] << " seed=" << c["seed"]);
        attn::Generator gen(c["seed"].get<std::uint64_t>());
        const LongTensor idx =
            attn::multinomial(test::oracle_bits_tensor(c["probs"]), c["num_samples"].get<std::size_t>(), false, gen);
        CHECK(attn::shape_of(idx) == c["indices"]["shape"].get<Shape>());
        CHECK(values_of(idx) == oracle_values(c["indices"]));
        CHECK(gen.draws_since_seed() == c["draws"].get<std::uint64_t>());
    }
}

TEST_CASE("his generate (In [40]) on his small GPTModel: PyTorch's ids for every setting") {
    attn::GPTModel& model = small_model();
    // the model itself first: its last-position logits for the prompt are his bits
    const LongTensor prompt = test::oracle_long_tensor(oracle()["generate"][0]["idx"]);
    const Tensor logits = model(prompt);
    const std::size_t V = model.vocab_size(), T = prompt.shape()[1];
    Tensor last = Tensor::from_shape(Shape{1, V});
    std::copy_n(logits.data() + (T - 1) * V, V, last.data());
    REQUIRE(bit_differences(last, test::oracle_bits_tensor(oracle()["prompt_logits"])) == 0);

    for (const auto& c : oracle()["generate"]) {
        INFO("case " << c["name"].get<std::string>());
        attn::manual_seed(c["seed"].get<std::uint64_t>());
        const LongTensor out = attn::generate(
            model, test::oracle_long_tensor(c["idx"]), c["max_new_tokens"].get<std::size_t>(),
            c["context_size"].get<std::size_t>(), c["temperature"].get<double>(), top_k_of(c), eos_of(c));
        CHECK(attn::shape_of(out) == c["out"]["shape"].get<Shape>());
        CHECK(values_of(out) == oracle_values(c["out"]));
        CHECK(attn::default_generator().draws_since_seed() == c["draws"].get<std::uint64_t>());
    }
}

TEST_CASE("generate_cached gives generate's ids while the sequence fits the context") {
    // Each case's settings, with max_new_tokens cut so that the prompt and the new tokens fit in
    // context_size (16): the uncached run crops nothing then, and the cache sees what it sees.
    // The ids of the first m steps of PyTorch's longer run are the ids of an m-step run.
    attn::GPTModel& model = small_model();
    std::size_t compared = 0;
    for (const auto& c : oracle()["generate"]) {
        const auto ctx = c["context_size"].get<std::size_t>();
        if (ctx != model.context_length()) continue;  // a cropped context: the cache would see more
        INFO("case " << c["name"].get<std::string>());
        const LongTensor idx = test::oracle_long_tensor(c["idx"]);
        const std::size_t B = idx.shape()[0], P = idx.shape()[1];
        const std::size_t m = std::min(c["max_new_tokens"].get<std::size_t>(), ctx - P + 1);
        const LongTensor expected = test::oracle_long_tensor(c["out"]);
        const std::size_t n_expected = std::min(expected.shape()[1], P + m);
        std::vector<std::int64_t> want;
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < n_expected; ++t) want.push_back(expected(b, t));
        attn::GPTCache cache;
        attn::manual_seed(c["seed"].get<std::uint64_t>());
        const LongTensor out =
            attn::generate_cached(model, idx, m, cache, ctx, c["temperature"].get<double>(), top_k_of(c), eos_of(c));
        CHECK(attn::shape_of(out) == Shape{B, n_expected});
        CHECK(values_of(out) == want);
        // and the uncached function, cut the same way, is the same
        attn::manual_seed(c["seed"].get<std::uint64_t>());
        CHECK(values_of(attn::generate(model, idx, m, ctx, c["temperature"].get<double>(), top_k_of(c), eos_of(c))) ==
              want);
        ++compared;
    }
    CHECK(compared >= 8);
}

TEST_CASE("the cached logits on the oracle's model: within 1e-6 of recomputed ones, the same greedy ids") {
    // What generate_cached's equality with generate rests on, for the oracle's model: the logits of
    // a cached decode step are not always those of a whole forward of the sequence bit for bit (the
    // one-token products add in another order), but within 1e-6, and the ids agree.
    attn::GPTModel& model = small_model();
    const LongTensor ids = test::oracle_long_tensor(oracle()["generate"][0]["out"]);  // greedy, [1, 24]
    const std::size_t V = model.vocab_size(), n = model.context_length();
    const auto tokens = [&ids](std::size_t a, std::size_t b) {  // ids[:, a:b]
        LongTensor r = LongTensor::from_shape(Shape{1, b - a});
        for (std::size_t t = a; t < b; ++t) r(0, t - a) = ids(0, t);
        return r;
    };
    const auto last_row = [V](const Tensor& logits) {  // logits[:, -1, :] of a batch of 1
        Tensor r = Tensor::from_shape(Shape{1, V});
        std::copy_n(logits.data() + logits.size() - V, V, r.data());
        return r;
    };
    attn::GPTCache cache;
    Tensor cached = model.forward(tokens(0, 4), cache);
    std::size_t steps = 0, differing_steps = 0;
    float worst = 0.0F;
    for (std::size_t t = 4; t <= n; ++t) {
        const Tensor a = last_row(cached), b = last_row(model(tokens(0, t)));
        differing_steps += bit_differences(a, b) != 0;
        worst = std::max(worst, attn::max_abs_diff(a, b));
        CHECK(values_of(attn::argmax(a, -1)) == values_of(attn::argmax(b, -1)));
        CHECK(ids(0, t) == attn::argmax(a, -1)(0));  // PyTorch's greedy id at this step
        ++steps;
        if (t < n) cached = model.forward(tokens(t, t + 1), cache);
    }
    CHECK(steps == n - 3);
    INFO(differing_steps << " of " << steps << " steps differ in some bits, by at most " << worst);
    CHECK(worst <= 1e-6F);  // logits of size ~1: a few float32 roundings
}

TEST_CASE("bad-input table (decoding): every case has its exact outcome") {
    using namespace bad_input;
    using attn::GPTCache;
    attn::GPTModel& model = small_model();
    const LongTensor prompt = {{7, 21, 3, 44}};
    const Tensor probs = {{0.25F, 0.75F}, {0.5F, 0.5F}};
    const Tensor logits = {{1.0F, 2.0F, 3.0F}};
    const auto& m = model;
    Table t;
    // multinomial: PyTorch's checks and words
    t.err("multinomial nan", RUN(attn::multinomial(Tensor({{0.5F, nan_f}}))), IA,
          "probability tensor contains either `inf`, `nan` or element < 0");
    t.err("multinomial inf", RUN(attn::multinomial(Tensor({0.5F, inf}))), IA,
          "probability tensor contains either `inf`, `nan` or element < 0");
    t.err("multinomial negative", RUN(attn::multinomial(Tensor({{0.5F, -0.1F}}))), IA,
          "probability tensor contains either `inf`, `nan` or element < 0");
    t.err("multinomial -inf", RUN(attn::multinomial(Tensor({-inf, 1.0F}))), IA,
          "probability tensor contains either `inf`, `nan` or element < 0");
    t.err("multinomial zero row", RUN(attn::multinomial(Tensor({{0.5F, 0.5F}, {0.0F, 0.0F}}))), IA,
          "invalid multinomial distribution (sum of probabilities <= 0), in row 1");
    t.err("multinomial zero 1-D", RUN(attn::multinomial(Tensor({0.0F, 0.0F}))), IA,
          "invalid multinomial distribution (sum of probabilities <= 0)");
    t.err("multinomial 3-D", RUN(attn::multinomial(Tensor(xt::ones<float>(Shape{2, 2, 2})))), IA,
          "prob_dist must be 1 or 2 dim, got shape [2, 2, 2]");
    t.err(
        "multinomial 0 samples", [probs] { return attn::multinomial(probs, 0).size() > 0; }, IA,
        "cannot sample n_sample <= 0 samples");
    t.err(
        "multinomial 3 of 2", [probs] { return attn::multinomial(probs, 3).size() > 0; }, IA,
        "cannot sample n_sample > prob_dist.size(-1) samples without replacement (num_samples = 3");
    t.err(
        "multinomial with replacement", [probs] { return attn::multinomial(probs, 2, true).size() > 0; }, IA,
        "with replacement");
    t.ok("multinomial no rows: [0, 1], nothing drawn", [] {
        attn::Generator gen(1);
        const LongTensor r = attn::multinomial(Tensor::from_shape(Shape{0, 4}), 1, false, gen);
        return attn::shape_of(r) == Shape{0, 1} && gen.draws_since_seed() == 0;
    });
    t.ok("a refused multinomial draws nothing", [] {
        attn::Generator gen(1);
        try {
            attn::multinomial(Tensor{{1.0F, 1.0F}, {0.0F, 0.0F}}, 1, false, gen);
        } catch (const std::invalid_argument&) {
        }
        return gen.draws_since_seed() == 0;
    });
    // topk and exponential_
    t.err("topk k > n", RUN(attn::topk(Tensor({1.0F, 2.0F}), 3)), IA,
          oracle()["topk_error_k_too_large"].get<std::string>());
    t.err("topk 0-d", RUN(attn::topk(attn::scalar_tensor(1.0F), 1)), IA, "topk: expected at least 1-D, got []");
    t.err(
        "exponential_ negative",
        [] {
            Tensor x = Tensor::from_shape(Shape{2});
            attn::exponential_(x, -1.0);
            return true;
        },
        IA, "exponential_: expected lambd >= 0.0, got lambd=-1.000000");
    t.err(
        "exponential_ nan",
        [] {
            Tensor x = Tensor::from_shape(Shape{2});
            attn::exponential_(x, std::nan(""));
            return true;
        },
        IA, "got lambd=nan");
    // the top-k filter and one sampling step
    t.err(
        "top_k_filter k 0", [logits] { return attn::top_k_filter(logits, 0).size() > 0; }, IA,
        "top_k_filter: expected k in [1, 3], got k=0");
    t.err(
        "top_k_filter k 4", [logits] { return attn::top_k_filter(logits, 4).size() > 0; }, IA, "got k=4");
    t.err(
        "sample_next_token negative temperature", [logits] { return attn::sample_next_token(logits, -0.5).size() > 0; },
        IA, "sample_next_token: expected a finite temperature >= 0 (0: greedy), got temperature=-0.500000");
    t.err(
        "sample_next_token top_k 4 of 3", [logits] { return attn::sample_next_token(logits, 1.0, 4).size() > 0; }, IA,
        "sample_next_token: expected top_k in [1, vocab_size = 3], got top_k=4");
    t.err("sample_next_token 1-D", RUN(attn::sample_next_token(Tensor({1.0F, 2.0F}), 1.0)), IA,
          "sample_next_token (logits): expected [batch, vocab_size] with batch > 0 and vocab_size > 0, got [2]");
    t.err("sample_next_token nan logits", RUN(attn::sample_next_token(Tensor({{1.0F, nan_f}}), 1.0)), IA,
          "probability tensor contains either `inf`, `nan` or element < 0");
    // generate and generate_cached
    auto gen_call = [&m](std::size_t n, std::size_t ctx, double temp, std::optional<std::size_t> k,
                         std::optional<std::int64_t> eos, LongTensor idx) {
        return [&m, n, ctx, temp, k, eos, idx] { return attn::generate(m, idx, n, ctx, temp, k, eos).size() > 0; };
    };
    auto cached_call = [&m](std::size_t n, std::size_t ctx, double temp, std::optional<std::size_t> k, LongTensor idx) {
        return [&m, n, ctx, temp, k, idx] {
            GPTCache c;
            return attn::generate_cached(m, idx, n, c, ctx, temp, k).size() > 0;
        };
    };
    t.err("generate negative temperature", gen_call(3, 16, -1.0, {}, {}, prompt), IA,
          "generate: expected a finite temperature >= 0 (0: greedy), got temperature=-1.000000");
    t.err("generate NaN temperature", gen_call(3, 16, std::nan(""), {}, {}, prompt), IA, "got temperature=nan");
    t.err("generate inf temperature", gen_call(3, 16, std::numeric_limits<double>::infinity(), {}, {}, prompt), IA,
          "got temperature=inf");
    t.err("generate top_k 0", gen_call(3, 16, 1.0, 0, {}, prompt), IA,
          "generate: expected top_k in [1, vocab_size = 50], got top_k=0");
    t.err("generate top_k 51", gen_call(3, 16, 1.0, 51, {}, prompt), IA, "got top_k=51");
    t.ok("generate top_k 50 (every token)", gen_call(3, 16, 1.0, 50, {}, prompt));
    t.err("generate context_size 0", gen_call(3, 0, 1.0, {}, {}, prompt), IA,
          "generate: expected context_size > 0, got 0");
    t.err("generate context_size 17", gen_call(3, 17, 1.0, {}, {}, prompt), IA,
          "generate: context_size 17 exceeds the model's context_length 16");
    t.err("generate empty idx", gen_call(3, 16, 1.0, {}, {}, LongTensor::from_shape(Shape{1, 0})), IA,
          "generate (idx): expected [batch, n_tokens] with batch > 0 and n_tokens > 0, got [1, 0]");
    t.err("generate no rows", gen_call(3, 16, 1.0, {}, {}, LongTensor::from_shape(Shape{0, 4})), IA, "got [0, 4]");
    t.err("generate eos_id with a batch of 2", gen_call(3, 16, 1.0, {}, 5, LongTensor{{1, 2}, {3, 4}}), IA,
          "eos_id needs a batch of 1");
    t.err("generate id out of range", gen_call(3, 16, 0.0, {}, {}, LongTensor{{1, 50}}), IA, "out of range");
    t.err("generate_cached negative temperature", cached_call(3, 16, -0.1, {}, prompt), IA,
          "generate_cached: expected a finite temperature");
    t.err("generate_cached top_k 51", cached_call(3, 16, 1.0, 51, prompt), IA, "got top_k=51");
    t.err("generate_cached beyond the context", cached_call(14, 16, 1.0, {}, prompt), IA,
          "generate_cached: the prompt's 4 tokens and max_new_tokens 14 need 17 positions, beyond the model's "
          "context_length 16");
    t.ok("generate_cached to the context's end", cached_call(13, 16, 1.0, {}, prompt));
    t.ok("generate 0 new tokens returns idx",
         [&m, prompt] { return values_of(attn::generate(m, prompt, 0, 16, 1.0)) == values_of(prompt); });
    run_table("decoding", t.cases);
}

}  // namespace test_decoding
