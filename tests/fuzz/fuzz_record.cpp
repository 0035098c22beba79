// libFuzzer target: a chapter record (the JSON a chapter writes with --record=FILE) as
// ChapterRecord::load reads it, then the terminal view of each block against a one-entry book.
#include <exception>

#include "fuzz_common.hpp"
#include "textbook/record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& dir = fuzz::work_dir();
    static const bool ready = (fuzz::write(dir / "book" / "b" / "a.txt", "tensor([1., 2.])\n"),
                               fuzz::write(dir / "book" / "manifest.tsv",
                                           "a-1\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\tw\n"), true);
    (void)ready;
    const auto path = dir / "record.json";
    fuzz::write(path, data, size);
    try {
        const auto record = textbook::ChapterRecord::load(path);
        const auto book = textbook::Book::load(dir);
        for (const auto& block : record.blocks) {
            try {
                (void)textbook::render_block(block, book, true);
            } catch (const std::out_of_range&) {
                // a source the book does not have: named
            }
        }
    } catch (const std::exception&) {
        // a clean, named rejection
    }
    return 0;
}
