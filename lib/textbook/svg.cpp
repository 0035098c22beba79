#include "textbook/svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "textbook/svg_detail.hpp"

namespace textbook::svg {

using namespace attn;
using namespace detail;

namespace {

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

}  // namespace

namespace {
thread_local double max_width_px = 0;
}  // namespace

MaxWidth::MaxWidth(double px) : previous_(max_width_px) {
    if (px != 0 && !(px >= 240))
        throw std::invalid_argument("svg::MaxWidth: expected 0 or at least 240 px, got " + std::to_string(px));
    max_width_px = px;
}

MaxWidth::~MaxWidth() { max_width_px = previous_; }

double MaxWidth::current() { return max_width_px; }

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
    const double limit = MaxWidth::current();
    const std::size_t longest = std::max(rows, cols);
    bool show_values = style.precision >= 0 && longest <= 16;
    double cell = longest <= 6 ? 46 : longest <= 8 ? 40 : longest <= 12 ? 34 : show_values ? 26 : 15;
    const double value_font = style.precision > 2 || longest > 8 ? 9.5 : 11;
    const double label_font = 12;

    double row_label_w = 0, col_label_w = 0;
    for (const auto& l : row_labels) row_label_w = std::max(row_label_w, text_width(l, label_font));
    for (const auto& l : col_labels) col_label_w = std::max(col_label_w, text_width(l, label_font));

    const double margin = 12, panel_gap = 26, bar_w = 14;
    const double left = margin + 18 /* rotated row axis name */ + row_label_w + 8;
    // The colour bar and its tick labels: under a limit, only as wide as the labels need.
    double bar_label_w = 0;
    for (int k = 0; k <= 4; ++k)
        bar_label_w = std::max(bar_label_w, text_width(cell_text(style.vmin + (style.vmax - style.vmin) * k / 4.0, 2), 11));
    const double bar_gap = limit > 0 ? 20 : 28, bar_room = limit > 0 ? 7 + bar_label_w + 4 : 60;
    const double right = bar_gap + bar_w + bar_room + margin;
    // A panel is as wide as its grid, or its title where no limit makes the title wrap.
    auto panel_width = [&](double c) {
        double w = c * static_cast<double>(cols);
        for (const auto& t : panel_titles)
            for (const auto& line : limit > 0 ? wrap(t, 13, 0) : std::vector<std::string>{t})
                w = std::max(w, text_width(line, 13) - 10);
        return w;
    };
    auto width_for = [&](std::size_t n, double c) {
        return left + static_cast<double>(n) * panel_width(c) + static_cast<double>(n - 1) * panel_gap + right;
    };
    std::size_t per_row = style.panels_per_row == 0 ? panels.size() : std::min(style.panels_per_row, panels.size());
    if (limit > 0) {
        while (per_row > 1 && width_for(per_row, cell) > limit) --per_row;
        if (width_for(1, cell) > limit) {
            cell = std::max(6.0, (limit - left - right) / static_cast<double>(cols));
            // A cell too small for its printed value is read by its shade (and its tooltip).
            if (cell < text_width(std::string(static_cast<std::size_t>(std::max(style.precision, 0)) + 3, '0'),
                                  value_font) + 4)
                show_values = false;
        }
    }
    const double panel_w = panel_width(cell);
    const auto title_lines = lines_of(style.title, 15, limit - 2 * margin, true);
    std::vector<std::vector<std::string>> panel_lines;
    std::size_t most_lines = 1;
    for (const auto& t : panel_titles) {
        panel_lines.push_back(limit > 0 ? wrap(t, 13, panel_w + 10, true) : std::vector<std::string>{t});
        most_lines = std::max(most_lines, panel_lines.back().size());
    }
    const double title_h = title_lines.empty() ? 0 : 26 + 19.0 * static_cast<double>(title_lines.size() - 1);
    const double panel_title_h = panels.size() > 1 || !panel_titles.front().empty()
                                     ? 22 + 16.0 * static_cast<double>(most_lines - 1) : 0;
    const double axis_h = 18;  // "key →" above the column labels
    // Column labels are rotated by -45 degrees: their height is width / sqrt(2).
    const double col_label_h = (col_label_w + label_font) * 0.7071 + 10;
    const double grid_w = cell * static_cast<double>(cols), grid_h = cell * static_cast<double>(rows);
    const double top = margin + title_h + panel_title_h + axis_h + col_label_h;
    const std::size_t panel_rows = (panels.size() + per_row - 1) / per_row;
    // One row of panels below the other: each with its titles, axis names and labels.
    const double row_h = panel_title_h + axis_h + col_label_h + grid_h + 24;
    const double bar_x = left + static_cast<double>(per_row) * panel_w + static_cast<double>(per_row - 1) * panel_gap + bar_gap;
    double width = bar_x + bar_w + bar_room + margin;
    if (limit > 0) {  // the last column's label, rotated up to the right, stays inside
        const double last = left + static_cast<double>(per_row - 1) * (panel_w + panel_gap) +
                            (static_cast<double>(cols) - 0.5) * cell + 4;
        width = std::max(width, last + (text_width(col_labels.back(), label_font) + 4) * 0.7071 + 4);
    }
    for (const auto& line : title_lines) width = std::max(width, margin * 2 + (limit > 0 ? 1.08 : 1.0) * text_width(line, 15));
    const double height = top + static_cast<double>(panel_rows - 1) * row_h + grid_h + margin + 8;

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
    for (std::size_t k = 0; k < title_lines.size(); ++k)
        out << text(margin, margin + 16 + 19.0 * static_cast<double>(k), title_lines[k], 15, "start",
                    "font-weight=\"bold\"");

    for (std::size_t p = 0; p < panels.size(); ++p) {
        const std::size_t column = p % per_row;
        const double dy = static_cast<double>(p / per_row) * row_h;  // this row of panels
        const double x0 = left + column * (panel_w + panel_gap);
        const double grid_x = x0, top = margin + title_h + panel_title_h + axis_h + col_label_h + dy;
        if (panel_title_h > 0)
            for (std::size_t k = 0; k < panel_lines[p].size(); ++k)
                out << text(x0 + grid_w / 2, margin + title_h + 15 + 16.0 * static_cast<double>(k) + dy,
                            panel_lines[p][k], 13, "middle", "font-weight=\"bold\"");
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
