/// @file tensor_dict.hpp
/// @brief `TensorDict`: named float32 tensors in a fixed order, as PyTorch's `state_dict()`
/// (an `OrderedDict` of name -> tensor) and `safetensors.torch.load_file` (a dict) hold them.
///
/// What a module's `state_dict` returns (nn/state_dict.hpp) and what a safetensors file holds
/// (io/safetensors.hpp): both rooms build on this one type.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

/// An ordered dictionary of float32 tensors by name (`collections.OrderedDict[str, Tensor]`):
/// iteration yields `(name, tensor)` pairs in insertion order, each name at most once. Names
/// are fixed once inserted (iteration is read-only); `at` gives a tensor to change in place.
class TensorDict {
public:
    using value_type = std::pair<std::string, Tensor>;  ///< one entry: name, tensor
    using const_iterator = std::vector<value_type>::const_iterator;  ///< read-only iteration

    /// `d[name] = tensor` for a new name: appended at the end.
    /// @throws std::invalid_argument `"TensorDict: the name \"x\" is already present"` when
    /// `name` is already a key, or `"TensorDict: a tensor name must not be empty"` when it is
    /// empty (nothing is inserted then).
    void insert(std::string name, Tensor tensor);

    /// `name in d`.
    bool contains(const std::string& name) const { return index_.count(name) != 0; }
    /// The tensor named `name`, or null when there is none (`d.get(name)`).
    const Tensor* find(const std::string& name) const;
    /// `d[name]`. @throws std::out_of_range `"TensorDict: no tensor named \"x\""` when absent.
    const Tensor& at(const std::string& name) const;
    /// `d[name]`, to change the tensor in place (its name stays).
    /// @throws std::out_of_range as the const `at`.
    Tensor& at(const std::string& name);

    /// `len(d)`.
    std::size_t size() const { return entries_.size(); }
    /// `len(d) == 0`.
    bool empty() const { return entries_.empty(); }
    /// `list(d.keys())`, in order.
    std::vector<std::string> names() const;
    /// Iteration over `(name, tensor)` in insertion order (`d.items()`).
    const_iterator begin() const { return entries_.begin(); }
    /// Iteration's end.
    const_iterator end() const { return entries_.end(); }

private:
    std::vector<value_type> entries_;
    std::unordered_map<std::string, std::size_t> index_;  // name -> position in entries_
};

/// The elements of two dictionaries are identical: the same names in the same order, the same
/// shapes, and every float32 equal bit for bit (NaN payloads and `-0` told apart; what
/// `torch.equal` does not check).
bool bitwise_equal(const TensorDict& a, const TensorDict& b);

}  // namespace attn
