/// @file svg.hpp
/// @brief A tiny SVG writer for the book's pictures: attention-weight heatmaps and line plots.
///
/// The generated docs draw what a reader would rather look at than read: a matrix of
/// attention weights as a grid of shaded cells, or time against context length as lines.
/// The pictures are drawn at build time from what the chapters printed and recorded
/// (docs/tools/make_figures.cpp reads their records), so they can never drift from the
/// chapters' output. No plotting library: the SVG
/// is plain text, written here in a few hundred lines, and renders in any browser.
///
/// Every function returns a complete, standalone SVG document (`<svg ...>...</svg>`) with
/// explicit `width`, `height` and `viewBox`, so it can be embedded with `<img>`/`<object>`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace textbook::svg {

using attn::Tensor;

/// The widest the figures drawn on this thread may be, in CSS pixels, while this object lives
/// (scoped: the previous limit returns at its end). 0, the default, is no limit: each figure
/// takes the width its labels need. make_figures draws every figure twice, at its own width for
/// a window and under a limit for a phone's column (the book shows the narrow one on a narrow
/// screen), where the fonts stay the same size and the layout gives way instead:
/// - heatmaps put fewer panels in a row (one at the least), then draw smaller cells, without
///   their printed values once a cell cannot hold one (the shading and the tooltips remain);
/// - line plots and bar charts take the limit as their width, bar charts put each group's label
///   above its bars, x axes keep every k-th tick label;
/// - titles, subtitles and axis labels wrap onto more lines.
/// A label wider than the limit on its own (one long word) can still make a figure wider.
class MaxWidth {
public:
    /// @throws std::invalid_argument when `px` is neither 0 nor at least 240.
    explicit MaxWidth(double px);
    ~MaxWidth();
    MaxWidth(const MaxWidth&) = delete;
    MaxWidth& operator=(const MaxWidth&) = delete;
    /// The limit in effect on this thread (0: none).
    static double current();

private:
    double previous_;
};

/// How a heatmap is labelled and coloured.
struct HeatmapStyle {
    std::string title;                    ///< drawn above the grid (may be empty)
    std::vector<std::string> row_labels;  ///< one per row (the queries), or empty for 0, 1, ...
    std::vector<std::string> col_labels;  ///< one per column (the keys), or empty for 0, 1, ...
    std::string row_axis = "query";       ///< what the rows are
    std::string col_axis = "key";         ///< what the columns are
    int precision = 2;  ///< fraction digits printed in each cell; negative: print no values
    double vmin = 0.0;  ///< value drawn white; smaller values are clamped
    double vmax = 1.0;  ///< value drawn darkest; larger values are clamped
    /// Panels side by side before the next row of panels (`heatmaps`); 0: all in one row.
    /// Keeps a figure of several panels narrow enough to be read at the width a page shows it.
    std::size_t panels_per_row = 0;
};

/// One heatmap of a matrix `m: [R, C]` (float32), e.g. `attn_weights` of one sequence: row i
/// holds query i's weights over the keys. Each cell is shaded from white (`vmin`) to dark
/// blue (`vmax`) and prints its value; `-inf` cells (masked scores) are drawn hatched grey
/// with "−∞", NaN cells red with "nan". A colour bar on the right gives the scale.
/// @throws std::invalid_argument when `m` is not 2-D, is empty, or a label list is neither
/// empty nor of length R (rows) / C (columns), or when `vmax <= vmin`.
std::string heatmap(const Tensor& m, const HeatmapStyle& style);

/// Several heatmaps side by side sharing one colour scale and one colour bar: one panel per
/// matrix of `panels` (each `[R, C]`, all the same shape), titled by `panel_titles`, in rows
/// of `style.panels_per_row`. Used for the dropout masks of the two Bernoulli backends, the
/// heads of multi-head attention and the sequences of a padded batch. `style.title` is drawn
/// above all panels. Cells that print no value (`precision < 0`, or more than 16 rows or
/// columns) are drawn small: the shading is what is read.
/// @throws std::invalid_argument when `panels` is empty, the panels' shapes differ or are
/// not 2-D, `panel_titles` does not have one title per panel, or as `heatmap` for labels.
std::string heatmaps(const std::vector<Tensor>& panels, const std::vector<std::string>& panel_titles,
                     const HeatmapStyle& style);

/// One line of a line plot: points `(x[i], y[i])`, joined in order, with a marker each.
struct Series {
    std::string name;       ///< shown in the legend
    std::vector<double> x;  ///< abscissae
    std::vector<double> y;  ///< ordinates, one per abscissa
    std::string colour;     ///< an SVG colour such as `#1f77b4`; empty: the next of a palette
    bool dashed = false;    ///< a dashed line (e.g. the slower variant of a pair)
};

/// How a line plot is labelled and scaled.
struct PlotStyle {
    std::string title;    ///< drawn above the plot
    std::string subtitle; ///< a smaller grey line under the title (e.g. where the data is from)
    std::string x_label;  ///< under the x axis
    std::string y_label;  ///< left of the y axis (rotated)
    bool log_x = false;   ///< logarithmic x axis (all x must be > 0)
    bool log_y = false;   ///< logarithmic y axis (all y must be > 0)
};

/// A line plot of `series` with axes, ticks, grid lines and a legend, e.g. the time per
/// generated token with and without the KV cache against the context length.
/// @throws std::invalid_argument when there is no series, a series has no points, `x` and `y`
/// differ in length, a value is not finite, or a value is not positive on a log axis.
std::string line_plot(const std::vector<Series>& series, const PlotStyle& style);

/// One row of a bar chart: a label and one value per series (NaN: no bar for that series).
struct BarGroup {
    std::string label;           ///< left of the bars, e.g. an implementation's name
    std::vector<double> values;  ///< one per series of `BarStyle::series`, >= 0 or NaN
};

/// How a bar chart is labelled.
struct BarStyle {
    std::string title;                ///< drawn above the chart
    std::string subtitle;             ///< a smaller grey line under the title
    std::string x_label;              ///< under the value axis, with the unit
    std::vector<std::string> series;  ///< the legend: one name per value of a group
};

/// Horizontal bars, one group per row and one bar per series, on a linear axis from 0, each
/// bar labelled with its value: e.g. the time of each implementation in C++ and in PyTorch.
/// @throws std::invalid_argument when there is no group or no series, a group has another
/// number of values than there are series, or a value is negative or infinite.
std::string bar_chart(const std::vector<BarGroup>& groups, const BarStyle& style);

/// A framed box with a title and a short text (wrapped at about 70 characters), drawn where
/// a picture cannot be: e.g. "no benchmark results recorded".
std::string note(const std::string& title, const std::string& text);

/// Escapes `&`, `<`, `>`, `"` and `'` for SVG/XML text and attribute values.
std::string escape(const std::string& text);

/// Writes `svg` to `path` (creating parent directories).
/// @throws std::runtime_error naming the path when the file cannot be written.
void write_file(const std::filesystem::path& path, const std::string& svg);

}  // namespace textbook::svg
