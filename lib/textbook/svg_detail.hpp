/// @file svg_detail.hpp
/// @brief What the SVG writer's files share (svg.cpp: heatmaps; svg_plots.cpp: line plots and
/// bar charts): number and text formatting, the text-width estimate, the document header, axis
/// ticks, and the width limit in effect (svg::MaxWidth). Internal to lib/textbook.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "textbook/svg.hpp"

namespace textbook::svg::detail {

/// The figures' font: whichever of these sans-serif faces the browser has.
inline constexpr const char* kFont = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";

/// Coordinates are written with at most one decimal: stable text, small files.
inline std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    std::string s = buf;
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    if (s == "-0") s = "0";
    return s;
}

/// Code points, not bytes: labels carry "·", "→", "−".
inline std::size_t text_length(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

/// A conservative width estimate for a sans-serif font (no font metrics in a text writer).
inline double text_width(const std::string& s, double font_size) {
    return 0.62 * font_size * static_cast<double>(text_length(s));
}

/// Where to centre a text of width `w` near `x` so that it stays inside [0, width].
inline double centred(double x, double w, double width) {
    return std::clamp(x, std::min(w / 2 + 6, width / 2), std::max(width - w / 2 - 6, width / 2));
}
/// One `<text>` element at (x, y) of `size` px, `anchor` start | middle | end, `extra` attributes.
inline std::string text(double x, double y, const std::string& s, double size,
                 const std::string& anchor = "start", const std::string& extra = "") {
    std::ostringstream out;
    out << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(size)
        << "\" text-anchor=\"" << anchor << "\"" << (extra.empty() ? "" : " " + extra) << ">"
        << escape(s) << "</text>\n";
    return out.str();
}
/// The `<svg>` root of a figure `width` x `height` px on a white background.
inline std::string header(double width, double height) {
    std::ostringstream out;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\""
        << num(height) << "\" viewBox=\"0 0 " << num(width) << ' ' << num(height)
        << "\" font-family=\"" << kFont << "\">\n"
        << "<rect x=\"0\" y=\"0\" width=\"" << num(width) << "\" height=\"" << num(height)
        << "\" fill=\"#ffffff\"/>\n";
    return out.str();
}

/// Ticks at 1, 2, 5 x 10^k that fall inside [lo, hi] for a log axis; "nice" steps otherwise.
inline std::vector<double> ticks(double lo, double hi, bool log_axis) {
    std::vector<double> out;
    if (log_axis) {
        const int k0 = static_cast<int>(std::floor(std::log10(lo)));
        const int k1 = static_cast<int>(std::ceil(std::log10(hi)));
        for (int k = k0; k <= k1; ++k)
            for (double m : {1.0, 2.0, 5.0}) {
                const double v = m * std::pow(10.0, k);
                if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
            }
        // Too many ticks on a wide range: keep the powers of ten only.
        if (out.size() > 10) {
            std::vector<double> powers;
            for (double v : out)
                if (std::fabs(std::log10(v) - std::round(std::log10(v))) < 1e-9) powers.push_back(v);
            out = powers;
        }
        return out;
    }
    const double span = hi - lo;
    const double raw = span / 5.0;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * mag >= raw) {
            step = m * mag;
            break;
        }
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
        out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    return out;
}
/// A tick's label: %g beyond 1e5 and below 1e-3, up to six significant digits otherwise.
inline std::string tick_text(double v) {
    char buf[32];
    if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3)) std::snprintf(buf, sizeof buf, "%g", v);
    else std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}


/// Greedy word wrap of `s` into lines no wider than `width` at `font_size` (a single word
/// longer than that stays whole). Bold text is about 8 % wider: pass `bold`.
inline std::vector<std::string> wrap(const std::string& s, double font_size, double width, bool bold = false) {
    std::vector<std::string> lines;
    std::istringstream words(s);
    std::string word, line;
    const double em = bold ? 1.08 : 1.0;
    while (words >> word) {
        if (!line.empty() && em * text_width(line + " " + word, font_size) > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty() || lines.empty()) lines.push_back(line);
    return lines;
}

/// Every k-th of `values` (from the first), k the smallest step at which labels of `label_w`
/// pixels, `gap` apart, fit into `span` pixels.
inline std::vector<double> thinned(const std::vector<double>& values, double label_w, double span, double gap = 8) {
    if (values.size() < 2) return values;
    std::size_t k = 1;
    while (k < values.size() && (label_w + gap) * static_cast<double>((values.size() - 1) / k + 1) > span) ++k;
    std::vector<double> out;
    for (std::size_t i = 0; i < values.size(); i += k) out.push_back(values[i]);
    return out;
}

/// `s` as a figure shows it: wrapped at `width` under a width limit (MaxWidth), one line
/// without one, no line when empty.
inline std::vector<std::string> lines_of(const std::string& s, double font_size, double width, bool bold = false) {
    if (s.empty()) return {};
    return MaxWidth::current() > 0 ? wrap(s, font_size, width, bold) : std::vector<std::string>{s};
}

/// The x-axis ticks a figure labels: all of them without a width limit; under one (MaxWidth),
/// every k-th, so that their labels (11 px) do not overlap in `span` pixels.
inline std::vector<double> labelled_ticks(const std::vector<double>& values, double span) {
    if (MaxWidth::current() == 0) return values;
    double w = 0;
    for (double v : values) w = std::max(w, text_width(tick_text(v), 11));
    return thinned(values, w, span);
}

}  // namespace textbook::svg::detail
