/// @file dataloader.hpp
/// @brief `torch.utils.data.DataLoader` with `num_workers=0`: a dataset's items in batches, in
/// order or shuffled, drawing from PyTorch's default generator exactly when PyTorch does; and
/// Raschka's `create_dataloader_v1`.
///
/// What a loader draws (torch/utils/data/dataloader.py and sampler.py, PyTorch 1.13; 2.x draws
/// the same), so that a loop over a loader leaves the default generator where PyTorch leaves it:
/// - every `iter(loader)` (every `for ... in loader:`) draws one int64 with `random_()` for
///   its base seed (`_BaseDataLoaderIter.__init__`: one 64-bit draw, shuffled or not; with
///   `num_workers=0` its value is never used);
/// - with `shuffle=True` the iterator's first `next()` runs `RandomSampler.__iter__`: one
///   more int64 `random_()` as the seed of a private generator, and `torch.randperm(n)` from
///   that generator gives the order (the default generator is not touched again);
/// - nothing else: fetching more batches, or stopping early (`break`), draws nothing.
///
/// Here `begin()` (or `iter()`) is `iter(loader)`, and the first batch fetched (the loop's
/// first comparison with `end()`, or the first `next()`) is the first `next()`: a C++ `for`
/// loop over a loader, with or without `break`, draws what the same Python loop draws, in the
/// same order relative to the loop body's own draws (dropout, for instance).
#pragma once

#include <concepts>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "attn/core/tensor.hpp"
#include "attn/data/dataset.hpp"
#include "attn/text/gpt2_tokenizer.hpp"

namespace attn::data {

/// One batch: the items of `batch_size` indices stacked along a new first dimension
/// (`default_collate`: `torch.stack` of each field). For `GPTDatasetV1`: int64 `[batch,
/// max_length]` inputs and targets, `batch` being `batch_size` except for a last, smaller
/// batch when `drop_last` is false.
struct Batch {
    LongTensor input_ids;   ///< int64 `[batch, ...]` (the items' shape after the batch)
    LongTensor target_ids;  ///< int64 `[batch, ...]`
};

/// `DataLoader(dataset, batch_size=1, shuffle=False, drop_last=False)`'s options, in
/// PyTorch's defaults. `num_workers` is always 0 (batches are made in the caller's thread) and
/// `generator` always None (the default generator draws, as in Raschka's calls).
struct DataLoaderOptions {
    std::size_t batch_size = 1;  ///< items per batch (`BatchSampler`)
    bool shuffle = false;        ///< `RandomSampler` (a new order at every iteration) or `SequentialSampler`
    bool drop_last = false;      ///< drop the last batch when it has fewer than `batch_size` items
};

/// `torch.utils.data.DataLoader` over a map-style dataset, `num_workers=0`, the default
/// collate. Iterate it as Python does:
/// @code
/// for (const auto& [input_batch, target_batch] : train_loader) { ... }  // for x, y in loader:
/// auto it = train_loader.iter();                                         // it = iter(loader)
/// std::optional<Batch> first = it.next();                                // next(it)
/// @endcode
/// Each loop (each `begin()` or `iter()`) is a new iterator: a new order when shuffled.
class DataLoader {
public:
    class Iterator;

    /// `DataLoader(dataset, batch_size, shuffle, drop_last)`, sharing `dataset`. Nothing is
    /// drawn here. The checks in PyTorch's order:
    /// @throws std::invalid_argument
    /// - `"DataLoader: dataset is null"`;
    /// - `"DataLoader: num_samples should be a positive integer value, but got num_samples=0"`
    ///   when `shuffle` and the dataset is empty (`RandomSampler.__init__`'s ValueError);
    /// - `"DataLoader: batch_size should be a positive integer value, but got batch_size=0"`
    ///   (`BatchSampler.__init__`'s ValueError).
    DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});

    /// The same, with the loader owning `dataset` (copied or moved in).
    /// @throws std::invalid_argument as above.
    template <std::derived_from<Dataset> D>
    DataLoader(D dataset, DataLoaderOptions options = {})
        : DataLoader(std::make_shared<const D>(std::move(dataset)), options) {}

    /// `len(loader)`, the number of batches an iteration gives: `n // batch_size` with
    /// `drop_last`, `ceil(n / batch_size)` without (n items). 0 when `drop_last` and the
    /// dataset has fewer than `batch_size` items, as in PyTorch: the loop then gives no
    /// batch (it still draws, see the file), and his `calc_loss_loader` returns NaN for it.
    std::size_t size() const;

    /// `loader.dataset`.
    const Dataset& dataset() const { return *dataset_; }
    /// `loader.batch_size`, `loader.drop_last`, and whether `loader.sampler` is a `RandomSampler`.
    const DataLoaderOptions& options() const { return options_; }

    /// `iter(loader)`: a new iterator, drawing its base seed now (one 64-bit draw from the
    /// default generator). Its batches are fetched by `Iterator::next()` or by a loop.
    Iterator iter() const;

    /// `iter(loader)` for a range-based `for`: the same as `iter()`.
    Iterator begin() const;
    /// The end of every iteration (the iterator compares equal to it once exhausted).
    std::default_sentinel_t end() const noexcept { return {}; }

private:
    std::shared_ptr<const Dataset> dataset_;
    DataLoaderOptions options_;
};

/// `_SingleProcessDataLoaderIter`: one pass over a loader's batches. Copies share the pass
/// (as Python names of one iterator object): advancing one advances all. It shares the
/// dataset, so it may outlive its loader.
class DataLoader::Iterator {
public:
    using iterator_category = std::input_iterator_tag;  ///< one pass: `for (const Batch& b : loader)`
    using value_type = Batch;                           ///< a batch of inputs and targets
    using difference_type = std::ptrdiff_t;             ///< as the standard's iterators
    using reference = const Batch&;                     ///< the current batch
    using pointer = const Batch*;                       ///< the current batch

    /// `next(it)`: the next batch, or nothing once the pass is over (Python's StopIteration;
    /// asking again gives nothing again). The first call draws the shuffled order (one
    /// 64-bit draw from the default generator and n - 1 draws from a private one, see the
    /// file); no later call draws.
    /// @throws std::invalid_argument as `torch.stack` when the items of a batch differ in
    /// shape (`"DataLoader: stack expects each tensor to be equal size, but got [3] at entry
    /// 0 and [4] at entry 1"`); as the dataset's `get`.
    std::optional<Batch> next();

    /// The current batch of a range-based `for` (fetched by the comparison with `end()`, or
    /// here if that was skipped).
    /// @throws std::out_of_range `"DataLoader iterator: no batch left (the pass is over)"`
    /// when the pass is over; as `next()`.
    const Batch& operator*() const;
    /// `&**this`. @throws as `operator*`.
    const Batch* operator->() const { return &**this; }

    /// Moves past the current batch (fetching it first if nothing has yet); the next one is
    /// fetched by the next comparison or dereference, so a `break` fetches nothing more.
    /// @throws as `next()`.
    Iterator& operator++();
    /// As the prefix form (an input iterator returns nothing useful from it).
    void operator++(int) { ++*this; }

    /// Whether the pass is over: fetches the next batch if the previous one was consumed (the
    /// `for` loop's test, Python's `next()` at the top of each round).
    /// @throws as `next()`.
    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return !it.peek(); }

    /// How many batches this pass has given (`_num_yielded`, the current one included once
    /// fetched by a loop).
    std::size_t batches_fetched() const;

private:
    friend class DataLoader;
    struct State;
    explicit Iterator(std::shared_ptr<State> state) : state_(std::move(state)) {}
    const Batch* peek() const;  // the current batch, fetched if needed; null when over
    std::shared_ptr<State> state_;
};

/// His `create_dataloader_v1(txt, batch_size=4, max_length=256, stride=128, shuffle=True,
/// drop_last=True, num_workers=0)`'s options, his defaults, in his order (designated
/// initializers: `{.batch_size = 2, .max_length = 256, .stride = 256, .shuffle = true}`).
struct DataLoaderV1Options {
    std::size_t batch_size = 4;    ///< windows per batch
    std::size_t max_length = 256;  ///< tokens per window (his `context_length` in chapter 5)
    std::size_t stride = 128;      ///< tokens between window starts
    bool shuffle = true;           ///< a new order of the windows at every iteration
    bool drop_last = true;         ///< drop a last batch of fewer than `batch_size` windows
};

/// His `create_dataloader_v1` (previous_chapters.py, called by his chapter 5 In [20]):
/// `dataset = GPTDatasetV1(txt, tokenizer, max_length, stride)`, then `DataLoader(dataset,
/// batch_size, shuffle, drop_last, num_workers=0)`. He makes the tokenizer inside
/// (`tiktoken.get_encoding("gpt2")`); here it is passed in. Batches are int64 `[batch_size,
/// max_length]` inputs and targets (a smaller last batch without `drop_last`). Nothing is
/// drawn here.
/// @throws std::invalid_argument as `GPTDatasetV1` (max_length 0, `txt` not UTF-8, fewer
/// than `max_length + 1` tokens, stride 0), then as `DataLoader` (batch_size 0).
DataLoader create_dataloader_v1(std::string_view txt, const GPT2Tokenizer& tokenizer,
                                DataLoaderV1Options options = {});

}  // namespace attn::data
