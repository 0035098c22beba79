/// @file optim.hpp
/// @brief `torch.optim.SGD` and `torch.optim.AdamW` as PyTorch 1.13 defines them, float
/// operation for float operation.
///
/// PyTorch 1.13 runs both, on the CPU, in their single-tensor (for-loop) form
/// (`_single_tensor_sgd` in torch/optim/sgd.py, `_single_tensor_adamw` in adamw.py; `foreach`
/// defaults to false there). Each in-place tensor operation of that loop is one float32
/// operation per element, with Python's scalars (`lr`, `1 - beta1`, ...) computed in double
/// and rounded to float32 once, as the kernel's `Scalar::to<float>()` does. PyTorch's CPU
/// kernels fuse two of them into one rounding: `a.add_(b, alpha=s)` is `fma(b, s, a)` and
/// `a.addcmul_(b, c, value=s)` is `fma(s * b, c, a)` (checked on Debian's python3-torch
/// 1.13.1, AVX2 build, for vector and tail elements alike); the update rules below write
/// them as `fma`. With that, the parameters after 50 steps are PyTorch's bits
/// (tests/test_optim.cpp, data/oracle/optim.json).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "attn/nn/nn.hpp"

namespace attn::optim {

/// What both optimizers share: the parameters, in `named_parameters()` order, and
/// `zero_grad`. A parameter whose `.grad` is empty is skipped by `step`, as PyTorch skips a
/// parameter whose `grad` is None (its state is created at its first gradient).
class Optimizer {
public:
    /// @throws std::invalid_argument when a parameter's `value` or `grad` pointer is null.
    explicit Optimizer(std::vector<nn::NamedParameter> parameters);
    virtual ~Optimizer() = default;

    /// `optimizer.zero_grad(set_to_none)` (torch/optim/optimizer.py, 1.13: `set_to_none`
    /// defaults to false): every existing `.grad` is filled with zeros in place (an empty one
    /// stays empty); with `set_to_none`, every `.grad` becomes empty.
    void zero_grad(bool set_to_none = false);

    /// `optimizer.step()`: one update of every parameter that has a gradient.
    /// @throws std::invalid_argument when a `.grad` does not have its parameter's shape, or the
    /// options (public fields) are invalid; nothing is updated then.
    virtual void step() = 0;

    /// The parameters, in the order given (`named_parameters()` order).
    const std::vector<nn::NamedParameter>& parameters() const { return parameters_; }

    /// `optimizer.param_groups[0]["lr"]`: the learning rate of the next `step()` (the
    /// parameters form one group), the options' `lr`, a Python float (double). Throws nothing.
    /// Source: torch.optim.Optimizer's `param_groups` (PyTorch 1.13), as his appendix D reads it.
    virtual double lr() const = 0;
    /// `for param_group in optimizer.param_groups: param_group["lr"] = lr` (a schedule's
    /// update between steps, his appendix D In [6], In [8], In [13]). Throws nothing: the value
    /// is checked by the next `step()` (std::invalid_argument for NaN or a negative rate, before
    /// any parameter moves), as PyTorch checks its options.
    virtual void set_lr(double lr) = 0;

protected:
    /// Checks every gradient's shape against its parameter before anything moves.
    void check_grads(const char* where) const;

    std::vector<nn::NamedParameter> parameters_;  ///< pointers into the module
};

/// `torch.optim.SGD`'s hyperparameters, with its defaults (`lr` has none there; 0.001 here).
struct SGDOptions {
    double lr = 1e-3;            ///< learning rate, >= 0
    double momentum = 0.0;       ///< >= 0; 0 means no momentum buffer
    double dampening = 0.0;      ///< scales the new gradient into the buffer by `1 - dampening`
    double weight_decay = 0.0;   ///< L2 penalty added to the gradient, >= 0
    bool nesterov = false;       ///< Nesterov momentum (needs momentum > 0, dampening 0)

    /// @throws std::invalid_argument with PyTorch's message ("Invalid learning rate: -1.0",
    /// "Nesterov momentum requires a momentum and zero dampening") for a negative or NaN
    /// `lr`, `momentum`, `weight_decay`, or Nesterov without momentum or with dampening.
    void validate() const;
};

/// `torch.optim.SGD(params, lr, momentum, dampening, weight_decay, nesterov)`. Per element of
/// each parameter `p` with gradient `g` (float32; scalars rounded to float32 once):
/// ```
/// d = g                                    weight_decay == 0
/// d = fma(p, weight_decay, g)              d_p.add(param, alpha=weight_decay)
/// buf = d                                  first step: torch.clone(d_p)
/// buf = fma(d, 1 - dampening, buf * momentum)   buf.mul_(momentum).add_(d_p, alpha=1-dampening)
/// d = fma(buf, momentum, d)  (nesterov)  or  d = buf
/// p = fma(d, -lr, p)                       param.add_(d_p, alpha=-lr)
/// ```
/// Source: torch/optim/sgd.py, `_single_tensor_sgd`, PyTorch 1.13.
class SGD : public Optimizer {
public:
    /// @throws std::invalid_argument as `SGDOptions::validate` or `Optimizer`.
    SGD(std::vector<nn::NamedParameter> parameters, SGDOptions options);

    /// One SGD step (see the class). @throws as `Optimizer::step`.
    void step() override;
    double lr() const override { return options.lr; }          ///< `options.lr`
    void set_lr(double lr) override { options.lr = lr; }       ///< sets `options.lr`

    SGDOptions options;  ///< may be changed between steps (e.g. a learning-rate schedule)

private:
    std::vector<std::optional<Tensor>> momentum_buffer_;  // state['momentum_buffer']
};

/// `torch.optim.AdamW`'s hyperparameters, with its defaults.
struct AdamWOptions {
    double lr = 1e-3;            ///< learning rate, >= 0
    double beta1 = 0.9;          ///< `betas[0]`, in [0, 1)
    double beta2 = 0.999;        ///< `betas[1]`, in [0, 1)
    double eps = 1e-8;           ///< added to the denominator, >= 0
    double weight_decay = 1e-2;  ///< decoupled decay: `p *= 1 - lr * weight_decay`, >= 0

    /// @throws std::invalid_argument with PyTorch's message ("Invalid learning rate: -1.0",
    /// "Invalid beta parameter at index 0: 1.0", "Invalid epsilon value: ...", "Invalid
    /// weight_decay value: ...") when a value is out of range or NaN.
    void validate() const;
};

/// `torch.optim.AdamW(params, lr, betas, eps, weight_decay)` (Loshchilov & Hutter 2019,
/// decoupled weight decay; amsgrad and maximize are not offered). Per element, at step `t`
/// (counted per parameter from 1; float32 unless marked double):
/// ```
/// p = p * (1 - lr * weight_decay)              param.mul_(1 - lr * weight_decay)
/// m = fma(g, 1 - beta1, m * beta1)             exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
/// v = fma((1 - beta2) * g, g, v * beta2)       exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
/// step_size = lr / (1 - beta1^t)               double (Python floats)
/// bc2_sqrt = sqrt(1 - beta2^t)                 double (math.sqrt)
/// denom = sqrt(v) / bc2_sqrt + eps             (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
/// p = p + (-step_size * m) / denom             param.addcdiv_(exp_avg, denom, value=-step_size)
/// ```
/// `m` and `v` start at zero. Source: torch/optim/adamw.py, `_single_tensor_adamw`, PyTorch
/// 1.13 (its `step` is a float32 tensor; exact for the step counts used here, below 2^24).
class AdamW : public Optimizer {
public:
    /// @throws std::invalid_argument as `AdamWOptions::validate` or `Optimizer`.
    AdamW(std::vector<nn::NamedParameter> parameters, AdamWOptions options = {});

    /// One AdamW step (see the class). @throws as `Optimizer::step`.
    void step() override;
    double lr() const override { return options.lr; }          ///< `options.lr`
    void set_lr(double lr) override { options.lr = lr; }       ///< sets `options.lr`

    AdamWOptions options;  ///< may be changed between steps

    /// One parameter's state, as `optimizer.state[p]` holds it.
    struct State {
        std::int64_t step = 0;  ///< `state['step']`: steps taken with a gradient
        Tensor exp_avg;         ///< `state['exp_avg']` (m), the parameter's shape
        Tensor exp_avg_sq;      ///< `state['exp_avg_sq']` (v), the parameter's shape
    };
    /// The state of every parameter, in `parameters()` order (step 0 and empty tensors until
    /// the parameter's first gradient).
    const std::vector<State>& state() const { return state_; }
    /// Replaces the state of every parameter (what `optimizer.load_state_dict` restores; see
    /// `optim::load_state_dict` in nn/state_dict.hpp), in `parameters()` order. A state of step
    /// 0 is "no state yet" (its tensors are cleared); a state of step `t > 0` must hold
    /// `exp_avg` and `exp_avg_sq` of its parameter's shape. The next `step()` goes on from step
    /// `t + 1`, as PyTorch's after a reload.
    /// @throws std::invalid_argument when the count differs from the parameters', a step is
    /// negative, or a tensor's shape is not its parameter's (naming the parameter); nothing
    /// is changed then.
    void set_state(std::vector<State> state);

private:
    std::vector<State> state_;
};

}  // namespace attn::optim
