// Tests for lib/attn/data/ (Raschka's GPTDatasetV1 and create_dataloader_v1 on torch.utils.data's
// DataLoader), the random functions it draws with (attn::randperm, attn::random_int64) and the
// code-point helpers of his 90/10 split (attn::utf8_len, attn::utf8_slice).
//
// Expected values: Debian's python3-torch 1.13 running his own code (data/oracle/gpt_backward.json,
// written by tools/oracle/gpt_backward.py: `randperm`, `random64` and the `loader` event
// sequence, batches recorded as window indices); the GPT-2 ids of The Verdict, of its first 90 %
// and of the rest, from an independent tokenizer (data/tokenizer/gpt2_the-verdict.tsv, npm
// gpt-3-encoder); the counts his chapter 5 prints (In [19]: 20,479 characters, 5,145 tokens);
// small cases worked out by hand from Python's rules (`range`, `len` and slices of a `str`,
// BatchSampler's batches). The bad-input table of the data room closes the file.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/data/dataset.hpp"
#include "attn/nn/nn.hpp"
#include "attn/text/read_file.hpp"
#include "attn/text/utf8.hpp"
#include "bad_input.hpp"
#include "oracle.hpp"
#include "textbook/book.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_data_loader {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::LongTensor;
using attn::Shape;
using attn::data::DataLoader;
using attn::data::GPTDatasetV1;
using Ids = std::vector<std::int64_t>;

const nlohmann::json& oracle() { return test::oracle_file("gpt_backward.json"); }

const attn::GPT2Tokenizer& tok() { return textbook::gpt2_tokenizer(); }

std::string verdict() { return attn::read_file(textbook::data_dir() / "text" / "the-verdict.txt"); }

// The tsv's texts in file order: the whole story, its first 90 % (train), the rest (val), his
// start context.
const textbook::TokenizerData& recorded() {
    static const textbook::TokenizerData data =
        textbook::TokenizerData::load(textbook::data_dir() / "tokenizer" / "gpt2_the-verdict.tsv");
    return data;
}
const textbook::TokenizedText& recorded_text(std::size_t i) {
    REQUIRE(recorded().texts.size() == 4);
    return recorded().texts[i];
}

Ids ids_of(const LongTensor& t) { return {t.begin(), t.end()}; }

Ids slice(const Ids& ids, std::size_t start, std::size_t length) {
    REQUIRE(start + length <= ids.size());
    return Ids(ids.begin() + static_cast<std::ptrdiff_t>(start),
               ids.begin() + static_cast<std::ptrdiff_t>(start + length));
}

// Row r of an int64 [rows, cols] batch.
Ids batch_row(const LongTensor& batch, std::size_t r) {
    REQUIRE(batch.dimension() == 2);
    const std::size_t cols = batch.shape()[1];
    return Ids(batch.data() + r * cols, batch.data() + (r + 1) * cols);
}

std::vector<std::uint32_t> bits_of(const attn::Tensor& t) {
    std::vector<std::uint32_t> out;
    for (const float x : t) out.push_back(std::bit_cast<std::uint32_t>(x));
    return out;
}

// His In [20]'s two loaders, made after manual_seed(123) (gpt_backward.py `loader_cases`).
struct Loaders {
    DataLoader train;
    DataLoader val;
};

Loaders his_loaders() {
    const std::string text = verdict();
    const std::size_t split_idx = static_cast<std::size_t>(0.90 * static_cast<double>(attn::utf8_len(text)));
    const std::string_view train_data = attn::utf8_slice(text, 0, static_cast<std::int64_t>(split_idx));
    const std::string_view val_data = attn::utf8_slice(text, static_cast<std::int64_t>(split_idx),
                                                       static_cast<std::int64_t>(text.size()));
    attn::manual_seed(123);
    return {attn::data::create_dataloader_v1(train_data, tok(), {.batch_size = 2, .max_length = 256, .stride = 256,
                                                                 .shuffle = true, .drop_last = true}),
            attn::data::create_dataloader_v1(val_data, tok(), {.batch_size = 2, .max_length = 256, .stride = 256,
                                                               .shuffle = false, .drop_last = false})};
}

// One event's loop, as gpt_backward.py's `run` writes it: `for i, (x, y) in enumerate(loader):
// if limit is not None and i >= limit: break; order.append(rows)`, each batch's rows checked
// against the window the oracle names (its ids taken from the tsv: window w is
// ids[w * 256 : w * 256 + 256], its targets one token further). `use_next`: the same loop
// written with iter() and next() instead of a range-based for.
void run_event(const DataLoader& loader, const Ids& ids, const nlohmann::json& expected_batches,
               std::optional<std::size_t> limit, bool use_next) {
    std::vector<LongTensor> inputs, targets;
    if (use_next) {
        auto it = loader.iter();
        for (std::size_t i = 0;; ++i) {
            std::optional<attn::data::Batch> batch = it.next();
            if (!batch) break;
            if (limit && i >= *limit) break;
            inputs.push_back(batch->input_ids);
            targets.push_back(batch->target_ids);
        }
    } else {
        std::size_t i = 0;
        for (const auto& [input_batch, target_batch] : loader) {
            if (limit && i >= *limit) break;
            inputs.push_back(input_batch);
            targets.push_back(target_batch);
            ++i;
        }
    }
    REQUIRE(inputs.size() == expected_batches.size());
    for (std::size_t b = 0; b < inputs.size(); ++b) {
        const auto& windows = expected_batches[b];
        INFO("batch " << b);
        REQUIRE(attn::shape_of(inputs[b]) == Shape{windows.size(), 256});
        REQUIRE(attn::shape_of(targets[b]) == Shape{windows.size(), 256});
        for (std::size_t r = 0; r < windows.size(); ++r) {
            const auto w = windows[r].get<std::size_t>();
            INFO("row " << r << ", window " << w);
            CHECK(batch_row(inputs[b], r) == slice(ids, w * 256, 256));
            CHECK(batch_row(targets[b], r) == slice(ids, w * 256 + 1, 256));
        }
    }
}

// The whole `loader` event sequence of the oracle, then torch.rand(4)'s bits.
void run_events(bool use_next) {
    const auto& o = oracle()["loader"];
    Loaders loaders = his_loaders();
    CHECK(loaders.train.dataset().size() == o["train_windows"].get<std::size_t>());
    CHECK(loaders.val.dataset().size() == o["val_windows"].get<std::size_t>());
    const Ids& train_ids = recorded_text(1).input_ids;
    const Ids& val_ids = recorded_text(2).input_ids;
    for (const auto& event : o["events"]) {
        const std::string what = event["what"].get<std::string>();
        INFO("event: " << what);
        if (what.starts_with("Dropout(0.1)(ones(3, 5))")) {
            attn::nn::Dropout dropout(0.1);  // training mode, portable Bernoulli: 15 draws of 64 bits
            (void)dropout(attn::ones({3, 5}));
            continue;
        }
        const bool train = what.starts_with("train");
        REQUIRE((train || what.starts_with("val")));
        std::optional<std::size_t> limit;
        if (what.find("cut after 1 batch") != std::string::npos) limit = 1;
        if (what.find("cut after 5 batches") != std::string::npos) limit = 5;
        REQUIRE((limit || what.ends_with("whole")));
        run_event(train ? loaders.train : loaders.val, train ? train_ids : val_ids, event["batches"], limit,
                  use_next);
    }
    CHECK(bits_of(attn::rand({4})) == o["then_rand_bits"].get<std::vector<std::uint32_t>>());
}

}  // namespace

TEST_CASE("randperm draws as torch.randperm(n, generator=g)") {
    for (const auto& c : oracle()["randperm"]) {
        const auto seed = std::stoull(c["seed"].get<std::string>());
        const auto n = c["n"].get<std::size_t>();
        INFO("seed " << seed << ", n " << n);
        attn::Generator g(seed);
        const LongTensor perm = attn::randperm(n, g);
        CHECK(attn::shape_of(perm) == Shape{n});
        CHECK(ids_of(perm) == c["perm"].get<Ids>());
        CHECK(ids_of(attn::randperm(9, g)) == c["then_randperm_9"].get<Ids>());  // the stream after it
    }
    attn::Generator g(0);
    CHECK(attn::randperm(0, g).size() == 0);  // torch.randperm(0): empty, nothing drawn
    CHECK(g.draws_since_seed() == 0);
}

TEST_CASE("random_int64 draws as torch.empty((), dtype=torch.int64).random_()") {
    for (const auto& c : oracle()["random64"]) {
        const auto seed = c["seed"].get<std::uint64_t>();
        INFO("seed " << seed);
        attn::manual_seed(seed);
        for (const auto& value : c["values"]) CHECK(std::to_string(attn::random_int64()) == value.get<std::string>());
        CHECK(bits_of(attn::rand({2})) == c["then_rand_bits"].get<std::vector<std::uint32_t>>());
    }
}

TEST_CASE("utf8_len and utf8_slice count code points as Python's len and str slices") {
    // Worked out by hand: "café €1" is c a f é space € 1 (7 code points, 10 bytes).
    const std::string s = "caf\xC3\xA9 \xE2\x82\xAC" "1";
    CHECK(attn::utf8_len(s) == 7);
    CHECK(attn::utf8_len("") == 0);
    CHECK(attn::utf8_len("\xF0\x9F\x98\x80") == 1);       // one emoji, 4 bytes
    CHECK(attn::utf8_slice(s, 0, 4) == "caf\xC3\xA9");    // s[:4]
    CHECK(attn::utf8_slice(s, 4, 7) == " \xE2\x82\xAC" "1");
    CHECK(attn::utf8_slice(s, 3, 4) == "\xC3\xA9");       // s[3:4] == "é"
    CHECK(attn::utf8_slice(s, -2, 7) == "\xE2\x82\xAC" "1");  // s[-2:]
    CHECK(attn::utf8_slice(s, -100, 2) == "ca");          // clamped to the start
    CHECK(attn::utf8_slice(s, 5, 100) == "\xE2\x82\xAC" "1");  // clamped to the end
    CHECK(attn::utf8_slice(s, 5, 2).empty());             // stop <= start
    CHECK(attn::utf8_slice(s, 7, 7).empty());
    // The slices are views into the text.
    CHECK(attn::utf8_slice(s, 1, 3).data() == s.data() + 1);
}

TEST_CASE("The Verdict split 90/10 by characters, as his chapter 5 In [20]") {
    const std::string text = verdict();
    const std::size_t characters = attn::utf8_len(text);
    CHECK(characters == 20479);  // his In [19]: "Characters: 20479"
    const auto split_idx = static_cast<std::int64_t>(0.90 * static_cast<double>(characters));
    // The tsv's train and val texts are Python's text_data[:split_idx] and text_data[split_idx:].
    CHECK(attn::utf8_slice(text, 0, split_idx) == recorded_text(1).text);
    CHECK(attn::utf8_slice(text, split_idx, static_cast<std::int64_t>(characters)) == recorded_text(2).text);
    CHECK(recorded_text(0).text == text);
}

TEST_CASE("GPT-2's ids of The Verdict and of its two parts equal the recorded ones") {
    const std::vector<std::string> allowed{"<|endoftext|>"};
    const Ids whole = tok().encode(recorded_text(0).text, allowed);
    CHECK(whole.size() == 5145);  // his In [19]: "Tokens: 5145"
    CHECK(whole == recorded_text(0).input_ids);
    const Ids train = tok().encode(recorded_text(1).text, allowed);
    CHECK(train.size() == 4612);
    CHECK(train == recorded_text(1).input_ids);
    const Ids val = tok().encode(recorded_text(2).text, allowed);
    CHECK(val.size() == 534);
    CHECK(val == recorded_text(2).input_ids);
    CHECK(tok().encode(recorded_text(3).text) == recorded_text(3).input_ids);  // "Every effort moves you"
}

TEST_CASE("GPTDatasetV1: his windows of The Verdict, targets shifted by one") {
    const auto& o = oracle()["loader"];
    const Ids& train_ids = recorded_text(1).input_ids;
    const GPTDatasetV1 train(recorded_text(1).text, tok(), 256, 256);
    REQUIRE(train.size() == o["train_windows"].get<std::size_t>());  // 18
    CHECK(slice(ids_of(train.get(0).input_ids), 0, 8) == o["first_window"].get<Ids>());
    CHECK(train.token_ids() == train_ids);
    for (std::size_t w = 0; w < train.size(); ++w) {
        INFO("window " << w);
        const auto [input_ids, target_ids] = train.get(w);
        CHECK(attn::shape_of(input_ids) == Shape{256});
        CHECK(attn::shape_of(target_ids) == Shape{256});
        CHECK(ids_of(input_ids) == slice(train_ids, w * 256, 256));
        CHECK(ids_of(target_ids) == slice(train_ids, w * 256 + 1, 256));
        CHECK(slice(ids_of(target_ids), 0, 255) == slice(ids_of(input_ids), 1, 255));
    }
    const GPTDatasetV1 val(recorded_text(2).text, tok(), 256, 256);
    CHECK(val.size() == o["val_windows"].get<std::size_t>());  // 2

    // Overlapping windows, worked out by hand: range(0, 10 - 4, 3) = 0, 3.
    const GPTDatasetV1 small(Ids{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 4, 3);
    REQUIRE(small.size() == 2);
    CHECK(ids_of(small.get(1).input_ids) == Ids{13, 14, 15, 16});
    CHECK(ids_of(small.get(1).target_ids) == Ids{14, 15, 16, 17});
    // Exactly max_length + 1 ids: one window; stride 1 over 6 ids: range(0, 2, 1) = 0, 1.
    CHECK(GPTDatasetV1(Ids{1, 2, 3}, 2, 5).size() == 1);
    CHECK(GPTDatasetV1(Ids{1, 2, 3, 4, 5, 6}, 4, 1).size() == 2);
}

TEST_CASE("DataLoader: his In [20] loaders draw and batch as PyTorch's (range-based for)") {
    run_events(false);
}

TEST_CASE("DataLoader: the same sequence through iter() and next()") {
    run_events(true);
}

// A loader is a range and its iterator an input iterator (std::ranges algorithms accept them).
static_assert(std::input_iterator<DataLoader::Iterator>);
static_assert(std::sentinel_for<std::default_sentinel_t, DataLoader::Iterator>);
static_assert(std::ranges::input_range<const DataLoader>);

TEST_CASE("DataLoader: len(loader) and the batches of BatchSampler") {
    Loaders loaders = his_loaders();
    CHECK(loaders.train.size() == 9);  // his In [22] prints 9 training batches
    CHECK(loaders.val.size() == 1);    // and 1 validation batch

    // 5 windows of one token each (worked out by hand): batches of 2 are [0, 1], [2, 3], [4].
    const GPTDatasetV1 five(Ids{0, 1, 2, 3, 4, 5}, 1, 1);
    REQUIRE(five.size() == 5);
    const DataLoader keep(five, {.batch_size = 2});
    CHECK(keep.size() == 3);
    std::vector<Ids> got;
    for (const auto& [input_batch, target_batch] : keep) got.push_back(ids_of(input_batch));
    CHECK(got == std::vector<Ids>{{0, 1}, {2, 3}, {4}});
    const DataLoader drop(five, {.batch_size = 2, .drop_last = true});
    CHECK(drop.size() == 2);
    got.clear();
    for (const auto& [input_batch, target_batch] : drop) got.push_back(ids_of(input_batch));
    CHECK(got == std::vector<Ids>{{0, 1}, {2, 3}});

    // A batch larger than the data: with drop_last an empty loader (len 0, no batch), as
    // PyTorch's; his calc_loss_loader returns NaN for it. Without drop_last one short batch.
    const DataLoader empty(five, {.batch_size = 8, .shuffle = true, .drop_last = true});
    CHECK(empty.size() == 0);
    std::size_t batches = 0;
    for ([[maybe_unused]] const auto& batch : empty) ++batches;
    CHECK(batches == 0);
    const DataLoader one(five, {.batch_size = 8});
    CHECK(one.size() == 1);
    auto it = one.iter();
    const auto first = it.next();
    REQUIRE(first);
    CHECK(attn::shape_of(first->input_ids) == Shape{5, 1});
    CHECK_FALSE(it.next().has_value());
    CHECK_FALSE(it.next().has_value());  // StopIteration again
}

TEST_CASE("DataLoader: what an iteration draws, and when") {
    // PyTorch's rules (dataloader.py, sampler.py): iter(loader) draws one 64-bit base seed;
    // a shuffled iterator's first next() one more 64-bit seed (its randperm draws from a
    // private generator); nothing else. Counted in 32-bit draws of the default generator.
    const GPTDatasetV1 five(Ids{0, 1, 2, 3, 4, 5}, 1, 1);
    const DataLoader shuffled(five, {.batch_size = 2, .shuffle = true});
    const DataLoader sequential(five, {.batch_size = 2});
    attn::manual_seed(5);
    auto& gen = attn::default_generator();
    auto it = shuffled.iter();
    CHECK(gen.draws_since_seed() == 2);  // the base seed, at iter()
    CHECK(it.batches_fetched() == 0);
    CHECK(it.next().has_value());
    CHECK(gen.draws_since_seed() == 4);  // the sampler's seed, at the first next()
    while (it.next()) {}
    CHECK(gen.draws_since_seed() == 4);
    for ([[maybe_unused]] const auto& batch : shuffled) break;  // Python's `for ...: break`
    CHECK(gen.draws_since_seed() == 8);
    for ([[maybe_unused]] const auto& batch : sequential) {}
    CHECK(gen.draws_since_seed() == 10);  // the base seed only
    (void)shuffled.iter();                // an iterator never advanced: the base seed only
    CHECK(gen.draws_since_seed() == 12);

    // The shuffled order: randperm(5) of a generator seeded with the sampler's draw.
    attn::manual_seed(7);
    (void)attn::random_int64();
    const auto seed = static_cast<std::uint64_t>(attn::random_int64());
    attn::Generator g(seed);
    const Ids order = ids_of(attn::randperm(5, g));
    attn::manual_seed(7);
    std::vector<Ids> got;
    for (const auto& [input_batch, target_batch] : shuffled) got.push_back(ids_of(input_batch));
    CHECK(got == std::vector<Ids>{{order[0], order[1]}, {order[2], order[3]}, {order[4]}});

    // Copies of an iterator are one Python iterator: advancing one advances both.
    auto a = sequential.iter();
    auto b = a;
    CHECK(ids_of(a.next()->input_ids) == Ids{0, 1});
    CHECK(ids_of(b.next()->input_ids) == Ids{2, 3});
    CHECK(ids_of((*a).input_ids) == Ids{4});
    ++b;
    CHECK(a == std::default_sentinel);
}

// ------------------------------------------------------------------------ bad input

namespace {

using namespace bad_input;

// A dataset of no items, and one whose items differ in shape (what a collate cannot stack).
struct EmptyDataset final : attn::data::Dataset {
    std::size_t size() const override { return 0; }
    attn::data::Sample get(std::size_t) const override { throw std::out_of_range("EmptyDataset: no items"); }
};
struct RaggedDataset final : attn::data::Dataset {
    std::size_t size() const override { return 2; }
    attn::data::Sample get(std::size_t idx) const override {
        LongTensor t = xt::zeros<std::int64_t>(Shape{3 + idx});
        return {t, t};
    }
};

std::vector<Case> data_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    // --- GPTDatasetV1, in Python's order: max_length (ours), the tokenizer, his assertion, range()
    err("GPTDatasetV1 stride 0", RUN(GPTDatasetV1(Ids{1, 2, 3, 4, 5}, 2, 0)), IA,
        "GPTDatasetV1: expected stride > 0, got 0 (range() arg 3 must not be zero)");
    err("GPTDatasetV1 stride 0 (text)", RUN(GPTDatasetV1("Every effort moves you", tok(), 2, 0)), IA,
        "GPTDatasetV1: expected stride > 0, got 0 (range() arg 3 must not be zero)");
    err("GPTDatasetV1 max_length 0", RUN(GPTDatasetV1(Ids{1, 2, 3}, 0, 1)), IA,
        "GPTDatasetV1: expected max_length > 0, got 0");
    err("GPTDatasetV1 max_length 0 (text)", RUN(GPTDatasetV1("Every effort moves you", tok(), 0, 1)), IA,
        "GPTDatasetV1: expected max_length > 0, got 0");
    err("GPTDatasetV1 max_length ids (no window)", RUN(GPTDatasetV1(Ids{1, 2, 3}, 3, 1)), IA,
        "GPTDatasetV1: Number of tokenized inputs must at least be equal to max_length+1: got 3 token ids, "
        "max_length 3 needs 3+1");
    err("GPTDatasetV1 no ids", RUN(GPTDatasetV1(Ids{}, 1, 1)), IA,
        "Number of tokenized inputs must at least be equal to max_length+1: got 0 token ids");
    err("GPTDatasetV1 4 tokens, max_length 256 (text)", RUN(GPTDatasetV1("Every effort moves you", tok(), 256, 256)), IA,
        "Number of tokenized inputs must at least be equal to max_length+1: got 4 token ids, max_length 256 needs 256+1");
    err("GPTDatasetV1 too few tokens and stride 0: his assertion first", RUN(GPTDatasetV1(Ids{1, 2}, 4, 0)), IA,
        "Number of tokenized inputs must at least be equal to max_length+1: got 2 token ids");
    err("GPTDatasetV1 text not UTF-8", RUN(GPTDatasetV1("na\xEFve", tok(), 1, 1)), IA,
        "GPT2Tokenizer: the text is not UTF-8: byte 0xEF at offset 2");
    err("GPTDatasetV1 index out of range", RUN(GPTDatasetV1(Ids{1, 2, 3}, 2, 1).get(1)), OOR,
        "GPTDatasetV1: index 1 out of range for 1 windows");
    ok("GPTDatasetV1 <|endoftext|> allowed, as his encode", [] {
        const GPTDatasetV1 d("a<|endoftext|>b", tok(), 1, 1);
        return d.token_ids() == Ids{64, 50256, 65};
    });
    ok("GPTDatasetV1 max_length + 1 ids: one window", [] { return GPTDatasetV1(Ids{7, 8}, 1, 100).size() == 1; });

    // --- DataLoader, in PyTorch's order: RandomSampler, then BatchSampler
    err("DataLoader batch_size 0", RUN(DataLoader(GPTDatasetV1(Ids{1, 2, 3}, 1, 1), {.batch_size = 0})), IA,
        "DataLoader: batch_size should be a positive integer value, but got batch_size=0");
    err("create_dataloader_v1 batch_size 0", RUN(attn::data::create_dataloader_v1("Every effort moves you", tok(),
                                                                                  {.batch_size = 0, .max_length = 2})),
        IA, "DataLoader: batch_size should be a positive integer value, but got batch_size=0");
    err("create_dataloader_v1 stride 0", RUN(attn::data::create_dataloader_v1("Every effort moves you", tok(),
                                                                              {.max_length = 2, .stride = 0})),
        IA, "GPTDatasetV1: expected stride > 0, got 0");
    err("create_dataloader_v1 his defaults on a short text", RUN(attn::data::create_dataloader_v1("Every effort moves you", tok())),
        IA, "got 4 token ids, max_length 256 needs 256+1");
    err("DataLoader shuffle over an empty dataset", RUN(DataLoader(EmptyDataset{}, {.shuffle = true})), IA,
        "DataLoader: num_samples should be a positive integer value, but got num_samples=0");
    err("DataLoader shuffle over an empty dataset, batch_size 0: the sampler first",
        RUN(DataLoader(EmptyDataset{}, {.batch_size = 0, .shuffle = true})), IA,
        "but got num_samples=0");
    err("DataLoader null dataset", RUN(DataLoader(std::shared_ptr<const attn::data::Dataset>{})), IA,
        "DataLoader: dataset is null");
    err("DataLoader items of different shapes", [] { return DataLoader(RaggedDataset{}, {.batch_size = 2}).iter().next().has_value(); },
        IA, "DataLoader: stack expects each tensor to be equal size, but got [3] at entry 0 and [4] at entry 1");
    err("DataLoader dereferencing an exhausted iterator", [] {
        const DataLoader loader(GPTDatasetV1(Ids{1, 2}, 1, 1));
        auto it = loader.iter();
        ++it;
        return (*it).input_ids.size() == 0;
    }, OOR, "DataLoader iterator: no batch left (the pass is over)");
    ok("DataLoader over an empty dataset without shuffle: len 0, no batch", [] {
        const DataLoader loader(EmptyDataset{}, {.batch_size = 3});
        return loader.size() == 0 && !loader.iter().next();
    });
    ok("DataLoader batch_size above the data with drop_last: len 0, no batch (PyTorch's empty loader)", [] {
        const DataLoader loader(GPTDatasetV1(Ids{1, 2, 3}, 1, 1), {.batch_size = 3, .shuffle = true, .drop_last = true});
        return loader.size() == 0 && !loader.iter().next();
    });

    // --- the random functions and the split's helpers
    err("randperm 2^61 elements", RUN(attn::randperm(std::size_t{1} << 61)), LE, "randperm: cannot allocate");
    err("utf8_len not UTF-8", RUN(attn::utf8_len("na\xEFve")), IA, "utf8_len: the text is not UTF-8: byte 0xEF at offset 2");
    err("utf8_slice not UTF-8 after the slice", RUN(attn::utf8_slice("ab\xC3", 0, 1)), IA,
        "utf8_slice: the text is not UTF-8: byte 0xC3 at offset 2");
    err("utf8_len a lone continuation byte", RUN(attn::utf8_len("\x80")), IA, "byte 0x80 at offset 0");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (data): every case has its exact outcome") {
    run_table("data", data_cases());
}

}  // namespace test_data_loader
