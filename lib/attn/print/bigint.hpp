/// @file bigint.hpp
/// @brief The unsigned big integers of NumPy's Dragon4 digit generator
/// (numpy/core/src/multiarray/dragon4.c), internal to lib/attn/print/dragon4.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn::print_detail {

/// Just enough unsigned big-integer arithmetic for Dragon4 on float32 values.
class BigInt {
public:
    /// Zero.
    BigInt() = default;
    /// The value `v`.
    explicit BigInt(std::uint64_t v) {
        while (v) {
            w_.push_back(static_cast<std::uint32_t>(v));
            v >>= 32;
        }
    }
    /// `2^k`.
    static BigInt pow2(unsigned k) {
        BigInt b(1);
        b.shl(k);
        return b;
    }
    /// Whether the value is 0.
    bool is_zero() const { return w_.empty(); }

    /// `*this <<= k`.
    void shl(unsigned k) {
        if (w_.empty() || k == 0) return;
        const unsigned words = k / 32, bits = k % 32;
        std::vector<std::uint32_t> r(w_.size() + words + 1, 0);
        for (std::size_t i = 0; i < w_.size(); ++i) {
            const std::uint64_t v = static_cast<std::uint64_t>(w_[i]) << bits;
            r[i + words] |= static_cast<std::uint32_t>(v);
            r[i + words + 1] |= static_cast<std::uint32_t>(v >> 32);
        }
        w_ = std::move(r);
        trim();
    }
    /// `*this *= m`.
    void mul_small(std::uint32_t m) {
        std::uint64_t carry = 0;
        for (auto& x : w_) {
            const std::uint64_t v = static_cast<std::uint64_t>(x) * m + carry;
            x = static_cast<std::uint32_t>(v);
            carry = v >> 32;
        }
        if (carry) w_.push_back(static_cast<std::uint32_t>(carry));
        trim();
    }
    /// `*this *= 10^n`.
    void mul_pow10(unsigned n) {
        for (; n >= 9; n -= 9) mul_small(1000000000u);
        static const std::uint32_t small[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
        if (n) mul_small(small[n]);
    }
    /// `a + b`.
    friend BigInt operator+(const BigInt& a, const BigInt& b) {
        BigInt r;
        const std::size_t n = std::max(a.w_.size(), b.w_.size());
        r.w_.resize(n + 1, 0);
        std::uint64_t carry = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t v = static_cast<std::uint64_t>(i < a.w_.size() ? a.w_[i] : 0) +
                                    (i < b.w_.size() ? b.w_[i] : 0) + carry;
            r.w_[i] = static_cast<std::uint32_t>(v);
            carry = v >> 32;
        }
        r.w_[n] = static_cast<std::uint32_t>(carry);
        r.trim();
        return r;
    }
    /// this -= b, requires this >= b.
    void sub(const BigInt& b) {
        std::int64_t borrow = 0;
        for (std::size_t i = 0; i < w_.size(); ++i) {
            std::int64_t v = static_cast<std::int64_t>(w_[i]) - (i < b.w_.size() ? b.w_[i] : 0) - borrow;
            borrow = v < 0 ? 1 : 0;
            if (v < 0) v += (static_cast<std::int64_t>(1) << 32);
            w_[i] = static_cast<std::uint32_t>(v);
        }
        trim();
    }
    /// -1, 0 or 1 as `a` is below, equal to or above `b`.
    friend int compare(const BigInt& a, const BigInt& b) {
        if (a.w_.size() != b.w_.size()) return a.w_.size() < b.w_.size() ? -1 : 1;
        for (std::size_t i = a.w_.size(); i-- > 0;)
            if (a.w_[i] != b.w_[i]) return a.w_[i] < b.w_[i] ? -1 : 1;
        return 0;
    }

private:
    void trim() {
        while (!w_.empty() && w_.back() == 0) w_.pop_back();
    }
    std::vector<std::uint32_t> w_;  // little-endian 32-bit words, no leading zero words
};

}  // namespace attn::print_detail
