// Unit tests of the SVG writer (attn/svg.hpp) that draws the generated book's pictures.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "support.hpp"

#include "attn/core/functional.hpp"
#include "textbook/svg.hpp"

namespace test_svg {  // every test file is a namespace of its own (tests/meson.build)

namespace {

std::size_t count(const std::string& haystack, const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
    return n;
}

// The checks a browser needs: one root element with a viewBox, balanced text elements, and
// no raw markup characters left inside text.
void require_standalone_svg(const std::string& svg) {
    REQUIRE(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    REQUIRE(svg.size() > 7);
    REQUIRE(svg.substr(svg.size() - 7) == "</svg>\n");
    CHECK(count(svg, "<svg") == 1);
    CHECK(svg.find("viewBox=\"0 0 ") != std::string::npos);
    CHECK(count(svg, "<text") == count(svg, "</text>"));
    CHECK(svg.find("nan\"") == std::string::npos);  // no NaN coordinates
}

}  // namespace

TEST_CASE("a heatmap draws one labelled cell per entry with its value") {
    const attn::Tensor m = attn::tensor({{0.25f, 0.75f, 0.0f}, {1.0f, 0.5f, 0.125f}});
    textbook::svg::HeatmapStyle style;
    style.title = "weights";
    style.row_labels = {"q0", "q1"};
    style.col_labels = {"k0", "k1", "k2"};
    const std::string svg = textbook::svg::heatmap(m, style);
    require_standalone_svg(svg);
    // Each cell is a rect with a tooltip naming query, key and value.
    CHECK(count(svg, "</title></rect>") == 6);
    CHECK(svg.find("<title>q1 \u2192 k2: 0.1250</title>") != std::string::npos);
    for (const char* v : {">0.25<", ">0.75<", ">0.00<", ">1.00<", ">0.50<", ">0.12<"})
        CHECK(svg.find(v) != std::string::npos);
    CHECK(svg.find(">weights<") != std::string::npos);
    // vmin is drawn white-ish (the first stop), vmax darkest (the last stop).
    CHECK(svg.find("fill=\"#f7fbff\"") != std::string::npos);
    CHECK(svg.find("fill=\"#08306b\"") != std::string::npos);
}

TEST_CASE("masked -inf scores are hatched and labelled, values outside the scale are clamped") {
    const float inf = std::numeric_limits<float>::infinity();
    const attn::Tensor m = attn::tensor({{0.5f, -inf}, {3.0f, -2.0f}});
    const std::string svg = textbook::svg::heatmap(m, {});
    require_standalone_svg(svg);
    CHECK(count(svg, "fill=\"url(#masked)\"") == 1);
    CHECK(svg.find(">\u2212\u221e<") != std::string::npos);
    CHECK(svg.find(">\u22122.00<") != std::string::npos);  // a true minus sign
    CHECK(count(svg, "fill=\"#08306b\"") == 1);  // 3.0 clamps to vmax = 1
    // Default labels are the indices.
    CHECK(svg.find(">1</text>") != std::string::npos);
}

TEST_CASE("labels are escaped for XML") {
    textbook::svg::HeatmapStyle style;
    style.title = "a < b & \"c\"";
    style.row_labels = {"<s>"};
    style.col_labels = {"</s>"};
    const std::string svg = textbook::svg::heatmap(attn::ones({1, 1}), style);
    CHECK(svg.find("a &lt; b &amp; &quot;c&quot;") != std::string::npos);
    CHECK(svg.find("&lt;s&gt;") != std::string::npos);
    CHECK(svg.find("<s>") == std::string::npos);
    CHECK(textbook::svg::escape("it's <&>") == "it&#39;s &lt;&amp;&gt;");
}

TEST_CASE("heatmaps draws one panel per matrix with a shared colour bar") {
    const attn::Tensor a = attn::tensor({{1.0f, 0.0f}, {0.5f, 0.5f}});
    const attn::Tensor b = attn::tensor({{2.0f, 0.0f}, {0.0f, 2.0f}});
    textbook::svg::HeatmapStyle style;
    style.vmax = 2.0;
    const std::string svg = textbook::svg::heatmaps({a, b}, {"portable", "mkl"}, style);
    require_standalone_svg(svg);
    CHECK(count(svg, "</title></rect>") == 8);
    CHECK(svg.find(">portable<") != std::string::npos);
    CHECK(svg.find(">mkl<") != std::string::npos);
    CHECK(count(svg, "fill=\"url(#scale)\"") == 1);
    CHECK(svg.find(">2.00</text>") != std::string::npos);  // the colour bar's top tick
}

TEST_CASE("heatmap inputs that cannot be drawn throw std::invalid_argument") {
    const attn::Tensor m = attn::tensor({{1.0f, 0.0f}, {0.5f, 0.5f}});
    CHECK_THROWS_WITH(textbook::svg::heatmap(attn::tensor({1.0f, 2.0f}), {}),
                      Catch::Contains("svg::heatmap: expected [*, *]") && Catch::Contains("got [2]"));
    textbook::svg::HeatmapStyle labels;
    labels.row_labels = {"only one"};
    CHECK_THROWS_WITH(textbook::svg::heatmap(m, labels), Catch::Contains("expected 0 or 2 row labels, got 1"));
    textbook::svg::HeatmapStyle scale;
    scale.vmin = scale.vmax = 1.0;
    CHECK_THROWS_AS(textbook::svg::heatmap(m, scale), std::invalid_argument);
    CHECK_THROWS_WITH(textbook::svg::heatmaps({m, attn::ones({1, 1})}, {"a", "b"}, {}),
                      Catch::Contains("expected [2, 2], got [1, 1]"));
    CHECK_THROWS_WITH(textbook::svg::heatmaps({m}, {"a", "b"}, {}), Catch::Contains("expected 1 panel titles, got 2"));
    CHECK_THROWS_AS(textbook::svg::heatmaps({}, {}, {}), std::invalid_argument);
}

TEST_CASE("a line plot draws each series in x order with a legend") {
    textbook::svg::Series cached;
    cached.name = "with cache";
    cached.x = {256, 64, 1024};
    cached.y = {20, 10, 40};
    textbook::svg::Series uncached;
    uncached.name = "without cache";
    uncached.x = {64, 256, 1024};
    uncached.y = {100, 1000, 20000};
    uncached.dashed = true;
    textbook::svg::PlotStyle style;
    style.title = "time per token";
    style.subtitle = "from data/benchmarks/kv_cache.json";
    style.log_x = style.log_y = true;
    const std::string svg = textbook::svg::line_plot({cached, uncached}, style);
    require_standalone_svg(svg);
    CHECK(count(svg, "<polyline") == 2);
    CHECK(count(svg, "<circle") == 6);
    CHECK(count(svg, "stroke-dasharray") == 2);  // the dashed line and its legend entry
    CHECK(svg.find(">with cache<") != std::string::npos);
    CHECK(svg.find(">from data/benchmarks/kv_cache.json<") != std::string::npos);
    // Log ticks at 1-2-5 steps: 100 and 1000 are on the y axis, 64 is not a tick.
    CHECK(svg.find(">1000</text>") != std::string::npos);
    CHECK(svg.find(">100</text>") != std::string::npos);
    CHECK(svg.find(">64</text>") == std::string::npos);
    // The first series' points are joined left to right: x = 64 comes first in its polyline.
    const std::regex first_polyline("<polyline[^>]*points=\"([0-9.]+),");
    std::smatch m;
    REQUIRE(std::regex_search(svg, m, first_polyline));
    const double first_x = std::stod(m[1].str());
    CHECK(svg.find("<circle cx=\"" + m[1].str() + "\"") != std::string::npos);
    CHECK(first_x < 200);  // the leftmost point, not 256's
}

TEST_CASE("line plots reject data they cannot draw") {
    textbook::svg::Series s;
    s.name = "s";
    CHECK_THROWS_WITH(textbook::svg::line_plot({s}, {}), Catch::Contains("has no points"));
    s.x = {1, 2};
    s.y = {1};
    CHECK_THROWS_WITH(textbook::svg::line_plot({s}, {}), Catch::Contains("has 2 x values and 1 y values"));
    s.y = {1, std::nan("")};
    CHECK_THROWS_WITH(textbook::svg::line_plot({s}, {}), Catch::Contains("non-finite"));
    s.y = {0, 1};
    textbook::svg::PlotStyle log_y;
    log_y.log_y = true;
    CHECK_THROWS_WITH(textbook::svg::line_plot({s}, log_y), Catch::Contains("logarithmic"));
    CHECK_NOTHROW(textbook::svg::line_plot({s}, {}));  // 0 is fine on a linear axis
    CHECK_THROWS_AS(textbook::svg::line_plot({}, {}), std::invalid_argument);
}

TEST_CASE("a note wraps its text and write_file writes it") {
    const std::string text =
        "No benchmark results recorded: data/benchmarks/ holds no Google Benchmark JSON yet, so "
        "there is nothing to plot; record them with benchmarks/run/record_kv_cache.py.";
    const std::string svg = textbook::svg::note("Not drawn yet", text);
    require_standalone_svg(svg);
    CHECK(svg.find(">Not drawn yet<") != std::string::npos);
    CHECK(count(svg, "<text") == 4);  // the title and three wrapped lines of at most 70 characters
    const auto path = std::filesystem::temp_directory_path() / "attn_test_svg" / "note.svg";
    textbook::svg::write_file(path, svg);
    std::ifstream in(path);
    std::stringstream back;
    back << in.rdbuf();
    CHECK(back.str() == svg);
    std::filesystem::remove_all(path.parent_path());
    CHECK_THROWS_AS(textbook::svg::write_file("/proc/attn_no_such_dir/x.svg", svg), std::exception);
}

// The width an SVG declares (its viewBox's third number).
double svg_width(const std::string& svg) {
    std::smatch m;
    REQUIRE(std::regex_search(svg, m, std::regex("viewBox=\"0 0 ([0-9.]+) ")));
    return std::stod(m[1]);
}

TEST_CASE("under a width limit heatmaps stack their panels and plots wrap their texts") {
    const attn::Tensor m = attn::tensor({{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {0.6f, 0.5f, 0.4f, 0.3f, 0.2f, 0.1f}});
    textbook::svg::HeatmapStyle style;
    style.title = "Three panels of a matrix with a title too long for a phone's column";
    style.row_labels = {"Your", "journey"};
    const std::vector<attn::Tensor> panels{m, m, m};
    const std::vector<std::string> titles{"first", "second", "third"};
    const std::string wide = textbook::svg::heatmaps(panels, titles, style);
    textbook::svg::Series s;
    s.name = "a series whose name is longer than the width of a phone's column by far";
    s.x = {1, 10, 100, 1000, 10000, 100000};
    s.y = {1, 2, 3, 4, 5, 6};
    textbook::svg::PlotStyle plot;
    plot.title = "A line plot";
    plot.subtitle = "a subtitle of many words that cannot all stand on one line at three hundred and forty pixels";
    plot.log_x = true;
    textbook::svg::BarStyle bars;
    bars.series = {"C++ CPU time", "C++ wall time", "PyTorch wall time"};
    bars.x_label = "seconds";
    const std::vector<textbook::svg::BarGroup> groups{{"MultiHeadAttention, tiled backend", {1.5, 1.5, 2.0}}};
    CHECK(svg_width(wide) > 600);
    CHECK(textbook::svg::MaxWidth::current() == 0);
    {
        const textbook::svg::MaxWidth phone(340);
        CHECK(textbook::svg::MaxWidth::current() == 340);
        const std::string narrow = textbook::svg::heatmaps(panels, titles, style);
        require_standalone_svg(narrow);
        CHECK(svg_width(narrow) <= 340);
        CHECK(count(narrow, "</title></rect>") == 36);  // every cell still drawn
        CHECK(count(narrow, ">query \u2192</text>") == 3);  // one panel a row: each with its axis name
        CHECK(count(narrow, "font-weight=\"bold\">") >= 3 + 2);  // the title on two lines or more
        CHECK(narrow.find(style.title) == std::string::npos);
        const std::string line = textbook::svg::line_plot({s}, plot);
        require_standalone_svg(line);
        CHECK(svg_width(line) == 340);
        CHECK(count(line, "fill=\"#666666\"") >= 2);  // the subtitle wrapped
        CHECK(line.find(s.name) == std::string::npos);  // the legend's name wrapped too
        const std::string chart = textbook::svg::bar_chart(groups, bars);
        require_standalone_svg(chart);
        CHECK(svg_width(chart) == 340);
        CHECK(chart.find("text-anchor=\"end\">MultiHeadAttention") == std::string::npos);  // above its bars
        CHECK(chart.find(">MultiHeadAttention, tiled backend</text>") != std::string::npos);
    }
    CHECK(textbook::svg::MaxWidth::current() == 0);  // the scope's end restores no limit
    CHECK(textbook::svg::heatmaps(panels, titles, style) == wide);
    CHECK_THROWS_WITH(textbook::svg::MaxWidth(100), Catch::Contains("expected 0 or at least 240 px, got 100"));
}

}  // namespace test_svg
