// libFuzzer target: a block file (data/book/<id>.txt) under each kind of check, and the
// number scanner every comparison uses. The input is the block's text.
#include <exception>
#include <string>

#include "fuzz_common.hpp"
#include "textbook/book.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& dir = fuzz::work_dir();
    static const bool ready = (fuzz::write(dir / "book" / "manifest.tsv",
        "a\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\tw\n"
        "b\tnb\tc\t1\tnumpy\t8\tulp:2\tb/a.txt\tw\n"
        "c\tnb\tc\t1\ttext\t-\trelation:r\tb/a.txt\tw\n"), true);
    (void)ready;
    fuzz::write(dir / "book" / "b" / "a.txt", data, size);
    try {
        const auto book = textbook::Book::load(dir);
        const std::string text(reinterpret_cast<const char*>(data), size);
        for (const auto& e : book.entries()) {
            (void)textbook::compare(e, text);
            (void)textbook::compare(e, "tensor([[1.0000, 2.0000]])");
            (void)textbook::compare(e, text + "\n1.5e-3 -inf nan");
        }
        (void)textbook::printed_matrix(book.at("a"), 2, 2);
    } catch (const std::exception&) {
        // a clean, named rejection
    }
    return 0;
}
