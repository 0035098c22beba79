/// @file prose.hpp
/// @brief A chapter's prose as the terminal shows it. The prose has one home, the chapter's
/// page `docs/chapters/<name>.md` (Doxygen Markdown, set in the HTML book); at build time
/// `docs/tools/terminal_pages.py` renders it for the terminal (paragraphs wrapped at 80
/// columns, TeX formulas set in Unicode, tables aligned, glossary words defined at their first
/// use) into `<name>.prose.json`, which the chapter program reads and prints step by step.
///
/// The page is a `# Title {#label}` line, an introduction, then sections
/// `## Heading {#chNN-id}`. Each section is a step of the chapter; the chapter program names
/// it by `id` (`ch.step("mask")`), and the HTML book puts the code between the markers
/// `//! [id]` (and `//! [id.2]`, ...) and the blocks printed in that step after its prose.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace textbook {

/// One `## ` section of a chapter page, rendered for the terminal.
struct Section {
    std::string id;     ///< `mask` for `{#ch03-mask}`
    std::string title;  ///< the heading without its label, as plain text
    std::string text;   ///< the section's prose, ready to print (no trailing newline)
};

/// A chapter page, rendered for the terminal.
struct Page {
    std::filesystem::path file;     ///< where it was read from
    std::string title;              ///< the `# ` heading without its label, as plain text
    std::string intro;              ///< the prose before the first section, ready to print
    std::vector<Section> sections;  ///< in page order

    /// Reads a page rendered by `docs/tools/terminal_pages.py` (`<name>.prose.json`).
    /// @throws std::runtime_error naming the file when it cannot be read (saying how to build
    /// it), is not a regular file, or is malformed (naming the field, e.g.
    /// `page.sections[2].text`). The Markdown page itself is checked when it is rendered
    /// (docs/tools/bookpages.py: line endings, control characters, labels, named by line).
    static Page load(const std::filesystem::path& file);

    /// The index of the section `id` in `sections`.
    /// @throws std::out_of_range naming the page and the id when there is none.
    std::size_t index_of(const std::string& id) const;
};

/// The directory of the rendered pages: `$ATTN_PROSE_DIR` if set, else the `chapters/`
/// directory of the build the program was built in (beside the chapter programs).
std::filesystem::path prose_dir();

}  // namespace textbook
