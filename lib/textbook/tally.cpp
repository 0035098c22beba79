#include "textbook/tally.hpp"

#include <algorithm>
#include <sstream>

namespace textbook {

namespace {

// How good a result is, to pick the best one an entry got anywhere.
int rank(const std::string& result) {
    if (result == "identical") return 5;
    if (result == "within_ulp") return 4;
    if (result == "relation") return 3;
    if (result == "unreproducible") return 2;
    return 1;  // differs, differs_expected
}

void count(TallyRow& row, const std::string& result) {
    if (result == "identical") ++row.identical;
    else if (result == "within_ulp") ++row.within_ulp;
    else if (result == "relation") ++row.relation;
    else if (result == "unreproducible") ++row.unreproducible;
    else ++row.differs;
}

void add(TallyRow& total, const TallyRow& r) {
    total.identical += r.identical;
    total.within_ulp += r.within_ulp;
    total.relation += r.relation;
    total.unreproducible += r.unreproducible;
    total.differs += r.differs;
    total.fresh += r.fresh;
    total.missing += r.missing;
}

struct Column {
    const char* title;
    std::size_t TallyRow::*field;
};

const std::vector<Column>& columns() {
    static const std::vector<Column> cols = {
        {"identical", &TallyRow::identical},   {"within ulp", &TallyRow::within_ulp},
        {"relation", &TallyRow::relation},     {"not reproducible", &TallyRow::unreproducible},
        {"differs", &TallyRow::differs},       {"new", &TallyRow::fresh},
        {"not printed", &TallyRow::missing}};
    return cols;
}

std::size_t columns_of(const std::string& s) {
    return static_cast<std::size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A table within the terminal's 100 columns: the names wrap (continued under a 2-column
// indent) in what the counts leave of the width; the counts stand on a row's first line.
std::string text_table(const std::string& title, const std::vector<TallyRow>& rows,
                       const TallyRow& total, bool chapters) {
    std::vector<const Column*> cols;
    for (const auto& c : columns())
        if (chapters ? c.field != &TallyRow::missing : c.field != &TallyRow::fresh)
            cols.push_back(&c);
    std::size_t counts = 0;
    for (const auto* c : cols) counts += 2 + std::string(c->title).size();
    std::size_t width = columns_of(title);
    for (const auto& r : rows) width = std::max(width, columns_of(r.name));
    width = std::min(width, std::max<std::size_t>(kTerminalColumns - counts, 16));
    std::ostringstream out;
    auto pad = [](const std::string& s, std::size_t w) {
        return s + std::string(w > columns_of(s) ? w - columns_of(s) : 0, ' ');
    };
    out << pad(title, width);
    for (const auto* c : cols) out << "  " << c->title;
    out << '\n';
    auto line = [&](const TallyRow& r) {
        std::istringstream names(wrap_line(r.name, "  ", width));
        std::string first;
        std::getline(names, first);
        out << pad(first, width);
        for (const auto* c : cols) {
            const std::string n = std::to_string(r.*(c->field));
            out << "  " << std::string(std::string(c->title).size() - std::min(n.size(), std::string(c->title).size()), ' ') << n;
        }
        out << '\n';
        for (std::string more; std::getline(names, more);) out << more << '\n';
    };
    for (const auto& r : rows) line(r);
    TallyRow t = total;
    t.name = "total";
    line(t);
    return out.str();
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else out += c;
    }
    return out;
}

std::string html_table(const std::string& title, const std::vector<TallyRow>& rows,
                       const TallyRow& total, bool chapters) {
    std::ostringstream out;
    out << "<table class=\"book-table book-tally\"><tr><th>" << title << "</th>";
    for (const auto& c : columns())
        if (chapters ? c.field != &TallyRow::missing : c.field != &TallyRow::fresh)
            out << "<th>" << c.title << "</th>";
    out << "</tr>\n";
    auto line = [&](const TallyRow& r, const std::string& name) {
        out << "<tr><td>" << html_escape(name) << "</td>";
        for (const auto& c : columns())
            if (chapters ? c.field != &TallyRow::missing : c.field != &TallyRow::fresh)
                out << "<td>" << r.*(c.field) << "</td>";
        out << "</tr>\n";
    };
    for (const auto& r : rows) line(r, r.name);
    line(total, "total");
    out << "</table>\n";
    return out.str();
}

}  // namespace

Tally tally(const Book& book, const std::vector<ChapterRecord>& records) {
    Tally t;
    std::map<std::string, std::string> best;  // entry id -> best result
    for (const auto& record : records) {
        TallyRow row;
        row.name = record.title;
        for (const auto& b : record.blocks) {
            if (b.kind == "new") ++row.fresh;
            for (const auto& c : b.comparisons) {
                count(row, c.result);
                auto& seen = best[c.entry];
                if (seen.empty() || rank(c.result) > rank(seen)) seen = c.result;
            }
        }
        add(t.chapters_total, row);
        t.chapters.push_back(row);
    }
    std::vector<std::string> order;
    std::map<std::string, TallyRow> by_source;
    for (const auto& e : book.entries()) {
        if (!by_source.count(e.notebook)) {
            order.push_back(e.notebook);
            by_source[e.notebook].name = book.source_title(e.notebook);
        }
        TallyRow& row = by_source[e.notebook];
        const auto it = best.find(e.id);
        if (it == best.end()) ++row.missing;
        else count(row, it->second);
    }
    for (const auto& n : order) {
        add(t.sources_total, by_source[n]);
        t.sources.push_back(by_source[n]);
    }
    return t;
}

std::string tally_text(const Tally& t) {
    return "The tally of this run: the blocks each chapter printed, compared with their sources\n\n" +
           text_table("chapter", t.chapters, t.chapters_total, true) +
           "\nand how much of each source the chapters reproduce (each printed output once)\n\n" +
           text_table("source", t.sources, t.sources_total, false);
}

std::string tally_html(const Tally& t) {
    return html_table("chapter", t.chapters, t.chapters_total, true) +
           html_table("source", t.sources, t.sources_total, false);
}

}  // namespace textbook
