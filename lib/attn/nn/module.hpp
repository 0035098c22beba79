/// @file module.hpp
/// @brief What every module shares, as `torch.nn.Module` gives it to PyTorch's: training mode,
/// submodules in registration order, parameters, `zero_grad`, and the repr built from them.
///
/// A module says once what it holds (`children`, `own_parameters`) and what it is called
/// (`type_name`, `extra_repr`); `train`/`eval`, `named_parameters`, `zero_grad` and `repr`
/// follow from that, as `nn.Module` derives them from `_modules` and `_parameters`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::nn {

/// One parameter of a module as `module.named_parameters()` yields it: its dotted name
/// (`"W_query.weight"`), its value, and its gradient `.grad`, which is empty (PyTorch's `None`)
/// until a backward pass fills it. Both point into the module, which must outlive them.
struct NamedParameter {
    std::string name;             ///< the dotted name, as PyTorch prints it
    Tensor* value;                ///< the parameter (`param.data`)
    std::optional<Tensor>* grad;  ///< `param.grad`: empty until the first backward
};

/// One persistent buffer of a module as `module.named_buffers()` yields it: its dotted name
/// (`"trf_blocks.0.att.mask"`) and its value, which points into the module. A buffer is state
/// that is not trained (`register_buffer`, persistent by default): `state_dict` holds it.
struct NamedBuffer {
    std::string name;  ///< the dotted name, as PyTorch prints it
    Tensor* value;     ///< the buffer
};

/// `optimizer.zero_grad(set_to_none)` / `module.zero_grad(set_to_none)` over `parameters`, as
/// PyTorch 1.13 defines it (`torch/nn/modules/module.py`): with `set_to_none` (PyTorch 1.13's
/// default is false) every `.grad` becomes empty; otherwise every existing `.grad` is filled
/// with zeros in place and an empty one stays empty.
void zero_grad(const std::vector<NamedParameter>& parameters, bool set_to_none = false);

class Module;

/// A registered submodule: its attribute name (`"W_query"`, `"0"` in a list) and the module,
/// which lives inside its parent.
struct NamedChild {
    std::string name;  ///< the attribute name, as repr and `named_parameters` print it
    Module* module;    ///< the submodule (never null)
};

/// The base of every layer and module of the library (`torch.nn.Module`): a module overrides
/// `type_name` and, as it holds them, `children` (its submodules in PyTorch's registration
/// order), `own_parameters` (its `nn.Parameter`s) and `extra_repr` (a leaf's arguments).
/// Modules are values: copying one copies its submodules and parameters.
class Module {
public:
    virtual ~Module() = default;

    /// PyTorch's class name, as repr prints it (`"Linear"`, `"MultiHeadAttention"`).
    virtual std::string type_name() const = 0;
    /// The text between a module's parentheses before its children (`nn.Module.extra_repr`):
    /// `"in_features=3, out_features=2, bias=False"` for a `Linear`; empty by default.
    virtual std::string extra_repr() const { return {}; }
    /// The submodules in registration order (`nn.Module._modules`); none by default. Reading
    /// them changes nothing: `repr` calls it on a const module.
    virtual std::vector<NamedChild> children() { return {}; }
    /// The module's own parameters, names without a prefix (`nn.Module._parameters`: a
    /// `Linear`'s `weight` and `bias`); none by default.
    virtual std::vector<NamedParameter> own_parameters() { return {}; }
    /// The module's own persistent buffers, names without a prefix (`nn.Module._buffers`
    /// registered with `persistent=True`: Raschka's `MultiHeadAttention.mask`); none by default.
    virtual std::vector<NamedBuffer> own_buffers() { return {}; }

    /// `module.train(mode)`: sets `training` on this module and every submodule (dropout is
    /// active in training mode, the default).
    void train(bool mode = true);
    /// `module.eval()`: `train(false)`.
    void eval() { train(false); }

    /// `module.named_parameters(prefix)`: this module's own parameters, then each child's
    /// (depth first, registration order), names joined with dots (`"trf_blocks.0.att.W_query.weight"`).
    std::vector<NamedParameter> named_parameters(const std::string& prefix = "");
    /// `module.named_buffers(prefix)` of the persistent buffers: this module's own, then each
    /// child's (depth first, registration order), names joined with dots.
    std::vector<NamedBuffer> named_buffers(const std::string& prefix = "");
    /// `module.zero_grad(set_to_none)` over `named_parameters()` (see `nn::zero_grad`).
    void zero_grad(bool set_to_none = false) { nn::zero_grad(named_parameters(), set_to_none); }

    bool training = true;  ///< `module.training`: true after construction, as in PyTorch

protected:
    /// A module in training mode.
    Module() = default;
    /// Copies `training` (the derived module copies what it holds).
    Module(const Module&) = default;
    /// Moves `training`.
    Module(Module&&) = default;
    /// Copies `training`.
    Module& operator=(const Module&) = default;
    /// Moves `training`.
    Module& operator=(Module&&) = default;
};

/// `repr(module)` as PyTorch 1.13's `nn.Module.__repr__` prints it: `Name(extra)` for a leaf,
/// otherwise `Name(` then the extra lines and one `(name): child` line per child, each
/// indented by two spaces (a child's own later lines by two more: `_addindent`), then `)`.
std::string repr(const Module& module);

/// `torch.nn.ModuleList` of modules of one type: its children are named `"0"`, `"1"`, ...
/// Reads like the `std::vector` it holds (`size`, `[]`, `at`, range-for, `push_back`).
template <class M>
class ModuleList : public Module {
public:
    ModuleList() = default;
    /// Takes the modules in order.
    explicit ModuleList(std::vector<M> modules) : modules_(std::move(modules)) {}

    std::string type_name() const override { return "ModuleList"; }
    std::vector<NamedChild> children() override {
        std::vector<NamedChild> out;
        for (std::size_t i = 0; i < modules_.size(); ++i) out.push_back({std::to_string(i), &modules_[i]});
        return out;
    }

    std::size_t size() const { return modules_.size(); }                ///< `len(list)`
    bool empty() const { return modules_.empty(); }                     ///< `len(list) == 0`
    M& operator[](std::size_t i) { return modules_[i]; }                ///< `list[i]`
    const M& operator[](std::size_t i) const { return modules_[i]; }    ///< `list[i]`
    /// `list[i]`. @throws std::out_of_range when `i >= size()`.
    M& at(std::size_t i) { return modules_.at(i); }
    /// `list[i]`. @throws std::out_of_range when `i >= size()`.
    const M& at(std::size_t i) const { return modules_.at(i); }
    void push_back(M m) { modules_.push_back(std::move(m)); }           ///< `list.append(m)`
    /// `list.append(M(args...))`: builds the module in place (its draws happen here).
    template <class... Args>
    M& emplace_back(Args&&... args) { return modules_.emplace_back(std::forward<Args>(args)...); }
    void reserve(std::size_t n) { modules_.reserve(n); }                ///< room for `n` modules
    auto begin() { return modules_.begin(); }                           ///< iteration
    auto end() { return modules_.end(); }                               ///< iteration
    auto begin() const { return modules_.begin(); }                     ///< iteration
    auto end() const { return modules_.end(); }                         ///< iteration

private:
    std::vector<M> modules_;
};

/// `torch.nn.Sequential(*[M(...) for _ in range(n)])` (Raschka's `trf_blocks`): a `ModuleList`
/// that PyTorch names `Sequential` (its repr and its children `"0"`, `"1"`, ... are a list's)
/// and whose forward runs the modules in order, `x = m(x, args...)` for each.
template <class M>
class SequentialList : public ModuleList<M> {
public:
    using ModuleList<M>::ModuleList;

    std::string type_name() const override { return "Sequential"; }

    /// `forward(x)`: each module applied in turn to the previous one's output.
    template <class X, class... Args>
    X operator()(X x, Args&&... args) const {
        for (const M& m : *this) x = m(x, args...);
        return x;
    }
};

/// `torch.nn.Sequential(m0, m1, ...)` of modules of different types (Raschka's
/// `FeedForward.layers`: `Linear`, `GELU`, `Linear`): children `"0"`, `"1"`, ... in order,
/// `get<i>()` for `layers[i]`, and a forward that runs them in turn, `x = m(x)`.
template <class... Ms>
class Sequential : public Module {
public:
    /// Takes the modules in order (their draws happened where they were built).
    explicit Sequential(Ms... modules) : modules_(std::move(modules)...) {}

    std::string type_name() const override { return "Sequential"; }
    std::vector<NamedChild> children() override {
        std::vector<NamedChild> out;
        std::apply([&](auto&... m) { (out.push_back({std::to_string(out.size()), &m}), ...); }, modules_);
        return out;
    }

    /// `layers[I]`.
    template <std::size_t I>
    auto& get() { return std::get<I>(modules_); }
    /// `layers[I]`.
    template <std::size_t I>
    const auto& get() const { return std::get<I>(modules_); }

    /// `forward(x)`: each module applied in turn to the previous one's output.
    template <class X>
    X operator()(X x) const {
        std::apply([&](const auto&... m) { ((x = m(x)), ...); }, modules_);
        return x;
    }

private:
    std::tuple<Ms...> modules_;
};

}  // namespace attn::nn

namespace attn {
/// `attn::repr(module)`: every module's repr is `nn::repr` (beside `attn::repr` of tensors).
using nn::repr;
}  // namespace attn
