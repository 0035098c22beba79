/// @file book.hpp
/// @brief The book as data: every block the notebooks printed, verbatim, with its provenance,
/// and the comparisons that tell a reader whether a chapter reproduced it.
///
/// `data/book/manifest.tsv` lists one printed output per line (tab-separated):
/// `id  notebook  cell  chapter  style  precision  check  file  what`. `file` names a text
/// file under `data/book/` holding the output exactly as the notebook printed it.
/// - `style`: `torch` (PyTorch's `print(tensor)`), `numpy` (NumPy's `print(array)`),
///   or `text` (anything else: Python values, error messages);
/// - `check`: `exact` (seeded: reproduced as text), `ulp:N` (seeded, NumPy-style: each
///   number within N ulp, or 1e-7 absolute near zero, see "Last bits" in the notes),
///   `relation:<name>` (unseeded: checked through the named relation),
///   `unreproducible:<reason>`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace textbook {

/// How a book entry is checked (the manifest's `check` column, parsed once).
struct Check {
    /// The four ways an entry is checked.
    enum class Kind {
        exact,           ///< seeded: reproduced as text, byte for byte
        ulp,             ///< seeded, NumPy-style: each number within `max_ulp` ulp
        relation,        ///< unseeded: checked through the named relation (`detail`)
        unreproducible,  ///< cannot be reproduced; `detail` says why
    };
    Kind kind = Kind::exact;  ///< which of the four
    std::string detail;    ///< the relation's name or the reason; `N` of `ulp:N`
    long long max_ulp = 0;  ///< for `ulp`

    /// Parses `exact`, `ulp:N` (N in decimal, whole, at most 999999999), `relation:<name>`
    /// or `unreproducible:<why>`.
    /// @throws std::invalid_argument naming the text when it is none of these.
    static Check parse(const std::string& text);
    /// Checks that `kind` is one of the four (it is a public field: a value cast from an
    /// integer outside the enum must not be read as another kind).
    /// @throws std::invalid_argument `"Check: unknown kind N (expected exact, ulp, relation
    /// or unreproducible)"` otherwise.
    void validate() const;
    /// The manifest's spelling: `exact`, `ulp:4`, `relation:<name>`, ...
    /// @throws std::invalid_argument as `validate`.
    std::string str() const;
    /// The kind's name: `exact`, `ulp`, `relation`, `unreproducible`.
    /// @throws std::invalid_argument as `validate`.
    std::string kind_name() const;
    /// True for `exact` and `ulp`: the chapter's printed text is compared with the book's.
    /// @throws std::invalid_argument as `validate`.
    bool compares_text() const;
};

/// One printed output of a notebook.
struct Entry {
    std::string id;         ///< e.g. `002-In08`, `004-In64-2` (the second output of In [64])
    std::string notebook;   ///< the source's file name in `data/sources/seeds/`, `raschka/` or `oracle/`
    std::string cell;       ///< e.g. `In [8]`
    std::string chapter;    ///< the chapter that prints it: `1`..`16`, or `A` (the appendix)
    std::string style;      ///< `torch`, `numpy` or `text`
    int precision = 0;      ///< printed fraction digits (torch: 4 or 2; numpy: 8 at most)
    Check check;            ///< how it is compared
    std::string file;       ///< path of the verbatim block, relative to `data/book/`
    std::string what;       ///< what the block shows, in a few words
    std::string text;       ///< the block, verbatim (no trailing newline)
    int line = 0;           ///< line of the manifest that declared it
};

/// The manifest and its blocks.
class Book {
public:
    /// Reads `<data_dir>/book/manifest.tsv` and every block it names. Both are data files
    /// (textbook/text_file.hpp): UTF-8 text in LF-terminated lines, read whole.
    /// @throws std::runtime_error naming the file and line of a malformed manifest line
    /// (wrong number of fields, unknown style or check, bad chapter, a precision that is not
    /// a whole number for a tensor block or not `-` for a text block, a duplicate id naming
    /// the first line, a block path outside `data/book/`, no entries), of a block file that
    /// cannot be read, is not a regular file or is empty, and of the first line that is not
    /// text (a CR line ending, a control character, a byte that is not UTF-8) or a file
    /// cut short (no final line ending): in the manifest its line, in a block file the
    /// block's own `path:line`. Every message is one line and never echoes bytes that are
    /// not text.
    static Book load(const std::filesystem::path& data_dir);

    /// The entry with this id.
    /// @throws std::out_of_range naming the id when there is none.
    const Entry& at(const std::string& id) const;

    /// All entries, in manifest order.
    const std::vector<Entry>& entries() const { return entries_; }

    /// A source named by its title, as the tally and the book name it:
    /// `002 · Masked / Causal Attention Implementation` for `002_71906f06d162f7d6.txt`, from
    /// `data/sources/titles.tsv` (read by `load` when it is there); the file name when the
    /// source has no line there.
    std::string source_title(const std::string& notebook) const;

private:
    std::vector<Entry> entries_;
    std::vector<std::pair<std::string, std::string>> titles_;  // notebook file -> `name · title`
};

/// How a chapter header names an entry's source: the notebook's number (`002`), or
/// `Raschka 3` / `Raschka 3 ex.` for Raschka's chapter 3 and its exercise solutions (`Raschka 4`,
/// `Raschka 4 ex.`, `Raschka 4 KV cache` for his chapter 4, its solutions and his KV-cache
/// README; `Raschka 5` for his chapter 5), or
/// `oracle 19` for a PyTorch run recorded for a chapter (`data/sources/oracle/oracle_19_....txt`).
std::string source_name(const Entry& entry);

/// What a verdict calls an entry's source: `the oracle run` for a PyTorch run recorded by this
/// project (`data/sources/oracle/`), `the notebook` for the notebooks and Raschka's.
std::string source_noun(const Entry& entry);

/// The book's input: the six 3-d embeddings of "Your journey starts with one step",
/// `[6, 3]` float32, one row per token (notebook 002 In [1], notebook 004 In [2]).
attn::Tensor inputs();

/// Chapter 4's causal attention weights, which chapter 5 and appendix A drop out: `[6, 6]`
/// float32. `SelfAttention_v2(3, 2)` built after `manual_seed(seed)` (the book's seed is 789),
/// scores `queries @ keys.T` of `inputs()`, `-inf` above the diagonal, then
/// `softmax(scores / sqrt(d_k), dim=-1)` (002 In [10]-[11], 004 In [44]-[45]). Reseeds the
/// default generator and leaves it after the module's draws.
attn::Tensor causal_attention_weights(std::uint64_t seed);

/// The data directory: `$ATTN_DATA_DIR` if set, else the `data/` of the source tree the
/// program was built from.
std::filesystem::path data_dir();

/// The book text without PyTorch's `grad_fn=<...>` suffixes (there is no autograd here),
/// wherever they stand (`..., grad_fn=<MmBackward0>)` or on a line of their own).
std::string strip_grad_fn(const std::string& text);

/// A number or non-finite word found in a printed block, with its text.
struct Number {
    std::string text;  ///< as printed: `0.07128991`, `-inf`, `2.`, `1.4901e-08`
    double value;      ///< its value
};

/// Splits printed text into its numbers (including `inf`, `-inf`, `nan`) and a skeleton in
/// which each number is replaced by `#` and runs of spaces are collapsed to one.
/// Integers inside `torch.Size([...])` or `tensor(` labels count as numbers too.
std::vector<Number> numbers_in(const std::string& text, std::string* skeleton = nullptr);

/// The first `rows * cols` numbers a block printed (`-inf` included), as a `[rows, cols]`
/// float32 tensor: lets a chapter or test feed the notebook's own printed values (e.g. 001
/// In [10]'s masked scores) into the library.
/// @throws std::invalid_argument naming the entry when it printed fewer numbers.
attn::Tensor printed_matrix(const Entry& entry, std::size_t rows, std::size_t cols);

/// The outcome of comparing a chapter's printed block with the book's.
struct Comparison {
    bool text_check = false;            ///< the entry's check compares text (`exact`, `ulp:N`)
    std::string unreproducible_reason;  ///< for `unreproducible:<why>` entries, the why
    bool match = false;                 ///< the text check passed
    bool identical = false;             ///< byte for byte equal (after `strip_grad_fn`)
    std::size_t numbers = 0;            ///< numbers compared
    std::size_t numbers_identical = 0;  ///< of which printed identically
    std::vector<std::string> differences;  ///< one line per differing number or text
    std::string source = "the notebook";   ///< what the verdict calls the source (`source_noun`)
    std::string summary() const;        ///< one line for a reader
};

/// Compares `ours` with the entry's block according to its `check`:
/// `exact`: byte for byte after `strip_grad_fn`; `ulp:N`: same skeleton and every number
/// within N ulp (or within 1e-7 absolute); other checks (`relation:`, `unreproducible:`)
/// are not text checks and give `text_check = false`, `match = false`.
Comparison compare(const Entry& entry, const std::string& ours);

}  // namespace textbook
