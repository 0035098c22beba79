// The tally of a full run of the book: reads the chapters' records (--record=FILE) and prints
// how many blocks each chapter reproduced and how much of each source the chapters cover.
//
//   book_tally [--html] RECORD.json...
#include <iostream>
#include <stdexcept>
#include <vector>

#include "textbook/tally.hpp"

int main(int argc, char** argv) {
    const textbook::TallyOptions options = textbook::parse_tally_args(argc, argv);
    try {
        const auto book = textbook::Book::load(textbook::data_dir());
        std::vector<textbook::ChapterRecord> records;
        for (const auto& f : options.records) records.push_back(textbook::ChapterRecord::load(f));
        const auto t = textbook::tally(book, records);
        std::cout << (options.html ? textbook::tally_html(t) : textbook::tally_text(t));
        std::cout.flush();
        if (!std::cout) throw std::runtime_error("cannot write the output");
    } catch (const std::exception& e) {
        std::cerr << "book_tally: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
