// libFuzzer target: the book's manifest (data/book/manifest.tsv) as Book::load reads it. The
// input is the manifest; it may name the one block file that exists (b/a.txt) or others.
#include <exception>

#include "fuzz_common.hpp"
#include "textbook/book.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& dir = fuzz::work_dir();
    static const bool ready = (fuzz::write(dir / "book" / "b" / "a.txt", "tensor([1., 2.])\n"), true);
    (void)ready;
    fuzz::write(dir / "book" / "manifest.tsv", data, size);
    try {
        const auto book = textbook::Book::load(dir);
        for (const auto& e : book.entries()) {
            (void)textbook::compare(e, e.text);  // the checks the manifest declared
            (void)textbook::compare(e, "tensor([1.0001, 2.])");
        }
    } catch (const std::exception&) {
        // a clean, named rejection
    }
    return 0;
}
