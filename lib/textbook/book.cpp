#include "textbook/book.hpp"

#include "attn/modules/self_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "textbook/text_file.hpp"
#include "attn/core/ulp.hpp"

namespace textbook {

using namespace attn;

namespace {

std::vector<std::string_view> split_tabs(std::string_view line) {
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
        if (tab == std::string_view::npos) break;
        start = tab + 1;
    }
    return fields;
}

// `1`..`99...` without a leading zero, or one capital letter (`A`, the appendix). Checked by
// hand: std::regex recurses once per character and a long field would exhaust the stack.
bool is_chapter_key(std::string_view key) {
    if (key.size() == 1 && key[0] >= 'A' && key[0] <= 'Z') return true;
    if (key.empty() || key[0] == '0') return false;
    for (char c : key)
        if (c < '0' || c > '9') return false;
    return true;
}

// A block file's name as the manifest gives it: a relative path that stays inside
// data/book/ (no absolute path, no `..`), so a manifest cannot make the book read elsewhere.
void check_block_name(const std::filesystem::path& manifest, std::size_t line,
                      std::string_view name) {
    const std::filesystem::path p(name);
    bool inside = !p.is_absolute() && !p.has_root_name();
    for (const auto& part : p)
        if (part == "..") inside = false;
    if (!inside)
        textbook::throw_at(manifest, line, "file must be a relative path inside data/book/, got " +
                                      textbook::quoted(name));
}

}  // namespace

Book Book::load(const std::filesystem::path& data_dir) {
    const std::filesystem::path manifest = data_dir / "book" / "manifest.tsv";
    std::string file;
    try {
        file = textbook::read_data_file(manifest);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) + ": cannot open the book's manifest");
    }
    const auto lines = textbook::data_lines(manifest, file);
    Book book;
    std::map<std::string, std::size_t, std::less<>> ids;  // id -> its line
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::size_t number = i + 1;
        const std::string_view line = lines[i];
        if (line.empty() || line[0] == '#') continue;
        const auto f = split_tabs(line);
        if (f.size() != 9)
            textbook::throw_at(manifest, number,
                      "expected 9 tab-separated fields (id notebook cell chapter style precision "
                      "check file what), got " + std::to_string(f.size()));
        for (std::size_t k = 0; k < f.size(); ++k)
            if (f[k].empty()) textbook::throw_at(manifest, number, "field " + std::to_string(k + 1) + " is empty");
        Entry e;
        e.line = static_cast<int>(std::min<std::size_t>(number, INT_MAX));
        e.id = f[0];
        if (const auto [it, fresh] = ids.emplace(e.id, number); !fresh)
            textbook::throw_at(manifest, number, "duplicate id " + textbook::quoted(e.id) + " (first on line " +
                                            std::to_string(it->second) + ")");
        e.notebook = f[1];
        e.cell = f[2];
        e.chapter = f[3];
        if (!is_chapter_key(e.chapter))
            textbook::throw_at(manifest, number, "chapter must be a number or a capital letter, got " +
                                            textbook::quoted(e.chapter));
        e.style = f[4];
        if (e.style != "torch" && e.style != "numpy" && e.style != "text")
            textbook::throw_at(manifest, number, "style must be torch, numpy or text, got " + textbook::quoted(e.style));
        // A printed tensor has its number of fraction digits; text has none (`-`).
        if (e.style == "text") {
            if (f[5] != "-")
                textbook::throw_at(manifest, number, "precision of a text block must be '-', got " +
                                                textbook::quoted(f[5]));
        } else {
            const auto precision = textbook::parse_integer(f[5], 99);
            if (!precision)
                textbook::throw_at(manifest, number, "precision must be a non-negative integer (at most "
                                            "99) for a " + e.style + " block, got " +
                                                textbook::quoted(f[5]));
            e.precision = static_cast<int>(*precision);
        }
        try {
            e.check = Check::parse(std::string(f[6]));
        } catch (const std::invalid_argument& err) {
            textbook::throw_at(manifest, number, err.what());
        }
        check_block_name(manifest, number, f[7]);
        e.file = f[7];
        e.what = f[8];
        const std::filesystem::path block = data_dir / "book" / e.file;
        std::string text;
        try {
            text = textbook::read_data_file(block);
        } catch (const std::runtime_error& err) {
            textbook::throw_at(manifest, number, "cannot read block file " + std::string(err.what()));
        }
        // A bad line in a block names the block's own line, not the manifest's.
        const auto block_lines = textbook::data_lines(block, text);
        std::size_t last = block_lines.size();
        while (last > 0 && block_lines[last - 1].empty()) --last;
        if (last == 0) textbook::throw_at(manifest, number, "block file " + block.string() + " is empty");
        // The block verbatim, without the final line ending(s).
        e.text = text.substr(0, static_cast<std::size_t>(block_lines[last - 1].data() - text.data()) +
                                    block_lines[last - 1].size());
        book.entries_.push_back(std::move(e));
    }
    if (book.entries_.empty())
        textbook::throw_at(manifest, lines.size(), "no entries by the end of the file");
    // The sources' titles (file, name, title, about), when the data directory has them.
    const std::filesystem::path titles = data_dir / "sources" / "titles.tsv";
    if (std::filesystem::exists(titles)) {
        const std::string titles_text = textbook::read_data_file(titles);
        const auto title_lines = textbook::data_lines(titles, titles_text);
        for (std::size_t n = 0; n < title_lines.size(); ++n) {
            const std::string line(title_lines[n]);
            if (line.empty() || line[0] == '#') continue;
            std::vector<std::string> f;
            std::stringstream ss(line);
            for (std::string field; std::getline(ss, field, '\t');) f.push_back(field);
            if (f.size() != 4)
                textbook::throw_at(titles, n + 1, "expected 4 tab-separated fields (file, name, title, about)");
            book.titles_.emplace_back(f[0], f[1] + " \u00b7 " + f[2]);
        }
    }
    return book;
}

std::string Book::source_title(const std::string& notebook) const {
    for (const auto& [file, title] : titles_)
        if (file == notebook) return title;
    return notebook;
}

const Entry& Book::at(const std::string& id) const {
    for (const auto& e : entries_)
        if (e.id == id) return e;
    throw std::out_of_range("book: no entry with id '" + id + "' in data/book/manifest.tsv");
}

std::string source_name(const Entry& entry) {
    if (entry.notebook == "raschka_ch03.txt") return "Raschka 3";
    if (entry.notebook == "raschka_ch03_exercises.txt") return "Raschka 3 ex.";
    if (entry.notebook == "raschka_ch04.txt") return "Raschka 4";
    if (entry.notebook == "raschka_ch04_exercises.txt") return "Raschka 4 ex.";
    if (entry.notebook == "raschka_ch04_kv_cache_README.md") return "Raschka 4 KV cache";
    if (entry.notebook == "raschka_ch05.txt") return "Raschka 5";
    if (entry.notebook == "raschka_ch05_hf_safetensors.txt") return "Raschka 5 HF";
    if (entry.notebook == "raschka_ch05_exercises.txt") return "Raschka 5 ex.";
    if (entry.notebook == "raschka_appendix_d.txt") return "Raschka D";
    // An oracle run recorded for a chapter: `oracle_21_attention_learns.txt` -> `oracle 21`.
    if (entry.notebook.rfind("oracle_", 0) == 0)
        return "oracle " + entry.notebook.substr(7, entry.notebook.find('_', 7) - 7);
    return entry.notebook.substr(0, 3);
}

std::string source_noun(const Entry& entry) {
    return entry.notebook.rfind("oracle_", 0) == 0 ? "the oracle run" : "the notebook";
}

attn::Tensor inputs() {
    return attn::tensor({{0.43f, 0.15f, 0.89f},   // Your     (x^1)
                         {0.55f, 0.87f, 0.66f},   // journey  (x^2)
                         {0.57f, 0.85f, 0.64f},   // starts   (x^3)
                         {0.22f, 0.58f, 0.33f},   // with     (x^4)
                         {0.77f, 0.25f, 0.10f},   // one      (x^5)
                         {0.05f, 0.80f, 0.55f}});  // step     (x^6)
}

attn::Tensor causal_attention_weights(std::uint64_t seed) {
    const attn::Tensor x = inputs();
    attn::manual_seed(seed);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    const attn::Tensor keys = sa_v2.W_key(x);
    const attn::Tensor attn_scores = attn::matmul(sa_v2.W_query(x), attn::T(keys));
    const std::size_t T = attn_scores.shape()[0];
    const attn::BoolTensor causal_mask = attn::to_bool(attn::triu(attn::ones({T, T}), 1));
    const float d_k = static_cast<float>(keys.shape().back());
    return attn::softmax(attn::Tensor(attn::masked_fill(attn_scores, causal_mask,
                                                        -std::numeric_limits<float>::infinity()) /
                                      std::sqrt(d_k)),
                         -1);
}

std::filesystem::path data_dir() {
    if (const char* env = std::getenv("ATTN_DATA_DIR"); env && *env) return env;
#ifdef ATTN_DATA_DIR
    return ATTN_DATA_DIR;
#else
    return "data";
#endif
}

// The two scanners below are written by hand, not with std::regex: libstdc++'s regex
// recurses once per character matched, so a block holding a number of 100,000 digits (or as
// many spaces after a comma) exhausted the stack.

std::string strip_grad_fn(const std::string& text) {
    // `, grad_fn=<...>` either follows on the same line or wraps onto its own indented line:
    // the pattern `,\s*grad_fn=<[A-Za-z0-9_]+>`, removed wherever it stands.
    static constexpr std::string_view marker = "grad_fn=<";
    auto is_space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    auto is_name = [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    };
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == ',') {
            std::size_t j = i + 1;
            while (j < text.size() && is_space(text[j])) ++j;
            if (std::string_view(text).substr(j, marker.size()) == marker) {
                std::size_t k = j + marker.size();
                const std::size_t name = k;
                while (k < text.size() && is_name(text[k])) ++k;
                if (k > name && k < text.size() && text[k] == '>') {
                    i = k + 1;
                    continue;
                }
            }
        }
        out += text[i++];
    }
    return out;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The length of the number token at `p` (0 if none), as the pattern
// `-?inf|nan|-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?` matches there (first alternative first).
std::size_t number_token(std::string_view t, std::size_t p) {
    const std::size_t n = t.size();
    const std::size_t sign = t[p] == '-' ? 1 : 0;
    if (t.substr(p + sign, 3) == "inf") return sign + 3;
    if (t.substr(p, 3) == "nan") return 3;
    std::size_t q = p + sign;
    if (q < n && is_digit(t[q])) {
        while (q < n && is_digit(t[q])) ++q;
        if (q < n && t[q] == '.') ++q;
        while (q < n && is_digit(t[q])) ++q;
    } else if (q + 1 < n && t[q] == '.' && is_digit(t[q + 1])) {
        q += 1;
        while (q < n && is_digit(t[q])) ++q;
    } else {
        return 0;
    }
    if (q < n && t[q] == 'e') {
        std::size_t e = q + 1;
        if (e < n && (t[e] == '+' || t[e] == '-')) ++e;
        if (e < n && is_digit(t[e])) {
            while (e < n && is_digit(t[e])) ++e;
            q = e;
        }
    }
    return q - p;
}

}  // namespace

std::vector<Number> numbers_in(const std::string& text, std::string* skeleton) {
    std::vector<Number> out;
    std::string skel;
    std::size_t last = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t len = number_token(text, pos);
        if (len == 0) {
            ++pos;
            continue;
        }
        const std::size_t end = pos + len;
        // A token glued to a letter or underscore is part of a word (e.g. `x_2`, `In`).
        if (pos > 0 && (std::isalpha(static_cast<unsigned char>(text[pos - 1])) || text[pos - 1] == '_')) {
            pos = end;
            continue;
        }
        skel += text.substr(last, pos - last) + "#";
        last = end;
        const std::string s = text.substr(pos, len);
        double v;
        if (s == "inf") v = std::numeric_limits<double>::infinity();
        else if (s == "-inf") v = -std::numeric_limits<double>::infinity();
        else if (s == "nan") v = std::numeric_limits<double>::quiet_NaN();
        else v = std::strtod(s.c_str(), nullptr);
        out.push_back({s, v});
        pos = end;
    }
    skel += text.substr(last);
    if (skeleton) {
        // Column padding depends on digit counts, so spaces are not part of the skeleton.
        std::string collapsed;
        for (char c : skel)
            if (c != ' ') collapsed += c;
        *skeleton = collapsed;
    }
    return out;
}

attn::Tensor printed_matrix(const Entry& entry, std::size_t rows, std::size_t cols) {
    const auto numbers = numbers_in(strip_grad_fn(entry.text));
    if (numbers.size() < rows * cols)
        throw std::invalid_argument("book entry " + entry.id + ": expected at least " +
                                    std::to_string(rows * cols) + " printed numbers, got " +
                                    std::to_string(numbers.size()));
    attn::Tensor m = xt::zeros<float>(attn::Shape{rows, cols});
    for (std::size_t i = 0; i < rows * cols; ++i) m.data()[i] = static_cast<float>(numbers[i].value);
    return m;
}

Check Check::parse(const std::string& text) {
    Check c;
    auto with_detail = [&](const char* prefix, Kind kind) {
        const std::size_t n = std::strlen(prefix);
        if (text.rfind(prefix, 0) != 0 || text.size() == n) return false;
        c.kind = kind;
        c.detail = text.substr(n);
        return true;
    };
    if (text == "exact") {
        c.kind = Kind::exact;
    } else if (text.rfind("ulp:", 0) == 0) {
        // N in full: `ulp:4x` or `ulp: 4` is a typo, not 4.
        const auto n = textbook::parse_integer(std::string_view(text).substr(4), 999999999);
        if (!n)
            throw std::invalid_argument("check must be exact, ulp:N (N a whole number up to "
                                        "999999999), relation:<name> or unreproducible:<why>, got " +
                                        textbook::quoted(text));
        c.kind = Kind::ulp;
        c.detail = text.substr(4);
        c.max_ulp = static_cast<long long>(*n);
    } else if (!with_detail("relation:", Kind::relation) &&
               !with_detail("unreproducible:", Kind::unreproducible)) {
        throw std::invalid_argument(
            "check must be exact, ulp:N, relation:<name> or unreproducible:<why>, got " +
            textbook::quoted(text));
    }
    return c;
}

void Check::validate() const {
    switch (kind) {
        case Kind::exact:
        case Kind::ulp:
        case Kind::relation:
        case Kind::unreproducible:
            return;
    }
    throw std::invalid_argument("Check: unknown kind " +
                                std::to_string(static_cast<long long>(kind)) +
                                " (expected exact, ulp, relation or unreproducible)");
}

std::string Check::kind_name() const {
    validate();
    switch (kind) {
        case Kind::exact: return "exact";
        case Kind::ulp: return "ulp";
        case Kind::relation: return "relation";
        case Kind::unreproducible: return "unreproducible";
    }
    return "exact";  // not reached: validate() threw
}

std::string Check::str() const { return kind == Kind::exact ? "exact" : kind_name() + ":" + detail; }

bool Check::compares_text() const {
    validate();
    return kind == Kind::exact || kind == Kind::ulp;
}

std::string Comparison::summary() const {
    std::ostringstream out;
    if (!text_check && unreproducible_reason.empty())
        // A notebook's relation stands for values nobody can draw again; an oracle run is
        // seeded, and its relation stands for more than the chapter computes (chapter 23
        // decodes 6 tokens again without the cache, the oracle 200).
        out << (source == "the oracle run"
                    ? "not compared as text: the chapter computes part of it; checked through the relation"
                    : "unseeded: not compared as text, checked through the relation");
    else if (!text_check) {
        // The reason is a name (`torch_version_of_the_run`): read as words.
        std::string why = unreproducible_reason;
        std::replace(why.begin(), why.end(), '_', ' ');
        out << "not reproducible: " << why;
    } else if (identical) out << "identical to " << source;
    else if (match)
        out << numbers_identical << " of " << numbers
            << " printed numbers identical, the rest within tolerance";
    else out << "DIFFERS from " << source;
    return out.str();
}

Comparison compare(const Entry& entry, const std::string& ours) {
    entry.check.validate();  // a kind set from outside the enum is refused, never compared as another
    Comparison c;
    c.source = source_noun(entry);
    const std::string book = strip_grad_fn(entry.text);
    // The book's blocks end without trailing whitespace (tools/extract_book.py strips it, as
    // the exports do: his `print(text_data[:99])` ends in a space the export lost).
    std::string mine = ours;
    while (!mine.empty() && (mine.back() == '\n' || mine.back() == ' ' || mine.back() == '\t')) mine.pop_back();
    c.identical = book == mine;
    std::string skel_book, skel_mine;
    const auto nb = numbers_in(book, &skel_book);
    const auto nm = numbers_in(mine, &skel_mine);
    c.numbers = nb.size();
    c.text_check = entry.check.compares_text();
    if (entry.check.kind == Check::Kind::unreproducible) c.unreproducible_reason = entry.check.detail;
    if (entry.check.kind == Check::Kind::exact) {
        c.match = c.identical;
        if (!c.identical) {
            // Point at the first differing line so the reader sees where.
            std::istringstream a(book), b(mine);
            std::string la, lb;
            int line = 1;
            while (true) {
                const bool ha = static_cast<bool>(std::getline(a, la));
                const bool hb = static_cast<bool>(std::getline(b, lb));
                if (!ha && !hb) break;
                if (!ha || !hb || la != lb) {
                    c.differences.push_back("line " + std::to_string(line) + ": book '" +
                                            (ha ? la : "<end>") + "', ours '" +
                                            (hb ? lb : "<end>") + "'");
                    break;
                }
                ++line;
            }
        }
        for (std::size_t i = 0; i < std::min(nb.size(), nm.size()); ++i)
            if (nb[i].text == nm[i].text) ++c.numbers_identical;
        return c;
    }
    if (entry.check.kind == Check::Kind::ulp) {
        const long long max_ulp = entry.check.max_ulp;
        if (skel_book != skel_mine || nb.size() != nm.size()) {
            c.differences.push_back("the printed layout differs from the book's (" +
                                    std::to_string(nb.size()) + " numbers in the book, " +
                                    std::to_string(nm.size()) + " in ours)");
            return c;
        }
        c.match = true;
        for (std::size_t i = 0; i < nb.size(); ++i) {
            if (nb[i].text == nm[i].text) {
                ++c.numbers_identical;
                continue;
            }
            const float fb = static_cast<float>(nb[i].value), fm = static_cast<float>(nm[i].value);
            const long long d = attn::ulp_distance(fb, fm);
            const double abs_diff = std::abs(nb[i].value - nm[i].value);
            const bool ok = d <= max_ulp || abs_diff <= 1e-7;
            if (!ok) c.match = false;
            std::ostringstream line;
            line << "number " << (i + 1) << ": ours " << nm[i].text << ", book " << nb[i].text
                 << " (" << d << " ulp" << (ok ? "" : ", over the tolerance") << ")";
            c.differences.push_back(line.str());
        }
        return c;
    }
    // relation:/unreproducible: entries are unseeded or otherwise not comparable as text;
    // the named relation is checked by the tests instead.
    return c;
}

}  // namespace textbook
