/// @file print_python.cpp
/// @brief How Python and IPython print plain values: `repr(float)`, `repr(bool)`,
/// `repr(str)` (CPython's `float_repr`, `unicode_repr`) and IPython's pretty printer for
/// tuples of reprs.
#include "attn/print/python.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace attn {

std::string repr_bool(bool value) { return value ? "True" : "False"; }

std::string repr_list(const std::vector<std::int64_t>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
    return out + "]";
}

std::string repr_tuple(std::initializer_list<std::string> items) {
    // IPython's pretty printer for a tuple of objects printed through their repr: the
    // separators are breakables of the tuple's group (indent 1); a multi-line repr emits hard
    // breaks, which break every separator of the group, and so does running past 79 columns
    // (a 1-tuple has no separator and never breaks). Continuation lines of an item get the
    // group's one-space indentation.
    const std::vector<std::string> parts(items);
    auto indent_lines = [](const std::string& item) {
        std::string out;
        for (char c : item) {
            out += c;
            if (c == '\n') out += ' ';
        }
        return out;
    };
    bool multiline = false;
    std::string one_line = "(";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].find('\n') != std::string::npos) multiline = true;
        if (i) one_line += ", ";
        one_line += parts[i];
    }
    if (parts.size() == 1) one_line += ",";
    one_line += ")";
    if (parts.size() <= 1 || (!multiline && one_line.size() <= 79)) {
        if (parts.size() != 1) return one_line;
        // Appended, not `"(" + ...`: GCC 12 warns (-Wstringop-overflow) on the inlined insert.
        std::string single = "(";
        single.append(indent_lines(parts[0])).append(",)");
        return single;
    }
    std::string out = "(";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += ",\n ";
        out += indent_lines(parts[i]);
    }
    return out + ")";
}

// Python's float.__repr__: the shortest digits that round-trip, positional for exponents
// in [-4, 16), scientific otherwise (e.g. 0.2, 1e-06, 2.0).
std::string repr_float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // e.g. "-2.5e-01"
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const auto e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exp10 = std::atoi(sci.c_str() + e + 1);
    if (exp10 >= -4 && exp10 < 16) {
        std::string out;
        if (exp10 < 0) {
            out = "0." + std::string(static_cast<std::size_t>(-exp10 - 1), '0') + digits;
        } else {
            const auto int_len = static_cast<std::size_t>(exp10) + 1;
            if (digits.size() <= int_len) {
                out = digits + std::string(int_len - digits.size(), '0') + ".0";
            } else {
                out = digits.substr(0, int_len) + "." + digits.substr(int_len);
            }
        }
        return sign + out;
    }
    std::string mant = digits.substr(0, 1);
    if (digits.size() > 1) mant += "." + digits.substr(1);
    const int a = std::abs(exp10);
    return sign + mant + "e" + (exp10 < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
}

std::string repr_str(const std::string& text) {
    // CPython's unicode_repr: prefer single quotes unless the text has ' and no ".
    const bool has_single = text.find('\'') != std::string::npos;
    const bool has_double = text.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    static const char* hex = "0123456789abcdef";
    for (unsigned char c : text) {
        if (c == quote || c == '\\') { out += '\\'; out += static_cast<char>(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7f) { out += "\\x"; out += hex[c >> 4]; out += hex[c & 15]; }
        else out += static_cast<char>(c);
    }
    return out + quote;
}

}  // namespace attn
