// nn::Module (module.hpp): what train/eval, named_parameters and repr derive from a module's
// children and own parameters, as torch/nn/modules/module.py does.
#include "attn/nn/module.hpp"

#include <algorithm>

#include "attn/core/reduce.hpp"

namespace attn::nn {

void zero_grad(const std::vector<NamedParameter>& parameters, bool set_to_none) {
    for (const NamedParameter& p : parameters) {
        if (!p.grad || !*p.grad) continue;
        if (set_to_none) p.grad->reset();
        else detail::zero_fill((*p.grad)->data(), (*p.grad)->size());
    }
}

void Module::train(bool mode) {
    training = mode;
    for (const NamedChild& c : children()) c.module->train(mode);
}

std::vector<NamedParameter> Module::named_parameters(const std::string& prefix) {
    std::vector<NamedParameter> out = own_parameters();
    for (NamedParameter& p : out) p.name = prefix + p.name;
    for (const NamedChild& c : children())
        for (NamedParameter& p : c.module->named_parameters(prefix + c.name + "."))
            out.push_back(std::move(p));
    return out;
}

std::vector<NamedBuffer> Module::named_buffers(const std::string& prefix) {
    std::vector<NamedBuffer> out = own_buffers();
    for (NamedBuffer& b : out) b.name = prefix + b.name;
    for (const NamedChild& c : children())
        for (NamedBuffer& b : c.module->named_buffers(prefix + c.name + "."))
            out.push_back(std::move(b));
    return out;
}

std::string repr(const Module& module) {
    // children() only reads (module.hpp): the const_cast lets one virtual serve both uses.
    const std::vector<NamedChild> children = const_cast<Module&>(module).children();
    const std::string extra = module.extra_repr();
    std::vector<std::string> lines;
    std::size_t extra_lines = 0;
    for (std::size_t start = 0; !extra.empty() && start <= extra.size(); ++extra_lines) {
        const std::size_t end = std::min(extra.find('\n', start), extra.size());
        lines.push_back(extra.substr(start, end - start));
        start = end + 1;
    }
    for (const NamedChild& c : children) {
        // _addindent(repr(child), 2): the child's later lines two spaces further in.
        std::string indented;
        for (const char ch : repr(*c.module)) indented += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
        lines.push_back("(" + c.name + "): " + indented);
    }
    std::string out = module.type_name() + "(";
    if (extra_lines == 1 && children.empty()) {
        out += lines[0];
    } else if (!lines.empty()) {
        for (const std::string& line : lines) out += "\n  " + line;
        out += "\n";
    }
    return out + ")";
}

}  // namespace attn::nn
