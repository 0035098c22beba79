#include "textbook/chapter.hpp"
#include "textbook/ranks.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "attn/attention/sdpa.hpp"

namespace textbook {

std::string program_name(const ChapterInfo& info) { return "chapter_" + info.name; }

std::string chapter_key(const std::string& name) {
    const std::string head = name.substr(0, name.find('_'));
    const std::size_t nonzero = head.find_first_not_of('0');
    return nonzero == std::string::npos ? head : head.substr(nonzero);
}

namespace {

std::vector<std::string> split_ids(const std::string& ids) {
    std::vector<std::string> out;
    std::stringstream ss(ids);
    std::string id;
    while (std::getline(ss, id, ','))
        if (!id.empty()) out.push_back(id);
    return out;
}

}  // namespace

Chapter::Chapter(const ChapterInfo& info, const Options& options)
    : info_(info),
      options_(options),
      book_(Book::load(data_dir())),
      page_(Page::load(prose_dir() / (info.name + ".prose.json"))) {
    record_.chapter = info.name;
    record_.key = chapter_key(info.name);
    record_.title = page_.title;
    record_.backend = attn::nn::backend_name(options.backend);
    record_.compare = options.compare;
    record_.quick = options.quick;
    record_.seed_option = options.seed;
    const std::string rule(page_.title.size(), '=');
    print(rule + '\n' + page_.title + '\n' + rule + "\n\n" + (page_.intro.empty() ? "" : page_.intro + "\n\n"));
}

void Chapter::print(const std::string& text) {
    StepClock::output();
    std::cout << text;
    std::cout.flush();  // before the clock's quiet time starts
    StepClock::output();
}

void Chapter::print_sections_until(std::size_t end) {
    for (; printed_sections_ < end; ++printed_sections_) {
        const Section& s = page_.sections[printed_sections_];
        print("## " + s.title + "\n\n" + (s.text.empty() ? "" : s.text + "\n\n"));
    }
}

void Chapter::step(const std::string& id) {
    const std::size_t i = page_.index_of(id);
    if (i < printed_sections_)
        throw std::out_of_range(page_.file.string() + ": step '" + id +
                                "' comes after a later section; steps follow the page's order");
    print_sections_until(i + 1);
    current_step_ = id;
    clock_.step(page_.sections[i].title);
}

std::uint64_t Chapter::seed(std::uint64_t book_seed) {
    const std::uint64_t s = options_.seed.value_or(book_seed);
    if (std::find(record_.seeds.begin(), record_.seeds.end(), s) == record_.seeds.end())
        record_.seeds.push_back(s);
    return s;
}

void Chapter::book(const std::string& ids, const std::string& label, const std::string& text,
                   std::vector<TensorRecord> tensors) {
    BlockRecord b;
    b.step = current_step_;
    b.label = label;
    b.kind = "book";
    b.sources = split_ids(ids);
    if (b.sources.empty()) throw std::out_of_range("Chapter::book: no entry id given for '" + label + "'");
    b.text = text;
    for (const auto& id : b.sources) {
        const Entry& e = book_.at(id);
        if (b.style.empty()) b.style = e.style;
        auto c = ComparisonRecord::of(e, compare(e, text));
        if (c.result == "differs" && options_.seed) {
            c.result = "differs_expected";
            c.summary = "differs, as expected with another seed (--seed=" +
                        std::to_string(*options_.seed) + ")";
        } else if (c.result == "differs" &&
                   options_.backend != attn::nn::BernoulliBackend::portable) {
            // The book's chapters run with the portable backend by default; a block drawn by
            // the other one is expected to differ from a notebook printed by the default.
            c.result = "differs_expected";
            c.summary = "differs, as expected with the " + backend_name() +
                        " backend (the notebook was printed by the other)";
        }
        b.comparisons.push_back(std::move(c));
    }
    b.tensors = std::move(tensors);
    print(render_block(b, book_, options_.compare) + '\n');
    record_.blocks.push_back(std::move(b));
}

void Chapter::show(const std::string& label, const std::string& text, std::vector<TensorRecord> tensors) {
    BlockRecord b;
    b.step = current_step_;
    b.label = label;
    b.kind = "new";
    b.style = "text";
    b.text = text;
    b.tensors = std::move(tensors);
    print(render_block(b, book_, options_.compare) + '\n');
    record_.blocks.push_back(std::move(b));
}

void Chapter::left_out(const std::string& what) {
    show("left out of this quick run", what + "\nRun " + program_name(info_) +
                                           " alone for the whole run; the book's page shows it from its recording.");
}

int Chapter::finish() {
    print_sections_until(page_.sections.size());
    if (!options_.record.empty()) record_.save(options_.record);
    int status = 0;
    for (const auto& b : record_.blocks)
        if (b.differs()) {
            std::cerr << program_name(info_) << ": the block '" << b.label
                      << "' DIFFERS from its source\n";
            status = 1;
        }
    return status;
}

int run(int argc, char** argv, const ChapterInfo& info,
        const std::function<void(Chapter&)>& body) {
    Options options = parse_args(argc, argv, info);  // a bad flag exits here, before any launch
    if (info.ranks > 0) {
        const std::optional<int> rank = launched_rank();
        try {
            if (!rank) exec_under_mpirun(argc, argv, info.ranks);
        } catch (const std::exception& e) {
            std::cerr << program_name(info) << ": " << e.what() << '\n';
            return 1;
        }
        if (*rank != 0) {
            silence_this_rank();
            options.record.clear();
        }
    }
    if (options.attention_backend != attn::SDPABackend::automatic) attn::set_default_sdpa_backend(options.attention_backend);
    int status = 0;
    try {
        Chapter chapter(info, options);
        body(chapter);
        status = chapter.finish();
    } catch (const std::exception& e) {
        std::cout.flush();
        std::cerr << program_name(info) << ": " << e.what() << '\n';
        return 1;
    }
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::cerr << program_name(info) << ": cannot write the output\n";
        return 1;
    }
    return status;
}

}  // namespace textbook
