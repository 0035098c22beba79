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

// ---------------------------------------------------------------- formatters

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string max_abs_diff_text(const attn::Tensor& a, const attn::Tensor& b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(attn::max_abs_diff(a, b)));
    return buf;
}

std::string gb_text(std::size_t bytes) { return grouped_fixed(static_cast<double>(bytes) / 1e9) + " GB"; }

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

// ---------------------------------------------------------------- Raschka's memory estimators

std::string grouped_fixed(double x) {
    std::string digits = fixed(x, 2), sign;
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

EstimatorSizes estimator_sizes(const std::string& script, const EstimatorArgs& a) {
    if (a.n_heads == 0 || a.n_kv_groups == 0 || a.n_layers == 0)
        throw std::invalid_argument(script + ": n_heads, n_kv_groups and n_layers must be > 0");
    if (a.n_heads % a.n_kv_groups != 0)
        throw std::invalid_argument(script + ": n_kv_groups must divide n_heads exactly.");
    return {(a.emb_dim + a.n_heads - 1) / a.n_heads, a.n_heads / a.n_kv_groups, attn::dtype_bytes(a.dtype)};
}

namespace {

// `f"{key:width}: {value}"`: the key left-aligned in `width` columns.
std::string config_line(const std::string& key, std::size_t width, const std::string& value) {
    return key + std::string(key.size() < width ? width - key.size() : 0, ' ') + ": " + value + "\n";
}

}  // namespace

std::string estimator_config(const EstimatorArgs& a, const EstimatorSizes& s,
                             const std::pair<std::string, std::size_t>& extra, std::size_t width) {
    std::string out = "==== Config ====\n";
    for (const auto& [key, value] : {std::pair<std::string, std::size_t>{"context_length", a.context_length},
                                     {"emb_dim", a.emb_dim}, {"n_heads", a.n_heads}, {"n_layers", a.n_layers},
                                     {"n_kv_groups", a.n_kv_groups}, extra})
        out += config_line(key, width, std::to_string(value));
    out += config_line("batch_size", width, std::to_string(a.batch_size));
    out += config_line("dtype", width, a.dtype + " (" + std::to_string(s.bytes_per_elem) + " Bytes/elem)");
    out += config_line("head_dim", width, std::to_string(s.head_dim));
    out += config_line("GQA n_kv_heads", width, std::to_string(s.kv_heads_gqa));
    return out + "\n==== KV-cache totals across all layers ====\n";
}

attn::LongTensor ids_tensor(const std::vector<std::vector<std::int64_t>>& rows) {
    if (rows.empty()) throw std::invalid_argument("ids_tensor: expected at least one row of ids, got none");
    attn::LongTensor t = xt::empty<std::int64_t>(attn::Shape{rows.size(), rows[0].size()});
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].size() != rows[0].size())
            throw std::invalid_argument("ids_tensor: stack expects each tensor to be equal size, but got [" +
                                        std::to_string(rows[0].size()) + "] at entry 0 and [" +
                                        std::to_string(rows[i].size()) + "] at entry " + std::to_string(i));
        std::copy(rows[i].begin(), rows[i].end(), t.data() + i * rows[0].size());
    }
    return t;
}

std::vector<std::int64_t> row_ids(const attn::LongTensor& ids, std::size_t i) {
    const attn::Shape s = attn::shape_of(ids);
    if (s.size() != 2) attn::throw_shape_error("row_ids", "[batch, n_tokens]", s);
    if (i >= s[0]) throw std::invalid_argument("row_ids: row " + std::to_string(i) + " of " + std::to_string(s[0]));
    return {ids.data() + i * s[1], ids.data() + (i + 1) * s[1]};
}

}  // namespace textbook
