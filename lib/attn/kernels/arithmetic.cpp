// The choice of arithmetic (arithmetic.hpp): the process default and the scoped choice of one
// thread, as attention/sdpa_backends.cpp keeps the choice of backend.
#include "attn/kernels/arithmetic.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

namespace attn {

namespace {

std::atomic<Arithmetic>& arithmetic_process_default() {
    static std::atomic<Arithmetic> arithmetic{Arithmetic::exact};
    return arithmetic;
}

bool known(Arithmetic a) {
    return a == Arithmetic::automatic || a == Arithmetic::exact || a == Arithmetic::fma;
}

// A choice: exact or fma (automatic would choose itself); returns it.
Arithmetic require_arithmetic(const char* where, Arithmetic a) {
    if (a != Arithmetic::exact && a != Arithmetic::fma)
        throw std::invalid_argument(std::string(where) + ": expected Arithmetic::exact or fma, got " +
                                    (a == Arithmetic::automatic ? std::string("automatic")
                                                                : "value " + std::to_string(static_cast<int>(a))));
    return a;
}

}  // namespace

const char* arithmetic_name(Arithmetic a) {
    switch (a) {
        case Arithmetic::automatic: return "automatic";
        case Arithmetic::exact: return "exact";
        case Arithmetic::fma: return "fma";
    }
    throw std::invalid_argument("arithmetic_name: Arithmetic value " + std::to_string(static_cast<int>(a)) +
                                " is not an arithmetic");
}

// The innermost ArithmeticGuard of this thread, if any: other threads never see it.
Arithmetic default_arithmetic() { return detail::thread_choice<Arithmetic>.value_or(arithmetic_process_default().load()); }

Arithmetic resolve_arithmetic(Arithmetic a) {
    if (!known(a))
        throw std::invalid_argument("resolve_arithmetic: Arithmetic value " + std::to_string(static_cast<int>(a)) +
                                    " is not an arithmetic");
    return a == Arithmetic::automatic ? default_arithmetic() : a;
}

void set_default_arithmetic(Arithmetic a) {
    require_arithmetic("set_default_arithmetic", a);
    arithmetic_process_default().store(a);
}

ArithmeticGuard::ArithmeticGuard(Arithmetic a) : ThreadChoiceGuard(require_arithmetic("ArithmeticGuard", a)) {}

}  // namespace attn
