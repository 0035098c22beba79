// Placeholder: implemented by the printer work (see print.hpp).
#include "attn/print.hpp"

#include <stdexcept>

namespace attn {

PrintOptions& printoptions() {
    static PrintOptions opts;
    return opts;
}

void set_printoptions(int precision, int linewidth) {
    printoptions().precision = precision;
    printoptions().linewidth = linewidth;
}

std::string repr(const Tensor&, const PrintOptions&) { throw std::logic_error("repr: todo"); }
std::string repr(const BoolTensor&, const PrintOptions&) { throw std::logic_error("repr: todo"); }
std::string repr(const LongTensor&, const PrintOptions&) { throw std::logic_error("repr: todo"); }
std::string repr(const Shape&) { throw std::logic_error("repr: todo"); }
std::string repr_bool(bool value) { return value ? "True" : "False"; }
std::string repr_tuple(std::initializer_list<std::string>) { throw std::logic_error("todo"); }
std::string numpy_str(const Tensor&) { throw std::logic_error("numpy_str: todo"); }

}  // namespace attn
