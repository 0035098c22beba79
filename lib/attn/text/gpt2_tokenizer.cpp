// GPT-2's byte-level BPE (gpt2_tokenizer.hpp): the files checked by SHA-256 (OpenSSL's
// libcrypto) and read (nlohmann/json for encoder.json), the pre-tokenisation pattern (PCRE2,
// UTF mode, JIT-compiled when the library has a JIT), the merges, encode and decode.
#include "attn/text/gpt2_tokenizer.hpp"
#include "attn/text/read_file.hpp"
#include "attn/text/utf8.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace attn {

namespace {

namespace fs = std::filesystem;

// GPT-2's pattern (encoder.py), with `\s` spelled as the property it means there: Python's
// `regex` module reads `\s` as White_Space, which has U+0085; PCRE2's `\s`, even with
// PCRE2_UCP, does not (and JavaScript's has U+FEFF, which White_Space has not).
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+)"
    R"(|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

// `0x0C`, how a message names a byte.
std::string hex_byte(unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    return hex;
}

std::string sha256_hex(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256: OpenSSL's EVP_Digest failed");
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", digest[i]);
        hex += two;
    }
    return hex;
}

// Reads `file` and checks that it is OpenAI's `name` byte for byte.
std::string read_pinned(const fs::path& file, const char* name, std::string_view sha256,
                        std::uint64_t size) {
    std::string bytes = read_file(file);
    const std::string actual = sha256_hex(bytes);
    if (actual == sha256) return bytes;
    std::string why = file.string() + ": not GPT-2's " + name + " as OpenAI published it: SHA-256 " +
                      actual + ", expected " + std::string(sha256) + "; the file has " +
                      std::to_string(bytes.size()) + " bytes, OpenAI's " + std::to_string(size);
    if (bytes.size() < size) why += ": cut short?";
    throw std::runtime_error(why);
}

[[noreturn]] void throw_at(const fs::path& file, std::size_t line, const std::string& why) {
    throw std::runtime_error(file.string() + ":" + std::to_string(line) + ": " + why);
}

}  // namespace

std::array<char32_t, 256> gpt2_bytes_to_unicode() {
    std::array<char32_t, 256> cs{};
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
        const bool printable = (b >= u'!' && b <= u'~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        cs[b] = printable ? char32_t(b) : next++;
    }
    return cs;
}

// Named, not anonymous: GPT2Tokenizer::Tables holds them (GCC warns of a class with external
// linkage holding an anonymous namespace's type once this file is part of a unity file).
namespace bpe {

// One line of vocab.bpe.
struct Merge {
    std::int32_t rank;  // line order in vocab.bpe: the lower, the earlier merged
    std::int32_t id;    // the merged token
};
// (first id << 32 | second id) -> merge
using Merges = std::unordered_map<std::uint64_t, Merge>;

}  // namespace bpe

namespace {

using bpe::Merge;
using bpe::Merges;

std::uint64_t merge_key(std::int32_t first, std::int32_t second) {
    return (std::uint64_t(std::uint32_t(first)) << 32) | std::uint32_t(second);
}

// From this length on, a piece is merged with the heap (merge_by_heap): a word is shorter.
constexpr std::size_t long_piece_bytes = 64;

}  // namespace

struct GPT2Tokenizer::Tables {
    std::vector<std::string> token_bytes;     // id -> bytes
    std::array<std::int32_t, 256> byte_id{};  // the token of each single byte
    bpe::Merges merges;
    std::int64_t eot = -1;
    std::shared_ptr<pcre2_code> pattern;
    bool jit = false;
};

namespace {

// A token as spelled in the files -> its bytes, through the inverse of bytes_to_unicode; none
// when a character is not one of the 256.
bool spelled_to_bytes(std::string_view spelled, std::string& out) {
    static const auto inverse = [] {
        std::array<std::int16_t, 0x144> inv;
        inv.fill(-1);
        const auto cs = gpt2_bytes_to_unicode();
        for (int b = 0; b < 256; ++b) inv[cs[b]] = std::int16_t(b);
        return inv;
    }();
    out.clear();
    const auto* s = reinterpret_cast<const unsigned char*>(spelled.data());
    const std::size_t n = spelled.size();
    for (std::size_t i = 0; i < n;) {
        char32_t cp;
        if (s[i] < 0x80) cp = s[i++];
        else if ((s[i] & 0xE0) == 0xC0 && i + 1 < n) { cp = char32_t(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F); i += 2; }
        else return false;  // every spelling character is below U+0800
        if (cp >= inverse.size() || inverse[cp] < 0) return false;
        out += char(inverse[cp]);
    }
    return true;
}

}  // namespace

GPT2Tokenizer::GPT2Tokenizer(std::shared_ptr<const Tables> tables) : tables_(std::move(tables)) {}

GPT2Tokenizer GPT2Tokenizer::load(const fs::path& directory) {
    return load(directory / "encoder.json", directory / "vocab.bpe");
}

GPT2Tokenizer GPT2Tokenizer::load(const fs::path& encoder_json, const fs::path& vocab_bpe) {
    const std::string encoder_text = read_pinned(encoder_json, "encoder.json", encoder_json_sha256, encoder_json_bytes);
    const std::string merges_text = read_pinned(vocab_bpe, "vocab.bpe", vocab_bpe_sha256, vocab_bpe_bytes);
    auto t = std::make_shared<GPT2Tokenizer::Tables>();

    // encoder.json: {"!": 0, ..., "<|endoftext|>": 50256}, ids dense from 0.
    nlohmann::json encoder;
    try {
        encoder = nlohmann::json::parse(encoder_text);
    } catch (const nlohmann::json::exception& e) {
        throw_at(encoder_json, 1, std::string("not JSON: ") + e.what());
    }
    if (!encoder.is_object() || encoder.empty()) throw_at(encoder_json, 1, "expected a JSON object of token -> id");
    const std::size_t n = encoder.size();
    t->token_bytes.assign(n, {});
    std::vector<bool> seen(n, false);
    std::unordered_map<std::string, std::int32_t> id_of;
    id_of.reserve(n);
    std::string bytes;
    for (const auto& [spelled, value] : encoder.items()) {
        if (!value.is_number_unsigned() || value.get<std::uint64_t>() >= n || seen[value.get<std::size_t>()])
            throw_at(encoder_json, 1, "the id of token '" + spelled + "' is not a new id in 0.." + std::to_string(n - 1));
        const auto id = value.get<std::int32_t>();
        seen[std::size_t(id)] = true;
        if (spelled == endoftext) {
            t->eot = id;
            t->token_bytes[std::size_t(id)] = spelled;
            continue;
        }
        if (!spelled_to_bytes(spelled, bytes))
            throw_at(encoder_json, 1, "token '" + spelled + "' is not spelled with bytes_to_unicode's characters");
        t->token_bytes[std::size_t(id)] = bytes;
        id_of.emplace(bytes, id);
    }
    if (t->eot < 0) throw_at(encoder_json, 1, "no <|endoftext|> token");
    for (int b = 0; b < 256; ++b) {
        const auto it = id_of.find(std::string(1, char(b)));
        if (it == id_of.end()) throw_at(encoder_json, 1, "no token for the byte " + hex_byte(std::uint8_t(b)));
        t->byte_id[std::size_t(b)] = it->second;
    }

    // vocab.bpe: "#version: 0.2", then "first second" per line, each a token of encoder.json.
    std::size_t line = 1, start = 0;
    std::string first, second;
    t->merges.reserve(n);
    while (start < merges_text.size()) {
        const std::size_t end = merges_text.find('\n', start);
        if (end == std::string::npos) throw_at(vocab_bpe, line, "the last line has no line ending (LF)");
        const std::string_view l(merges_text.data() + start, end - start);
        start = end + 1;
        if (line++ == 1) {
            if (l.substr(0, 8) != "#version") throw_at(vocab_bpe, 1, "expected a '#version' line first");
            continue;
        }
        const std::size_t space = l.find(' ');
        if (space == 0 || space == std::string_view::npos || space + 1 == l.size() || l.find(' ', space + 1) != std::string_view::npos)
            throw_at(vocab_bpe, line - 1, "expected two tokens separated by one space");
        if (!spelled_to_bytes(l.substr(0, space), first) || !spelled_to_bytes(l.substr(space + 1), second))
            throw_at(vocab_bpe, line - 1, "not spelled with bytes_to_unicode's characters");
        const auto a = id_of.find(first), b = id_of.find(second), ab = id_of.find(first + second);
        if (a == id_of.end() || b == id_of.end() || ab == id_of.end())
            throw_at(vocab_bpe, line - 1, "a token of this merge, or what it makes, is not in encoder.json");
        const auto rank = std::int32_t(t->merges.size());
        if (!t->merges.emplace(merge_key(a->second, b->second), Merge{rank, ab->second}).second)
            throw_at(vocab_bpe, line - 1, "the same merge twice");
    }

    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(gpt2_pattern.data()), gpt2_pattern.size(),
                                     PCRE2_UTF, &error, &offset, nullptr);
    if (!code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        throw std::runtime_error("GPT2Tokenizer: PCRE2 cannot compile GPT-2's pattern: " +
                                 std::string(reinterpret_cast<const char*>(message)));
    }
    t->pattern.reset(code, pcre2_code_free);
    t->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;  // else PCRE2's interpreter
    return GPT2Tokenizer(std::move(t));
}

namespace {

// Calls `piece(text)` for each match of GPT-2's pattern in `text`, in order; or, with
// `only_check`, checks that the text is UTF-8 and stops. `checked`: the text is known to be UTF-8.
template <class F>
void for_each_piece(const pcre2_code* pattern, std::string_view text, F&& piece,
                    bool checked = false, bool only_check = false) {
    if (text.empty()) return;
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
        pcre2_match_data_create_from_pattern(pattern, nullptr), pcre2_match_data_free);
    if (!match) throw std::bad_alloc();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    // The first call checks that the whole text is UTF-8; the later ones need not check again
    // (each call would otherwise check from its offset to the end: quadratic).
    std::uint32_t options = checked ? PCRE2_NO_UTF_CHECK : 0;
    for (PCRE2_SIZE at = 0; at < text.size(); options = PCRE2_NO_UTF_CHECK) {
        const int rc = pcre2_match(pattern, subject, text.size(), at, options, match.get(), nullptr);
        if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21) {
            const PCRE2_SIZE bad = pcre2_get_startchar(match.get());
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            throw std::invalid_argument(
                "GPT2Tokenizer: the text is not UTF-8: byte " +
                hex_byte(static_cast<unsigned char>(text[std::min<std::size_t>(bad, text.size() - 1)])) +
                " at offset " + std::to_string(bad) + " (" + reinterpret_cast<const char*>(message) + ")");
        }
        if (rc < 0) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            throw std::runtime_error("GPT2Tokenizer: PCRE2 failed to match at offset " + std::to_string(at) +
                                     ": " + reinterpret_cast<const char*>(message));
        }
        if (only_check) return;
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        // Every character is matched by some alternative, so the pieces tile the text.
        if (ovector[0] != at || ovector[1] <= at)
            throw std::logic_error("GPT2Tokenizer: a gap or an empty piece at offset " + std::to_string(at));
        piece(text.substr(at, ovector[1] - at));
        at = ovector[1];
    }
}

}  // namespace

std::vector<std::string_view> GPT2Tokenizer::pretokenize(std::string_view text) const {
    std::vector<std::string_view> pieces;
    for_each_piece(tables_->pattern.get(), text, [&](std::string_view p) { pieces.push_back(p); });
    return pieces;
}

namespace {

// encoder.py's loop, as written: the pair that comes first in vocab.bpe is merged at every
// place it occurs, left to right without overlap; again until no adjacent pair is a merge.
// Each round scans the whole piece: quadratic in the piece's length, fine for words.
void merge_by_rounds(const Merges& merges, std::vector<std::int32_t>& word) {
    while (word.size() > 1) {
        Merge best{INT32_MAX, -1};
        std::int32_t first = -1, second = -1;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            const auto it = merges.find(merge_key(word[i], word[i + 1]));
            if (it != merges.end() && it->second.rank < best.rank) {
                best = it->second;
                first = word[i];
                second = word[i + 1];
            }
        }
        if (best.id < 0) break;
        std::size_t out = 0;
        for (std::size_t i = 0; i < word.size();) {
            if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
                word[out++] = best.id;
                i += 2;
            } else {
                word[out++] = word[i++];
            }
        }
        word.resize(out);
    }
}

// The same merges for a long piece (a run of letters or digits without a space: a DNA string,
// base64), in O(n log n): the symbols in a linked list, every adjacent pair that is a merge in
// a heap ordered by (rank, position). A round takes all entries of the lowest rank -- every
// occurrence of that one pair, in position order -- and merges them left to right, skipping
// an entry whose symbols changed (an overlap, or a pair pushed twice); only then are the pairs
// the round made pushed, so that, as in encoder.py, a round is never interrupted by a pair of
// lower rank that it created.
void merge_by_heap(const Merges& merges, std::vector<std::int32_t>& word) {
    const auto n = std::int32_t(word.size());
    std::vector<std::int32_t> next(word.size()), prev(word.size());
    for (std::int32_t i = 0; i < n; ++i) {
        next[std::size_t(i)] = i + 1;  // n: the end
        prev[std::size_t(i)] = i - 1;  // -1: the start
    }
    struct Entry {
        std::int32_t rank, pos, left, right, id;
        bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::vector<Entry> heap;
    const auto push = [&](std::int32_t i) {
        if (i < 0 || next[std::size_t(i)] >= n) return;
        const std::int32_t left = word[std::size_t(i)], right = word[std::size_t(next[std::size_t(i)])];
        const auto it = merges.find(merge_key(left, right));
        if (it == merges.end()) return;
        heap.push_back({it->second.rank, i, left, right, it->second.id});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
    };
    for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
    std::vector<Entry> round;
    std::vector<std::int32_t> merged;
    while (!heap.empty()) {
        round.clear();
        const std::int32_t rank = heap.front().rank;
        while (!heap.empty() && heap.front().rank == rank) {
            std::pop_heap(heap.begin(), heap.end(), std::greater<>());
            round.push_back(heap.back());
            heap.pop_back();
        }
        merged.clear();
        for (const Entry& e : round) {  // in position order
            const auto i = std::size_t(e.pos);
            const std::int32_t j = next[i];
            if (word[i] != e.left || j >= n || word[std::size_t(j)] != e.right) continue;
            word[i] = e.id;
            word[std::size_t(j)] = -1;  // j leaves the list
            next[i] = next[std::size_t(j)];
            if (next[i] < n) prev[std::size_t(next[i])] = e.pos;
            merged.push_back(e.pos);
        }
        for (const std::int32_t i : merged) {
            if (word[std::size_t(i)] < 0) continue;
            push(prev[std::size_t(i)]);
            push(i);
        }
    }
    std::size_t out = 0;
    for (std::int32_t i = 0; i < n; i = next[std::size_t(i)]) word[out++] = word[std::size_t(i)];
    word.resize(out);
}

}  // namespace

std::vector<std::int64_t> GPT2Tokenizer::bpe(std::string_view piece) const {
    const Tables& t = *tables_;
    std::vector<std::int32_t> word;
    word.reserve(piece.size());
    for (const char c : piece) word.push_back(t.byte_id[static_cast<unsigned char>(c)]);
    // Words take the rounds as encoder.py writes them; long pieces the heap, which merges the
    // same pairs in the same order (tests/test_gpt2_tokenizer.cpp holds both to gpt-3-encoder).
    if (word.size() < long_piece_bytes) merge_by_rounds(t.merges, word);
    else merge_by_heap(t.merges, word);
    return {word.begin(), word.end()};
}

void GPT2Tokenizer::append_ordinary(std::string_view text, std::vector<std::int64_t>& ids,
                                    bool checked) const {
    for_each_piece(tables_->pattern.get(), text, [&](std::string_view p) {
        const auto piece_ids = bpe(p);
        ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }, checked);
}

std::vector<std::int64_t> GPT2Tokenizer::encode_ordinary(std::string_view text) const {
    std::vector<std::int64_t> ids;
    append_ordinary(text, ids, false);
    return ids;
}

std::vector<std::int64_t> GPT2Tokenizer::encode(std::string_view text,
                                                const std::vector<std::string>& allowed_special) const {
    bool allow_endoftext = false;
    for (const auto& s : allowed_special) {
        if (s != endoftext)
            throw std::invalid_argument("GPT2Tokenizer::encode: allowed_special names '" + s +
                                        "', which is not a special token of GPT-2 (it has one: <|endoftext|>; tiktoken would ignore the "
                                        "name and encode such a string as ordinary text, hiding the mistake)");
        allow_endoftext = true;
    }
    // The whole text is checked once, so that an error names its offset in the whole text.
    for_each_piece(tables_->pattern.get(), text, [](std::string_view) {}, false, true);
    std::vector<std::int64_t> ids;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(endoftext, start)) != std::string_view::npos; start = at + endoftext.size()) {
        if (!allow_endoftext) {
            throw std::invalid_argument(
                "GPT2Tokenizer::encode: the text holds the special token <|endoftext|> (at byte " +
                std::to_string(at) + "), which is not allowed: pass allowed_special = {\"<|endoftext|>\"} "
                "to encode it as the token 50256, or call encode_ordinary to encode it as plain text "
                "(as tiktoken's encode raises ValueError)");
        }
        append_ordinary(text.substr(start, at - start), ids, true);
        ids.push_back(tables_->eot);
    }
    append_ordinary(text.substr(start), ids, true);
    return ids;
}

std::string_view GPT2Tokenizer::token_bytes(std::int64_t id) const {
    const auto n = n_vocab();
    if (id < 0 || id >= n)
        throw std::invalid_argument("GPT2Tokenizer: token id " + std::to_string(id) +
                                    " is out of range for a vocabulary of " + std::to_string(n) +
                                    " tokens (ids 0.." + std::to_string(n - 1) + ")");
    return tables_->token_bytes[std::size_t(id)];
}

std::string GPT2Tokenizer::decode(const std::vector<std::int64_t>& ids) const {
    std::string text;
    const auto n = n_vocab();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= n)
            throw std::invalid_argument("GPT2Tokenizer::decode: token id " + std::to_string(ids[i]) +
                                        " at position " + std::to_string(i) +
                                        " is out of range for a vocabulary of " + std::to_string(n) +
                                        " tokens (ids 0.." + std::to_string(n - 1) + ")");
        text += tables_->token_bytes[std::size_t(ids[i])];
    }
    return text;
}

namespace {

// Python's bytes.decode("utf-8", errors="replace"): valid sequences copied, each maximal
// subpart of an invalid one replaced by U+FFFD.
std::string utf8_replace(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size();) {
        const Utf8Step step = utf8_step(in, i);
        if (step.valid) out.append(in.substr(i, step.length));
        else out += "\xEF\xBF\xBD";  // U+FFFD
        i += step.length;
    }
    return out;
}

}  // namespace

std::string GPT2Tokenizer::decode(const std::vector<std::int64_t>& ids, DecodeErrors errors) const {
    if (errors != DecodeErrors::keep_bytes && errors != DecodeErrors::replace)  // as every enum of the library
        throw std::invalid_argument("GPT2Tokenizer::decode: errors is not a DecodeErrors value (" +
                                    std::to_string(static_cast<int>(errors)) + ")");
    std::string bytes = decode(ids);
    return errors == DecodeErrors::replace ? utf8_replace(bytes) : bytes;
}

std::int64_t GPT2Tokenizer::n_vocab() const { return std::int64_t(tables_->token_bytes.size()); }
std::int64_t GPT2Tokenizer::n_merges() const { return std::int64_t(tables_->merges.size()); }
std::int64_t GPT2Tokenizer::eot_token() const { return tables_->eot; }

}  // namespace attn
