// state_dict / load_state_dict of modules and of AdamW (state_dict.hpp), as PyTorch 1.13's
// torch/nn/modules/module.py and torch/optim/optimizer.py.
#include "attn/nn/state_dict.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <utility>

#include "attn/print/python.hpp"

namespace attn::nn {
namespace {

// One parameter or persistent buffer of the module, by its full dotted name.
struct LocalEntry {
    std::string key;
    Tensor* value;
};

// The module's entries in state_dict order, and the unexpected keys by PyTorch's rule: at each
// module (prefix P), a key starting with P whose next part names no child, parameter or buffer.
void sd_walk(Module& module, const std::string& prefix, const TensorDict& given,
             std::vector<LocalEntry>& local, std::vector<std::string>& unexpected) {
    const std::vector<NamedParameter> params = module.own_parameters();
    const std::vector<NamedBuffer> buffers = module.own_buffers();
    const std::vector<NamedChild> children = module.children();
    std::vector<std::string> here;  // the names this module answers for
    for (const NamedParameter& p : params) {
        local.push_back({prefix + p.name, p.value});
        here.push_back(p.name);
    }
    for (const NamedBuffer& b : buffers) {
        local.push_back({prefix + b.name, b.value});
        here.push_back(b.name);
    }
    for (const NamedChild& c : children) here.push_back(c.name);
    for (const auto& [key, tensor] : given) {
        if (key.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string rest = key.substr(prefix.size());
        const std::string first = rest.substr(0, rest.find('.'));
        if (std::find(here.begin(), here.end(), first) == here.end()) unexpected.push_back(key);
    }
    for (const NamedChild& c : children) sd_walk(*c.module, prefix + c.name + ".", given, local, unexpected);
}

void sd_collect(Module& module, const std::string& prefix, TensorDict& out) {
    for (const NamedParameter& p : module.own_parameters()) out.insert(prefix + p.name, *p.value);
    for (const NamedBuffer& b : module.own_buffers()) out.insert(prefix + b.name, *b.value);
    for (const NamedChild& c : module.children()) sd_collect(*c.module, prefix + c.name + ".", out);
}

// `torch.Size([2, 3])`, as PyTorch prints a shape in its messages.
std::string torch_size(const Shape& shape) {
    std::string out = "torch.Size([";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "])";
}

// A key as the messages show it: control characters escaped (`\n`, `\x1b`), so that a
// message from a file's names stays one line.
std::string sd_printable(const std::string& key) {
    std::string out;
    for (const char ch : key) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') out += "\\n";
        else if (c < 0x20 || c == 0x7f) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else out += ch;
    }
    return out;
}

std::string quoted_list(const std::vector<std::string>& keys) {
    std::string out;
    for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? ", \"" : "\"") + sd_printable(keys[i]) + "\"";
    return out;
}

}  // namespace

TensorDict state_dict(Module& module) {
    TensorDict out;
    sd_collect(module, "", out);
    return out;
}

IncompatibleKeys load_state_dict(Module& module, const TensorDict& state_dict, bool strict) {
    std::vector<LocalEntry> local;
    IncompatibleKeys keys;
    sd_walk(module, "", state_dict, local, keys.unexpected_keys);
    std::vector<std::string> mismatches;
    std::vector<std::pair<Tensor*, const Tensor*>> copies;
    for (const LocalEntry& e : local) {
        const Tensor* given = state_dict.find(e.key);
        if (given == nullptr) {
            keys.missing_keys.push_back(e.key);
            continue;
        }
        const Shape from = shape_of(*given), to = shape_of(*e.value);
        if (from != to) {
            mismatches.push_back("size mismatch for " + sd_printable(e.key) + ": copying a param with shape " + torch_size(from) +
                                 " from checkpoint, the shape in current model is " + torch_size(to) + ".");
            continue;
        }
        copies.emplace_back(e.value, given);
    }
    std::vector<std::string> errors;
    if (strict && !keys.missing_keys.empty())
        errors.push_back("Missing key(s) in state_dict: " + quoted_list(keys.missing_keys) + ".");
    if (strict && !keys.unexpected_keys.empty())
        errors.push_back("Unexpected key(s) in state_dict: " + quoted_list(keys.unexpected_keys) + ".");
    errors.insert(errors.end(), mismatches.begin(), mismatches.end());
    if (!errors.empty()) {
        std::string message = "Error(s) in loading state_dict for " + module.type_name() + ":";
        for (const std::string& e : errors) message += " " + e;
        throw std::runtime_error(message);
    }
    for (const auto& [to, from] : copies) std::copy(from->data(), from->data() + from->size(), to->data());
    return keys;
}

}  // namespace attn::nn

namespace attn::optim {
namespace {

constexpr std::int64_t max_float_step = std::int64_t{1} << 24;  // float32 holds every integer up to here

double sd_parse_double(const std::map<std::string, std::string>& groups, const std::string& key, double current) {
    const auto it = groups.find(key);
    if (it == groups.end()) return current;
    const std::string& text = it->second;
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw std::invalid_argument("AdamW.load_state_dict: param_groups \"" + key + "\": expected a number, got \"" +
                                    text + "\"");
    return value;
}

}  // namespace

AdamWStateDict state_dict(const AdamW& optimizer) {
    AdamWStateDict out;
    const auto& params = optimizer.parameters();
    const auto& state = optimizer.state();
    for (std::size_t i = 0; i < params.size(); ++i) {
        const AdamW::State& s = state[i];
        if (s.step == 0) continue;
        if (s.step > max_float_step)
            throw std::invalid_argument("AdamW.state_dict: parameter '" + params[i].name + "': step " +
                                        std::to_string(s.step) + " exceeds 2^24, beyond which a float32 step is not exact");
        const std::string prefix = "state." + params[i].name + ".";
        out.state.insert(prefix + "step", scalar_tensor(static_cast<float>(s.step)));
        out.state.insert(prefix + "exp_avg", s.exp_avg);
        out.state.insert(prefix + "exp_avg_sq", s.exp_avg_sq);
    }
    const AdamWOptions& o = optimizer.options;
    out.param_groups = {{"optimizer", "AdamW"},
                        {"lr", repr_float(o.lr)},
                        {"beta1", repr_float(o.beta1)},
                        {"beta2", repr_float(o.beta2)},
                        {"eps", repr_float(o.eps)},
                        {"weight_decay", repr_float(o.weight_decay)},
                        {"amsgrad", "False"},
                        {"maximize", "False"}};
    return out;
}

void load_state_dict(AdamW& optimizer, const TensorDict& state, const std::map<std::string, std::string>& param_groups) {
    const std::string where = "AdamW.load_state_dict: ";
    // The hyperparameters first (they change nothing until the end).
    if (const auto it = param_groups.find("optimizer"); it != param_groups.end() && it->second != "AdamW")
        throw std::invalid_argument(where + "param_groups \"optimizer\": expected \"AdamW\", got \"" + it->second + "\"");
    for (const char* flag : {"amsgrad", "maximize"})
        if (const auto it = param_groups.find(flag); it != param_groups.end() && it->second != "False")
            throw std::invalid_argument(where + "param_groups \"" + flag + "\": only \"False\" is offered, got \"" +
                                        it->second + "\"");
    AdamWOptions options = optimizer.options;
    options.lr = sd_parse_double(param_groups, "lr", options.lr);
    options.beta1 = sd_parse_double(param_groups, "beta1", options.beta1);
    options.beta2 = sd_parse_double(param_groups, "beta2", options.beta2);
    options.eps = sd_parse_double(param_groups, "eps", options.eps);
    options.weight_decay = sd_parse_double(param_groups, "weight_decay", options.weight_decay);
    options.validate();

    const auto& params = optimizer.parameters();
    std::vector<AdamW::State> states(params.size());
    std::size_t used = 0;  // entries of `state` taken
    for (std::size_t i = 0; i < params.size(); ++i) {
        const std::string prefix = "state." + params[i].name + ".";
        const Tensor* step = state.find(prefix + "step");
        const Tensor* exp_avg = state.find(prefix + "exp_avg");
        const Tensor* exp_avg_sq = state.find(prefix + "exp_avg_sq");
        const int present = (step != nullptr) + (exp_avg != nullptr) + (exp_avg_sq != nullptr);
        if (present == 0) continue;
        if (present != 3) {
            const std::string absent = step == nullptr ? "step" : exp_avg == nullptr ? "exp_avg" : "exp_avg_sq";
            throw std::invalid_argument(where + "\"" + prefix + absent + "\" is missing (the parameter's state has " +
                                        "step, exp_avg and exp_avg_sq)");
        }
        used += 3;
        const Shape step_shape = shape_of(*step);
        const float t = step->size() == 1 ? step->data()[0] : 0.0f;
        if (!step_shape.empty() || !(t >= 1.0f && t <= static_cast<float>(max_float_step)) || std::floor(t) != t)
            throw std::invalid_argument(where + "\"" + prefix + "step\": expected a 0-d tensor holding a whole number "
                                        "from 1 to 16777216, got shape " + shape_str(step_shape) +
                                        (step_shape.empty() ? " holding " + repr_float(t) : std::string()));
        check_same_shape(where + "\"" + prefix + "exp_avg\"", shape_of(*params[i].value), shape_of(*exp_avg));
        check_same_shape(where + "\"" + prefix + "exp_avg_sq\"", shape_of(*params[i].value), shape_of(*exp_avg_sq));
        states[i] = {static_cast<std::int64_t>(t), *exp_avg, *exp_avg_sq};
    }
    if (used != state.size()) {
        std::vector<std::string> unknown;
        for (const auto& [key, tensor] : state) {
            bool known = false;
            for (const auto& p : params)
                for (const char* part : {"step", "exp_avg", "exp_avg_sq"})
                    known = known || key == "state." + p.name + "." + part;
            if (!known) unknown.push_back("\"" + attn::nn::sd_printable(key) + "\"");
        }
        std::string list;
        for (std::size_t i = 0; i < unknown.size(); ++i) list += (i ? ", " : "") + unknown[i];
        throw std::invalid_argument(where + "unexpected key(s) " + list + " (expected state.<parameter name>." +
                                    "{step,exp_avg,exp_avg_sq} for the optimizer's parameters)");
    }
    optimizer.set_state(std::move(states));
    optimizer.options = options;
}

}  // namespace attn::optim
