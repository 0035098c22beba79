/// @file prose.hpp
/// @brief A chapter's prose: its page `docs/chapters/<name>.md`, the one home of every
/// paragraph, read by the chapter program (for the terminal) and by the docs generator (for
/// the HTML book).
///
/// The page is Doxygen Markdown: a `# Title {#label}` line, an introduction, then sections
/// `## Heading {#chNN-id}`. Each section is a step of the chapter; the chapter program names
/// it by `id` (`ch.step("mask")`), and the docs put the code between the markers
/// `//! [id]` (and `//! [id.2]`, ...) and the blocks printed in that step after its prose.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace textbook {

/// One `## ` section of a chapter page.
struct Section {
    std::string id;     ///< `mask` for `{#ch03-mask}`
    std::string title;  ///< the heading without its label
    std::string body;   ///< the Markdown below the heading, up to the next `## `
    int line = 0;       ///< line of the heading in the page
};

/// A chapter page.
struct Page {
    std::filesystem::path file;     ///< where it was read from
    std::string title;              ///< the `# ` heading without its label
    std::string intro;              ///< the Markdown before the first section
    std::vector<Section> sections;  ///< in page order

    /// Reads and splits a page, a data file like the book's (attn/core/text_file.hpp).
    /// @throws std::runtime_error naming the file (and line) when it cannot be read, a line
    /// is not text (a CR line ending, a control character, a byte that is not UTF-8), the
    /// file is cut short (no final line ending), a paragraph exceeds 8192 bytes, it has no
    /// `# ` title, or a `## ` heading lacks a `{#label}` or repeats one.
    static Page load(const std::filesystem::path& file);

    /// The index of the section `id` in `sections`.
    /// @throws std::out_of_range naming the page and the id when there is none.
    std::size_t index_of(const std::string& id) const;
};

/// Doxygen Markdown as plain text for a terminal: paragraphs wrapped at 80 columns; inline
/// formulas `\f$x\f$` and code spans keep their text; display formulas `\f[ ... \f]`, code
/// blocks and list items keep their lines (indented); `\image` and `\snippet` lines are
/// dropped (the terminal shows the program's own output instead).
std::string terminal_text(const std::string& markdown);

/// The directory of the chapter pages: `$ATTN_PROSE_DIR` if set, else the `docs/chapters/`
/// of the source tree the program was built from.
std::filesystem::path prose_dir();

}  // namespace textbook
