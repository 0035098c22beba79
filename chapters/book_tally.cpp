// The tally of a full run of the book: reads the chapters' records (--record=FILE) and prints
// how many blocks each chapter reproduced and how much of each source the chapters cover.
//
//   book_tally [--html] RECORD.json...
#include <iostream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "textbook/tally.hpp"

int main(int argc, char** argv) {
    cxxopts::Options cli("book_tally", "The tally of the chapters' records against the book");
    cli.add_options()("html", "print HTML tables (for the generated book)")(
        "h,help", "print this help and exit")("records", "the records",
                                              cxxopts::value<std::vector<std::string>>());
    cli.parse_positional({"records"});
    cli.positional_help("RECORD.json...");
    std::vector<std::string> files;
    bool html = false;
    try {
        const auto result = cli.parse(argc, argv);
        if (result.count("help")) {
            std::cout << cli.help() << std::endl;
            return 0;
        }
        if (!result.count("records")) throw std::invalid_argument("no record given");
        files = result["records"].as<std::vector<std::string>>();
        html = result.count("html") > 0;
    } catch (const std::exception& e) {
        std::cerr << "book_tally: " << e.what() << "\n\n" << cli.help() << std::endl;
        return 2;
    }
    try {
        const auto book = textbook::Book::load(textbook::data_dir());
        std::vector<textbook::ChapterRecord> records;
        for (const auto& f : files) records.push_back(textbook::ChapterRecord::load(f));
        const auto t = textbook::tally(book, records);
        std::cout << (html ? textbook::tally_html(t) : textbook::tally_text(t));
        std::cout.flush();
        if (!std::cout) throw std::runtime_error("cannot write the output");
    } catch (const std::exception& e) {
        std::cerr << "book_tally: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
