/// @file ring_attention.hpp
/// @brief Ring attention (chapter 28): a sequence too long for one process split across the
/// ranks of an MPI job, each rank's queries fixed while the key and value blocks travel a
/// ring, each step's partial result merged by its log-sum-exp. Forward and backward.
///
/// Sources: H. Liu, M. Zaharia, P. Abbeel, "Ring Attention with Blockwise Transformers for
/// Near-Infinite Context" (2023, arXiv 2310.01889), Algorithm 1; W. Brandon et al., "Striped
/// Attention: Faster Ring Attention for Causal Transformers" (2023, arXiv 2311.09431); the
/// zig-zag split of Llama 3's context parallelism and of zhuzilin's ring-flash-attention. A
/// rank's block attention is the attention core's (`attn::attend`, `attn::attend_backward`);
/// the merge is `attn::flash::merge_partial`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"
#include "attn/dist/communicator.hpp"

namespace attn::dist {

/// How a sequence of `T` tokens is dealt to `P` ranks, `c = T / P` tokens each.
enum class SequenceSplit {
    contiguous,  ///< rank `r` holds tokens `[r c, (r + 1) c)`: under a causal mask, rank 0 waits
    zigzag,      ///< `T` in `2P` chunks; rank `r` holds chunks `r` and `2P - 1 - r`
    striped,     ///< rank `r` holds tokens `r, r + P, r + 2P, ...` (Brandon et al.)
};

/// `"contiguous"`, `"zigzag"` or `"striped"`.
/// @throws std::invalid_argument for a value outside the enumeration.
const char* split_name(SequenceSplit split);

/// The positions of the tokens rank `rank` of `ranks` holds, ascending.
/// @throws std::invalid_argument when `ranks` is 0, `rank >= ranks`, or `T` does not split into
/// equal blocks (`T` a positive multiple of `ranks`, of `2 * ranks` for `zigzag`), naming both.
std::vector<std::size_t> rank_positions(std::size_t T, std::size_t ranks, std::size_t rank,
                                        SequenceSplit split);

/// `x[:, :, positions, :]` of a `[B, H, T, E]` tensor: rank `rank`'s tokens, `[B, H, T / P, E]`.
/// @throws std::invalid_argument when `x` is not 4-D or as `rank_positions`.
Tensor shard(const Tensor& x, std::size_t ranks, std::size_t rank, SequenceSplit split);

/// The inverse of `shard` over the communicator: every rank's `[B, H, c, E]` block put back in
/// place, `[B, H, c P, E]` on every rank (`MPI_Allgather`: for checks and printing).
/// @throws std::invalid_argument when `local` is not 4-D.
Tensor unshard(const Communicator& comm, const Tensor& local, SequenceSplit split);

/// What ring attention computes, beside the communicator.
struct RingOptions {
    bool is_causal = false;  ///< key visible only when its position is at most the query's
    SequenceSplit split = SequenceSplit::contiguous;  ///< how the tokens were dealt (`shard`)
    /// Post the next block's `MPI_Isend` / `MPI_Irecv` before the block's compute (the paper's
    /// overlap), or send it only after (`false`: the compute and the transfer in turn).
    bool overlap = true;
    ScoreScale scale{};  ///< how the scores are scaled (PyTorch's `1/sqrt(E)` by default)
    /// The forward's block attention (`fast`, `tiled` or `step`; the backward is always the
    /// tiled FlashAttention-2 backward, which reads the merged output and log-sum-exp).
    SDPABackend backend = SDPABackend::automatic;
};

/// One step of the ring on one rank.
struct RingStep {
    std::size_t key_rank = 0;    ///< the rank whose key and value block was attended to
    std::uint64_t pairs = 0;     ///< (query, key) pairs not masked, per batch element and head
    double compute_seconds = 0;  ///< the block's attention and merge
    double wait_seconds = 0;     ///< waiting for the next block after the compute
};

/// The forward's result on one rank.
struct RingForward {
    Tensor output;     ///< this rank's rows of the attention: `[B, H, c, Ev]`
    Tensor logsumexp;  ///< their `L = m + log(l)` over every key: `[B, H, c]`
    std::vector<RingStep> steps;  ///< `P` steps, in order
};

/// Ring attention's forward (Liu et al., Algorithm 1) on the communicator's `P` ranks: this
/// rank's `query [B, H, c, E]`, `key [B, H_kv, c, E]`, `value [B, H_kv, c, Ev]` (its
/// `shard` of the sequence, the same `c` on every rank). At step `s` it attends to the key and
/// value block of rank `(r - s) mod P` (its own first), merges the result into its running
/// `(output, logsumexp)` (`flash::merge_partial`), and passes the block on to rank `r + 1`.
/// Under a causal mask, a block whose keys all follow the queries is skipped, and a partly
/// visible block is masked by the positions of `options.split`. The result equals one
/// process's `scaled_dot_product_attention` on the whole sequence to within the rounding of
/// the `P - 1` merges: `(4 + 2P)` float32 epsilons of the largest value (tests/test_distributed.cpp).
/// @throws std::invalid_argument when the shapes do not fit (naming expected and actual
/// shapes); std::runtime_error when MPI fails.
RingForward ring_attention_forward(const Communicator& comm, const Tensor& query,
                                   const Tensor& key, const Tensor& value,
                                   const RingOptions& options = {});

/// The backward's result on one rank: the gradients of this rank's blocks.
struct RingGradients {
    Tensor grad_query;  ///< `[B, H, c, E]`
    Tensor grad_key;    ///< `[B, H_kv, c, E]`, summed over every rank's queries
    Tensor grad_value;  ///< `[B, H_kv, c, Ev]`, summed over every rank's queries
    std::vector<RingStep> steps;  ///< `P` steps, in order
};

/// Ring attention's backward: the key and value blocks travel the ring again, now with their
/// gradients `dK`, `dV`, to which each rank adds its queries' share; `dQ` stays at home. Each
/// block is FlashAttention-2's backward (`attend_backward` on the tiled backend) with this
/// rank's merged `output` and `logsumexp`, so its weights are the whole row's. After `P`
/// steps one more shift returns each block's `dK`, `dV` to its owner.
/// `grad_output [B, H, c, Ev]`, the forward's inputs and `forward`.
/// @throws std::invalid_argument when the shapes are not the forward's; std::runtime_error
/// when MPI fails.
RingGradients ring_attention_backward(const Communicator& comm, const Tensor& grad_output,
                                      const Tensor& query, const Tensor& key,
                                      const Tensor& value, const RingForward& forward,
                                      const RingOptions& options = {});

}  // namespace attn::dist
