// Chapter 9's helpers: how it prints a tuple of shapes, the tokenizer's recorded ids and
// Python's `dict_keys`.
// Compiled with the chapter, in the chapters' unity file (chapters/meson.build): everything
// here is in namespace ch09. Includes textbook/display.hpp, the layouts chapters share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/print/print.hpp"
#include "textbook/display.hpp"
#include "textbook/record.hpp"
#include "textbook/tokenizer_data.hpp"

namespace ch09 {

/// What IPython shows for `a.shape, b.shape, c.shape` (000 In [8]):
/// `(torch.Size([2, 8, 16]), torch.Size([2, 8, 16]), torch.Size([2, 8, 16]))`.
inline std::string shapes_tuple(const attn::Tensor& a, const attn::Tensor& b, const attn::Tensor& c) {
    return attn::repr_tuple({attn::repr(attn::shape_of(a)), attn::repr(attn::shape_of(b)), attn::repr(attn::shape_of(c))});
}

/// Integers as a Python list: `[1, 415, 5255]`.
inline std::string int_list(const std::vector<std::int64_t>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(std::to_string(v[i]));
    return out + "]";
}

/// One line per recorded text, its Python repr and its ids; no newline at the end:
/// `'Something random' -> [1, 13264, 5509]`.
inline std::string id_lines(const std::vector<textbook::TokenizedText>& texts) {
    std::string out;
    for (const auto& t : texts) out.append(out.empty() ? "" : "\n").append(attn::repr_str(t.text) + " -> " + int_list(t.input_ids));
    return out;
}

/// Python's repr of a dict's keys: `dict_keys(['input_ids', 'attention_mask'])` (000 In [19]).
inline std::string dict_keys_repr(const std::vector<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) out.append(out.empty() ? "" : ", ").append(attn::repr_str(k));
    return "dict_keys([" + out + "])";
}

/// The block printed in place of a notebook output that nothing here reproduces:
/// `(not reproduced: <why>)`, wrapped at the terminal's 100 columns (it is the book's text).
inline std::string not_reproduced(const std::string& why) {
    std::string text = textbook::wrap_line("(not reproduced: " + why + ")", "");
    text.pop_back();  // wrap_line ends every line, the block's last one included
    return text;
}

}  // namespace ch09
