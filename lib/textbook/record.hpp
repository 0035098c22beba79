/// @file record.hpp
/// @brief What a chapter printed, as data: the one record that the terminal view, the golden
/// tests and the docs generator all read. No program parses another program's
/// human-readable output.
///
/// A chapter run with `--record=FILE` writes it as JSON:
/// ```
/// {"format": 1, "chapter": "03_simple_mask", "key": "3", "title": "...",
///  "options": {"backend": "portable", "compare": true, "seed": null, "quick": false}, "seeds": [789],
///  "blocks": [{"step": "mask", "label": "...", "kind": "book", "sources": ["002-In05"],
///              "style": "torch", "text": "tensor(...)",
///              "comparisons": [{"entry": "002-In05", "check": {"kind": "exact", "detail": ""},
///                               "result": "identical", "summary": "...",
///                               "differences": [], "numbers": 42,
///                               "numbers_identical": 42}]}]}
/// ```
/// A block may carry `"tensors"`: numbers recorded for the book's figures, never printed
/// (`TensorRecord`); the key is absent when it carries none.
/// `options.quick` is true for a `--quick` run (absent in older records: false).
/// `options.seed` is the `--seed=N` the run was given (`null`: the notebooks' seeds), `seeds`
/// every seed the chapter actually gave `manual_seed` (through `Chapter::seed`), in order.
/// `kind` is `book` (the block mirrors the listed book entries) or `new` (the notebooks do not
/// print it). `result` is `identical`, `within_ulp`, `differs`, `differs_expected` (the run
/// chose another dropout backend than the book's default), `relation` or `unreproducible`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "textbook/book.hpp"

namespace textbook {

/// A block's comparison with one book entry, as recorded.
struct ComparisonRecord {
    std::string entry;    ///< the book entry's id
    Check check;          ///< how it was compared
    std::string result;   ///< `identical`, `within_ulp`, `differs`, `differs_expected`,
                          ///< `relation`, `unreproducible`
    std::string summary;  ///< one line for a reader
    std::vector<std::string> differences;  ///< one line per differing number or line
    std::size_t numbers = 0;               ///< numbers in the book's block
    std::size_t numbers_identical = 0;     ///< of which printed identically

    /// Records `compare(entry, text)`.
    static ComparisonRecord of(const Entry& entry, const Comparison& comparison);
};

/// Numbers a block carries beside its text for the book's figures (docs/figures): what the
/// chapter computed and a figure draws where the printed text does not hold it (every
/// sequence of a batch when one is printed, every step of a training run when every 50th is).
/// Recorded, never printed. In the JSON, `{"name": "attention_weights", "shape": [3, 9, 9],
/// "values": [...]}`, each value the shortest decimal that reads back as the same float32;
/// NaN and infinities as the strings `"nan"`, `"inf"`, `"-inf"`.
struct TensorRecord {
    std::string name;                ///< what the numbers are, e.g. `attention_weights`
    std::vector<std::size_t> shape;  ///< their shape, e.g. `[3, 9, 9]`
    std::vector<float> values;       ///< row-major, as computed (float32)

    TensorRecord() = default;
    /// A tensor's shape and values.
    TensorRecord(std::string name, const attn::Tensor& t);
    /// A series, `[n]`: e.g. the loss at each training step.
    TensorRecord(std::string name, const std::vector<float>& series);
    /// The values as a tensor of `shape`.
    attn::Tensor tensor() const;
};

/// One printed block.
struct BlockRecord {
    std::string step;                  ///< the page section it was printed in (`""`: before any)
    std::string label;                 ///< a short label: what the block shows
    std::string kind;                  ///< `book` or `new`
    std::vector<std::string> sources;  ///< the book entries it mirrors (empty for `new`)
    std::string style;                 ///< the first source's style, or `text`
    std::string text;                  ///< exactly what the chapter printed
    std::vector<ComparisonRecord> comparisons;  ///< one per source
    std::vector<TensorRecord> tensors;  ///< numbers for the figures (usually none)

    /// True when a text comparison failed (`differs`).
    bool differs() const;
};

/// Everything one chapter run printed.
struct ChapterRecord {
    int format = 1;             ///< the record's format version
    std::string chapter;        ///< `03_simple_mask`
    std::string key;            ///< `3`: the manifest's chapter column
    std::string title;          ///< the page title
    std::string backend;        ///< the dropout backend of the run
    bool compare = true;        ///< whether comparisons were shown
    bool quick = false;         ///< `--quick`: a shortened run (its `left out` blocks say what of)
    std::optional<std::uint64_t> seed_option;  ///< `--seed=N` when the run was given one
    std::vector<std::uint64_t> seeds;  ///< every seed the chapter passed to `manual_seed`
                                       ///< through `ch.seed`, in order of first use
    std::vector<BlockRecord> blocks;  ///< in printed order

    /// Writes the record as JSON (2-space indent).
    /// @throws std::runtime_error naming the file when it cannot be written.
    void save(const std::filesystem::path& file) const;

    /// Reads a record written by `save`, strictly: every field of the JSON type `save`
    /// writes, `kind` and `result` one of their values, no key twice in an object.
    /// @throws std::runtime_error `"<file>: malformed chapter record: <why>"` naming the line
    /// and column of a JSON syntax error (nlohmann's message), or the field by its path
    /// (`blocks[3].comparisons[0].numbers: expected a non-negative integer, got -1`), or the
    /// repeated key, or a block's tensor whose values do not fill its shape;
    /// `"<file>: cannot be read (...)"` when it cannot be read.
    static ChapterRecord load(const std::filesystem::path& file);
};

/// The terminal view of a block: `### <sources> · <label>` (`### new · <label>` for a block
/// the notebooks do not print), the text, and (with `compare`)
/// the `>>> ` lines of each comparison; for an unseeded entry also the notebook's own block
/// (`>>> | ` lines), taken from `book`. The header and the verdicts are the book's own lines:
/// each is wrapped at `kTerminalColumns` (continued under a 4- or 8-column indent); the
/// printed text and the notebook's block are shown as printed.
std::string render_block(const BlockRecord& block, const Book& book, bool compare);

/// The width of the terminal the book's own lines are set for (prose, headers, verdicts).
inline constexpr std::size_t kTerminalColumns = 100;

/// `line` broken at spaces into lines of at most `width` columns (UTF-8 code points; a word
/// longer than a line stands alone), the first line as is, the others after `indent`; each
/// line ends in a newline.
std::string wrap_line(const std::string& line, const std::string& indent,
                      std::size_t width = kTerminalColumns);

}  // namespace textbook
