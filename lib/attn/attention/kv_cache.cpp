// attn::KVCache (kv_cache.hpp): full and sliding-window caches, one implementation. Tensors
// are seen as [outer, S, inner] around the token axis (the second to last).
#include "attn/attention/kv_cache.hpp"

#include <algorithm>
#include <stdexcept>

#include "attn/core/functional.hpp"

namespace attn {

namespace {

// outer = product of the dimensions before the tokens, inner = the last dimension.
struct Around {
    std::size_t outer = 1, tokens = 0, inner = 0;
};

Around around(const Shape& s) {
    Around a;
    for (std::size_t i = 0; i + 2 < s.size(); ++i) a.outer *= s[i];
    a.tokens = s[s.size() - 2];
    a.inner = s.back();
    return a;
}

// Same shape but the token axis (and the last dimension, which keys and values may differ in).
bool same_but_tokens(const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i + 2 < a.size(); ++i)
        if (a[i] != b[i]) return false;
    return true;
}

Shape with_tokens(Shape s, std::size_t tokens) {
    s[s.size() - 2] = tokens;
    return s;
}

// Rows [first, first + n) of the token axis of `src`, wrapping around `slots` (a ring) when
// `slots` > 0: [outer, n, inner].
Tensor cache_token_rows(const Tensor& src, std::size_t first, std::size_t n, std::size_t slots) {
    const Shape s = shape_of(src);
    const Around a = around(s);
    Tensor out = Tensor::from_shape(with_tokens(s, n));
    if (out.size() == 0) return out;  // [2^40, 0, hd]: nothing to copy, not 2^40 empty rows
    for (std::size_t o = 0; o < a.outer; ++o)
        for (std::size_t t = 0; t < n; ++t) {
            const std::size_t row = slots ? (first + t) % slots : first + t;
            std::copy_n(src.data() + (o * a.tokens + row) * a.inner, a.inner,
                        out.data() + (o * n + t) * a.inner);
        }
    return out;
}

}  // namespace

KVCache::KVCache(Tensor key_, Tensor value_) : key(std::move(key_)), value(std::move(value_)) {
    const Shape s = shape_of(key);
    if (s.size() < 2) throw_shape_error("KVCache (key)", "[..., S, hd] (at least 2-D)", s);
    pos = s[s.size() - 2];
    validate("KVCache");
}

KVCache KVCache::sliding_window(std::size_t window) {
    if (window == 0) throw std::invalid_argument("KVCache::sliding_window: expected window > 0, got 0");
    KVCache c;
    c.window = window;
    return c;
}

KVCache KVCache::preallocated(std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("KVCache::preallocated: expected capacity > 0, got 0");
    KVCache c;
    c.capacity = capacity;
    return c;
}

void KVCache::validate(const std::string& where) const {
    if (window && capacity)
        throw std::invalid_argument(where + ": a cache is a ring (window = " + std::to_string(window) +
                                    ") or preallocated (capacity = " + std::to_string(capacity) + "), not both");
    if (capacity && pos > capacity)
        throw std::invalid_argument(where + ": pos = " + std::to_string(pos) + " tokens in a cache of capacity = " +
                                    std::to_string(capacity));
    const Shape sk = shape_of(key), sv = shape_of(value);
    const bool empty = key.dimension() == 0 && value.dimension() == 0 && key.size() <= 1 && value.size() <= 1;
    if (empty && (window ? true : pos == 0)) return;  // nothing appended yet (a ring may have been reset)
    if (sk.size() < 2) throw_shape_error(where + " (key)", "[..., S, hd] (at least 2-D)", sk);
    if (sv.size() < 2) throw_shape_error(where + " (value)", "[..., S, dv] (at least 2-D)", sv);
    // Keys and values each against pos (or the ring's slots) first, so that the one replaced
    // is the one named; then against each other.
    const std::size_t slots = window ? window : capacity ? capacity : pos;
    for (const auto& [name, s] : {std::pair<const char*, const Shape*>{"key", &sk}, {"value", &sv}})
        if ((*s)[s->size() - 2] != slots)
            throw_shape_error(where + " (" + name + ")",
                              shape_str(with_tokens(*s, slots)) +
                                  (window     ? " (a ring of window = " + std::to_string(window) + " slots)"
                                   : capacity ? " (a cache preallocated for capacity = " + std::to_string(capacity) + " tokens)"
                                              : " (a full cache of pos = " + std::to_string(pos) + " tokens)"),
                              *s);
    if (!same_but_tokens(sk, sv))
        throw_shape_error(where + " (value, the shape of key but the last dimension)",
                          shape_str(with_tokens(sk, sk[sk.size() - 2])), sv);
}

void KVCache::append(const Tensor& keys, const Tensor& values) {
    validate("KVCache::append");
    const Shape s = shape_of(keys), sv = shape_of(values);
    if (s.size() < 2) throw_shape_error("KVCache::append (keys)", "[..., T, hd] (at least 2-D)", s);
    if (!same_but_tokens(s, sv) || s[s.size() - 2] != sv[sv.size() - 2])
        throw_shape_error("KVCache::append (values, the shape of keys but the last dimension)",
                          shape_str(with_tokens(s, s[s.size() - 2])), sv);
    const std::size_t T = s[s.size() - 2];
    std::size_t end = 0;
    if (__builtin_add_overflow(pos, T, &end))
        throw std::length_error("KVCache::append: position " + std::to_string(pos) + " + " +
                                std::to_string(T) + " tokens overflows");
    const bool first = key.dimension() == 0;
    if (!first) {  // keys and values checked apart, so that the message names the one that differs
        const Shape held = shape_of(key), held_values = shape_of(value);
        if (!same_but_tokens(held, s) || held.back() != s.back())
            throw_shape_error("KVCache::append (keys for a cache of keys " + shape_str(held) + ")",
                              shape_str(with_tokens(held, T)), s);
        if (held_values.back() != sv.back())
            throw_shape_error("KVCache::append (values for a cache of values " + shape_str(held_values) + ")",
                              shape_str(with_tokens(held_values, T)), sv);
    }
    if (capacity) {
        if (end > capacity)
            throw std::length_error("KVCache::append: positions " + std::to_string(pos) + ".." + std::to_string(end - 1) +
                                    " beyond the preallocated capacity = " + std::to_string(capacity) + " tokens");
        if (first) {  // the N slots, allocated once (torch.zeros, as his optimized cache)
            check_allocation("KVCache::append (the preallocated keys)", with_tokens(s, capacity));
            check_allocation("KVCache::append (the preallocated values)", with_tokens(sv, capacity));
            key = attn::zeros(with_tokens(s, capacity));
            value = attn::zeros(with_tokens(sv, capacity));
        }
        for (const auto& [dst, src] : {std::pair<Tensor*, const Tensor*>{&key, &keys}, {&value, &values}}) {
            const Around a = around(shape_of(*src));
            if (a.inner == 0 || T == 0) continue;  // an empty batch or head: no loop over it
            for (std::size_t o = 0; o < a.outer; ++o)
                std::copy_n(src->data() + o * T * a.inner, T * a.inner, dst->data() + (o * capacity + pos) * a.inner);
        }
        pos = end;
        return;
    }
    if (window == 0) {
        if (first) {
            key = keys;
            value = values;
        } else {
            key = attn::cat({key, keys}, long(s.size()) - 2);
            value = attn::cat({value, values}, long(s.size()) - 2);
        }
        pos = end;
        return;
    }
    if (first) {  // the ring's W slots, allocated once
        key = attn::zeros(with_tokens(s, window));
        value = attn::zeros(with_tokens(sv, window));
    }
    // Only the last W tokens survive; older ones would be overwritten anyway.
    const std::size_t keep = std::min(T, window);
    for (const auto& [dst, src] : {std::pair<Tensor*, const Tensor*>{&key, &keys}, {&value, &values}}) {
        const Around a = around(shape_of(*src));
        if (a.inner == 0 || keep == 0) continue;  // an empty batch or head: no loop over it
        for (std::size_t o = 0; o < a.outer; ++o)
            for (std::size_t t = T - keep; t < T; ++t)
                std::copy_n(src->data() + (o * T + t) * a.inner, a.inner,
                            dst->data() + (o * window + (pos + t) % window) * a.inner);
    }
    pos = end;
}

namespace {

// The last n tokens of one of a cache's tensors (`which`: "keys" or "values"), oldest first.
Tensor recent_rows(const KVCache& cache, const Tensor& t, const char* which, std::size_t n) {
    const std::string where = std::string("KVCache::recent_") + which;
    if (n > cache.length())  // validates the fields too
        throw std::invalid_argument("KVCache: asked for " + std::to_string(n) +
                                    " recent tokens, holds " + std::to_string(cache.length()));
    cache.validate(where);
    if (t.dimension() < 2)  // nothing appended: no shape to give even 0 tokens
        throw std::invalid_argument(where + ": the cache is empty (nothing appended yet)");
    const std::size_t start = cache.window ? (cache.pos - n) % cache.window : cache.pos - n;  // slot = position
    return cache_token_rows(t, start, n, cache.window);
}

}  // namespace

Tensor KVCache::recent_keys(std::size_t n) const { return recent_rows(*this, key, "keys", n); }

Tensor KVCache::recent_values(std::size_t n) const { return recent_rows(*this, value, "values", n); }

std::size_t KVCache::length() const {
    validate("KVCache::length");
    return window ? std::min(pos, window) : pos;
}

std::size_t KVCache::bytes() const {
    validate("KVCache::bytes");
    return key.dimension() == 0 ? 0 : (key.size() + value.size()) * sizeof(float);
}

std::size_t KVCache::batch_size() const {
    validate("KVCache::batch_size");  // the fields are public: a 0-d key beside held values is refused
    return key.dimension() == 0 ? 0 : key.shape()[0];
}

void KVCache::reset() {
    pos = 0;
    if (window == 0 && capacity == 0) key = value = Tensor();
}

}  // namespace attn
