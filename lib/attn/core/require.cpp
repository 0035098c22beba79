#include "attn/core/require.hpp"

#include <stdexcept>

#include "attn/core/tensor.hpp"

namespace attn {

void require_positive(const std::string& where, const char* field, std::size_t value) {
    if (value == 0)
        throw std::invalid_argument(where + ": expected " + field + " > 0, got 0");
}

void require_probability(const std::string& where, const char* field, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        throw std::invalid_argument(where + ": expected " + field +
                                    " in [0, 1], got " + std::to_string(p));
}

void require_mask_size(const std::string& where, const char* field, std::size_t n) {
    check_allocation(where + " (mask [" + field + ", " + field + "])", Shape{n, n});
}

void require_weight_size(const std::string& where, const char* rows, std::size_t r,
                         const char* cols, std::size_t c) {
    check_allocation(where + " (weight [" + rows + ", " + cols + "])", Shape{r, c});
}

void require_divisible(const std::string& where, const char* field, std::size_t value,
                       const char* divisor_field, std::size_t divisor) {
    if (divisor == 0 || value % divisor != 0)
        throw std::invalid_argument(where + ": " + field + " must be divisible by " + divisor_field +
                                    ", got " + field + " = " + std::to_string(value) + ", " +
                                    divisor_field + " = " + std::to_string(divisor));
}

}  // namespace attn
