// The book's figures: each chapter's pictures, drawn as SVG at build time by make_figures
// (docs/tools/make_figures.cpp) with the library's own calls and textbook::svg.
//
// A chapter's figures live in docs/figures/<chapter name>.cpp (docs/meson.build compiles the
// file of every chapter that has one, all in one unity file), each registered with the step it
// illustrates:
//
//     FIGURES{{.chapter = "3", .step = "renorm", .file = "ch03_simple_mask.svg",
//              .caption = "...", .draw = [](const figures::Data&) { return svg::heatmaps(...); }}};
//
// Helpers of a figure file sit in an anonymous namespace under names of their own: the files
// share one translation unit.
//
// The generated page sets each figure beside the prose of its step; docs/test_docs.py checks
// that every chapter has one.
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/tensor.hpp"
#include "textbook/svg.hpp"

namespace figures {

namespace svg = textbook::svg;

/// Where a figure may read recorded data from (`data/`, e.g. `data/benchmarks/`).
struct Data {
    std::filesystem::path dir;
};

/// One figure of one chapter.
struct Figure {
    std::string chapter;  ///< the manifest's chapter key: `3`, `A`, `X`
    std::string step;     ///< the section it illustrates: `mask` for `{#ch03-mask}`
    std::string file;     ///< the SVG's file name, unique in the book
    std::string caption;  ///< one or two sentences under the figure
    std::function<std::string(const Data&)> draw;  ///< the SVG; throws when it cannot
};

/// Thrown by `draw` when the figure's data is not recorded yet: the figure becomes a visible
/// note ("absent") instead of a picture, and the docs test accepts it.
struct Absent : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Every registered figure, in registration order.
std::vector<Figure>& all();

/// Registers figures at static initialisation; `FIGURES{...};` declares one under a name no
/// other file of the unity build uses.
struct Add {
    Add(std::initializer_list<Figure> figures);
};

#define FIGURES_CONCAT2(a, b) a##b
#define FIGURES_CONCAT(a, b) FIGURES_CONCAT2(a, b)
/// `FIGURES{{...}, {...}};`: registers a chapter's figures (see `Add`).
#define FIGURES static const ::figures::Add FIGURES_CONCAT(figures_added_, __COUNTER__)

/// The six tokens of notebooks 002 and 004, "Your journey starts with one step".
const std::vector<std::string>& tokens();

/// A heatmap style with the six tokens on both axes.
svg::HeatmapStyle token_style(const std::string& title);

/// The attention scores of chapters 2-4: `SelfAttention_v2(3, 2)` after `manual_seed(789)`,
/// `queries @ keys.T`, `[6, 6]`.
attn::Tensor v2_scores();

/// A recorded JSON file under `data/` (Google Benchmark writes NaN, which JSON has not: such
/// values read as null).
/// @throws Absent when the file does not exist; std::runtime_error naming it when it is not JSON.
nlohmann::json read_json(const std::filesystem::path& file);

}  // namespace figures
