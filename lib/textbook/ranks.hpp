/// @file ranks.hpp
/// @brief Chapters that run as the ranks of an MPI job (Part VI): started alone, such a
/// chapter starts itself again under `mpirun -np <ranks>`, and only rank 0 prints and records.
/// The harness needs no MPI for this: it reads the launcher's environment; the chapter's body
/// starts MPI itself (`attn::dist::Session`).
#pragma once

#include <optional>

namespace textbook {

/// This process's rank in the job that `mpirun` (Open MPI: `OMPI_COMM_WORLD_RANK`) or another
/// launcher (MPICH's Hydra, PMIx: `PMI_RANK`, `PMIX_RANK`) started; nullopt when no launcher
/// started it.
std::optional<int> launched_rank();

/// Replaces this process by `mpirun -np <ranks>` running this program with the same
/// arguments (`/proc/self/exe`, `execvp`): what a reader would type, with the environment
/// Open MPI needs on a small machine (oversubscribed: more ranks than cores; one OpenMP thread
/// per rank unless `OMP_NUM_THREADS` is set; its own messages left out, `orte_execute_quiet`;
/// as root, the two variables by which Open MPI lets root run it; no single-copy shared memory,
/// which containers often refuse). MPICH's `mpirun` ignores these variables.
/// Returns only when it could not start `mpirun`.
/// @throws std::runtime_error naming the program and what to install when `mpirun` is missing.
[[noreturn]] void exec_under_mpirun(int argc, char** argv, int ranks);

/// For a rank other than 0: its stdout and stderr go to /dev/null, so that the job prints
/// once (rank 0 reports every failure: the ranks compute the same).
void silence_this_rank();

}  // namespace textbook
