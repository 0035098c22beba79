// Line plots and bar charts of the SVG writer (svg.hpp); heatmaps are in svg.cpp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "textbook/svg.hpp"
#include "textbook/svg_detail.hpp"

namespace textbook::svg {

using namespace detail;

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

    // Under a width limit (MaxWidth) the plot takes the limit's width; its texts wrap, start at
    // the left edge, and the left margin is as wide as the y ticks' labels need.
    const double limit = MaxWidth::current();
    const std::vector<double> y_ticks = ticks(ylo, yhi, style.log_y);
    double y_tick_w = 0;
    for (double v : y_ticks) y_tick_w = std::max(y_tick_w, text_width(tick_text(v), 11));
    const double left = limit > 0 ? std::max(48.0, 30 + y_tick_w + 6) : 78, right = limit > 0 ? 14 : 20;
    const double width = limit > 0 ? limit
                                   : std::max({640.0, left + text_width(style.subtitle, 11) + right,
                                               12 + text_width(style.x_label, 12) + 12});
    const double text_x = limit > 0 ? 12 : left;  // where the title, subtitle and legend start
    const auto title_lines = lines_of(style.title, 15, width - 24, true);
    const auto subtitle_lines = lines_of(style.subtitle, 11, width - 24), x_label_lines = lines_of(style.x_label, 12, width - 24);
    const double bottom = 58 + 15.0 * static_cast<double>(std::max<std::size_t>(x_label_lines.size(), 1) - 1);
    const double title_h = title_lines.empty() ? 20 : 26 + 18.0 * static_cast<double>(title_lines.size());
    const double subtitle_y = title_lines.empty() ? 18 : title_h;  // the first subtitle line
    // The legend: one entry per series, in rows above the plot (never over the data).
    const double pw = width - left - right;
    std::vector<std::pair<double, double>> legend_at;  // x, y of each entry's line
    std::vector<std::vector<std::string>> legend_lines;  // each entry's name, wrapped under a limit
    const double legend_top = title_h + 14.0 * static_cast<double>(subtitle_lines.size()) +
                              (subtitle_lines.empty() ? 0 : 2) + 8;
    {
        double x = text_x, y = legend_top + 10;
        const double legend_right = limit > 0 ? width - 12 : left + pw;
        for (const auto& s : series) {
            legend_lines.push_back(limit > 0 ? wrap(s.name, 12, legend_right - text_x - 36) : std::vector<std::string>{s.name});
            double w = 0;
            for (const auto& line : legend_lines.back()) w = std::max(w, 30 + 6 + text_width(line, 12));
            if (x > text_x && x + w > legend_right) x = text_x, y += 18;
            legend_at.emplace_back(x, y);
            x += w + 18;
            if (legend_lines.back().size() > 1)  // the next entry starts below this one
                x = text_x + legend_right, y += 18.0 * static_cast<double>(legend_lines.back().size() - 1);
        }
    }
    const double top = legend_at.back().second + 18.0 * static_cast<double>(legend_lines.back().size() - 1) + 14;
    const double height = top + (limit > 0 ? 240 : 282) + bottom;
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
    for (std::size_t k = 0; k < title_lines.size(); ++k)
        out << text(text_x, 26 + 18.0 * static_cast<double>(k), title_lines[k], 15, "start", "font-weight=\"bold\"");
    for (std::size_t k = 0; k < subtitle_lines.size(); ++k)
        out << text(text_x, subtitle_y + 14.0 * static_cast<double>(k), subtitle_lines[k], 11, "start",
                    "fill=\"#666666\"");
    for (double v : labelled_ticks(ticks(xlo, xhi, style.log_x), pw)) {
        out << "<line x1=\"" << num(px(v)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px(v))
            << "\" y2=\"" << num(top + ph) << "\" stroke=\"#e5e5e5\"/>\n";
        out << text(limit > 0 ? centred(px(v), text_width(tick_text(v), 11), width) : px(v), top + ph + 16, tick_text(v), 11, "middle");
    }
    for (double v : y_ticks) {
        out << "<line x1=\"" << num(left) << "\" y1=\"" << num(py(v)) << "\" x2=\"" << num(left + pw)
            << "\" y2=\"" << num(py(v)) << "\" stroke=\"#e5e5e5\"/>\n";
        out << text(left - 6, py(v) + 4, tick_text(v), 11, "end");
    }
    out << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw)
        << "\" height=\"" << num(ph) << "\" fill=\"none\" stroke=\"#555555\"/>\n";
    for (std::size_t k = 0; k < x_label_lines.size(); ++k)
        out << text(centred(left + pw / 2, text_width(x_label_lines[k], 12), width),
                    height - 14 - 15.0 * static_cast<double>(x_label_lines.size() - 1 - k), x_label_lines[k], 12,
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
        for (std::size_t line = 0; line < legend_lines[k].size(); ++line)
            out << text(lx + 36, y + 18.0 * static_cast<double>(line), legend_lines[k][line], 12);
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
    // Under a width limit (MaxWidth) the chart takes the limit's width, each group's label goes
    // on a line of its own above its bars, and the texts and the legend wrap.
    const double limit = MaxWidth::current();
    if (hi == 0) hi = 1;
    hi *= limit > 0 ? 1.3 : 1.12;  // room for the value written after the longest bar
    const double bar = 13, gap = 12, right = limit > 0 ? 12 : 24, left = limit > 0 ? 12 : label_w + 20;
    // Wide enough for the subtitle and the legend's row, whatever their length.
    double legend_w = 0;
    for (const auto& s : style.series) legend_w += 34 + text_width(s, 11);
    const double width = limit > 0 ? limit
                                   : std::max({720.0, 12 + text_width(style.subtitle, 11) + 12,
                                               12 + text_width(style.title, 15) + 12, left + legend_w + right,
                                               12 + text_width(style.x_label, 12) + 12});
    const auto title_lines = lines_of(style.title, 15, width - 24, true);
    const auto subtitle_lines = lines_of(style.subtitle, 11, width - 24), x_label_lines = lines_of(style.x_label, 12, width - 24);
    // The legend: one swatch per series, in rows above the bars.
    std::vector<std::pair<double, double>> legend_at;  // x and row of each swatch
    {
        double x = left, row = 0;
        for (const auto& name : style.series) {
            const double w = 34 + text_width(name, 11);
            if (limit > 0 && x > left && x + w - 18 > width - right) x = left, ++row;
            legend_at.emplace_back(x, row);
            x += w;
        }
    }
    const double title_h = title_lines.empty() ? 16 : 26 + 18.0 * static_cast<double>(title_lines.size());
    const double top = title_h + 14.0 * static_cast<double>(subtitle_lines.size()) + (subtitle_lines.empty() ? 0 : 2) +
                       22 + 16 * legend_at.back().second;
    const double group_h = bar * static_cast<double>(style.series.size());
    std::vector<std::vector<std::string>> group_lines;  // a group's label above its bars (limit)
    std::vector<double> group_y;                        // where each group's bars start
    double y_next = top + gap / 2;
    for (const auto& g : groups) {
        group_lines.push_back(limit > 0 ? wrap(g.label, 12, width - 24) : std::vector<std::string>{});
        y_next += 15.0 * static_cast<double>(group_lines.back().size());
        group_y.push_back(y_next);
        y_next += group_h + gap;
    }
    const double ph = y_next - gap / 2 - top;
    const double pw = width - left - right;
    const double height = top + ph + 48 + 15.0 * static_cast<double>(std::max<std::size_t>(x_label_lines.size(), 1) - 1);
    auto px = [&](double v) { return left + v / hi * pw; };
    static const std::array<const char*, 4> palette{"#1f77b4", "#9ecae1", "#d62728", "#2ca02c"};

    std::ostringstream out;
    out << header(width, height);
    for (std::size_t k = 0; k < title_lines.size(); ++k)
        out << text(12, 26 + 18.0 * static_cast<double>(k), title_lines[k], 15, "start", "font-weight=\"bold\"");
    for (std::size_t k = 0; k < subtitle_lines.size(); ++k)
        out << text(12, (title_lines.empty() ? 18 : title_h) + 14.0 * static_cast<double>(k), subtitle_lines[k], 11,
                    "start", "fill=\"#666666\"");
    for (std::size_t k = 0; k < style.series.size(); ++k) {
        const auto [lx, row] = legend_at[k];
        const double ly = top - 20 - 16 * (legend_at.back().second - row);
        out << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" width=\"12\" height=\"10\" fill=\""
            << palette[k % palette.size()] << "\"/>\n" << text(lx + 16, ly + 9, style.series[k], 11);
    }
    for (double v : labelled_ticks(ticks(0, hi, false), pw)) {
        out << "<line x1=\"" << num(px(v)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px(v)) << "\" y2=\""
            << num(top + ph) << "\" stroke=\"#e5e5e5\"/>\n"
            << text(limit > 0 ? centred(px(v), text_width(tick_text(v), 11), width) : px(v), top + ph + 16,
                    tick_text(v), 11, "middle");
    }
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const double y0 = group_y[i];
        if (limit > 0)
            for (std::size_t k = 0; k < group_lines[i].size(); ++k)
                out << text(left + 4, y0 - 4 - 15.0 * static_cast<double>(group_lines[i].size() - 1 - k), group_lines[i][k],
                            12);
        else
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
    for (std::size_t k = 0; k < x_label_lines.size(); ++k)
        out << text(centred(left + pw / 2, text_width(x_label_lines[k], 12), width),
                    height - 12 - 15.0 * static_cast<double>(x_label_lines.size() - 1 - k), x_label_lines[k], 12,
                    "middle");
    out << "</svg>\n";
    return out.str();
}

}  // namespace textbook::svg
