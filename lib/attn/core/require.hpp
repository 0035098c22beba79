/// @file require.hpp
/// @brief The checks of a config's fields, shared by every config of the library (a module's,
/// the KV-memory estimator's, a mask's): sizes > 0, divisibility, probabilities, and that a
/// weight or mask of the asked size can be allocated before anything is drawn.
#pragma once

#include <cstddef>
#include <string>

namespace attn {

/// Throws `std::invalid_argument("<where>: expected <field> > 0, got 0")` when `value` is 0:
/// the one check of a config's sizes, shared by every module config.
void require_positive(const std::string& where, const char* field, std::size_t value);

/// Throws `std::invalid_argument` naming `where`, `field` and the value when `p` is NaN or
/// outside [0, 1] (a dropout probability).
void require_probability(const std::string& where, const char* field, double p);

/// Checks that the `[n, n]` causal mask of a config (`context_length`, `block_size`) can be
/// allocated, before the module draws any weight.
/// @throws std::length_error `"<where> (mask [<field>, <field>]): cannot allocate ..."`.
void require_mask_size(const std::string& where, const char* field, std::size_t n);

/// Checks that a `[r, c]` weight of a config can be allocated, before anything is drawn.
/// @throws std::length_error `"<where> (weight [<rows>, <cols>]): cannot allocate ..."`.
void require_weight_size(const std::string& where, const char* rows, std::size_t r,
                         const char* cols, std::size_t c);

/// Throws `std::invalid_argument("<where>: <field> must be divisible by <divisor_field>, got
/// <field> = <value>, <divisor_field> = <divisor>")` when `divisor` is 0 or does not divide
/// `value`: the one check that heads split a width evenly (`d_out` by `num_heads`, `num_heads`
/// by `num_kv_groups`), shared by every module config.
void require_divisible(const std::string& where, const char* field, std::size_t value,
                       const char* divisor_field, std::size_t divisor);

}  // namespace attn
