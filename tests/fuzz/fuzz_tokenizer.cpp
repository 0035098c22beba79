// libFuzzer target: a tokenizer file (data/tokenizer/*.tsv) as TokenizerData::load reads
// it, then the collator on what it read.
#include <exception>

#include "attn/attention/padding.hpp"
#include "textbook/tokenizer_data.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto path = fuzz::work_dir() / "tokenizer.tsv";
    fuzz::write(path, data, size);
    try {
        const auto tok = textbook::TokenizerData::load(path);
        const auto seqs = tok.sequences();
        if (!seqs.empty()) {
            std::size_t total = 0;
            for (const auto& s : seqs) total += s.size();
            if (total < 4096) {
                (void)attn::pad_batch(seqs, tok.eos_token_id, attn::PaddingSide::left);
                (void)attn::pad_batch(seqs, tok.eos_token_id, attn::PaddingSide::right);
            }
        }
    } catch (const std::exception&) {
        // a clean, named rejection
    }
    return 0;
}
