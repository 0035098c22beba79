// libFuzzer target: a chapter's prose page as rendered for the terminal
// (<name>.prose.json, docs/tools/terminal_pages.py), as Page::load reads it.
#include <exception>

#include "fuzz_common.hpp"
#include "textbook/prose.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto path = fuzz::work_dir() / "page.prose.json";
    fuzz::write(path, data, size);
    try {
        const auto page = textbook::Page::load(path);
        for (const auto& s : page.sections) (void)page.index_of(s.id);
    } catch (const std::exception&) {
        // a clean, named rejection
    }
    return 0;
}
