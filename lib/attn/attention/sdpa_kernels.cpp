// The fast and the tiled backends of the attention core (sdpa_problem.hpp): the fused kernels
// (kernels/fused_attention.hpp, kernels/attention_backward.hpp) and FlashAttention's tiles
// (kernels/tiled_attention.hpp), run per (batch element, key/value head) on OpenMP threads,
// forward and backward beside each other.
#include <exception>
#include <vector>

#include <omp.h>

#include "attn/attention/sdpa_problem.hpp"
#include "attn/kernels/attention_backward.hpp"
#include "attn/kernels/fused_attention.hpp"
#include "attn/kernels/tiled_attention.hpp"

namespace attn::detail {

namespace {

// Runs task(b, g, heads) for every batch element b and key/value head g, `heads` the calling
// thread's p.group() slots (Head: fast::QueryHead or fast::QueryHeadGrad) for the query heads
// that share g, every field of which the task sets: on an OpenMP team, one key head at a time
// (dynamic schedule), when the work is large enough to share (`flops` at least 8e6, more than
// one key head, not already inside a team), else on the calling thread. No exception may leave
// an OpenMP region: the first one is carried out and rethrown here.
template <class Head, class Task>
void for_each_key_head(const SDPAProblem& p, double flops, Task task) {
    const std::size_t tasks = p.B * p.Hkv;
    const bool large = flops >= 8e6 && tasks > 1 && !omp_in_parallel();
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) if (large)
    for (std::size_t t = 0; t < tasks; ++t) {
        try {
            thread_local std::vector<Head> heads;
            heads.resize(p.group());
            task(t / p.Hkv, t % p.Hkv, heads);
        } catch (...) {
#pragma omp critical
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

// Runs the fast or tiled kernel over every (batch, key/value head), each with the group of
// query heads that shares it. `lse` ([B, H, Tq]) is filled when not null. `arithmetic` (exact
// or fma, resolved: the team does not see the caller's guard) is the fast kernel's.
void run_kernels(const SDPAProblem& p, bool tiled, const OutLayout& out, const Tensor& noise, float* lse,
                 Arithmetic arithmetic = Arithmetic::exact) {
    if ((p.Ev == 0 && !lse) || p.B == 0 || p.H == 0 || p.Tq == 0) return;  // nothing to write
    const fast::HeadMask mask = p.head_mask();
    const std::size_t group = p.group();
    const double flops = 2.0 * double(p.B * p.H) * double(p.Tq) * double(p.Tk) * double(p.E + p.Ev);
    for_each_key_head<fast::QueryHead>(p, flops, [&](std::size_t b, std::size_t g,
                                                     std::vector<fast::QueryHead>& heads) {
        thread_local fast::HeadWorkspace ws;
        thread_local fast::TiledWorkspace tws;
        const fast::HeadArgs args{
            .K = at_offset(p.k.data, b * p.k.stride_b + g * p.k.stride_h), .ldk = p.k.stride_t,
            .V = at_offset(p.v.data, b * p.v.stride_b + g * p.v.stride_h), .ldv = p.v.stride_t,
            .ldq = p.q.stride_t, .ldo = out.ld(p), .Tq = p.Tq, .Tk = p.Tk, .hd = p.E,
            .dv = p.Ev};
        for (std::size_t r = 0; r < group; ++r) {
            const std::size_t h = g * group + r;
            fast::QueryHead& q = heads[r];
            q.Q = at_offset(p.q.data, b * p.q.stride_b + h * p.q.stride_h);
            q.O = out.head(p, b, h);
            q.allow = p.allow.data ? &p.allow.at(b, h, 0, 0) : nullptr;
            q.bias = p.bias.data ? &p.bias.at(b, h, 0, 0) : nullptr;
            q.noise = noise.dimension() != 0 ? at_offset(noise.data(), (b * p.H + h) * p.Tq * p.Tk) : nullptr;
            q.alibi_slope = p.alibi ? p.alibi[h] : 0.0f;
            q.logsumexp = at_offset(lse, (b * p.H + h) * p.Tq);
        }
        if (tiled)
            fast::tiled_attend_head(args, mask, heads.data(), group,
                                    {p.options->block_q, p.options->block_k}, tws);
        else
            fast::attend_head(args, mask, heads.data(), group, ws, fast::stage_all, arithmetic);
    });
}

// Runs the fast or tiled backward over every (batch, key/value head), each with the group of
// query heads that shares it; a key head's dK and dV sum over its group. `arithmetic` as for
// run_kernels.
void run_backward(const SDPAProblem& p, bool tiled, const BackwardArgs& a, Arithmetic arithmetic = Arithmetic::exact) {
    const HeadsView& grad_output = a.grad_output;
    const HeadsView& output = a.output;
    const float* logsumexp = a.logsumexp;
    const Tensor& noise = *a.noise;
    const GradHeads &dq = a.dq, &dk = a.dk, &dv = a.dv;
    // No gradient to write (every one empty): no walk over 2^40 empty heads.
    if (p.B == 0 || p.H == 0 || (p.Tq * p.E == 0 && p.Tk * (p.E + p.Ev) == 0)) return;
    const fast::HeadMask mask = p.head_mask();
    const std::size_t tasks = p.B * p.Hkv, group = p.group();
    if (tasks == 0) return;  // no (batch, key head): nothing to write, no group to size
    const double flops = 5.0 * double(p.B * p.H) * double(p.Tq) * double(p.Tk) * double(p.E + p.Ev);
    for_each_key_head<fast::QueryHeadGrad>(p, flops, [&](std::size_t b, std::size_t g,
                                                         std::vector<fast::QueryHeadGrad>& heads) {
        thread_local fast::BackwardWorkspace ws;
        thread_local fast::TiledBackwardWorkspace tws;
        const fast::HeadGradArgs args{
            .K = at_offset(p.k.data, b * p.k.stride_b + g * p.k.stride_h), .ldk = p.k.stride_t,
            .V = at_offset(p.v.data, b * p.v.stride_b + g * p.v.stride_h), .ldv = p.v.stride_t,
            .dK = at_offset(dk.data, b * dk.stride_b + g * dk.stride_h), .lddk = dk.stride_t,
            .dV = at_offset(dv.data, b * dv.stride_b + g * dv.stride_h), .lddv = dv.stride_t,
            .ldq = p.q.stride_t, .ldo = grad_output.stride_t, .lddq = dq.stride_t,
            .Tq = p.Tq, .Tk = p.Tk, .hd = p.E, .dv = p.Ev};
        for (std::size_t r = 0; r < group; ++r) {
            const std::size_t h = g * group + r;
            fast::QueryHeadGrad& q = heads[r];
            q.Q = at_offset(p.q.data, b * p.q.stride_b + h * p.q.stride_h);
            q.dO = at_offset(grad_output.data, b * grad_output.stride_b + h * grad_output.stride_h);
            q.O = at_offset(output.data, b * output.stride_b + h * output.stride_h);
            q.logsumexp = at_offset(logsumexp, (b * p.H + h) * p.Tq);
            q.dQ = at_offset(dq.data, b * dq.stride_b + h * dq.stride_h);
            q.allow = p.allow.data ? &p.allow.at(b, h, 0, 0) : nullptr;
            q.bias = p.bias.data ? &p.bias.at(b, h, 0, 0) : nullptr;
            q.noise = noise.dimension() != 0 ? at_offset(noise.data(), (b * p.H + h) * p.Tq * p.Tk) : nullptr;
            q.alibi_slope = p.alibi ? p.alibi[h] : 0.0f;
        }
        if (tiled)
            fast::tiled_attend_head_backward(args, mask, heads.data(), group,
                                             {p.options->block_q, p.options->block_k}, tws);
        else
            fast::attend_head_backward(args, mask, heads.data(), group, ws, arithmetic);
    });
}

}  // namespace

void fast_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp) {
    run_kernels(p, /*tiled=*/false, out, noise, logsumexp);
}

void tiled_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp) {
    run_kernels(p, /*tiled=*/true, out, noise, logsumexp);
}

void fast_backward(const SDPAProblem& p, const BackwardArgs& args) { run_backward(p, /*tiled=*/false, args); }

void tiled_backward(const SDPAProblem& p, const BackwardArgs& args) { run_backward(p, /*tiled=*/true, args); }

void fast_fma_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp) {
    run_kernels(p, /*tiled=*/false, out, noise, logsumexp, Arithmetic::fma);
}

void fast_fma_backward(const SDPAProblem& p, const BackwardArgs& args) {
    run_backward(p, /*tiled=*/false, args, Arithmetic::fma);
}

}  // namespace attn::detail
