/// @file tensor_parallel.hpp
/// @brief Tensor parallelism of Raschka's GPT model across the ranks of an MPI job (chapter 29):
/// each rank holds `1 / P` of every block's heads and of its feed-forward network, and two
/// all-reduces per block put the partial results together.
///
/// Source: M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models
/// Using Model Parallelism" (2019, arXiv 1909.08053), section 3, figure 3: the attention's
/// query, key and value projections split by heads (their rows), the output projection by its
/// columns; the first feed-forward layer by its rows, the second by its columns; one
/// all-reduce after each, and their biases added once, after the sum. A rank's attention is the
/// attention core (`attn::attend`) on its `H / P` heads, with `MultiHeadAttention`'s options.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/model/gpt_model.hpp"

namespace attn::dist {

/// Rows `[rank * n / P, (rank + 1) * n / P)` of a `[n, ...]` tensor (a weight's output features,
/// a bias): this rank's share.
/// @throws std::invalid_argument when `x` is 0-d or `P` does not divide its first dimension.
Tensor rows_of_rank(const Tensor& x, std::size_t ranks, std::size_t rank);

/// Columns `[rank * n / P, (rank + 1) * n / P)` of a `[m, n]` weight (its input features).
/// @throws std::invalid_argument when `x` is not 2-D or `P` does not divide its columns.
Tensor columns_of_rank(const Tensor& x, std::size_t ranks, std::size_t rank);

/// One rank's share of a `GPTModel`, evaluated in eval mode (no dropout): the embeddings, the
/// layer norms and the output head whole on every rank; in each block, `num_heads / P` heads
/// (a `MultiHeadAttention` whose `out_proj` holds its columns of the output projection, without
/// the bias) and `4 E / P` hidden units of the feed-forward network.
class TensorParallelGPT {
public:
    /// Takes this rank's share of `model`'s blocks (copies); the embeddings, norms and output
    /// head are `model`'s own, used in place: the model must outlive this object.
    /// @throws std::invalid_argument when `P` divides neither the heads nor the feed-forward
    /// width (`"... 12 heads do not split over 5 ranks"`).
    TensorParallelGPT(const Communicator& comm, const GPTModel& model);
    /// Frees this rank's share.
    ~TensorParallelGPT();

    /// The logits `[b, T, vocab_size]` of ids `[b, T]`, on every rank: his `GPTModel.forward`
    /// in eval mode, each block as Megatron-LM splits it, with two `all_reduce_sum` per block.
    /// Equal to the model's own logits to within the rounding of the split sums (each rank sums
    /// `1 / P` of an output feature's terms, and the all-reduce adds the `P` parts).
    /// @throws std::invalid_argument as `GPTModel::operator()`; std::runtime_error when MPI fails.
    Tensor operator()(const LongTensor& in_idx) const;

    /// The float32 numbers this rank holds: its share of the blocks plus the whole embeddings,
    /// norms and output head.
    std::size_t parameters_held() const;

private:
    struct Block;  // one block's share (tensor_parallel.cpp)
    Communicator comm_;
    const GPTModel* model_;
    std::vector<Block> blocks_;
};

}  // namespace attn::dist
