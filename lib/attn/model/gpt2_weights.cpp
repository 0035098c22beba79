// GPT-2's configs and Hugging Face's weight files in Raschka's GPTModel (gpt2_weights.hpp).
#include "attn/model/gpt2_weights.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/io/safetensors.hpp"
#include "attn/io/safetensors_header.hpp"
#include "attn/nn/state_dict.hpp"
#include "attn/text/read_file.hpp"

namespace attn {

namespace {

// ---- configs ----

// The largest config.json read: a real one is under 1 kB, so anything larger is not one (and is
// not held in memory).
constexpr std::uintmax_t g2_max_config_bytes = 1'000'000;
// The deepest nesting of a config.json parsed (real ones nest 3 deep, task_specific_params).
constexpr int g2_max_json_depth = 64;
// The largest value of a size field: GPT2Config's sizes are Python ints, none near this.
constexpr std::uint64_t g2_max_field = 2147483647;

[[noreturn]] void g2_config_fail(const std::string& name, const std::string& what) {
    throw std::runtime_error(name + ": " + what);
}

// config[key] as a size: present, an integer (not 768.0, "768", true or null), in [1, 2^31 - 1].
std::size_t g2_field(const nlohmann::json& config, const char* key, const std::string& name) {
    const auto it = config.find(key);
    const std::string where = std::string("\"") + key + "\": ";
    if (it == config.end()) g2_config_fail(name, where + "missing (GPT-2's config.json has it)");
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v == 0 || v > g2_max_field)
            g2_config_fail(name, where + "expected an integer in [1, 2147483647], got " + std::to_string(v));
        return static_cast<std::size_t>(v);
    }
    if (it->is_number_integer())  // a negative one (non-negative ones are unsigned above)
        g2_config_fail(name, where + "expected an integer in [1, 2147483647], got " + std::to_string(it->get<std::int64_t>()));
    g2_config_fail(name, where + "expected an integer, got " + std::string(it->type_name()) +
                             (it->is_number_float() ? " " + io::detail::printable(it->dump(), 40) : ""));
}

// ---- weights ----

constexpr const char* g2_where = "load_weights_into_gpt";

// How a file's tensor becomes the model's parameters.
enum class G2Kind {
    copy,        // as it is (embeddings, biases, LayerNorm's scale and shift)
    transpose,   // Conv1D's [in, out] -> Linear's [out, in]
    qkv_weight,  // c_attn.weight [E, 3E]: chunked in 3 along dim -1, each transposed
    qkv_bias,    // c_attn.bias [3E]: chunked in 3
};

struct G2Entry {
    std::string key;                   // the file's key, without a prefix
    G2Kind kind;
    std::vector<std::string> targets;  // the model's parameters, as named_parameters() names them
};

// His In [7], key by key, in his order.
std::vector<G2Entry> g2_entries(std::size_t n_layers) {
    std::vector<G2Entry> e{{"wpe.weight", G2Kind::copy, {"pos_emb.weight"}},
                           {"wte.weight", G2Kind::copy, {"tok_emb.weight", "out_head.weight"}}};
    for (std::size_t b = 0; b < n_layers; ++b) {
        const std::string h = "h." + std::to_string(b) + ".", t = "trf_blocks." + std::to_string(b) + ".";
        const auto qkv = [&](const char* p) {
            return std::vector<std::string>{t + "att.W_query." + p, t + "att.W_key." + p, t + "att.W_value." + p};
        };
        e.push_back({h + "attn.c_attn.weight", G2Kind::qkv_weight, qkv("weight")});
        e.push_back({h + "attn.c_attn.bias", G2Kind::qkv_bias, qkv("bias")});
        e.push_back({h + "attn.c_proj.weight", G2Kind::transpose, {t + "att.out_proj.weight"}});
        e.push_back({h + "attn.c_proj.bias", G2Kind::copy, {t + "att.out_proj.bias"}});
        e.push_back({h + "mlp.c_fc.weight", G2Kind::transpose, {t + "ff.layers.0.weight"}});
        e.push_back({h + "mlp.c_fc.bias", G2Kind::copy, {t + "ff.layers.0.bias"}});
        e.push_back({h + "mlp.c_proj.weight", G2Kind::transpose, {t + "ff.layers.2.weight"}});
        e.push_back({h + "mlp.c_proj.bias", G2Kind::copy, {t + "ff.layers.2.bias"}});
        e.push_back({h + "ln_1.weight", G2Kind::copy, {t + "norm1.scale"}});
        e.push_back({h + "ln_1.bias", G2Kind::copy, {t + "norm1.shift"}});
        e.push_back({h + "ln_2.weight", G2Kind::copy, {t + "norm2.scale"}});
        e.push_back({h + "ln_2.bias", G2Kind::copy, {t + "norm2.shift"}});
    }
    e.push_back({"ln_f.weight", G2Kind::copy, {"final_norm.scale"}});
    e.push_back({"ln_f.bias", G2Kind::copy, {"final_norm.shift"}});
    return e;
}

// The shape the file must hold for `entry`, from the model's parameter `first` (its first
// target): Conv1D weights are the Linear's reversed, c_attn's three of them side by side.
Shape g2_expected(const G2Entry& entry, const Shape& first) {
    switch (entry.kind) {
    case G2Kind::copy: return first;
    case G2Kind::transpose: return Shape(first.rbegin(), first.rend());
    case G2Kind::qkv_weight:
        if (first.size() != 2) return Shape(first.rbegin(), first.rend());
        return {first[1], checked_mul(3, first[0], "load_weights_into_gpt (3 * d_out)")};
    case G2Kind::qkv_bias:
        if (first.size() != 1) return first;
        return {checked_mul(3, first[0], "load_weights_into_gpt (3 * d_out)")};
    }
    return first;
}

// `"a", "b", ...`: at most 20 keys shown (a file may hold millions), each made printable.
std::string g2_quoted(const std::vector<std::string>& keys) {
    std::string out;
    const std::size_t shown = std::min<std::size_t>(keys.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) out += (i ? ", \"" : "\"") + io::detail::printable(keys[i]) + "\"";
    if (keys.size() > shown) out += ", ... (" + std::to_string(keys.size() - shown) + " more)";
    return out;
}

// t[:, j*n:(j+1)*n].T for a row-major [rows, cols] t: [n, rows].
Tensor g2_chunk_transposed(const Tensor& t, std::size_t j, std::size_t n) {
    const std::size_t rows = t.shape()[0], cols = t.shape()[1];
    Tensor out = Tensor::from_shape({n, rows});
    const float* src = t.data();
    float* dst = out.data();
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < n; ++o) dst[o * rows + r] = src[r * cols + j * n + o];
    return out;
}

}  // namespace

GPTConfig gpt2_config(std::string_view model_name) {
    struct Size {
        const char* name;
        std::size_t emb_dim, n_layers, n_heads;
    };
    static constexpr Size sizes[] = {{"gpt2-small (124M)", 768, 12, 12},
                                     {"gpt2-medium (355M)", 1024, 24, 16},
                                     {"gpt2-large (774M)", 1280, 36, 20},
                                     {"gpt2-xl (1558M)", 1600, 48, 25}};
    for (const Size& s : sizes)
        if (model_name == s.name)
            return {.vocab_size = 50257, .context_length = 1024, .emb_dim = s.emb_dim, .n_heads = s.n_heads,
                    .n_layers = s.n_layers, .drop_rate = 0.0, .qkv_bias = true};
    throw std::invalid_argument("gpt2_config: unknown model name \"" + io::detail::printable(model_name, 100) +
                                "\"; expected one of \"gpt2-small (124M)\", \"gpt2-medium (355M)\", "
                                "\"gpt2-large (774M)\", \"gpt2-xl (1558M)\"");
}

GPTConfig parse_gpt2_config(std::string_view json_text, const std::string& name) {
    nlohmann::json config;
    try {
        // The callback bounds the nesting, so that no file makes the parse or the destructor deep.
        config = nlohmann::json::parse(json_text.begin(), json_text.end(),
                                       [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
                                           if (depth > g2_max_json_depth)
                                               g2_config_fail(name, "not a GPT-2 config.json: nested more than 64 deep");
                                           return true;
                                       });
    } catch (const nlohmann::json::exception& e) {
        g2_config_fail(name, std::string("not valid JSON (") + e.what() + ")");
    }
    if (!config.is_object()) g2_config_fail(name, std::string("expected a JSON object, got ") + config.type_name());
    GPTConfig c{.vocab_size = g2_field(config, "vocab_size", name),
                .context_length = g2_field(config, "n_positions", name),
                .emb_dim = g2_field(config, "n_embd", name),
                .n_heads = g2_field(config, "n_head", name),
                .n_layers = g2_field(config, "n_layer", name),
                .drop_rate = 0.0,
                .qkv_bias = true};
    if (c.emb_dim % c.n_heads != 0)
        g2_config_fail(name, "\"n_embd\" must be divisible by \"n_head\", got n_embd = " + std::to_string(c.emb_dim) +
                                 ", n_head = " + std::to_string(c.n_heads));
    try {
        c.check("GPTModel");  // the tensors and the whole model fit this machine's memory
    } catch (const std::exception& e) {
        g2_config_fail(name, e.what());
    }
    return c;
}

GPTConfig gpt2_config_from_json(const std::filesystem::path& file) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) {
        const auto size = std::filesystem::file_size(file, ec);
        if (!ec && size > g2_max_config_bytes)
            g2_config_fail(file.string(), "larger than 1 MB (" + std::to_string(size) + " bytes): not a GPT-2 config.json");
    }
    return parse_gpt2_config(read_file(file), file.string());  // read_file refuses what is not a regular file
}

void load_weights_into_gpt(GPTModel& gpt, const TensorDict& params) {
    const std::string where = g2_where;
    const std::size_t n_layers = gpt.trf_blocks.size();
    std::map<std::string, Tensor*> model;  // the model's parameters by name
    for (const nn::NamedParameter& p : gpt.named_parameters()) model.emplace(p.name, p.value);
    if (n_layers > 0 && !model.count("trf_blocks.0.att.W_query.bias"))
        throw std::invalid_argument(where + ": the model has no query/key/value biases (qkv_bias = false); "
                                            "GPT-2's c_attn has them: build it with qkv_bias = true (gpt2_config)");

    // The prefix: none (GPT2Model's state dict, as Hugging Face's files hold it) or `transformer.`
    // on every key but lm_head's (GPT2LMHeadModel's), never mixed.
    const std::string tp = "transformer.";
    std::size_t prefixed = 0, others = 0;
    for (const auto& [key, t] : params) {
        if (key == "lm_head.weight") continue;
        (key.compare(0, tp.size(), tp) == 0 ? prefixed : others) += 1;
    }
    if (prefixed > 0 && others > 0)
        throw std::invalid_argument(where + ": " + std::to_string(prefixed) + " keys start with \"transformer.\" and " +
                                    std::to_string(others) + " do not: a file holds one model's keys, with "
                                    "GPT2LMHeadModel's prefix or without");
    const std::string prefix = prefixed > 0 ? tp : "";

    // Keys: each of his In [7], the masks he skips, lm_head when tied.
    const std::vector<G2Entry> entries = g2_entries(n_layers);
    std::set<std::string> known, skipped;
    for (const G2Entry& e : entries) known.insert(e.key);
    for (std::size_t b = 0; b < n_layers; ++b) {
        skipped.insert("h." + std::to_string(b) + ".attn.bias");
        skipped.insert("h." + std::to_string(b) + ".attn.masked_bias");
    }
    std::vector<std::string> unexpected, missing;
    for (const auto& [key, t] : params) {
        if (key == "lm_head.weight") continue;
        const std::string bare = key.substr(prefix.size());
        if (!known.count(bare) && !skipped.count(bare)) unexpected.push_back(key);
    }
    for (const G2Entry& e : entries)
        if (!params.contains(prefix + e.key)) missing.push_back(prefix + e.key);
    if (!unexpected.empty() || !missing.empty()) {
        std::string msg = where + ":";
        if (!unexpected.empty())
            msg += " unexpected key(s): " + g2_quoted(unexpected) + " (the model has " + std::to_string(n_layers) +
                   " blocks; GPT-2's files hold wte, wpe, h.N.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,mlp.c_proj}"
                   ".{weight,bias}, ln_f.{weight,bias} and the skipped masks h.N.attn.bias);";
        if (!missing.empty()) msg += " missing key(s): " + g2_quoted(missing) + ";";
        msg.pop_back();
        throw std::invalid_argument(msg);
    }

    // Shapes, against the model's (his assign's check, before anything is assigned).
    for (const G2Entry& e : entries) {
        const auto target = model.find(e.targets[0]);
        if (target == model.end())  // a model built with qkv_bias on its first block only
            throw std::invalid_argument(where + ": the model has no parameter " + e.targets[0] + " for " + e.key);
        const Shape expected = g2_expected(e, shape_of(*target->second));
        const Shape actual = shape_of(params.at(prefix + e.key));
        if (actual != expected)
            throw std::invalid_argument(where + ": " + prefix + e.key + ": Shape mismatch. expected " +
                                        shape_str(expected) + ", got " + shape_str(actual) +
                                        (e.kind == G2Kind::transpose || e.kind == G2Kind::qkv_weight
                                             ? " (Conv1D's [in, out]: the model's Linear weight transposed)"
                                             : ""));
    }
    if (const Tensor* head = params.find("lm_head.weight")) {
        const Tensor& wte = params.at(prefix + "wte.weight");
        if (shape_of(*head) != shape_of(wte) || std::memcmp(head->data(), wte.data(), wte.size() * sizeof(float)) != 0)
            throw std::invalid_argument(where + ": lm_head.weight is not wte.weight (his model ties out_head to wte; "
                                                "an untied head cannot be loaded)");
    }

    // The model's parameters from the file's tensors, then loaded all at once.
    std::map<std::string, Tensor> converted;
    for (const G2Entry& e : entries) {
        const Tensor& t = params.at(prefix + e.key);
        for (std::size_t j = 0; j < e.targets.size(); ++j) {
            Tensor out;
            switch (e.kind) {
            case G2Kind::copy: out = t; break;
            case G2Kind::transpose: out = g2_chunk_transposed(t, 0, t.shape()[1]); break;
            case G2Kind::qkv_weight: out = g2_chunk_transposed(t, j, t.shape()[1] / 3); break;
            case G2Kind::qkv_bias: {
                const std::size_t n = t.size() / 3;
                out = Tensor::from_shape({n});
                std::memcpy(out.data(), t.data() + j * n, n * sizeof(float));
                break;
            }
            }
            converted.emplace(e.targets[j], std::move(out));
        }
    }
    TensorDict sd;
    for (const auto& [name, value] : model) {
        auto it = converted.find(name);
        if (it == converted.end())  // a parameter GPT-2 has no tensor for (fields changed by hand)
            throw std::invalid_argument(where + ": the model's parameter " + name + " has no GPT-2 tensor");
        sd.insert(name, std::move(it->second));
        converted.erase(it);
    }
    if (!converted.empty())
        throw std::invalid_argument(where + ": the model has no parameter " + converted.begin()->first);
    // Not strict: the masks (trf_blocks.N.att.mask) stay the model's own; every parameter is in sd.
    const nn::IncompatibleKeys result = nn::load_state_dict(gpt, sd, false);
    if (!result.unexpected_keys.empty())  // cannot happen: sd holds only named_parameters() names
        throw std::logic_error(where + ": unexpected " + result.unexpected_keys.front());
}

namespace {

// GPT-2's heads by width (his model_configs): how a file without a config is read.
std::size_t g2_heads_for(std::size_t emb_dim, const std::filesystem::path& file) {
    switch (emb_dim) {
        case 768: return 12;
        case 1024: return 16;
        case 1280: return 20;
        case 1600: return 25;
        default:
            throw std::runtime_error(file.string() + ": emb_dim " + std::to_string(emb_dim) +
                                     " is none of GPT-2's sizes (768, 1024, 1280, 1600): pass its config.json");
    }
}

// Dimension `dim` of the 2-D tensor `key`.
std::size_t g2_rows_of(const TensorDict& d, const std::string& key, std::size_t dim, const std::filesystem::path& file) {
    if (!d.contains(key)) throw std::runtime_error(file.string() + ": no tensor '" + key + "'");
    const Shape s = shape_of(d.at(key));
    if (s.size() != 2) throw std::runtime_error(file.string() + ": '" + key + "' is not 2-D");
    return s[dim];
}

// The sizes a file's tensors give: vocabulary and width from `emb`, context from `pos`, heads by
// width, blocks counted by `block(n)` keys.
void g2_sizes_from_tensors(GPTConfig& cfg, const TensorDict& t, const std::string& emb, const std::string& pos,
                           const std::function<std::string(std::size_t)>& block, const std::filesystem::path& file) {
    cfg.vocab_size = g2_rows_of(t, emb, 0, file);
    cfg.emb_dim = g2_rows_of(t, emb, 1, file);
    cfg.context_length = g2_rows_of(t, pos, 0, file);
    cfg.n_heads = g2_heads_for(cfg.emb_dim, file);
    std::size_t n = 0;
    while (t.contains(block(n))) ++n;
    cfg.n_layers = n;
}

}  // namespace

GPTModel load_gpt_safetensors(const std::filesystem::path& weights, const std::filesystem::path& config) {
    const io::SafetensorsFile file = io::load_safetensors(weights);
    const TensorDict& t = file.tensors;
    if (t.contains("wte.weight") || t.contains("transformer.wte.weight")) {  // Hugging Face's GPT-2 layout
        GPTConfig cfg;
        const std::filesystem::path beside = weights.parent_path() / "config.json";
        if (!config.empty()) cfg = gpt2_config_from_json(config);
        else if (std::filesystem::exists(beside)) cfg = gpt2_config_from_json(beside);
        else {
            const std::string p = t.contains("wte.weight") ? "" : "transformer.";
            cfg = gpt2_config("gpt2-small (124M)");
            g2_sizes_from_tensors(cfg, t, p + "wte.weight", p + "wpe.weight",
                                  [&](std::size_t n) { return p + "h." + std::to_string(n) + ".ln_1.weight"; }, weights);
        }
        GPTModel gpt(cfg);
        load_weights_into_gpt(gpt, t);
        return gpt;
    }
    if (t.contains("tok_emb.weight")) {  // a GPTModel's state_dict (his PyTorch class, or this library's)
        GPTConfig cfg = GPT_CONFIG_124M;
        g2_sizes_from_tensors(cfg, t, "tok_emb.weight", "pos_emb.weight",
                              [](std::size_t n) { return "trf_blocks." + std::to_string(n) + ".att.W_query.weight"; },
                              weights);
        cfg.qkv_bias = t.contains("trf_blocks.0.att.W_query.bias");
        cfg.drop_rate = 0.0;
        GPTModel gpt(cfg);
        nn::load_state_dict(gpt, t);
        return gpt;
    }
    throw std::runtime_error(weights.string() + ": neither Hugging Face's GPT-2 layout (wte.weight, "
                             "h.0.attn.c_attn.weight, ...) nor a GPTModel's state_dict (tok_emb.weight, "
                             "trf_blocks.0.att.W_query.weight, ...)");
}

}  // namespace attn
