// The book's figures: each chapter's pictures, drawn as SVG at build time by make_figures
// (docs/tools/make_figures.cpp) with textbook::svg, from what the chapter recorded.
//
// A figure draws what its chapter printed, read from the chapter's record (its `--record`
// JSON, lib/textbook/record.hpp, written when the pages are built), never by running the
// library again: a number the chapter does not print, it records with a block
// (`ch.show(label, text, {{"name", tensor}})`), and the figure reads it from there. Speed
// comes from the benchmarks recorded under data/benchmarks/. A figure that depicts no
// chapter output (a plot of a function) may compute, and says so in a comment.
//
// A chapter's figures live in docs/figures/<chapter name>.cpp (docs/meson.build compiles the
// file of every chapter that has one, all in one unity file), each registered with the step it
// illustrates:
//
//     FIGURES{{.chapter = "3", .step = "renorm", .file = "ch03_simple_mask.svg",
//              .caption = "...", .draw = [](const figures::Data& data) {
//                  return svg::heatmap(data.printed("002-In08", {6, 6}), ...); }}};
//
// Helpers of a figure file sit in an anonymous namespace under names of their own: the files
// share one translation unit.
//
// The generated page sets each figure beside the prose of its step; docs/test_docs.py checks
// that every chapter has one. make_figures calls `draw` twice: once as it is, for a window, and
// once under svg::MaxWidth for a phone's column, where the svg functions stack panels and wrap
// texts by themselves; a figure needs no code of its own for that.
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/tensor.hpp"
#include "textbook/record.hpp"
#include "textbook/svg.hpp"

namespace figures {

namespace svg = textbook::svg;

/// What a figure draws from: its chapter's record, as the chapter ran when these pages were
/// built, and the data directory (the recorded benchmarks). A block is named by `key`: one of
/// its sources (`002-In08`), or its label, whole or its end (`the weights after dropout,
/// batch element 1` finds `[portable backend] the weights after dropout, batch element 1`).
struct Data {
    std::filesystem::path dir;                         ///< `data/` (e.g. `data/benchmarks/`)
    const textbook::ChapterRecord* record = nullptr;  ///< the figure's chapter

    /// The block named by `key`.
    /// @throws std::runtime_error naming the chapter and `key` when no block or several match.
    const textbook::BlockRecord& block(const std::string& key) const;

    /// The numbers the block printed (textbook::numbers_in: `-inf` and the integers of a
    /// `torch.Size` count), from the `skip`-th on, as a float32 tensor of `shape`.
    /// @throws std::runtime_error as `block`, or when the block printed fewer numbers.
    attn::Tensor printed(const std::string& key, const attn::Shape& shape, std::size_t skip = 0) const;

    /// The block's `True` and `False` words, in order, as 1 and 0 in a tensor of `shape`.
    /// @throws std::runtime_error as `printed`.
    attn::Tensor printed_bools(const std::string& key, const attn::Shape& shape) const;

    /// The tensor recorded with the block under `name` (record.hpp's TensorRecord).
    /// @throws std::runtime_error as `block`, or when the block holds no such tensor.
    attn::Tensor tensor(const std::string& key, const std::string& name) const;
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

/// The smallest and largest finite values of `m` (`-inf` and NaN cells aside), for a
/// heatmap's colour scale.
/// @throws std::runtime_error when `m` holds no finite value.
std::pair<double, double> finite_range(const attn::Tensor& m);

/// The lines of a labelled list (textbook::labelled_lines), each split into its label and its
/// text at the first run of two or more spaces: `MHA (16 KV heads)       196608.0 B` gives
/// `{"MHA (16 KV heads)", "196608.0 B"}`.
std::vector<std::pair<std::string, std::string>> labelled(const std::string& text);

/// In a report of `key : value` lines (Raschka's estimators), the value of the line whose key
/// (trailing spaces aside) is `key`: `dtype            : bf16 (2 Bytes/elem)` gives
/// `bf16 (2 Bytes/elem)` for `dtype`.
/// @throws std::runtime_error naming the key when no line has it.
std::string report_text(const std::string& report, const std::string& key);

/// The number that starts `report_text(report, key)`, thousands separators ignored:
/// `MHA total KV cache  : 3.25 GB` gives 3.25 for `MHA total KV cache`.
/// @throws std::runtime_error naming the key when no line has it or its value is no number.
double report_value(const std::string& report, const std::string& key);

/// A recorded JSON file under `data/` (Google Benchmark writes NaN, which JSON has not: such
/// values read as null).
/// @throws Absent when the file does not exist; std::runtime_error naming it when it is not JSON.
nlohmann::json read_json(const std::filesystem::path& file);

}  // namespace figures
