// The backward pass of the attention core (sdpa.hpp): attn::attend_backward, and the choice of
// backend behind it and behind scaled_dot_product_attention_backward (sdpa.cpp): the step
// arithmetic (sdpa_step.cpp), or the fast or tiled kernels (kernels/attention_backward.hpp)
// run per (batch element, key/value head) on OpenMP threads.
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <omp.h>

#include "attn/attention/sdpa_problem.hpp"
#include "attn/kernels/attention_backward.hpp"

namespace attn {

namespace detail {

namespace {

// The step backward on contiguous copies, its [B, H, T, *] results copied into the views.
void step_into(const SDPAProblem& p, const HeadsView& grad_output, const Tensor& noise,
               const GradHeads& dq, const GradHeads& dk, const GradHeads& dv) {
    const SDPAGradients g = step_backward(p, grad_output.contiguous(), noise);
    const auto copy = [&](const Tensor& t, const GradHeads& to) {
        const Shape s = shape_of(t);
        const float* src = t.data();
        for (std::size_t b = 0; b < s[0]; ++b)
            for (std::size_t h = 0; h < s[1]; ++h)
                for (std::size_t i = 0; i < s[2]; ++i, src += s[3])
                    std::copy_n(src, s[3], to.data + b * to.stride_b + h * to.stride_h + i * to.stride_t);
    };
    copy(g.grad_query, dq);
    copy(g.grad_key, dk);
    copy(g.grad_value, dv);
}

}  // namespace

void run_backward(const SDPAProblem& p, SDPABackend backend, const HeadsView& grad_output,
                  const HeadsView& output, const float* logsumexp, const Tensor& noise,
                  const GradHeads& dq, const GradHeads& dk, const GradHeads& dv) {
    if (backend == SDPABackend::step) {
        step_into(p, grad_output, noise, dq, dk, dv);
        return;
    }
    const fast::HeadMask mask = p.head_mask();
    const std::size_t tasks = p.B * p.Hkv, group = p.group();
    const double flops = 5.0 * double(p.B * p.H) * double(p.Tq) * double(p.Tk) * double(p.E + p.Ev);
    const bool large = flops >= 8e6 && tasks > 1 && !omp_in_parallel();
    std::exception_ptr error;
#pragma omp parallel if (large)
    {
        thread_local fast::BackwardWorkspace ws;
        thread_local fast::TiledBackwardWorkspace tws;
        std::vector<fast::QueryHeadGrad> heads(group);
#pragma omp for schedule(dynamic, 1)
        for (std::size_t t = 0; t < tasks; ++t) {
            try {
                const std::size_t b = t / p.Hkv, g = t % p.Hkv;
                const fast::HeadGradArgs args{
                    .K = p.k.data + b * p.k.stride_b + g * p.k.stride_h, .ldk = p.k.stride_t,
                    .V = p.v.data + b * p.v.stride_b + g * p.v.stride_h, .ldv = p.v.stride_t,
                    .dK = dk.data + b * dk.stride_b + g * dk.stride_h, .lddk = dk.stride_t,
                    .dV = dv.data + b * dv.stride_b + g * dv.stride_h, .lddv = dv.stride_t,
                    .ldq = p.q.stride_t, .ldo = grad_output.stride_t, .lddq = dq.stride_t,
                    .Tq = p.Tq, .Tk = p.Tk, .hd = p.E, .dv = p.Ev};
                for (std::size_t r = 0; r < group; ++r) {
                    const std::size_t h = g * group + r;
                    fast::QueryHeadGrad& q = heads[r];
                    q.Q = p.q.data + b * p.q.stride_b + h * p.q.stride_h;
                    q.dO = grad_output.data + b * grad_output.stride_b + h * grad_output.stride_h;
                    q.O = output.data ? output.data + b * output.stride_b + h * output.stride_h : nullptr;
                    q.logsumexp = logsumexp ? logsumexp + (b * p.H + h) * p.Tq : nullptr;
                    q.dQ = dq.data + b * dq.stride_b + h * dq.stride_h;
                    q.allow = p.allow.data ? &p.allow.at(b, h, 0, 0) : nullptr;
                    q.bias = p.bias.data ? &p.bias.at(b, h, 0, 0) : nullptr;
                    q.noise = noise.dimension() != 0 ? noise.data() + (b * p.H + h) * p.Tq * p.Tk : nullptr;
                }
                if (backend == SDPABackend::tiled)
                    fast::tiled_attend_head_backward(args, mask, heads.data(), group,
                                                     {p.options->block_q, p.options->block_k}, tws);
                else
                    fast::attend_head_backward(args, mask, heads.data(), group, ws);
            } catch (...) {
#pragma omp critical
                if (!error) error = std::current_exception();
            }
        }
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace detail

void attend_backward(const HeadsView& grad_output, const HeadsView& query, const HeadsView& key,
                     const HeadsView& value, const HeadsView& output, const AttendSaved& saved,
                     float* grad_query, float* grad_key, float* grad_value,
                     const SDPAOptions& options) {
    const std::string where = "attend_backward";
    const detail::SDPAProblem p = detail::make_problem(where, query, key, value, options);
    if (!grad_query || !grad_key || !grad_value)
        throw std::invalid_argument(where + ": expected three gradient buffers, got a null one");
    const Shape heads{p.B, p.H, p.Tq, p.Ev};
    check_same_shape(where + " (grad_output)", heads, Shape{grad_output.B, grad_output.H, grad_output.T, grad_output.hd});
    if (grad_output.stride_t < p.Ev)
        throw std::invalid_argument(where + ": grad_output's rows overlap (stride_t < Ev)");
    const Tensor& noise = saved.dropout_noise;
    if (noise.dimension() != 0)
        check_same_shape(where + " (saved.dropout_noise)", Shape{p.B, p.H, p.Tq, p.Tk}, shape_of(noise));
    else if (options.dropout_p != 0.0 && p.Tq * p.Tk != 0)
        throw std::invalid_argument(where + ": the options ask for dropout, but saved.dropout_noise is empty");
    const SDPABackend backend = options.backend == SDPABackend::automatic ? default_sdpa_backend()
                                                                          : options.backend;
    const float* lse = nullptr;
    if (backend == SDPABackend::tiled) {
        check_same_shape(where + " (output)", heads, Shape{output.B, output.H, output.T, output.hd});
        check_same_shape(where + " (saved.logsumexp)", Shape{p.B, p.H, p.Tq}, shape_of(saved.logsumexp));
        lse = saved.logsumexp.data();
    }
    // Merged layouts: [B, T, heads * width], head h in columns h * width ..
    const std::size_t wq = checked_mul(p.H, p.E, where + " (H * E)");
    const std::size_t wk = checked_mul(p.Hkv, p.E, where + " (H_kv * E)");
    const std::size_t wv = checked_mul(p.Hkv, p.Ev, where + " (H_kv * Ev)");
    const detail::GradHeads dq{grad_query, p.Tq * wq, p.E, wq};
    const detail::GradHeads dk{grad_key, p.Tk * wk, p.E, wk};
    const detail::GradHeads dv{grad_value, p.Tk * wv, p.Ev, wv};
    detail::run_backward(p, backend, grad_output, output, lse, noise, dq, dk, dv);
}

}  // namespace attn
