#include "textbook/record.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "textbook/text_file.hpp"

namespace textbook {

namespace {

using nlohmann::json;

json to_json(const ComparisonRecord& c) {
    return {{"entry", c.entry},
            {"check", {{"kind", c.check.kind_name()}, {"detail", c.check.detail}}},
            {"result", c.result},
            {"summary", c.summary},
            {"differences", c.differences},
            {"numbers", c.numbers},
            {"numbers_identical", c.numbers_identical}};
}

// A float32 as the shortest decimal that reads back as the same float (`0.2098`, not the
// double nearest to it, `0.20980000495910645`); non-finite values as strings.
json float_json(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    double shortest = 0.0;
    std::from_chars(buf, end, shortest);
    return shortest;
}

json to_json(const BlockRecord& b) {
    json comparisons = json::array();
    for (const auto& c : b.comparisons) comparisons.push_back(to_json(c));
    json out = {{"step", b.step},   {"label", b.label}, {"kind", b.kind},
                {"sources", b.sources}, {"style", b.style}, {"text", b.text},
                {"comparisons", comparisons}};
    if (!b.tensors.empty()) {
        json tensors = json::array();
        for (const auto& t : b.tensors) {
            json values = json::array();
            for (const float v : t.values) values.push_back(float_json(v));
            tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"values", values}});
        }
        out["tensors"] = tensors;
    }
    return out;
}

}  // namespace

ComparisonRecord ComparisonRecord::of(const Entry& entry, const Comparison& c) {
    ComparisonRecord r;
    r.entry = entry.id;
    r.check = entry.check;
    if (entry.check.kind == Check::Kind::relation) r.result = "relation";
    else if (entry.check.kind == Check::Kind::unreproducible) r.result = "unreproducible";
    else if (c.identical) r.result = "identical";
    else if (c.match) r.result = "within_ulp";
    else r.result = "differs";
    r.summary = c.summary();
    r.differences = c.differences;
    r.numbers = c.numbers;
    r.numbers_identical = c.numbers_identical;
    return r;
}

TensorRecord::TensorRecord(std::string name_, const attn::Tensor& t)
    : name(std::move(name_)), shape(t.shape().begin(), t.shape().end()), values(t.begin(), t.end()) {}

TensorRecord::TensorRecord(std::string name_, const std::vector<float>& series)
    : name(std::move(name_)), shape{series.size()}, values(series) {}

attn::Tensor TensorRecord::tensor() const {
    attn::Tensor t = attn::Tensor::from_shape(shape);
    std::copy(values.begin(), values.end(), t.begin());
    return t;
}

bool BlockRecord::differs() const {
    for (const auto& c : comparisons)
        if (c.result == "differs") return true;
    return false;
}

void ChapterRecord::save(const std::filesystem::path& file) const {
    json blocks_json = json::array();
    for (const auto& b : blocks) blocks_json.push_back(to_json(b));
    const json j = {{"format", format},
                    {"chapter", chapter},
                    {"key", key},
                    {"title", title},
                    {"options", {{"backend", backend}, {"compare", compare},
                                 {"seed", seed_option ? json(*seed_option) : json(nullptr)}, {"quick", quick}}},
                    {"seeds", seeds},
                    {"blocks", blocks_json}};
    std::ofstream out(file);
    out << j.dump(2) << '\n';
    out.close();
    if (!out) throw std::runtime_error(file.string() + ": cannot write the chapter's record");
}

namespace {

// Strict readers of a record's fields: the JSON type must be the one `save` writes (no
// number read as a string, no -1 or 2.5 read as a count), and an error names the field by
// its path, e.g. `blocks[3].comparisons[0].numbers`.
const json& member(const json& object, const char* key, const std::string& path) {
    if (!object.is_object())
        throw std::runtime_error((path.empty() ? "the record" : path) + ": expected an object, got " +
                                 object.type_name());
    const auto it = object.find(key);
    if (it == object.end()) throw std::runtime_error((path.empty() ? "" : path + ".") + key + ": missing");
    return *it;
}

std::string child(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
}

std::string string_at(const json& object, const char* key, const std::string& path) {
    const json& v = member(object, key, path);
    if (!v.is_string())
        throw std::runtime_error(child(path, key) + ": expected a string, got " + v.type_name());
    return v.get<std::string>();
}

std::size_t count_at(const json& object, const char* key, const std::string& path) {
    const json& v = member(object, key, path);
    if (!v.is_number_unsigned())
        throw std::runtime_error(child(path, key) + ": expected a non-negative integer, got " +
                                 v.dump());
    return v.get<std::size_t>();
}

const json& array_at(const json& object, const char* key, const std::string& path) {
    const json& v = member(object, key, path);
    if (!v.is_array())
        throw std::runtime_error(child(path, key) + ": expected an array, got " + v.type_name());
    return v;
}

std::vector<std::string> strings_at(const json& object, const char* key, const std::string& path) {
    std::vector<std::string> out;
    const json& a = array_at(object, key, path);
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!a[i].is_string())
            throw std::runtime_error(child(path, key) + "[" + std::to_string(i) +
                                     "]: expected a string, got " + a[i].type_name());
        out.push_back(a[i].get<std::string>());
    }
    return out;
}

void one_of(const std::string& value, std::initializer_list<const char*> allowed,
            const std::string& path) {
    std::string list;
    for (const char* a : allowed) {
        if (value == a) return;
        list += (list.empty() ? "" : ", ") + std::string(a);
    }
    throw std::runtime_error(path + ": expected one of " + list + ", got " + textbook::quoted(value));
}

// A block's tensor: its name, a shape of non-negative integers, and values that fill it, each
// a number or one of "nan", "inf", "-inf".
TensorRecord tensor_at(const json& jt, const std::string& path) {
    TensorRecord t;
    t.name = string_at(jt, "name", path);
    const json& shape = array_at(jt, "shape", path);
    std::size_t n = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (!shape[i].is_number_unsigned())
            throw std::runtime_error(path + ".shape[" + std::to_string(i) +
                                     "]: expected a non-negative integer, got " + shape[i].dump());
        t.shape.push_back(shape[i].get<std::size_t>());
        if (t.shape.back() != 0 && n > std::numeric_limits<std::size_t>::max() / t.shape.back())
            throw std::runtime_error(path + ".shape: too many elements");
        n *= t.shape.back();
    }
    const json& values = array_at(jt, "values", path);
    if (values.size() != n)
        throw std::runtime_error(path + ".values: " + std::to_string(values.size()) +
                                 " values for a shape of " + std::to_string(n) + " elements");
    for (std::size_t i = 0; i < values.size(); ++i) {
        const json& v = values[i];
        if (v.is_number() && std::abs(v.get<double>()) <= std::numeric_limits<float>::max())
            t.values.push_back(static_cast<float>(v.get<double>()));
        else if (v == "nan") t.values.push_back(std::numeric_limits<float>::quiet_NaN());
        else if (v == "inf" || v == "-inf")
            t.values.push_back((v == "inf" ? 1 : -1) * std::numeric_limits<float>::infinity());
        else
            throw std::runtime_error(path + ".values[" + std::to_string(i) +
                                     "]: expected a float32 number, \"nan\", \"inf\" or \"-inf\", got " + v.dump());
    }
    return t;
}

// Parses the text, refusing an object that repeats a key (nlohmann keeps the last one
// silently): every key of `save` appears once.
json parse_unique_keys(const std::string& text) {
    std::vector<std::vector<std::string>> keys;  // the keys of each open object
    const json::parser_callback_t unique = [&keys](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) {
            keys.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
            keys.pop_back();
        } else if (event == json::parse_event_t::key) {
            const auto& key = parsed.get_ref<const std::string&>();
            auto& seen = keys.back();
            if (std::find(seen.begin(), seen.end(), key) != seen.end())
                throw std::runtime_error("duplicate key " + textbook::quoted(key));
            seen.push_back(key);
        }
        return true;
    };
    return json::parse(text, unique);
}

}  // namespace

ChapterRecord ChapterRecord::load(const std::filesystem::path& file) {
    std::string text;
    try {
        text = textbook::read_data_file(file);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) + ": cannot read the chapter's record");
    }
    try {
        const json j = parse_unique_keys(text);
        ChapterRecord r;
        const json& format = member(j, "format", "");
        if (!format.is_number_integer() || format.get<long long>() != 1)
            throw std::runtime_error("format: expected 1, got " + format.dump());
        r.format = 1;
        r.chapter = string_at(j, "chapter", "");
        r.key = string_at(j, "key", "");
        r.title = string_at(j, "title", "");
        const json& options = member(j, "options", "");
        r.backend = string_at(options, "backend", "options");
        const json& compare = member(options, "compare", "options");
        if (!compare.is_boolean())
            throw std::runtime_error("options.compare: expected true or false, got " + compare.dump());
        r.compare = compare.get<bool>();
        if (const auto quick = options.find("quick"); quick != options.end()) {
            if (!quick->is_boolean())
                throw std::runtime_error("options.quick: expected true or false, got " + quick->dump());
            r.quick = quick->get<bool>();
        }
        // The seed a reader chose (--seed), and the seeds the chapter drew from, when recorded.
        if (const auto seed = options.find("seed"); seed != options.end() && !seed->is_null()) {
            if (!seed->is_number_unsigned())
                throw std::runtime_error("options.seed: expected a non-negative integer, got " + seed->dump());
            r.seed_option = seed->get<std::uint64_t>();
        }
        if (const auto seeds = j.find("seeds"); seeds != j.end()) {
            if (!seeds->is_array())
                throw std::runtime_error(std::string("seeds: expected an array, got ") + seeds->type_name());
            for (std::size_t i = 0; i < seeds->size(); ++i) {
                if (!(*seeds)[i].is_number_unsigned())
                    throw std::runtime_error("seeds[" + std::to_string(i) +
                                             "]: expected a non-negative integer, got " + (*seeds)[i].dump());
                r.seeds.push_back((*seeds)[i].get<std::uint64_t>());
            }
        }
        const json& blocks = array_at(j, "blocks", "");
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            const json& jb = blocks[i];
            const std::string at = "blocks[" + std::to_string(i) + "]";
            BlockRecord b;
            b.step = string_at(jb, "step", at);
            b.label = string_at(jb, "label", at);
            b.kind = string_at(jb, "kind", at);
            one_of(b.kind, {"book", "new"}, at + ".kind");
            b.sources = strings_at(jb, "sources", at);
            b.style = string_at(jb, "style", at);
            b.text = string_at(jb, "text", at);
            const json& comparisons = array_at(jb, "comparisons", at);
            for (std::size_t k = 0; k < comparisons.size(); ++k) {
                const json& jc = comparisons[k];
                const std::string cat = at + ".comparisons[" + std::to_string(k) + "]";
                ComparisonRecord c;
                c.entry = string_at(jc, "entry", cat);
                const json& check = member(jc, "check", cat);
                const std::string kind = string_at(check, "kind", cat + ".check");
                const std::string detail = string_at(check, "detail", cat + ".check");
                try {
                    c.check = Check::parse(kind == "exact" ? kind : kind + ":" + detail);
                } catch (const std::invalid_argument& e) {
                    throw std::runtime_error(cat + ".check: " + e.what());
                }
                c.result = string_at(jc, "result", cat);
                one_of(c.result, {"identical", "within_ulp", "differs", "differs_expected",
                                  "relation", "unreproducible"},
                       cat + ".result");
                c.summary = string_at(jc, "summary", cat);
                c.differences = strings_at(jc, "differences", cat);
                c.numbers = count_at(jc, "numbers", cat);
                c.numbers_identical = count_at(jc, "numbers_identical", cat);
                b.comparisons.push_back(std::move(c));
            }
            if (const auto tensors = jb.find("tensors"); tensors != jb.end()) {
                if (!tensors->is_array())
                    throw std::runtime_error(at + ".tensors: expected an array, got " + tensors->type_name());
                for (std::size_t k = 0; k < tensors->size(); ++k)
                    b.tensors.push_back(tensor_at((*tensors)[k], at + ".tensors[" + std::to_string(k) + "]"));
            }
            r.blocks.push_back(std::move(b));
        }
        return r;
    } catch (const std::exception& e) {
        throw std::runtime_error(file.string() + ": malformed chapter record: " + e.what());
    }
}

namespace {

std::size_t columns(std::string_view s) {
    return static_cast<std::size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

std::string wrap_line(const std::string& line, const std::string& indent, std::size_t width) {
    std::string out, rest = line;
    while (columns(rest) > width) {
        // The last space within `width` columns (after the indent): the line breaks there.
        std::size_t col = 0, cut = std::string::npos;
        for (std::size_t i = 0; i < rest.size() && col <= width; ++i) {
            if ((static_cast<unsigned char>(rest[i]) & 0xC0) == 0x80) continue;
            if (rest[i] == ' ' && i > indent.size() && rest[i - 1] != ' ') cut = i;
            ++col;
        }
        if (cut == std::string::npos) {
            cut = rest.find(' ', indent.size() + 1);  // a word longer than a line stands alone
            if (cut == std::string::npos) break;
        }
        out += rest.substr(0, cut) + '\n';
        const std::size_t next = rest.find_first_not_of(' ', cut);
        if (next == std::string::npos) return out;
        rest = indent + rest.substr(next);
    }
    return out + rest + '\n';
}

std::string render_block(const BlockRecord& block, const Book& book, bool compare) {
    std::ostringstream out;
    std::string head = "### ";
    if (block.kind == "new") head += "new";
    for (std::size_t i = 0; i < block.sources.size(); ++i) {
        const Entry& e = book.at(block.sources[i]);
        head += (i ? ", " : "") + source_name(e) + ' ' + e.cell;
    }
    out << wrap_line(head + " · " + block.label, "    ") << block.text << '\n';
    if (compare) {
        for (const auto& c : block.comparisons) {
            const Entry& e = book.at(c.entry);
            // An unseeded or unreproducible entry's verdict names its relation or reason.
            const std::string check = e.check.kind == Check::Kind::unreproducible
                                          ? e.check.kind_name() : e.check.str();
            out << wrap_line(">>> " + e.id + " (" + e.style + ", " + check + "): " + c.summary,
                             ">>>     ");
            for (const auto& d : c.differences) out << wrap_line(">>>   " + d, ">>>       ");
            if (!e.check.compares_text()) {
                // Unseeded: show what the notebook printed, so the two can be set side by side.
                out << ">>> the notebook printed:\n";
                std::istringstream lines(strip_grad_fn(e.text));
                std::string l;
                while (std::getline(lines, l)) out << ">>> | " << l << '\n';
            }
        }
    }
    return out.str();
}

}  // namespace textbook
