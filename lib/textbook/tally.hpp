/// @file tally.hpp
/// @brief The book's tally: how many printed blocks each chapter reproduced, and how much of
/// each source (notebook) the chapters reproduce, read from the chapters' records.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "textbook/book.hpp"
#include "textbook/record.hpp"

namespace textbook {

/// Counts of one row of the tally.
struct TallyRow {
    std::string name;                  ///< the chapter (`Chapter 3 · A simple causal mask`) or
                                       ///< the source by its title (`002 · Masked / Causal ...`)
    std::size_t identical = 0;         ///< compared as text, byte for byte equal
    std::size_t within_ulp = 0;        ///< compared number by number, within the ulp bound
    std::size_t relation = 0;          ///< unseeded, checked through a relation in the tests
    std::size_t unreproducible = 0;    ///< cannot be reproduced (the reason is in the manifest)
    std::size_t differs = 0;           ///< compared and different (expected with another backend
                                       ///< when the run chose one)
    std::size_t fresh = 0;             ///< blocks the notebooks do not print (`new`); chapters only
    std::size_t missing = 0;           ///< book entries no chapter printed; sources only
};

/// The tally of a full run.
struct Tally {
    std::vector<TallyRow> chapters;  ///< one row per record, in the order given
    std::vector<TallyRow> sources;   ///< one row per source of the manifest, in manifest order,
                                     ///< named by its title (`Book::source_title`)
    TallyRow chapters_total;         ///< the sum of `chapters`
    TallyRow sources_total;          ///< the sum of `sources`
};

/// Counts a run: each comparison of each block of each record, by its result (a block that
/// mirrors two entries counts in both sources); each manifest entry once, by the best result
/// any record shows for it, or as missing.
Tally tally(const Book& book, const std::vector<ChapterRecord>& records);

/// The tally as two plain-text tables (`by chapter`, `by source`) for the terminal, within
/// its 100 columns (`kTerminalColumns`): a long name wraps under a 2-column indent, its counts
/// on the row's first line.
std::string tally_text(const Tally& t);

/// The tally as two HTML tables (class `book-table book-tally`) for the generated book.
std::string tally_html(const Tally& t);

/// The parsed command line of `book_tally [--html] RECORD.json...`.
struct TallyOptions {
    bool html = false;                 ///< `--html`: print `tally_html` instead of `tally_text`
    std::vector<std::string> records;  ///< the chapters' record files (`--record=FILE`)
};

/// Parses `book_tally`'s command line. Prints usage and exits 0 for `--help`; prints the error
/// and usage to stderr and exits 2 for an unknown flag or no record file. (Defined in
/// cli.cpp, with every command line of the book's programs.)
TallyOptions parse_tally_args(int argc, char** argv);

}  // namespace textbook
