// The reader of the recorded tokenizer files (data/tokenizer/*.tsv): `TokenizerData::load`
// (textbook/tokenizer_data.hpp; the collator that uses it: attn/attention/padding.hpp). It parses whole
// fields only and refuses what the recorders (tools/tokenize/*.mjs) never write: a row twice,
// a field with something left over, a file cut short, CR line endings. Also the harness's
// default GPT-2 tokenizer (`gpt2_tokenizer`, OpenAI's files in data/gpt2/).
#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "textbook/book.hpp"
#include "textbook/tokenizer_data.hpp"
#include "textbook/text_file.hpp"

namespace textbook {

namespace {

std::vector<std::string_view> split(std::string_view line, char separator) {
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t end = line.find(separator, start);
        fields.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) return fields;
        start = end + 1;
    }
}

std::int64_t parse_id(const std::filesystem::path& path, std::size_t line, std::string_view s) {
    if (s.empty())
        throw_at(path, line, "expected a token id, got an empty field (a space too many?)");
    const auto id = parse_integer(s, INT64_MAX);
    if (!id) throw_at(path, line, "expected a token id, got " + quoted(s));
    return static_cast<std::int64_t>(*id);
}

// The text of a `text_json` row: one JSON string, nothing else.
std::string parse_json_text(const std::filesystem::path& path, std::size_t line, std::string_view s) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception& e) {
        throw_at(path, line, std::string("the text is not one JSON string (") + e.what() + ")");
    }
    if (!j.is_string()) throw_at(path, line, "the text is JSON but not a string: " + quoted(s));
    return j.get<std::string>();
}

}  // namespace

TokenizerData TokenizerData::load(const std::filesystem::path& path) {
    const std::string file = read_data_file(path);
    const auto lines = data_lines(path, file);
    TokenizerData data;
    constexpr std::array<std::string_view, 3> roles = {"unk", "bos", "eos"};
    std::array<std::size_t, 3> role_line{};  // where each special row was, 0 if not yet
    std::map<std::string, std::size_t, std::less<>> text_line;  // where each text was
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::size_t number = i + 1;
        const std::string_view line = lines[i];
        if (line.empty()) continue;
        if (line[0] == '#') {
            data.provenance.emplace_back(line.substr(line.size() > 1 && line[1] == ' ' ? 2 : 1));
            continue;
        }
        const auto f = split(line, '\t');
        if (f[0] == "special") {
            if (f.size() != 4) throw_at(path, number, "expected special<TAB>role<TAB>token<TAB>id");
            std::size_t r = 0;
            while (r < roles.size() && roles[r] != f[1]) ++r;
            if (r == roles.size())
                throw_at(path, number, "unknown special token role " + quoted(f[1]) +
                                           " (expected unk, bos or eos)");
            if (role_line[r])
                throw_at(path, number, "duplicate special token row " + quoted(f[1]) +
                                           " (first on line " + std::to_string(role_line[r]) + ")");
            if (f[2].empty())
                throw_at(path, number, "the token of special row " + quoted(f[1]) + " is empty");
            role_line[r] = number;
            const std::int64_t id = parse_id(path, number, f[3]);
            (r == 0 ? data.unk_token_id : r == 1 ? data.bos_token_id : data.eos_token_id) = id;
        } else if (f[0] == "text" || f[0] == "text_json") {
            const bool json = f[0] == "text_json";
            if (f.size() != 3)
                throw_at(path, number, json ? "expected text_json<TAB>\"JSON string\"<TAB>ids" : "expected text<TAB>text<TAB>ids");
            std::string text = json ? parse_json_text(path, number, f[1]) : std::string(f[1]);
            if (const auto [it, fresh] = text_line.emplace(text, number); !fresh)
                throw_at(path, number, "duplicate text row " + quoted(f[1]) + " (first on line " +
                                           std::to_string(it->second) + ")");
            if (f[2].empty()) throw_at(path, number, "expected space-separated token ids, got none");
            TokenizedText t{std::move(text), {}};
            for (const auto id : split(f[2], ' ')) t.input_ids.push_back(parse_id(path, number, id));
            data.texts.push_back(std::move(t));
        } else {
            throw_at(path, number, "unknown row kind " + quoted(f[0]) + " (expected special, text or text_json)");
        }
    }
    for (std::size_t r = 0; r < roles.size(); ++r)
        if (!role_line[r])
            throw_at(path, lines.size(),
                     "missing a special token row (unk, bos, eos) by the end of the file: no " +
                         quoted(roles[r]) + " row");
    return data;
}

std::vector<std::vector<std::int64_t>> TokenizerData::sequences() const {
    std::vector<std::vector<std::int64_t>> out;
    for (const auto& t : texts) out.push_back(t.input_ids);
    return out;
}

const attn::GPT2Tokenizer& gpt2_tokenizer() {
    static const attn::GPT2Tokenizer tokenizer = attn::GPT2Tokenizer::load(data_dir() / "gpt2");
    return tokenizer;
}

}  // namespace textbook
