/// @file communicator.hpp
/// @brief The ranks of an MPI job as the distributed attentions see them (Part VI): a ring of
/// sends and receives, a ring all-reduce and an all-to-all on float32 buffers, and the bytes
/// this rank has handed to MPI for other ranks, counted through MPI's profiling interface.
///
/// Written against the MPI standard (3.1): Open MPI from Debian (`mpirun`) runs it, and so does
/// MPICH. The rest of the library does not depend on MPI; only `attn::dist` does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

/// Attention across processes: the ranks of an MPI job (Part VI).
namespace attn::dist {

/// Bytes and messages this process has handed to MPI for another rank since it started:
/// the payload of every `MPI_Send`, `MPI_Isend` and `MPI_Sendrecv` to a rank other than
/// itself, and of every block of an `MPI_Alltoall` meant for another rank. Counted by the
/// library's own definitions of those calls, which add to the count and call MPI's `PMPI_`
/// entry points (the MPI standard's profiling interface, chapter 14), so any code in the
/// process is counted, the library's or not. Collectives MPI runs inside other calls
/// (`MPI_Allreduce`, ...) are not counted: the library's all-reduce is `all_reduce_sum`,
/// written with `MPI_Sendrecv`.
struct Traffic {
    std::uint64_t bytes = 0;     ///< payload bytes sent to other ranks
    std::uint64_t messages = 0;  ///< messages (an all-to-all counts one per other rank)
};

/// The traffic counted so far in this process (see `Traffic`).
Traffic traffic_so_far();

/// An MPI communicator: `MPI_COMM_WORLD`, or a part of it made by `split`. Every call is
/// collective over its ranks unless it says otherwise. Errors of MPI are returned to the
/// library (`MPI_ERRORS_RETURN`) and thrown as `std::runtime_error` naming the call.
class Communicator {
public:
    /// `MPI_COMM_WORLD`. Not owned.
    /// @throws std::logic_error when MPI is not initialised (`MPI_Init` first: see `Session`).
    static Communicator world();

    /// The ranks of this communicator with the same `color`, in the order of their ranks here
    /// (`MPI_Comm_split`); a rank with a negative color gets an empty communicator
    /// (`MPI_COMM_NULL`: `valid()` false). Owned: freed when the last copy goes.
    Communicator split(int color) const;

    /// False for the communicator of a rank left out of a `split`.
    bool valid() const { return comm_ != MPI_COMM_NULL; }
    /// This process's rank, `0 .. size() - 1`.
    int rank() const;
    /// The number of ranks.
    int size() const;
    /// The rank after this one on the ring, `(rank + 1) mod size`.
    int next() const { return (rank() + 1) % size(); }
    /// The rank before this one on the ring, `(rank - 1) mod size`.
    int previous() const { return (rank() + size() - 1) % size(); }
    /// The MPI handle, for calls the library does not wrap.
    MPI_Comm handle() const { return comm_; }

    /// Waits until every rank has called it (`MPI_Barrier`).
    void barrier() const;
    /// A barrier that sleeps while it waits: `MPI_Ibarrier`, tested every millisecond. MPI's
    /// blocking calls poll while they wait; with more ranks than cores, ranks that arrive long
    /// before the others (after work of uneven length) would take the cores from the ranks
    /// still working. Call it before a collective that some ranks reach much later.
    void barrier_sleeping() const;

    /// Sends `send` to `next()` and receives `recv` from `previous()`, both `count` floats, at
    /// once (`MPI_Sendrecv`): one step of a ring. `recv` must not overlap `send`.
    void ring_shift(const float* send, float* recv, std::size_t count) const;

    /// A ring step started but not finished: `MPI_Isend` to `next()` and `MPI_Irecv` from
    /// `previous()` posted, so that the caller computes while the bytes travel. `wait()` ends
    /// it (the destructor waits too: the buffers must outlive it).
    class Shift {
    public:
        Shift() = default;
        Shift(const Shift&) = delete;             ///< one owner of the requests
        Shift& operator=(const Shift&) = delete;  ///< one owner of the requests
        Shift(Shift&& other) noexcept;             ///< takes the requests over
        Shift& operator=(Shift&& other) noexcept;  ///< waits for its own, takes the other's
        ~Shift();
        /// Waits until both the send and the receive have completed.
        /// @throws std::runtime_error when MPI reports an error.
        void wait();
    private:
        friend class Communicator;
        MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    };

    /// Starts a ring step (see `Shift`): `send` to `next()`, `recv` from `previous()`.
    Shift start_ring_shift(const float* send, float* recv, std::size_t count) const;

    /// Sums `count` floats over the ranks in place, every rank getting the sum: a ring
    /// all-reduce (a reduce-scatter, then an all-gather, each `size() - 1` ring steps), so each
    /// rank sends `2 (P - 1) / P` of the buffer in all, and every element is summed in a fixed
    /// order, the same on every run: element block `b` (the buffer in `P` blocks, the first
    /// `count mod P` one element longer) starts at rank `b` and adds ranks `b + 1, ..., b - 1`
    /// in turn, `((x_b + x_(b+1)) + ...)`, and every rank gets the same bits.
    void all_reduce_sum(float* data, std::size_t count) const;

    /// `MPI_Alltoall` of float32 blocks: block `r` of `send` (`block` floats each, `P` blocks)
    /// goes to rank `r`, and block `r` of `recv` comes from rank `r`.
    void all_to_all(const float* send, float* recv, std::size_t block) const;

    /// Every rank's `count` floats, in rank order (`MPI_Allgather`, not counted as traffic):
    /// for checks and printing, not for the algorithms.
    std::vector<float> all_gather(const float* data, std::size_t count) const;

    /// Every rank's `value` (a count: bytes, elements), in rank order (`MPI_Allgather` of one
    /// `MPI_UINT64_T`, not counted as traffic): exact at any size, where a float would round
    /// counts above 2^24.
    std::vector<std::uint64_t> all_gather_count(std::uint64_t value) const;

    /// The largest of a value over the ranks (`MPI_Allreduce` with `MPI_MAX`, not counted).
    double max(double value) const;

    /// Runs `check` (a validation of this rank's inputs) on every rank, and throws on every rank
    /// when it threw `std::invalid_argument` on any: its own message on a rank whose check
    /// failed, else one naming the first rank that failed. Without it, a rank that refused its
    /// inputs would leave the others waiting in the next collective.
    /// @throws std::invalid_argument as above.
    void all_or_none(const std::function<void()>& check) const;

    /// Throws on every rank unless `value` is the same on every rank.
    /// @throws std::invalid_argument `"<what>: 8 on rank 0, 4 on rank 1: every rank must give
    /// the same"`.
    void require_same(std::size_t value, const std::string& what) const;

private:
    explicit Communicator(MPI_Comm comm, bool owned);
    MPI_Comm comm_ = MPI_COMM_NULL;
    std::shared_ptr<void> owner_;  // frees a split communicator with its last copy
};

/// MPI for the life of a program: `MPI_Init_thread` (funneled: only the main thread calls MPI)
/// and `MPI_Finalize`. A program that runs under `mpirun` holds one in `main`.
class Session {
public:
    /// Starts MPI without the command line: the launcher passes what MPI needs in the
    /// environment, and the program parses its own arguments.
    /// @throws std::runtime_error when MPI cannot start.
    Session();
    Session(const Session&) = delete;             ///< one per program
    Session& operator=(const Session&) = delete;  ///< one per program
    ~Session();
};

/// Throws `std::runtime_error("<what>: MPI error: <MPI's message>")` when `code` is not
/// `MPI_SUCCESS`.
void check_mpi(int code, const char* what);

}  // namespace attn::dist
