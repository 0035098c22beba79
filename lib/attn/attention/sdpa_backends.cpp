// The attention core's backends, one row per backend and arithmetic (sdpa_problem.hpp): which
// one a call runs, the process default, and the scoped choice of one thread (SDPABackendGuard,
// sdpa.hpp; the arithmetic's ArithmeticGuard, kernels/arithmetic.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "attn/attention/sdpa_problem.hpp"

namespace attn {

namespace {

// Forward and backward of each backend in each arithmetic it has, beside each other: adding a
// backend or an arithmetic of one is adding a row (and its enumerator). The first row of a
// backend is its exact one.
constexpr detail::Backend kBackends[] = {
    {SDPABackend::step, Arithmetic::exact, "step", detail::step_forward, detail::step_backward, false},
    {SDPABackend::tiled, Arithmetic::exact, "tiled", detail::tiled_forward, detail::tiled_backward, true},
    {SDPABackend::fast, Arithmetic::exact, "fast", detail::fast_forward, detail::fast_backward, false},
    {SDPABackend::fast, Arithmetic::fma, "fast", detail::fast_fma_forward, detail::fast_fma_backward, false},
};

std::atomic<SDPABackend>& backend_process_default() {
    static std::atomic<SDPABackend> backend{SDPABackend::fast};
    return backend;
}

// The row of backend `b` in arithmetic `a` (its first, exact, row when `a` is automatic).
const detail::Backend* find_backend_row(SDPABackend b, Arithmetic a = Arithmetic::automatic) {
    for (const detail::Backend& row : kBackends)
        if (row.id == b && (a == Arithmetic::automatic || row.arithmetic == a)) return &row;
    return nullptr;
}

[[noreturn]] void unknown(const std::string& where, SDPABackend b) {
    throw std::invalid_argument(where + ": SDPABackend value " + std::to_string(static_cast<int>(b)) +
                                " is not a backend");
}

// A choice of default: a backend of the table (automatic would choose itself); returns it.
SDPABackend require_backend(const char* where, SDPABackend b) {
    if (!find_backend_row(b))
        throw std::invalid_argument(std::string(where) + ": expected step, tiled or fast, got SDPABackend value " +
                                    std::to_string(static_cast<int>(b)));
    return b;
}

// The largest |x| of a view into `m`; false when an element is not finite.
bool max_abs(const HeadsView& x, double& m) {
    if (x.hd == 0 || x.T == 0 || x.H == 0) return true;  // no element (and no walk over 2^40 empty rows)
    for (std::size_t b = 0; b < x.B; ++b)
        for (std::size_t h = 0; h < x.H; ++h)
            for (std::size_t t = 0; t < x.T; ++t) {
                const float* row = x.data + b * x.stride_b + h * x.stride_h + t * x.stride_t;
                for (std::size_t e = 0; e < x.hd; ++e) {
                    if (!std::isfinite(row[e])) return false;
                    m = std::max(m, double(std::fabs(row[e])));
                }
            }
    return true;
}

// Whether every score q . k (then scaled) is surely finite: every query and key finite, and
// the largest value a sum of E products could reach, and its scaling, below FLT_MAX / 2 (room
// for the rounding of E additions).
bool scores_surely_finite(const detail::SDPAProblem& p) {
    double max_q = 0.0, max_k = 0.0;
    if (!max_abs(p.q, max_q) || !max_abs(p.k, max_k)) return false;
    const double scale = p.divide ? 1.0 / std::fabs(double(p.scale)) : std::fabs(double(p.scale));
    return max_q * max_k * double(p.E) * std::max(1.0, scale) < 0.5 * double(std::numeric_limits<float>::max());
}

}  // namespace

const char* backend_name(SDPABackend backend) {
    if (backend == SDPABackend::automatic) return "automatic";
    if (const detail::Backend* row = find_backend_row(backend)) return row->name;
    unknown("backend_name", backend);
}

// The innermost SDPABackendGuard of this thread, if any: other threads never see it.
SDPABackend default_sdpa_backend() { return detail::thread_choice<SDPABackend>.value_or(backend_process_default().load()); }

void set_default_sdpa_backend(SDPABackend backend) {
    require_backend("set_default_sdpa_backend", backend);
    backend_process_default().store(backend);
}

SDPABackendGuard::SDPABackendGuard(SDPABackend backend)
    : ThreadChoiceGuard(require_backend("SDPABackendGuard", backend)) {}

namespace detail {

bool known_backend(SDPABackend b) { return b == SDPABackend::automatic || find_backend_row(b) != nullptr; }

namespace {

// The row of the call's backend in its arithmetic, whatever the problem.
const Backend& row_for(const SDPAOptions& options) {
    const SDPABackend requested = options.backend;
    const SDPABackend b = requested == SDPABackend::automatic ? default_sdpa_backend() : requested;
    const Backend* exact = find_backend_row(b);
    if (!exact) unknown("scaled_dot_product_attention", requested);
    const Arithmetic a = resolve_arithmetic(options.arithmetic);
    if (const Backend* row = find_backend_row(b, a)) return *row;
    if (options.arithmetic == Arithmetic::automatic) return *exact;  // a guard's wish, not the call's
    throw std::invalid_argument(std::string("scaled_dot_product_attention: the ") + exact->name +
                                " backend has no " + arithmetic_name(a) +
                                " arithmetic (Arithmetic::fma runs on the fast backend)");
}

}  // namespace

const Backend& backend_for(const SDPAOptions& options, const SDPAProblem& p) {
    const Backend& row = row_for(options);
    // The fast and tiled backends skip hidden keys or set their scores to -inf: exact for an
    // additive mask only when those scores are finite (else PyTorch's sum is NaN).
    const bool hidden = options.is_causal || p.window != 0 || p.allow.data != nullptr;
    if (options.mask_op == MaskOp::additive && row.id != SDPABackend::step && hidden && !scores_surely_finite(p))
        return *find_backend_row(SDPABackend::step);
    return row;
}

}  // namespace detail

}  // namespace attn
