/// @file lr_schedule.cpp
/// @brief His warmup and cosine decay in Python's double operations (lr_schedule.hpp).

#include "attn/train/lr_schedule.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "attn/print/python.hpp"

namespace attn {

namespace {

void check_rate(const char* name, double value) {
    if (!std::isfinite(value) || value < 0.0)
        throw std::invalid_argument(std::string("LrSchedule: ") + name + " must be a finite rate >= 0, got " +
                                    repr_float(value));
}

}  // namespace

void LrSchedule::validate() const {
    check_rate("peak_lr", peak_lr);
    check_rate("initial_lr", initial_lr);
    check_rate("min_lr", min_lr);
    if (peak_lr < min_lr)
        throw std::invalid_argument("LrSchedule: peak_lr " + repr_float(peak_lr) + " is below min_lr " +
                                    repr_float(min_lr) + " (the cosine decay would rise)");
    if (warmup_steps < 1)
        throw std::invalid_argument("LrSchedule: warmup_steps must be at least 1 (his lr_increment divides by it), got " +
                                    std::to_string(warmup_steps));
    if (warmup_steps > total_training_steps)
        throw std::invalid_argument("LrSchedule: warmup_steps " + std::to_string(warmup_steps) +
                                    " is beyond total_training_steps " + std::to_string(total_training_steps) +
                                    " (the warmup would never reach peak_lr)");
}

double LrSchedule::lr_increment() const {
    validate();
    return (peak_lr - initial_lr) / static_cast<double>(warmup_steps);
}

// Each line one double operation of his, in his order; no contraction into fused multiply-adds
// even where the compiler targets a CPU that has them.
__attribute__((optimize("fp-contract=off"))) double LrSchedule::lr(std::int64_t global_step) const {
    const double increment = lr_increment();  // validates
    if (global_step < 0)
        throw std::invalid_argument("LrSchedule::lr: global_step must be >= 0, got " + std::to_string(global_step));
    if (global_step < warmup_steps) return initial_lr + static_cast<double>(global_step) * increment;
    if (!cosine_decay) return peak_lr;
    if (total_training_steps == warmup_steps)
        throw std::invalid_argument("LrSchedule::lr: step " + std::to_string(global_step) +
                                    " is past a run that is all warmup (his progress would divide by 0)");
    // Python's int / int: the exact quotient rounded once, as IEEE division of the two (exact) doubles
    const double progress = static_cast<double>(global_step - warmup_steps) /
                            static_cast<double>(total_training_steps - warmup_steps);
    const double half_range = (peak_lr - min_lr) * 0.5;
    return min_lr + half_range * (1.0 + std::cos(std::numbers::pi * progress));
}

std::vector<double> LrSchedule::lrs() const {
    validate();
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(total_training_steps));
    for (std::int64_t s = 0; s < total_training_steps; ++s) out.push_back(lr(s));
    return out;
}

}  // namespace attn
