/// @file chapter.hpp
/// @brief The chapter runner: what every chapter program shares, so that a chapter holds only
/// the notebook's cells, snippet markers and one short label per printed block.
///
/// ```
/// int main(int argc, char** argv) {
///     return textbook::run(argc, argv, {.name = "03_simple_mask"}, [](textbook::Chapter& ch) {
///         ch.step("mask");
///         //! [mask]
///         const attn::Tensor mask_simple = attn::tril(attn::ones({6, 6}));
///         //! [mask]
///         ch.book("002-In05", "mask_simple", attn::repr(mask_simple));
///     });
/// }
/// ```
/// The prose comes from the chapter's page (prose.hpp): `step(id)` prints every section of
/// the page up to and including `id`. Each block goes into the chapter's record
/// (record.hpp), from which the terminal view is rendered and which `--record=FILE` saves
/// for the golden tests and the docs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "attn/nn/nn.hpp"
#include "attn/core/tensor.hpp"
#include "textbook/book.hpp"
#include "textbook/prose.hpp"
#include "textbook/progress.hpp"
#include "textbook/record.hpp"

namespace attn {
enum class SDPABackend;  // attn/attention/sdpa.hpp
}

namespace textbook {

/// What a chapter program is.
struct ChapterInfo {
    std::string name;      ///< `03_simple_mask`: program `chapter_<name>`, page `<name>.md`
    bool dropout = false;  ///< the chapter draws dropout masks: it takes `--dropout-backend`
    bool seeded = false;   ///< the chapter seeds the generator (`ch.seed`): it takes `--seed`
    /// Part VI: the chapter runs as this many MPI processes (ranks.hpp). Started alone, it
    /// starts itself under `mpirun -np <ranks>`; rank 0 prints and records. 0: one process.
    int ranks = 0;
};

/// The parsed command line of a chapter program.
struct Options {
    attn::nn::BernoulliBackend backend = attn::nn::BernoulliBackend::portable;  ///< `--dropout-backend`
    bool compare = true;  ///< `--no-compare` hides the `>>>` lines
    std::string record;   ///< `--record=FILE`: save the chapter's record there
    std::optional<std::uint64_t> seed;  ///< `--seed=N`: every `ch.seed(...)` gives N instead
    /// `--quick`: the Quick start's run. A chapter whose whole run takes minutes (chapter 26's
    /// training) does a shortened one and says what it leaves out; the others ignore it.
    bool quick = false;
    /// `--attention-backend=fast|step`: the attention core's default backend
    /// (`attn::set_default_sdpa_backend`) for every attention the chapter does not pin. The two
    /// give the same bits, so a chapter prints the same bytes on either (CI compares them).
    /// `automatic` (the value-initialized enum): the process default stays.
    attn::SDPABackend attention_backend{};
};

/// Parses `--help`, `--no-compare`, `--record=FILE`, `--attention-backend=fast|step`, for chapters with dropout
/// `--dropout-backend=portable|mkl`, and for seeded chapters `--seed=N`. Prints usage and exits 0 for `--help`; prints the error
/// and usage to stderr and exits 2 for an unknown flag, a bad value or a stray argument.
/// (Defined in cli.cpp, with every command line of the book's programs.)
Options parse_args(int argc, char** argv, const ChapterInfo& info);

/// The program's name, `chapter_<name>`: what its messages start with.
std::string program_name(const ChapterInfo& info);

/// The manifest's chapter key of a chapter name: `03_simple_mask` -> `3`, `A_dropout_masks` -> `A`.
std::string chapter_key(const std::string& name);

/// A running chapter: prints its prose and blocks, and records them.
class Chapter {
public:
    /// Loads the book (`data_dir()`) and the rendered page (`prose_dir()/<name>.prose.json`), prints the title
    /// and the introduction.
    /// @throws std::runtime_error when the book or the page is malformed (its `path:line` named).
    Chapter(const ChapterInfo& info, const Options& options);

    /// Starts step `id`: prints the page's sections up to and including `id` that are not
    /// printed yet. Steps must come in page order.
    /// @throws std::out_of_range when the page has no such section, or it was passed already.
    void step(const std::string& id);

    /// Prints and records a block that mirrors the book entries `ids` (comma-separated, e.g.
    /// `"002-In05"` or `"002-In03,raschka-In12"`), compared with each. `tensors` are recorded
    /// with the block for the figures, not printed (record.hpp's `TensorRecord`):
    /// `ch.book(ids, label, text, {{"loss", losses}})`.
    /// @throws std::out_of_range when an id is not in the manifest.
    void book(const std::string& ids, const std::string& label, const std::string& text,
              std::vector<TensorRecord> tensors = {});

    /// Prints and records a block the notebooks do not print (`new`); `tensors` as for `book`.
    void show(const std::string& label, const std::string& text, std::vector<TensorRecord> tensors = {});

    /// Prints the rest of the page, saves the record if asked, and returns the exit status:
    /// 0, or 1 when a block DIFFERS from its source (the message names it on stderr).
    int finish();

    /// The seed for `attn::manual_seed`: `book_seed` (the notebook's), or the reader's
    /// `--seed=N`. With another seed, seeded blocks are expected to differ from the notebooks
    /// and say so ("differs, as expected with another seed"); the chapter still exits 0. The
    /// record lists every seed given out (`ChapterRecord::seeds`).
    std::uint64_t seed(std::uint64_t book_seed);

    /// The command line's options.
    const Options& options() const { return options_; }
    /// Whether this is the Quick start's shortened run (`--quick`).
    bool quick() const { return options_.quick; }
    /// Prints and records, in `--quick` runs, what the shortened run leaves out of step
    /// `what` (a `new` block labelled "left out of this quick run"), so that the terminal, the
    /// record and the tally say it; the book's page shows the whole run from its recording.
    void left_out(const std::string& what);
    /// The dropout backend chosen on the command line.
    attn::nn::BernoulliBackend backend() const { return options_.backend; }
    /// The backend's name, `portable` or `MKL`, for labels.
    std::string backend_name() const { return attn::nn::backend_name(options_.backend); }
    /// The book, for chapters that feed a printed block back in (e.g. 001's scores).
    const Book& data() const { return book_; }

private:
    void print_sections_until(std::size_t end);
    // Writes `text` to stdout, clearing the step clock's line first.
    static void print(const std::string& text);

    ChapterInfo info_;
    Options options_;
    Book book_;
    Page page_;
    std::size_t printed_sections_ = 0;
    std::string current_step_;
    ChapterRecord record_;
    StepClock clock_;  // a line on a terminal while a step prints nothing for seconds
};

/// Runs a chapter: parses the command line, builds the `Chapter`, calls `body`, finishes.
/// Any exception becomes one line on stderr (`chapter_<name>: <what>`) and exit status 1;
/// a failed write to stdout is exit status 1 too. Returns the status for `main`.
int run(int argc, char** argv, const ChapterInfo& info,
        const std::function<void(Chapter&)>& body);

}  // namespace textbook
