#include "textbook/display.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

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

}  // namespace textbook
