/// @file scoped_choice.hpp
/// @brief The scoped choice of a setting for one thread, what the choice of arithmetic
/// (`ArithmeticGuard`, arithmetic.hpp) and of the attention core's backend (`SDPABackendGuard`,
/// attention/sdpa.hpp) share: a guard sets the calling thread's choice while it lives, then
/// restores the one before (guards nest); other threads never see it.
#pragma once

#include <optional>

namespace attn::detail {

/// The calling thread's choice of the setting `E` (an enumeration): the innermost living
/// `ThreadChoiceGuard<E>`'s value, or none (then the process default applies).
template <class E>
inline thread_local std::optional<E> thread_choice;

/// Sets `thread_choice<E>` to a value while it lives, then restores the previous choice. The
/// value is checked by the derived guard before it gets here.
template <class E>
class ThreadChoiceGuard {
public:
    /// Never throws.
    explicit ThreadChoiceGuard(E value) noexcept : previous_(thread_choice<E>) { thread_choice<E> = value; }
    ~ThreadChoiceGuard() { thread_choice<E> = previous_; }
    ThreadChoiceGuard(const ThreadChoiceGuard&) = delete;
    ThreadChoiceGuard& operator=(const ThreadChoiceGuard&) = delete;

private:
    std::optional<E> previous_;
};

}  // namespace attn::detail
