// torch.utils.data.DataLoader with num_workers=0, drawing as PyTorch does (dataloader.hpp).
#include "attn/data/dataloader.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "attn/core/generator.hpp"

namespace attn::data {

// One pass: _SingleProcessDataLoaderIter with its BatchSampler over a Random- or
// SequentialSampler, and the batch a range-based `for` has fetched but not yet moved past.
struct DataLoader::Iterator::State {
    std::shared_ptr<const Dataset> dataset;
    DataLoaderOptions options;
    bool sampled = false;            // the sampler's first next() has run
    std::vector<std::size_t> order;  // RandomSampler's randperm (empty: sequential)
    std::size_t position = 0;        // indices already taken from the sampler
    std::size_t yielded = 0;         // batches given
    std::optional<Batch> current;    // fetched by a comparison or a dereference
    bool peeked = false;             // `current` holds the next batch (or the end)

    std::optional<Batch> fetch();
};

namespace {

// default_collate on one field: torch.stack of the items' tensors along a new first dimension.
LongTensor stack(const std::vector<const LongTensor*>& items) {
    const Shape item = shape_of(*items.front());
    for (std::size_t i = 1; i < items.size(); ++i) {
        const Shape other = shape_of(*items[i]);
        if (other != item)
            throw std::invalid_argument("DataLoader: stack expects each tensor to be equal size, but got " +
                                        shape_str(item) + " at entry 0 and " + shape_str(other) + " at entry " +
                                        std::to_string(i));
    }
    Shape shape{items.size()};
    shape.insert(shape.end(), item.begin(), item.end());
    check_allocation("DataLoader (batch)", shape, sizeof(std::int64_t));
    LongTensor out = xt::empty<std::int64_t>(shape);
    const std::size_t per_item = items.front()->size();
    for (std::size_t i = 0; i < items.size(); ++i)
        std::copy_n(items[i]->data(), per_item, out.data() + i * per_item);
    return out;
}

}  // namespace

std::optional<Batch> DataLoader::Iterator::State::fetch() {
    const std::size_t n = dataset->size();
    if (!sampled) {
        // RandomSampler.__iter__ runs at the BatchSampler's first next(): the seed of a private
        // generator from the default one, then the whole order from the private one.
        sampled = true;
        if (options.shuffle) {
            Generator private_generator(static_cast<std::uint64_t>(random_int64(default_generator())));
            const LongTensor perm = randperm(n, private_generator);
            order.assign(perm.begin(), perm.end());
        }
    }
    // BatchSampler.__iter__: batch_size indices at a time; with drop_last a short last batch is
    // dropped, without it it is given.
    const std::size_t left = n - position;
    const std::size_t take = std::min(left, options.batch_size);
    if (take == 0 || (options.drop_last && take < options.batch_size)) {
        position = n;
        return std::nullopt;
    }
    std::vector<Sample> samples;
    samples.reserve(take);
    for (std::size_t k = 0; k < take; ++k, ++position)
        samples.push_back(dataset->get(options.shuffle ? order[position] : position));
    std::vector<const LongTensor*> inputs, targets;
    for (const Sample& s : samples) {
        inputs.push_back(&s.input_ids);
        targets.push_back(&s.target_ids);
    }
    Batch batch{stack(inputs), stack(targets)};
    ++yielded;
    return batch;
}

std::optional<Batch> DataLoader::Iterator::next() {
    if (state_->peeked) {  // a loop's comparison fetched it: hand that one over
        state_->peeked = false;
        return std::exchange(state_->current, std::nullopt);
    }
    return state_->fetch();
}

const Batch* DataLoader::Iterator::peek() const {
    if (!state_->peeked) {
        state_->current = state_->fetch();
        state_->peeked = true;
    }
    return state_->current ? &*state_->current : nullptr;
}

const Batch& DataLoader::Iterator::operator*() const {
    const Batch* batch = peek();
    if (batch == nullptr) throw std::out_of_range("DataLoader iterator: no batch left (the pass is over)");
    return *batch;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
    peek();  // `++it` without a comparison first still moves past one batch
    state_->peeked = false;
    state_->current.reset();
    return *this;
}

std::size_t DataLoader::Iterator::batches_fetched() const { return state_->yielded; }

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
    if (!dataset_) throw std::invalid_argument("DataLoader: dataset is null");
    // PyTorch makes the sampler, then the BatchSampler: their checks come in that order.
    if (options_.shuffle && dataset_->size() == 0)
        throw std::invalid_argument(
            "DataLoader: num_samples should be a positive integer value, but got num_samples=0");
    if (options_.batch_size == 0)
        throw std::invalid_argument(
            "DataLoader: batch_size should be a positive integer value, but got batch_size=0");
}

std::size_t DataLoader::size() const {
    const std::size_t n = dataset_->size(), b = options_.batch_size;
    return n / b + (!options_.drop_last && n % b != 0 ? 1 : 0);
}

DataLoader::Iterator DataLoader::iter() const {
    auto state = std::make_shared<Iterator::State>();
    state->dataset = dataset_;
    state->options = options_;
    // _BaseDataLoaderIter.__init__: `_base_seed = torch.empty((), dtype=torch.int64).random_()`,
    // drawn at every iter(loader) and unused with num_workers=0.
    (void)random_int64(default_generator());
    return Iterator(std::move(state));
}

DataLoader::Iterator DataLoader::begin() const { return iter(); }

DataLoader create_dataloader_v1(std::string_view txt, const GPT2Tokenizer& tokenizer, DataLoaderV1Options options) {
    GPTDatasetV1 dataset(txt, tokenizer, options.max_length, options.stride);
    return DataLoader(std::move(dataset), {.batch_size = options.batch_size, .shuffle = options.shuffle,
                                           .drop_last = options.drop_last});
}

}  // namespace attn::data
