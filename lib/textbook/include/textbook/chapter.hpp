/// @file chapter.hpp
/// @brief What every chapter program shares: its command line and the way it prints a block
/// next to the book.
///
/// A chapter's output is prose and blocks. Each block looks like
/// ```
/// ### 002 In [8] · renormalised weights: masked_simple / row_sums
/// tensor([[1.0000, 0.0000, ...
/// >>> book 002-In08 (torch, exact): identical to the notebook
/// ```
/// The `### ` header says where the block comes from (notebook and cell, or `new`), the
/// body is exactly what the program printed, and the `>>> ` lines compare it with the book.
/// The golden tests read chapters' output in this shape.
#pragma once

#include <optional>
#include <string>

#include "textbook/book.hpp"
#include "attn/nn.hpp"

namespace attn::chapter {

/// The parsed command line of a chapter program.
struct Options {
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< `--dropout-backend`
    bool compare = true;  ///< `--no-compare` hides the `>>>` comparison lines
};

/// Parses `--help`, `--dropout-backend=portable|mkl` and `--no-compare`.
/// Prints usage and exits 0 for `--help`; prints the error and usage to stderr and exits 2
/// for an unknown flag, a bad value or a stray argument.
Options parse_args(int argc, char** argv, const std::string& program,
                   const std::string& description);

/// Prints a chapter: its title, prose, and blocks compared with the book.
class Printer {
public:
    /// Loads the book from `book::data_dir()` and prints the chapter title.
    /// @throws std::runtime_error when the book data is malformed (file and line named).
    Printer(const Options& options, const std::string& title);

    /// Prints a paragraph of prose (wrapped at 80 columns), followed by a blank line.
    void prose(const std::string& text) const;

    /// Prints a block the notebooks printed: the header names the entry's notebook and cell,
    /// then `text`, then the comparison with the book entry `id`.
    /// @throws std::out_of_range when `id` is not in the manifest.
    void book(const std::string& id, const std::string& what, const std::string& text) const;

    /// Prints a block the notebooks did not print (header `new`), with a `>>> new` footer.
    void fresh(const std::string& what, const std::string& text) const;

    /// The book, for chapters that need an entry's text as input.
    const attn::book::Book& data() const { return book_; }

private:
    Options options_;
    attn::book::Book book_;
};

}  // namespace attn::chapter
