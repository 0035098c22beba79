#include "textbook/display.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "attn/attention/kv_memory.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"

namespace textbook {

// ---------------------------------------------------------------- layouts

std::string table(const std::vector<Row>& rows, const std::vector<std::size_t>& min_width) {
    std::vector<std::size_t> width(min_width);
    for (const auto& row : rows) {
        if (width.size() < row.size()) width.resize(row.size(), 0);
        for (std::size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size() + 2);
    }
    std::string out;
    for (const auto& row : rows) {
        if (&row != &rows.front()) out += '\n';
        for (std::size_t k = 0; k < row.size(); ++k) {
            out += row[k];
            if (k + 1 < row.size()) out.append(width[k] - row[k].size(), ' ');
        }
    }
    return out;
}

std::string labelled_lines(const std::vector<std::pair<std::string, std::string>>& rows,
                           const ListStyle& style) {
    std::size_t width = 0;
    if (style.align)
        for (const auto& [label, text] : rows) width = std::max(width, label.size());
    std::string out;
    for (const auto& [label, text] : rows) {
        if (!out.empty()) out += '\n';
        out += label + std::string(width - std::min(width, label.size()), ' ') + style.separator + text;
    }
    return out;
}

std::string shape_lines(const std::vector<std::pair<std::string, attn::Tensor>>& rows) {
    return labelled_lines(rows, [](const attn::Tensor& t) { return attn::repr(attn::shape_of(t)); });
}

std::string fields(const std::vector<std::pair<std::string, std::string>>& named) {
    std::string out;
    for (const auto& [name, text] : named) out.append(out.empty() ? "" : ", ").append(name).append(" = ").append(text);
    return out;
}

// ---------------------------------------------------------------- formatters

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string fixed_list(const std::vector<float>& v, int decimals) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(fixed(v[i], decimals));
    return out + "]";
}

std::string fixed_list(const attn::Tensor& v, int decimals) {
    return fixed_list(std::vector<float>(v.begin(), v.end()), decimals);
}

std::string int_list(const std::vector<std::int64_t>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(std::to_string(v[i]));
    return out + "]";
}

std::string max_abs_diff_text(const attn::Tensor& a, const attn::Tensor& b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(attn::max_abs_diff(a, b)));
    return buf;
}

std::string gb_text(std::size_t bytes) {
    const std::string digits = fixed(static_cast<double>(bytes) / 1e9, 2);
    const std::size_t dot = digits.find('.');
    const std::string whole = digits.substr(0, dot);
    std::string grouped;
    for (std::size_t i = 0; i < whole.size(); ++i) {
        if (i && (whole.size() - i) % 3 == 0) grouped += ',';
        grouped += whole[i];
    }
    return grouped + digits.substr(dot) + " GB";
}

std::string join_counts(const std::vector<std::size_t>& counts) {
    std::string out;
    for (const std::size_t n : counts) out.append(out.empty() ? "" : ", ").append(std::to_string(n));
    return out;
}

std::string draws_since_seed() {
    return std::to_string(attn::default_generator().draws_since_seed());
}

std::string error_text(const std::function<void()>& call, const std::string& prefix) {
    try {
        call();
    } catch (const std::invalid_argument& e) {
        return prefix + e.what();
    }
    return "(no error)";
}

std::string dict_keys_repr(const std::vector<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) out.append(out.empty() ? "" : ", ").append(attn::repr_str(k));
    return "dict_keys([" + out + "])";
}

std::string with_shape(const attn::Tensor& x) {
    return attn::repr_tuple({attn::repr(x), attn::repr(attn::shape_of(x))});
}

std::string with_shape(const attn::LongTensor& x) {
    return attn::repr_tuple({attn::repr(x), attn::repr(attn::shape_of(x))});
}

std::string not_reproduced(const std::string& why) { return "(not reproduced: " + why + ")"; }

std::string mask_agreement(const std::string& printed, const attn::Tensor& keep,
                           const attn::Tensor& where) {
    const auto numbers = numbers_in(strip_grad_fn(printed));
    if (numbers.size() < keep.size())
        throw std::out_of_range("mask_agreement: the printed block has " +
                                std::to_string(numbers.size()) + " numbers, the mask " +
                                std::to_string(keep.size()) + " elements");
    const std::size_t skip = numbers.size() - keep.size();
    std::size_t agree = 0, counted = 0;
    for (std::size_t i = 0; i < keep.size(); ++i) {
        if (where.flat(i) == 0.0f) continue;
        ++counted;
        const bool printed_kept = numbers[skip + i].value != 0.0;
        agree += printed_kept == (keep.flat(i) != 0.0f) ? 1 : 0;
    }
    return std::to_string(agree) + " of " + std::to_string(counted) + " entries agree";
}

std::string loss_lines(const std::vector<float>& losses) {
    std::string out;
    for (std::size_t step = 0; step < losses.size(); ++step) {
        char buf[64];
        const double loss = losses[step];
        if (std::isnan(loss))
            std::snprintf(buf, sizeof buf, "step %2zu: loss nan", step);
        else
            std::snprintf(buf, sizeof buf, "step %2zu: loss %.4f", step, loss);
        if (!out.empty()) out += '\n';
        out += buf;
    }
    return out;
}

std::string curve_lines(const std::vector<float>& loss, const std::vector<float>& first_half,
                        const std::vector<float>& second_half, std::size_t every) {
    if (loss.size() != first_half.size() || loss.size() != second_half.size() || every == 0)
        throw std::invalid_argument("curve_lines: three series of one length and every >= 1 expected");
    std::string out;
    for (std::size_t step = 0; step < loss.size(); ++step) {
        if (step % every != 0 && step + 1 != loss.size()) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf, "step %3zu: loss %.4f, first half %.4f, second half %.4f", step,
                      static_cast<double>(loss[step]), static_cast<double>(first_half[step]),
                      static_cast<double>(second_half[step]));
        if (!out.empty()) out += '\n';
        out += buf;
    }
    return out;
}

namespace {

// Mean weight of each head on key (i - back) over the queries i in [half, T).
std::vector<double> mean_weight_back(const attn::Tensor& w, std::size_t half, std::size_t back) {
    const attn::Shape s = attn::shape_of(w);
    if (s.size() != 4 || s[2] != s[3] || s[2] <= half || s[2] >= 2 * half)
        attn::throw_shape_error("head scores (attn_weights)", "[b, H, T, T] with half < T < 2 * half", s);
    const std::size_t b = s[0], H = s[1], T = s[2];
    std::vector<double> score(H, 0.0);
    for (std::size_t n = 0; n < b; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = half; i < T; ++i) score[h] += w(n, h, i, i - back);
    for (double& x : score) x /= static_cast<double>(b * (T - half));
    return score;
}

}  // namespace

std::string head_score_lines(const std::vector<attn::Tensor>& weights, std::size_t half) {
    std::string out;
    for (std::size_t l = 0; l < weights.size(); ++l) {
        const std::vector<double> previous = mean_weight_back(weights[l], half, 1);
        const std::vector<double> induction = mean_weight_back(weights[l], half, half - 1);
        for (std::size_t h = 0; h < previous.size(); ++h) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "block %zu head %zu: previous token %.2f, induction %.2f", l, h,
                          previous[h], induction[h]);
            if (!out.empty()) out += '\n';
            out += buf;
        }
    }
    return out;
}

std::size_t strongest_induction_head(const attn::Tensor& weights, std::size_t half) {
    const std::vector<double> induction = mean_weight_back(weights, half, half - 1);
    return static_cast<std::size_t>(std::max_element(induction.begin(), induction.end()) - induction.begin());
}

// ---------------------------------------------------------------- chapters 15-16 (MLA, sharing)

namespace {

// Python's `f"{x:,.2f}"`: two decimals, thousands separated by commas.
std::string grouped_two_decimals(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", x);
    std::string digits(buf), sign;
    if (digits[0] == '-') sign = "-", digits.erase(0, 1);
    const std::size_t dot = digits.find('.');
    const std::string whole = digits.substr(0, dot);
    std::string grouped;
    for (std::size_t i = 0; i < whole.size(); ++i) {
        if (i && (whole.size() - i) % 3 == 0) grouped += ',';
        grouped += whole[i];
    }
    return sign + grouped + digits.substr(dot);
}

// `f"{key:width}: {value}"`: the key left-aligned in `width` columns.
std::string config_line(const std::string& key, std::size_t width, const std::string& value) {
    return key + std::string(key.size() < width ? width - key.size() : 0, ' ') + ": " + value + "\n";
}

// His scripts' common checks and derived sizes: head_dim = ceil(emb_dim / n_heads), GQA's
// key/value heads, the dtype's bytes.
struct EstimatorSizes {
    std::size_t head_dim, kv_heads_gqa, bytes_per_elem;
};

EstimatorSizes estimator_sizes(const std::string& where, const EstimatorArgs& a) {
    if (a.n_heads == 0 || a.n_kv_groups == 0 || a.n_layers == 0)
        throw std::invalid_argument(where + ": n_heads, n_kv_groups and n_layers must be > 0");
    if (a.n_heads % a.n_kv_groups != 0)
        throw std::invalid_argument(where + ": n_kv_groups must divide n_heads exactly.");
    return {(a.emb_dim + a.n_heads - 1) / a.n_heads, a.n_heads / a.n_kv_groups, attn::dtype_bytes(a.dtype)};
}

std::string config_block(const std::vector<std::pair<std::string, std::size_t>>& cfg, std::size_t width,
                         const EstimatorArgs& a, const EstimatorSizes& s) {
    std::string out = "==== Config ====\n";
    for (const auto& [key, value] : cfg) out += config_line(key, width, std::to_string(value));
    out += config_line("batch_size", width, std::to_string(a.batch_size));
    out += config_line("dtype", width, a.dtype + " (" + std::to_string(s.bytes_per_elem) + " Bytes/elem)");
    out += config_line("head_dim", width, std::to_string(s.head_dim));
    out += config_line("GQA n_kv_heads", width, std::to_string(s.kv_heads_gqa));
    return out + "\n==== KV-cache totals across all layers ====\n";
}

}  // namespace

std::string mla_estimator_report(const EstimatorArgs& a) {
    const EstimatorSizes s = estimator_sizes("memory_estimator_mla", a);
    const auto total = [&](std::size_t kv_heads) {
        return attn::kv_bytes_total(a.batch_size, a.context_length, a.emb_dim, a.n_heads, kv_heads, a.n_layers,
                                    s.bytes_per_elem);
    };
    const double mha = static_cast<double>(total(a.n_heads)), gqa = static_cast<double>(total(s.kv_heads_gqa));
    const std::size_t mla_bytes = attn::mla_bytes_total(a.batch_size, a.context_length, a.n_layers, a.latent_dim,
                                                        s.bytes_per_elem);
    const double mla = static_cast<double>(mla_bytes);
    std::string out = config_block({{"context_length", a.context_length}, {"emb_dim", a.emb_dim},
                                    {"n_heads", a.n_heads}, {"n_layers", a.n_layers},
                                    {"n_kv_groups", a.n_kv_groups}, {"latent_dim", a.latent_dim}},
                                   17, a, s);
    out += "MHA total KV cache  : " + gb_text(total(a.n_heads)) + "\n";
    out += "GQA total KV cache  : " + gb_text(total(s.kv_heads_gqa)) + "\n";
    out += "MLA total KV cache  : " + gb_text(mla_bytes) + "\n";
    out += "Ratio (MHA / GQA)   : " + grouped_two_decimals(mha / gqa) + "x\n";
    out += "Savings (GQA vs MHA): " + grouped_two_decimals((1 - gqa / mha) * 100) + "%\n";
    out += "Ratio (MHA / MLA)   : " + grouped_two_decimals(mha / mla) + "x\n";
    return out + "Savings (MLA vs MHA): " + grouped_two_decimals((1 - mla / mha) * 100) + "%";
}

std::string kv_sharing_estimator_report(const EstimatorArgs& a) {
    const EstimatorSizes s = estimator_sizes("memory_estimator_kv_sharing", a);
    if (a.n_kv_producing_layers < 1 || a.n_kv_producing_layers > a.n_layers)
        throw std::invalid_argument("memory_estimator_kv_sharing: n_kv_producing_layers must be between 1 and n_layers.");
    const auto total = [&](std::size_t kv_heads, std::size_t layers) {
        return attn::kv_bytes_total(a.batch_size, a.context_length, a.emb_dim, a.n_heads, kv_heads, layers,
                                    s.bytes_per_elem);
    };
    const std::size_t mha = total(a.n_heads, a.n_layers), gqa = total(s.kv_heads_gqa, a.n_layers);
    const std::size_t mha_sharing = total(a.n_heads, a.n_kv_producing_layers);
    const std::size_t gqa_sharing = total(s.kv_heads_gqa, a.n_kv_producing_layers);
    std::string out = config_block({{"context_length", a.context_length}, {"emb_dim", a.emb_dim},
                                    {"n_heads", a.n_heads}, {"n_layers", a.n_layers},
                                    {"n_kv_groups", a.n_kv_groups},
                                    {"n_kv_producing_layers", a.n_kv_producing_layers}},
                                   23, a, s);
    out += "MHA total KV cache        : " + gb_text(mha) + "\n";
    out += "GQA total KV cache        : " + gb_text(gqa) + "\n";
    out += "MHA + KV sharing          : " + gb_text(mha_sharing) + "\n";
    out += "GQA + KV sharing          : " + gb_text(gqa_sharing) + "\n";
    const double ratio = static_cast<double>(mha) / static_cast<double>(gqa_sharing);
    out += "Ratio (MHA / GQA+sharing) : " + grouped_two_decimals(ratio) + "x\n";
    return out + "Savings vs MHA            : " +
           grouped_two_decimals((1 - static_cast<double>(gqa_sharing) / static_cast<double>(mha)) * 100) + "%";
}


}  // namespace textbook
