// TensorDict (tensor_dict.hpp): an ordered name -> float32 tensor dictionary.
#include "attn/core/tensor_dict.hpp"

#include <cstring>
#include <stdexcept>

namespace attn {

void TensorDict::insert(std::string name, Tensor tensor) {
    if (name.empty()) throw std::invalid_argument("TensorDict: a tensor name must not be empty");
    if (contains(name))
        throw std::invalid_argument("TensorDict: the name \"" + name + "\" is already present");
    index_.emplace(name, entries_.size());
    entries_.emplace_back(std::move(name), std::move(tensor));
}

const Tensor* TensorDict::find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Tensor& TensorDict::at(const std::string& name) const {
    const Tensor* t = find(name);
    if (t == nullptr) throw std::out_of_range("TensorDict: no tensor named \"" + name + "\"");
    return *t;
}

Tensor& TensorDict::at(const std::string& name) {
    return const_cast<Tensor&>(static_cast<const TensorDict&>(*this).at(name));
}

std::vector<std::string> TensorDict::names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [name, tensor] : entries_) out.push_back(name);
    return out;
}

bool bitwise_equal(const TensorDict& a, const TensorDict& b) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
        if (ia->first != ib->first) return false;
        if (shape_of(ia->second) != shape_of(ib->second)) return false;
        if (ia->second.size() != 0 &&
            std::memcmp(ia->second.data(), ib->second.data(), ia->second.size() * sizeof(float)) != 0)
            return false;
    }
    return true;
}

}  // namespace attn
