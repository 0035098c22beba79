// libFuzzer target: a chapter's prose page (docs/chapters/<name>.md) as Page::load reads it,
// then the terminal view of its introduction and of every section.
#include <exception>

#include "fuzz_common.hpp"
#include "textbook/prose.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto path = fuzz::work_dir() / "page.md";
    fuzz::write(path, data, size);
    try {
        const auto page = textbook::Page::load(path);
        (void)textbook::terminal_text(page.intro);
        for (const auto& s : page.sections) (void)textbook::terminal_text(s.body);
    } catch (const std::exception&) {
        // a clean, named rejection
    }
    return 0;
}
