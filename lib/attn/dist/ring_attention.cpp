// Ring attention, forward and backward (ring_attention.hpp).
#include "attn/dist/ring_attention.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/attention/online_softmax.hpp"

namespace attn::dist {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// A run of a rank's tokens: local rows [offset, offset + length) at global positions
// position, position + stride, ...
struct Piece {
    std::size_t offset, length, position, stride;
};

std::vector<Piece> pieces_of(std::size_t c, std::size_t P, std::size_t r, SequenceSplit split) {
    switch (split) {
        case SequenceSplit::contiguous: return {{0, c, r * c, 1}};
        case SequenceSplit::zigzag: return {{0, c / 2, r * (c / 2), 1}, {c / 2, c / 2, (2 * P - 1 - r) * (c / 2), 1}};
        case SequenceSplit::striped: return {{0, c, r, P}};
    }
    throw std::invalid_argument("ring attention: unknown SequenceSplit");
}

// How the keys of piece k are visible to the queries of piece q: not at all, all of them, or
// causally with the core's query_start / key_start (the positions in units of the stride).
struct Visibility {
    enum Kind { none, all, causal } kind;
    std::size_t query_start = 0, key_start = 0;
};

Visibility visibility(const Piece& q, const Piece& k, bool is_causal) {
    if (!is_causal) return {Visibility::all};
    if (q.stride == 1) {
        if (k.position > q.position + q.length - 1) return {Visibility::none};
        if (k.position + k.length - 1 <= q.position) return {Visibility::all};
        return {Visibility::causal, q.position, k.position};
    }
    // Striped: key j at j P + k.position, query i at i P + q.position (both < P): the key is
    // visible when j <= i, or j <= i - 1 when it comes later in its stripe.
    return {Visibility::causal, 0, k.position <= q.position ? 0u : 1u};
}

std::uint64_t visible_pairs(const Visibility& v, std::size_t n, std::size_t m) {
    if (v.kind == Visibility::none) return 0;
    if (v.kind == Visibility::all) return std::uint64_t(n) * m;
    std::uint64_t pairs = 0;  // keys j with key_start + j <= query_start + i
    for (std::size_t i = 0; i < n; ++i)
        if (v.query_start + i + 1 > v.key_start)
            pairs += std::min<std::size_t>(m, v.query_start + i + 1 - v.key_start);
    return pairs;
}

HeadsView rows(HeadsView view, const Piece& p) {
    view.data += p.offset * view.stride_t;
    view.T = p.length;
    return view;
}

SDPAOptions block_options(const RingOptions& o, const Visibility& v, SDPABackend backend) {
    SDPAOptions s;
    s.is_causal = v.kind == Visibility::causal;
    s.query_start = v.query_start;
    s.key_start = v.key_start;
    s.scale = o.scale;
    s.fully_masked_rows = FullyMaskedRows::zero;  // a striped block's first row may see no key
    s.backend = backend;
    return s;
}

struct Dims {
    std::size_t B, H, Hkv, c, E, Ev;
};

// "[a, b, c, d]" (built with append: GCC 12 warns falsely about chains of operator+ at -O3)
std::string dims_text(std::initializer_list<std::string> parts) {
    std::string text("[");
    for (const std::string& p : parts) text.append(text.size() > 1 ? ", " : "").append(p);
    return text.append("]");
}

Dims check_shapes(const char* where, const Tensor& q, const Tensor& k, const Tensor& v) {
    const Shape sq = shape_of(q), sk = shape_of(k), sv = shape_of(v);
    const std::string name(where);
    check_rank(name + " (query)", sq, 4);
    using std::to_string;
    if (sk.size() != 4 || sk[0] != sq[0] || sk[2] != sq[2] || sk[3] != sq[3] || sk[1] == 0 ||
        sq[1] % sk[1] != 0)
        throw_shape_error(name + " (key)",
                          dims_text({to_string(sq[0]), "H_kv dividing " + to_string(sq[1]), to_string(sq[2]), to_string(sq[3])}), sk);
    if (sv.size() != 4 || sv[0] != sk[0] || sv[1] != sk[1] || sv[2] != sk[2])
        throw_shape_error(name + " (value)", dims_text({to_string(sk[0]), to_string(sk[1]), to_string(sk[2]), "Ev"}), sv);
    return {sq[0], sq[1], sk[1], sq[2], sq[3], sv[3]};
}

void check_split(std::size_t c, std::size_t P, SequenceSplit split) {
    if (c == 0 || (split == SequenceSplit::zigzag && c % 2 != 0))
        throw std::invalid_argument(std::string("ring attention: each rank holds ") + std::to_string(c) +
                                    " tokens; the " + split_name(split) + " split over " + std::to_string(P) +
                                    " ranks needs " + (split == SequenceSplit::zigzag ? "a positive even number" : "at least one"));
}

// What both directions start from, checked on every rank together (a rank that refuses its
// inputs makes every rank throw): the sizes, the numbers of a travelling block's keys and
// values, and this rank's query pieces.
struct RingSetup {
    Dims d{};
    std::size_t k_count = 0, v_count = 0;
    std::vector<Piece> q_pieces;
};

RingSetup ring_setup(const Communicator& comm, const std::string& where, const Tensor& query,
                     const Tensor& key, const Tensor& value, SequenceSplit split,
                     const std::function<void(const Dims&)>& more_checks = nullptr) {
    RingSetup s;
    const std::size_t P = std::size_t(comm.size());
    comm.require_same(query.dimension() == 4 ? query.shape()[2] : 0, where + ": the tokens each rank holds");
    comm.all_or_none([&] {
        s.d = check_shapes(where.c_str(), query, key, value);
        check_split(s.d.c, P, split);
        if (more_checks) more_checks(s.d);
    });
    s.k_count = s.d.B * s.d.Hkv * s.d.c * s.d.E;
    s.v_count = s.d.B * s.d.Hkv * s.d.c * s.d.Ev;
    comm.require_same(s.k_count + s.v_count, where + ": the key and value numbers each rank holds");
    s.q_pieces = pieces_of(s.d.c, P, std::size_t(comm.rank()), split);
    return s;
}

// The keys and values of a travelling block (keys first, then values), as [B, Hkv, c, width].
HeadsView block_keys(float* base, const Dims& d) {
    return {base, d.B, d.Hkv, d.c, d.E, d.Hkv * d.c * d.E, d.c * d.E, d.E};
}
HeadsView block_values(float* base, const Dims& d) {
    return {base + d.B * d.Hkv * d.c * d.E, d.B, d.Hkv, d.c, d.Ev, d.Hkv * d.c * d.Ev, d.c * d.Ev, d.Ev};
}

// One step's pairs of (query piece of this rank, key piece of `owner`): each one's visible
// (query, key) pairs added to step.pairs, and f(query piece, key piece, visibility) called for
// those with any.
template <class F>
void for_each_piece_pair(const RingSetup& s, std::size_t P, std::size_t owner, const RingOptions& o,
                         RingStep& step, F&& f) {
    for (const Piece& qp : s.q_pieces)
        for (const Piece& kp : pieces_of(s.d.c, P, owner, o.split)) {
            const Visibility vis = visibility(qp, kp, o.is_causal);
            step.pairs += visible_pairs(vis, qp.length, kp.length);
            if (vis.kind != Visibility::none) f(qp, kp, vis);  // else every key follows every query
        }
}

}  // namespace

const char* split_name(SequenceSplit split) {
    switch (split) {
        case SequenceSplit::contiguous: return "contiguous";
        case SequenceSplit::zigzag: return "zigzag";
        case SequenceSplit::striped: return "striped";
    }
    throw std::invalid_argument("split_name: SequenceSplit " + std::to_string(int(split)) + " is not a split");
}

std::vector<std::size_t> rank_positions(std::size_t T, std::size_t ranks, std::size_t rank,
                                        SequenceSplit split) {
    if (ranks == 0 || rank >= ranks)
        throw std::invalid_argument("rank_positions: expected rank < ranks, got rank " + std::to_string(rank) +
                                    " of " + std::to_string(ranks));
    const std::size_t unit = split == SequenceSplit::zigzag ? 2 * ranks : ranks;
    if (T == 0 || T % unit != 0)
        throw std::invalid_argument(std::string("rank_positions: the ") + split_name(split) + " split of " +
                                    std::to_string(T) + " tokens over " + std::to_string(ranks) +
                                    " ranks needs T a positive multiple of " + std::to_string(unit) +
                                    " (T mod " + std::to_string(unit) + " = " + std::to_string(T % unit) + ")");
    std::vector<std::size_t> positions;
    for (const Piece& p : pieces_of(T / ranks, ranks, rank, split))
        for (std::size_t i = 0; i < p.length; ++i) positions.push_back(p.position + i * p.stride);
    return positions;
}

Tensor shard(const Tensor& x, std::size_t ranks, std::size_t rank, SequenceSplit split) {
    const Shape s = shape_of(x);
    check_rank("shard", s, 4);
    const std::vector<std::size_t> pos = rank_positions(s[2], ranks, rank, split);
    Tensor out = Tensor::from_shape({s[0], s[1], pos.size(), s[3]});
    for (std::size_t bh = 0; bh < s[0] * s[1]; ++bh)
        for (std::size_t i = 0; i < pos.size(); ++i)
            std::copy_n(x.data() + (bh * s[2] + pos[i]) * s[3], s[3], out.data() + (bh * pos.size() + i) * s[3]);
    return out;
}

Tensor unshard(const Communicator& comm, const Tensor& local, SequenceSplit split) {
    const Shape s = shape_of(local);
    check_rank("unshard", s, 4);
    const std::size_t P = std::size_t(comm.size()), T = s[2] * P;
    const std::vector<float> all = comm.all_gather(local.data(), local.size());
    Tensor out = Tensor::from_shape({s[0], s[1], T, s[3]});
    for (std::size_t r = 0; r < P; ++r) {
        const std::vector<std::size_t> pos = rank_positions(T, P, r, split);
        const float* block = all.data() + r * local.size();
        for (std::size_t bh = 0; bh < s[0] * s[1]; ++bh)
            for (std::size_t i = 0; i < s[2]; ++i)
                std::copy_n(block + (bh * s[2] + i) * s[3], s[3], out.data() + (bh * T + pos[i]) * s[3]);
    }
    return out;
}

RingForward ring_attention_forward(const Communicator& comm, const Tensor& query,
                                   const Tensor& key, const Tensor& value,
                                   const RingOptions& options) {
    const std::size_t P = std::size_t(comm.size()), r = std::size_t(comm.rank());
    const RingSetup setup = ring_setup(comm, "ring_attention_forward", query, key, value, options.split);
    const Dims& d = setup.d;
    const std::size_t kv_count = setup.k_count + setup.v_count;

    RingForward result;
    result.output = xt::zeros<float>({d.B, d.H, d.c, d.Ev});
    result.logsumexp = Tensor::from_shape({d.B, d.H, d.c});
    result.logsumexp.fill(-std::numeric_limits<float>::infinity());  // no key seen yet
    // The travelling block, keys then values, and the buffer the next one arrives in.
    std::vector<float> block(kv_count), arriving(kv_count);
    std::copy_n(key.data(), setup.k_count, block.data());
    std::copy_n(value.data(), setup.v_count, block.data() + setup.k_count);
    const HeadsView q_view = HeadsView::of(query);
    std::vector<float> part;
    AttendSaved saved;

    for (std::size_t s = 0; s < P; ++s) {
        const std::size_t owner = (r + P - s) % P;
        const bool last = s + 1 == P;
        Communicator::Shift shift;
        if (options.overlap && !last) shift = comm.start_ring_shift(block.data(), arriving.data(), kv_count);
        const auto start = Clock::now();
        const HeadsView k_view = block_keys(block.data(), d), v_view = block_values(block.data(), d);
        RingStep step{owner, 0, 0, 0};
        for_each_piece_pair(setup, P, owner, options, step, [&](const Piece& qp, const Piece& kp, const Visibility& vis) {
            part.resize(d.B * qp.length * d.H * d.Ev);
            attend(rows(q_view, qp), rows(k_view, kp), rows(v_view, kp), part.data(),
                   block_options(options, vis, options.backend), saved);
            // Merge the part ([B, n, H * Ev], lse [B, H, n]) into this rank's rows.
            for (std::size_t b = 0; b < d.B; ++b)
                for (std::size_t h = 0; h < d.H; ++h)
                    for (std::size_t i = 0; i < qp.length; ++i) {
                        const std::size_t row = (b * d.H + h) * d.c + qp.offset + i;
                        flash::merge_partial(result.output.data() + row * d.Ev, result.logsumexp.data()[row],
                                             part.data() + ((b * qp.length + i) * d.H + h) * d.Ev,
                                             saved.logsumexp.data()[(b * d.H + h) * qp.length + i], d.Ev);
                    }
        });
        step.compute_seconds = seconds_since(start);
        const auto waited = Clock::now();
        if (!last) {
            if (options.overlap) shift.wait();
            else comm.ring_shift(block.data(), arriving.data(), kv_count);
            std::swap(block, arriving);
        }
        step.wait_seconds = seconds_since(waited);
        result.steps.push_back(step);
    }
    return result;
}

RingGradients ring_attention_backward(const Communicator& comm, const Tensor& grad_output,
                                      const Tensor& query, const Tensor& key,
                                      const Tensor& value, const RingForward& forward,
                                      const RingOptions& options) {
    const std::size_t P = std::size_t(comm.size()), r = std::size_t(comm.rank());
    const RingSetup setup = ring_setup(comm, "ring_attention_backward", query, key, value, options.split, [&](const Dims& d) {
        check_same_shape("ring_attention_backward (grad_output)", {d.B, d.H, d.c, d.Ev}, shape_of(grad_output));
        check_same_shape("ring_attention_backward (forward.output)", {d.B, d.H, d.c, d.Ev}, shape_of(forward.output));
        check_same_shape("ring_attention_backward (forward.logsumexp)", {d.B, d.H, d.c}, shape_of(forward.logsumexp));
    });
    const Dims& d = setup.d;
    const std::size_t k_count = setup.k_count, v_count = setup.v_count, kv_count = k_count + v_count;

    RingGradients result;
    result.grad_query = xt::zeros<float>({d.B, d.H, d.c, d.E});
    // The travelling block: keys, values, then their gradients so far.
    std::vector<float> block(2 * kv_count, 0.0f), arriving(2 * kv_count);
    std::copy_n(key.data(), k_count, block.data());
    std::copy_n(value.data(), v_count, block.data() + k_count);
    const HeadsView q_view = HeadsView::of(query), do_view = HeadsView::of(grad_output),
                    o_view = HeadsView::of(forward.output);
    std::vector<float> gq, gk, gv;
    AttendSaved saved;
    // Adds merged-layout gradients ([B, len, heads, width]) into [B, heads, c, width] rows.
    auto add = [&](float* to, const float* from, std::size_t heads, std::size_t len, std::size_t width, const Piece& p) {
        for (std::size_t b = 0; b < d.B; ++b)
            for (std::size_t h = 0; h < heads; ++h)
                for (std::size_t i = 0; i < len; ++i) {
                    float* dst = to + ((b * heads + h) * d.c + p.offset + i) * width;
                    const float* src = from + ((b * len + i) * heads + h) * width;
                    for (std::size_t e = 0; e < width; ++e) dst[e] += src[e];
                }
    };

    for (std::size_t s = 0; s < P; ++s) {
        const std::size_t owner = (r + P - s) % P;
        const auto start = Clock::now();
        float* base = block.data();
        const HeadsView k_view = block_keys(base, d), v_view = block_values(base, d);
        float* dk = base + kv_count;
        float* dv = dk + k_count;
        RingStep step{owner, 0, 0, 0};
        for_each_piece_pair(setup, P, owner, options, step, [&](const Piece& qp, const Piece& kp, const Visibility& vis) {
            const std::size_t n = qp.length, m = kp.length;
            saved.logsumexp = Tensor::from_shape({d.B, d.H, n});
            for (std::size_t bh = 0; bh < d.B * d.H; ++bh)
                std::copy_n(forward.logsumexp.data() + bh * d.c + qp.offset, n, saved.logsumexp.data() + bh * n);
            gq.resize(d.B * n * d.H * d.E);
            gk.resize(d.B * m * d.Hkv * d.E);
            gv.resize(d.B * m * d.Hkv * d.Ev);
            attend_backward(rows(do_view, qp), rows(q_view, qp), rows(k_view, kp), rows(v_view, kp),
                            rows(o_view, qp), saved, gq.data(), gk.data(), gv.data(),
                            block_options(options, vis, SDPABackend::tiled));
            add(result.grad_query.data(), gq.data(), d.H, n, d.E, qp);
            add(dk, gk.data(), d.Hkv, m, d.E, kp);
            add(dv, gv.data(), d.Hkv, m, d.Ev, kp);
        });
        step.compute_seconds = seconds_since(start);
        const auto waited = Clock::now();
        // The block with its gradients goes on; after the last step only the gradients travel,
        // one rank further, which is their owner.
        if (s + 1 < P) comm.ring_shift(block.data(), arriving.data(), 2 * kv_count);
        else comm.ring_shift(block.data() + kv_count, arriving.data() + kv_count, kv_count);
        std::swap(block, arriving);
        step.wait_seconds = seconds_since(waited);
        result.steps.push_back(step);
    }
    result.grad_key = Tensor::from_shape({d.B, d.Hkv, d.c, d.E});
    result.grad_value = Tensor::from_shape({d.B, d.Hkv, d.c, d.Ev});
    std::copy_n(block.data() + kv_count, k_count, result.grad_key.data());
    std::copy_n(block.data() + kv_count + k_count, v_count, result.grad_value.data());
    return result;
}

}  // namespace attn::dist
