#include "textbook/svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace textbook::svg {

using namespace attn;

namespace {

constexpr const char* kFont = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";

// Coordinates are written with at most one decimal: stable text, small files.
std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    std::string s = buf;
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    if (s == "-0") s = "0";
    return s;
}

// Code points, not bytes: labels carry "·", "→", "−".
std::size_t text_length(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

// A conservative width estimate for a sans-serif font (no font metrics in a text writer).
double text_width(const std::string& s, double font_size) {
    return 0.62 * font_size * static_cast<double>(text_length(s));
}

// Where to centre a text of width `w` near `x` so that it stays inside [0, width].
double centred(double x, double w, double width) {
    return std::clamp(x, std::min(w / 2 + 6, width / 2), std::max(width - w / 2 - 6, width / 2));
}

std::string text(double x, double y, const std::string& s, double size,
                 const std::string& anchor = "start", const std::string& extra = "") {
    std::ostringstream out;
    out << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(size)
        << "\" text-anchor=\"" << anchor << "\"" << (extra.empty() ? "" : " " + extra) << ">"
        << escape(s) << "</text>\n";
    return out.str();
}

std::string header(double width, double height) {
    std::ostringstream out;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\""
        << num(height) << "\" viewBox=\"0 0 " << num(width) << ' ' << num(height)
        << "\" font-family=\"" << kFont << "\">\n"
        << "<rect x=\"0\" y=\"0\" width=\"" << num(width) << "\" height=\"" << num(height)
        << "\" fill=\"#ffffff\"/>\n";
    return out.str();
}

struct Rgb {
    double r, g, b;
};

// ColorBrewer "Blues" (9 classes), interpolated: white for small weights, dark blue for large.
Rgb blues(double t) {
    static const std::array<Rgb, 9> stops{{{247, 251, 255}, {222, 235, 247}, {198, 219, 239},
                                           {158, 202, 225}, {107, 174, 214}, {66, 146, 198},
                                           {33, 113, 181}, {8, 81, 156}, {8, 48, 107}}};
    t = std::clamp(t, 0.0, 1.0) * (stops.size() - 1);
    const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(t), stops.size() - 2);
    const double f = t - static_cast<double>(i);
    return {stops[i].r + f * (stops[i + 1].r - stops[i].r),
            stops[i].g + f * (stops[i + 1].g - stops[i].g),
            stops[i].b + f * (stops[i + 1].b - stops[i].b)};
}

std::string hex(const Rgb& c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(c.r)),
                  static_cast<int>(std::lround(c.g)), static_cast<int>(std::lround(c.b)));
    return buf;
}

// A value as the cell prints it: fixed digits, a true minus sign, "−∞" for masked scores.
std::string cell_text(double v, int precision) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "\u2212\u221e" : "\u221e";
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    std::string s = buf;
    if (s[0] == '-') {
        // "-0.00" is a rounding artefact of a tiny negative value; print it as 0.
        if (s.find_first_not_of("-0.") == std::string::npos) return s.substr(1);
        return "\u2212" + s.substr(1);
    }
    return s;
}

void check_labels(const std::vector<std::string>& labels, std::size_t n, const char* which) {
    if (!labels.empty() && labels.size() != n)
        throw std::invalid_argument(std::string("svg::heatmap: expected 0 or ") +
                                    std::to_string(n) + " " + which + " labels, got " +
                                    std::to_string(labels.size()));
}

std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, std::size_t n) {
    if (!labels.empty()) return labels;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(std::to_string(i));
    return out;
}

// Ticks at 1, 2, 5 x 10^k that fall inside [lo, hi] for a log axis; "nice" steps otherwise.
std::vector<double> ticks(double lo, double hi, bool log_axis) {
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

std::string tick_text(double v) {
    char buf[32];
    if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3)) std::snprintf(buf, sizeof buf, "%g", v);
    else std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

}  // namespace

std::string escape(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string heatmaps(const std::vector<Tensor>& panels, const std::vector<std::string>& panel_titles,
                     const HeatmapStyle& style) {
    if (panels.empty()) throw std::invalid_argument("svg::heatmaps: no panels");
    if (panel_titles.size() != panels.size())
        throw std::invalid_argument("svg::heatmaps: expected " + std::to_string(panels.size()) +
                                    " panel titles, got " + std::to_string(panel_titles.size()));
    const Shape shape = shape_of(panels.front());
    check_rank("svg::heatmaps", shape, 2);
    for (const auto& p : panels) check_same_shape("svg::heatmaps", shape, shape_of(p));
    const std::size_t rows = shape[0], cols = shape[1];
    if (rows == 0 || cols == 0) throw_shape_error("svg::heatmaps", "a non-empty [R, C]", shape);
    check_labels(style.row_labels, rows, "row");
    check_labels(style.col_labels, cols, "column");
    if (!(style.vmax > style.vmin))
        throw std::invalid_argument("svg::heatmaps: vmax must be greater than vmin");
    const auto row_labels = labels_or_indices(style.row_labels, rows);
    const auto col_labels = labels_or_indices(style.col_labels, cols);

    // Cells shrink a little for large matrices so a 12 x 12 grid stays readable on a page.
    const std::size_t longest = std::max(rows, cols);
    const bool show_values = style.precision >= 0 && longest <= 16;
    const double cell = longest <= 6 ? 46 : longest <= 8 ? 40 : longest <= 12 ? 34 : show_values ? 26 : 15;
    const double value_font = style.precision > 2 || longest > 8 ? 9.5 : 11;
    const double label_font = 12;

    double row_label_w = 0, col_label_w = 0;
    for (const auto& l : row_labels) row_label_w = std::max(row_label_w, text_width(l, label_font));
    for (const auto& l : col_labels) col_label_w = std::max(col_label_w, text_width(l, label_font));

    const double margin = 12;
    const double title_h = style.title.empty() ? 0 : 26;
    const double panel_title_h = panels.size() > 1 || !panel_titles.front().empty() ? 22 : 0;
    const double axis_h = 18;  // "key →" above the column labels
    // Column labels are rotated by -45 degrees: their height is width / sqrt(2).
    const double col_label_h = (col_label_w + label_font) * 0.7071 + 10;
    const double grid_w = cell * cols, grid_h = cell * rows;
    const double left = margin + 18 /* rotated row axis name */ + row_label_w + 8;
    double panel_w = grid_w;
    for (const auto& t : panel_titles) panel_w = std::max(panel_w, text_width(t, 13) - 10);
    const double panel_gap = 26;
    const double top = margin + title_h + panel_title_h + axis_h + col_label_h;
    const std::size_t per_row = style.panels_per_row == 0 ? panels.size()
                                                          : std::min(style.panels_per_row, panels.size());
    const std::size_t panel_rows = (panels.size() + per_row - 1) / per_row;
    // One row of panels below the other: each with its titles, axis names and labels.
    const double row_h = panel_title_h + axis_h + col_label_h + grid_h + 24;
    const double bar_x = left + per_row * panel_w + (per_row - 1) * panel_gap + 28;
    const double bar_w = 14;
    const double width = std::max(bar_x + bar_w + 60 + margin, margin * 2 + text_width(style.title, 15));
    const double height = top + (panel_rows - 1) * row_h + grid_h + margin + 8;

    std::ostringstream out;
    out << header(width, height);
    out << "<defs><pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#e6e6e6\"/>"
           "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#b0b0b0\" stroke-width=\"2\"/>"
           "</pattern>\n<linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    for (int i = 0; i <= 8; ++i)
        out << "<stop offset=\"" << num(i / 8.0 * 100) << "%\" stop-color=\"" << hex(blues(i / 8.0))
            << "\"/>";
    out << "</linearGradient></defs>\n";
    if (!style.title.empty()) out << text(margin, margin + 16, style.title, 15, "start", "font-weight=\"bold\"");

    for (std::size_t p = 0; p < panels.size(); ++p) {
        const std::size_t column = p % per_row;
        const double dy = static_cast<double>(p / per_row) * row_h;  // this row of panels
        const double x0 = left + column * (panel_w + panel_gap);
        const double grid_x = x0, top = margin + title_h + panel_title_h + axis_h + col_label_h + dy;
        if (panel_title_h > 0)
            out << text(x0 + grid_w / 2, margin + title_h + 15 + dy, panel_titles[p], 13, "middle",
                        "font-weight=\"bold\"");
        // Axis names: keys run left to right, queries top to bottom.
        out << text(grid_x + grid_w / 2, margin + title_h + panel_title_h + 13 + dy,
                    style.col_axis + " \u2192", 12, "middle", "fill=\"#555555\"");
        for (std::size_t j = 0; j < cols; ++j) {
            const double cx = grid_x + (j + 0.5) * cell + 4, cy = top - 6;
            out << "<text x=\"" << num(cx) << "\" y=\"" << num(cy) << "\" font-size=\"" << num(label_font)
                << "\" text-anchor=\"start\" transform=\"rotate(-45 " << num(cx) << ' ' << num(cy)
                << ")\">" << escape(col_labels[j]) << "</text>\n";
        }
        if (column == 0) {
            const double ax = margin + 12, ay = top + grid_h / 2;
            out << "<text x=\"" << num(ax) << "\" y=\"" << num(ay) << "\" font-size=\"12\" "
                << "text-anchor=\"middle\" fill=\"#555555\" transform=\"rotate(-90 " << num(ax) << ' '
                << num(ay) << ")\">" << escape(style.row_axis) << " \u2192</text>\n";
        }
        // Row labels once a row of panels, left of its first: the panels share their rows.
        if (column == 0)
            for (std::size_t i = 0; i < rows; ++i)
                out << text(grid_x - 6, top + (i + 0.5) * cell + 4, row_labels[i], label_font, "end");

        const Tensor& m = panels[p];
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) {
                const double v = m(i, j);
                const double x = grid_x + j * cell, y = top + i * cell;
                const double t = (v - style.vmin) / (style.vmax - style.vmin);
                std::string fill, ink = "#1a1a1a";
                if (std::isnan(v)) fill = "#f4a6a6";
                else if (std::isinf(v) && v < 0) fill = "url(#masked)", ink = "#555555";
                else {
                    fill = hex(blues(t));
                    if (t > 0.55) ink = "#ffffff";
                }
                out << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(cell)
                    << "\" height=\"" << num(cell) << "\" fill=\"" << fill
                    << "\" stroke=\"#ffffff\" stroke-width=\"1\"><title>" << escape(row_labels[i])
                    << " \u2192 " << escape(col_labels[j]) << ": " << cell_text(v, 4)
                    << "</title></rect>\n";
                if (show_values || std::isinf(v) || std::isnan(v))
                    out << text(x + cell / 2, y + cell / 2 + value_font * 0.36,
                                cell_text(v, std::max(style.precision, 0)), value_font, "middle",
                                "fill=\"" + ink + "\"");
            }
        out << "<rect x=\"" << num(grid_x) << "\" y=\"" << num(top) << "\" width=\"" << num(grid_w)
            << "\" height=\"" << num(grid_h) << "\" fill=\"none\" stroke=\"#999999\"/>\n";
    }

    // Colour bar, beside the first row of panels: vmin at the bottom, vmax at the top, with
    // five labelled ticks.
    const double bar_top = top, bar_h = grid_h;
    out << "<rect x=\"" << num(bar_x) << "\" y=\"" << num(bar_top) << "\" width=\"" << num(bar_w)
        << "\" height=\"" << num(bar_h) << "\" fill=\"url(#scale)\" stroke=\"#999999\"/>\n";
    for (int k = 0; k <= 4; ++k) {
        const double v = style.vmin + (style.vmax - style.vmin) * k / 4.0;
        const double y = bar_top + bar_h - bar_h * k / 4.0;
        out << "<line x1=\"" << num(bar_x + bar_w) << "\" y1=\"" << num(y) << "\" x2=\""
            << num(bar_x + bar_w + 4) << "\" y2=\"" << num(y) << "\" stroke=\"#555555\"/>\n";
        out << text(bar_x + bar_w + 7, y + 4, cell_text(v, 2), 11);
    }
    out << "</svg>\n";
    return out.str();
}

std::string heatmap(const Tensor& m, const HeatmapStyle& style) {
    check_rank("svg::heatmap", shape_of(m), 2);
    return heatmaps({m}, {""}, style);
}

std::string line_plot(const std::vector<Series>& series, const PlotStyle& style) {
    if (series.empty()) throw std::invalid_argument("svg::line_plot: no series");
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
    for (const auto& s : series) {
        if (s.x.empty()) throw std::invalid_argument("svg::line_plot: series '" + s.name + "' has no points");
        if (s.x.size() != s.y.size())
            throw std::invalid_argument("svg::line_plot: series '" + s.name + "' has " +
                                        std::to_string(s.x.size()) + " x values and " +
                                        std::to_string(s.y.size()) + " y values");
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            const double x = s.x[i], y = s.y[i];
            if (!std::isfinite(x) || !std::isfinite(y))
                throw std::invalid_argument("svg::line_plot: series '" + s.name + "' has a non-finite value");
            if ((style.log_x && x <= 0) || (style.log_y && y <= 0))
                throw std::invalid_argument("svg::line_plot: series '" + s.name +
                                            "' has a value <= 0 on a logarithmic axis");
            xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y), yhi = std::max(yhi, y);
        }
    }
    // Pad the ranges so points do not sit on the frame; a linear y axis starts at zero.
    auto widen = [](double& lo, double& hi, bool log_axis) {
        if (log_axis) {
            lo /= 1.3, hi *= 1.3;
        } else {
            if (hi == lo) hi = lo + 1;
            const double pad = (hi - lo) * 0.05;
            lo -= pad, hi += pad;
        }
    };
    if (!style.log_y) ylo = std::min(ylo, 0.0);
    widen(xlo, xhi, style.log_x);
    widen(ylo, yhi, style.log_y);
    if (!style.log_y && ylo < 0 && ylo > -1e-12) ylo = 0;

    const double left = 78, right = 20, bottom = 58;
    const double width = std::max({640.0, left + text_width(style.subtitle, 11) + right,
                                   12 + text_width(style.x_label, 12) + 12});
    // The legend: one entry per series, in rows above the plot (never over the data).
    const double pw = width - left - right;
    std::vector<std::pair<double, double>> legend_at;  // x, y of each entry's line
    const double legend_top = (style.title.empty() ? 20 : 44) + (style.subtitle.empty() ? 0 : 16) + 8;
    {
        double x = left, y = legend_top + 10;
        for (const auto& s : series) {
            const double w = 30 + 6 + text_width(s.name, 12);
            if (x > left && x + w > left + pw) x = left, y += 18;
            legend_at.emplace_back(x, y);
            x += w + 18;
        }
    }
    const double top = legend_at.back().second + 14;
    const double height = top + 282 + bottom;
    const double ph = height - top - bottom;
    auto px = [&](double x) {
        const double t = style.log_x ? (std::log10(x) - std::log10(xlo)) / (std::log10(xhi) - std::log10(xlo))
                                     : (x - xlo) / (xhi - xlo);
        return left + t * pw;
    };
    auto py = [&](double y) {
        const double t = style.log_y ? (std::log10(y) - std::log10(ylo)) / (std::log10(yhi) - std::log10(ylo))
                                     : (y - ylo) / (yhi - ylo);
        return top + ph - t * ph;
    };

    std::ostringstream out;
    out << header(width, height);
    if (!style.title.empty()) out << text(left, 26, style.title, 15, "start", "font-weight=\"bold\"");
    if (!style.subtitle.empty())
        out << text(left, style.title.empty() ? 18 : 44, style.subtitle, 11, "start", "fill=\"#666666\"");
    for (double v : ticks(xlo, xhi, style.log_x)) {
        out << "<line x1=\"" << num(px(v)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px(v))
            << "\" y2=\"" << num(top + ph) << "\" stroke=\"#e5e5e5\"/>\n";
        out << text(px(v), top + ph + 16, tick_text(v), 11, "middle");
    }
    for (double v : ticks(ylo, yhi, style.log_y)) {
        out << "<line x1=\"" << num(left) << "\" y1=\"" << num(py(v)) << "\" x2=\"" << num(left + pw)
            << "\" y2=\"" << num(py(v)) << "\" stroke=\"#e5e5e5\"/>\n";
        out << text(left - 6, py(v) + 4, tick_text(v), 11, "end");
    }
    out << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw)
        << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"#555555\"/>\n";
    out << text(centred(left + pw / 2, text_width(style.x_label, 12), width), height - 14, style.x_label, 12,
                "middle");
    out << "<text x=\"18\" y=\"" << num(top + ph / 2) << "\" font-size=\"12\" text-anchor=\"middle\" "
        << "transform=\"rotate(-90 18 " << num(top + ph / 2) << ")\">" << escape(style.y_label)
        << "</text>\n";

    static const std::array<const char*, 6> palette{"#1f77b4", "#d62728", "#2ca02c",
                                                    "#9467bd", "#ff7f0e", "#8c564b"};
    for (std::size_t k = 0; k < series.size(); ++k) {
        const auto& s = series[k];
        const std::string colour = s.colour.empty() ? palette[k % palette.size()] : s.colour;
        const std::string dash = s.dashed ? "\" stroke-dasharray=\"6 4" : "";
        // Points in x order so the line reads left to right.
        std::vector<std::size_t> order(s.x.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s.x[a] < s.x[b]; });
        out << "<polyline fill=\"none\" stroke=\"" << colour << dash << "\" stroke-width=\"2\" points=\"";
        for (std::size_t i : order) out << num(px(s.x[i])) << ',' << num(py(s.y[i])) << ' ';
        out << "\"/>\n";
        for (std::size_t i : order)
            out << "<circle cx=\"" << num(px(s.x[i])) << "\" cy=\"" << num(py(s.y[i]))
                << "\" r=\"3.5\" fill=\"" << colour << "\"><title>" << escape(s.name) << ": "
                << tick_text(s.x[i]) << ", " << tick_text(s.y[i]) << "</title></circle>\n";
        const auto [lx, y] = legend_at[k];
        out << "<line x1=\"" << num(lx) << "\" y1=\"" << num(y - 4) << "\" x2=\"" << num(lx + 30)
            << "\" y2=\"" << num(y - 4) << "\" stroke=\"" << colour << dash << "\" stroke-width=\"2\"/>\n";
        out << text(lx + 36, y, s.name, 12);
    }
    out << "</svg>\n";
    return out.str();
}

std::string bar_chart(const std::vector<BarGroup>& groups, const BarStyle& style) {
    if (groups.empty() || style.series.empty())
        throw std::invalid_argument("svg::bar_chart: no groups or no series");
    double hi = 0, label_w = 0;
    for (const auto& g : groups) {
        if (g.values.size() != style.series.size())
            throw std::invalid_argument("svg::bar_chart: group '" + g.label + "' has " +
                                        std::to_string(g.values.size()) + " values for " +
                                        std::to_string(style.series.size()) + " series");
        for (double v : g.values) {
            if (std::isinf(v) || v < 0)
                throw std::invalid_argument("svg::bar_chart: group '" + g.label + "' has a negative or infinite value");
            if (!std::isnan(v)) hi = std::max(hi, v);
        }
        label_w = std::max(label_w, text_width(g.label, 12));
    }
    if (hi == 0) hi = 1;
    hi *= 1.12;  // room for the value written after the longest bar
    const double bar = 13, gap = 12, right = 24, left = label_w + 20;
    // Wide enough for the subtitle and the legend's row, whatever their length.
    double legend_w = 0;
    for (const auto& s : style.series) legend_w += 34 + text_width(s, 11);
    const double width = std::max({720.0, 12 + text_width(style.subtitle, 11) + 12,
                                   12 + text_width(style.title, 15) + 12, left + legend_w + right,
                                   12 + text_width(style.x_label, 12) + 12});
    const double top = (style.title.empty() ? 16 : 44) + (style.subtitle.empty() ? 0 : 16) + 22;
    const double group_h = bar * static_cast<double>(style.series.size());
    const double ph = static_cast<double>(groups.size()) * (group_h + gap);
    const double pw = width - left - right, height = top + ph + 48;
    auto px = [&](double v) { return left + v / hi * pw; };
    static const std::array<const char*, 4> palette{"#1f77b4", "#9ecae1", "#d62728", "#2ca02c"};

    std::ostringstream out;
    out << header(width, height);
    if (!style.title.empty()) out << text(12, 26, style.title, 15, "start", "font-weight=\"bold\"");
    if (!style.subtitle.empty())
        out << text(12, style.title.empty() ? 18 : 44, style.subtitle, 11, "start", "fill=\"#666666\"");
    double lx = left;  // the legend, one swatch per series, above the bars
    for (std::size_t k = 0; k < style.series.size(); ++k) {
        out << "<rect x=\"" << num(lx) << "\" y=\"" << num(top - 20) << "\" width=\"12\" height=\"10\" fill=\""
            << palette[k % palette.size()] << "\"/>\n" << text(lx + 16, top - 11, style.series[k], 11);
        lx += 34 + text_width(style.series[k], 11);
    }
    for (double v : ticks(0, hi, false)) {
        out << "<line x1=\"" << num(px(v)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px(v)) << "\" y2=\""
            << num(top + ph) << "\" stroke=\"#e5e5e5\"/>\n" << text(px(v), top + ph + 16, tick_text(v), 11, "middle");
    }
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const double y0 = top + static_cast<double>(i) * (group_h + gap) + gap / 2;
        out << text(left - 8, y0 + group_h / 2 + 4, groups[i].label, 12, "end");
        for (std::size_t k = 0; k < style.series.size(); ++k) {
            const double v = groups[i].values[k], y = y0 + static_cast<double>(k) * bar;
            if (std::isnan(v)) continue;
            out << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\"" << num(px(v) - left)
                << "\" height=\"" << num(bar - 2) << "\" fill=\"" << palette[k % palette.size()] << "\"><title>"
                << escape(groups[i].label + ", " + style.series[k] + ": " + tick_text(v)) << "</title></rect>\n";
            char value[32];
            std::snprintf(value, sizeof value, "%.3g", v);  // three digits: a bar is read, not copied
            out << text(px(v) + 4, y + bar - 4, value, 10, "start", "fill=\"#333333\"");
        }
    }
    out << "<line x1=\"" << num(left) << "\" y1=\"" << num(top) << "\" x2=\"" << num(left) << "\" y2=\""
        << num(top + ph) << "\" stroke=\"#555555\"/>\n";
    out << text(centred(left + pw / 2, text_width(style.x_label, 12), width), height - 12, style.x_label, 12,
                "middle");
    out << "</svg>\n";
    return out.str();
}

std::string note(const std::string& title, const std::string& body) {
    // Greedy wrap at 70 characters.
    std::vector<std::string> lines;
    std::istringstream words(body);
    std::string word, line;
    while (words >> word) {
        if (!line.empty() && text_length(line) + 1 + text_length(word) > 70) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) lines.push_back(line);
    const double width = 560, height = 56 + 18.0 * lines.size() + 12;
    std::ostringstream out;
    out << header(width, height);
    out << "<rect x=\"4\" y=\"4\" width=\"" << num(width - 8) << "\" height=\"" << num(height - 8)
        << "\" rx=\"6\" fill=\"#fff8e1\" stroke=\"#d4a017\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
    out << text(20, 32, title, 15, "start", "font-weight=\"bold\"");
    for (std::size_t i = 0; i < lines.size(); ++i) out << text(20, 58 + 18.0 * i, lines[i], 13);
    out << "</svg>\n";
    return out.str();
}

void write_file(const std::filesystem::path& path, const std::string& svg) {
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream f(path, std::ios::binary);
    f << svg;
    if (!f) throw std::runtime_error("svg::write_file: cannot write " + path.string());
}

}  // namespace textbook::svg
