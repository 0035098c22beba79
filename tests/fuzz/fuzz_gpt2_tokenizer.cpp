// libFuzzer target: GPT-2's tokenizer (attn::GPT2Tokenizer, OpenAI's files from data/gpt2 via
// textbook::gpt2_tokenizer) on any bytes. The input is read three ways:
// 1. as a text: encode_ordinary and encode (with and without <|endoftext|> allowed) either
//    return ids or refuse with std::invalid_argument (not UTF-8; a special token not allowed);
//    whatever they return decodes back to the text, and the pieces tile it;
// 2. as code points (3 bytes each, surrogates skipped), so that most inputs are valid UTF-8
//    of every plane: decode(encode(text)) == text;
// 3. as token ids (2 bytes each, so some past 50256): decode returns or refuses with
//    std::invalid_argument naming the id.
// A broken invariant traps; any other exception escapes to libFuzzer and is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/text/gpt2_tokenizer.hpp"
#include "textbook/tokenizer_data.hpp"

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

void check_text(const attn::GPT2Tokenizer& tok, std::string_view text) {
    std::vector<std::int64_t> ids;
    try {
        ids = tok.encode_ordinary(text);
    } catch (const std::invalid_argument&) {
        return;  // not UTF-8: refused, as every other entry point must refuse it
    }
    for (const auto id : ids) require(id >= 0 && id < tok.eot_token());
    require(tok.decode(ids) == text);
    std::string joined;
    for (const auto piece : tok.pretokenize(text)) joined += piece;
    require(joined == text);
    const auto with_special = tok.encode(text, {"<|endoftext|>"});
    require(tok.decode(with_special) == text);
    const bool has_special = text.find(attn::GPT2Tokenizer::endoftext) != std::string_view::npos;
    try {
        require(tok.encode(text) == ids && !has_special);
    } catch (const std::invalid_argument&) {
        require(has_special);
    }
}

void append_utf8(std::string& s, std::uint32_t c) {
    if (c < 0x80) {
        s += char(c);
    } else if (c < 0x800) {
        s += char(0xC0 | (c >> 6));
        s += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += char(0xE0 | (c >> 12));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    } else {
        s += char(0xF0 | (c >> 18));
        s += char(0x80 | ((c >> 12) & 0x3F));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const attn::GPT2Tokenizer& tok = textbook::gpt2_tokenizer();
    check_text(tok, std::string_view(reinterpret_cast<const char*>(data), size));

    std::string text;
    for (std::size_t i = 0; i + 3 <= size; i += 3) {
        // Mostly small code points (ASCII, Latin, CJK), sometimes any plane.
        std::uint32_t c = std::uint32_t(data[i]) | std::uint32_t(data[i + 1]) << 8 | std::uint32_t(data[i + 2]) << 16;
        c = data[i + 2] & 0x80 ? c % 0x110000 : c % 0x3100;
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        append_utf8(text, c);
    }
    std::vector<std::int64_t> ids;
    try {
        ids = tok.encode_ordinary(text);
    } catch (const std::invalid_argument&) {
        __builtin_trap();  // this text is UTF-8
    }
    require(tok.decode(ids) == text);

    std::vector<std::int64_t> any_ids;
    for (std::size_t i = 0; i + 2 <= size; i += 2) any_ids.push_back(std::int64_t(data[i]) | std::int64_t(data[i + 1]) << 8);
    try {
        (void)tok.decode(any_ids);
        for (const auto id : any_ids) require(id < tok.n_vocab());
    } catch (const std::invalid_argument&) {
        bool out_of_range = false;
        for (const auto id : any_ids) out_of_range = out_of_range || id >= tok.n_vocab();
        require(out_of_range);
    }
    return 0;
}
