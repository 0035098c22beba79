/// @file lr_schedule.hpp
/// @brief Raschka's learning-rate schedule of appendix D ("Adding bells and whistles to the
/// training loop", appendix-D.ipynb In [6], In [8] and his `train_model`, In [13]): a linear
/// warmup from `initial_lr` to `peak_lr`, then a cosine decay to `min_lr`.
///
/// His code, computed in Python floats (double) at every step and then set into the optimizer
/// (`param_group["lr"] = lr`):
/// ```
/// lr_increment = (peak_lr - initial_lr) / warmup_steps
/// if global_step < warmup_steps:
///     lr = initial_lr + global_step * lr_increment
/// else:
///     progress = ((global_step - warmup_steps) /
///                 (total_training_steps - warmup_steps))
///     lr = min_lr + (peak_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))
/// ```
/// Here every one of those operations is the same double operation in the same order (no fused
/// multiply-add; `std::cos` is the C library's `cos`, which Python's `math.cos` calls), so each
/// learning rate is his bit for bit (tests/test_appendix_d.cpp, data/oracle/appendix_d.json).
#pragma once

#include <cstdint>
#include <vector>

namespace attn {

/// His warmup and cosine decay: the learning rate of each step `global_step` (0-based, as his
/// `global_step` after its `+= 1`) of a run of `total_training_steps` steps
/// (`len(train_loader) * n_epochs`). Without `cosine_decay` the rate stays at `peak_lr` after the
/// warmup (his In [6], the warmup alone).
struct LrSchedule {
    double peak_lr = 0.0;                   ///< the rate reached after the warmup (`optimizer.param_groups[0]["lr"]`)
    std::int64_t warmup_steps = 0;          ///< steps of linear warmup, >= 1 (his `int(0.2 * total_steps)`)
    std::int64_t total_training_steps = 0;  ///< steps of the whole run, >= `warmup_steps`
    double initial_lr = 3e-05;              ///< the rate of step 0 (his `train_model`'s default)
    double min_lr = 1e-6;                   ///< the rate the cosine decays to (his default)
    bool cosine_decay = true;               ///< false: `peak_lr` after the warmup (his In [6])

    /// @throws std::invalid_argument, naming the field, when a rate is NaN, infinite or negative
    /// (AdamW would refuse it), `peak_lr < min_lr` (the "decay" would rise), `warmup_steps < 1`
    /// (his `lr_increment` divides by it: Python raises ZeroDivisionError) or `warmup_steps >
    /// total_training_steps` (the warmup would never reach `peak_lr`). His Python refuses only
    /// the zero warmup; the rest are refused here (issue 44). Source: his In [4]-[8] variables.
    void validate() const;

    /// His `lr_increment`: `(peak_lr - initial_lr) / warmup_steps`, in double (negative when
    /// `initial_lr > peak_lr`: a warmup that falls, which he allows).
    /// @throws std::invalid_argument as `validate`.
    /// Source: his In [6] and In [8], `lr_increment = (peak_lr - initial_lr) / warmup_steps`.
    double lr_increment() const;

    /// The learning rate of step `global_step`, his formula in double (see the file comment).
    /// A step at or beyond `total_training_steps` follows the same formula (his loop never
    /// reaches one: the cosine would rise again).
    /// @throws std::invalid_argument as `validate`, when `global_step` is negative, or when
    /// `global_step >= warmup_steps == total_training_steps` with `cosine_decay` (his `progress`
    /// would divide by 0: ZeroDivisionError).
    /// Source: his In [8] (In [6] without `cosine_decay`) and `train_model` (In [13]), one step.
    double lr(std::int64_t global_step) const;

    /// His `track_lrs` of a whole run: `lr(s)` for `s = 0 .. total_training_steps - 1`, doubles,
    /// `total_training_steps` of them.
    /// @throws std::invalid_argument as `validate`.
    /// Source: his In [6] and In [8] loops (`track_lrs.append(optimizer.param_groups[0]["lr"])`).
    std::vector<double> lrs() const;
};

}  // namespace attn
