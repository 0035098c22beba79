// The command lines of the book's programs (the chapters and book_tally), parsed with
// cxxopts. They live in one file so that cxxopts, a heavy header, is compiled once; its
// parser without <regex> (CXXOPTS_NO_REGEX, an option of cxxopts 3.1) is lighter still.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#define CXXOPTS_NO_REGEX
#include <cxxopts.hpp>

#include "attn/attention/sdpa.hpp"
#include "textbook/chapter.hpp"
#include "textbook/tally.hpp"

namespace textbook {

Options parse_args(int argc, char** argv, const ChapterInfo& info) {
    const std::string program = program_name(info);
    cxxopts::Options cli(program, "Chapter " + chapter_key(info.name) +
                                      " of the book; prints its prose, code results and the "
                                      "comparison of each block with the notebooks" +
                                      (info.ranks > 0 ? std::string("; runs as ") + std::to_string(info.ranks) +
                                                            " MPI processes (started alone, it starts itself under mpirun -np " +
                                                            std::to_string(info.ranks) + ")"
                                                      : std::string()));
    cli.add_options()
        ("no-compare", "hide the '>>>' lines that compare each block with the notebooks")
        ("record", "also write what the chapter printed, as JSON, to FILE",
         cxxopts::value<std::string>(), "FILE")
        ("quick", "the Quick start's run: a chapter whose whole run takes minutes does a shortened "
                  "one and says what it leaves out (chapter 26's training); the others ignore it")
        ("attention-backend", "the attention core's backend where the chapter does not choose one: fast "
                              "(fused kernels) or step (every intermediate a tensor); both print the same bytes",
         cxxopts::value<std::string>()->default_value("fast"), "NAME")
        ("h,help", "print this help and exit");
    if (info.seeded)
        cli.add_options()("seed", "re-run with another seed: every torch.manual_seed of the chapter "
                                  "takes N (the comparisons then expect differences)",
                          cxxopts::value<std::uint64_t>(), "N");
    if (info.dropout)
        cli.add_options()
            ("dropout-backend",
             "Bernoulli backend for dropout masks: portable (PyTorch builds without MKL, "
             "notebook 004) or mkl (Intel x86 wheels, notebook 002)",
             cxxopts::value<std::string>()->default_value("portable"));
    Options options;
    try {
        const auto result = cli.parse(argc, argv);
        if (!result.unmatched().empty())
            throw std::invalid_argument("unexpected argument '" + result.unmatched().front() + "'");
        if (result.count("help")) {
            std::cout << cli.help() << std::endl;
            std::exit(0);
        }
        if (info.dropout) {
            const auto backend = result["dropout-backend"].as<std::string>();
            if (backend == "portable") options.backend = attn::nn::BernoulliBackend::portable;
            else if (backend == "mkl") options.backend = attn::nn::BernoulliBackend::mkl;
            else throw std::invalid_argument("--dropout-backend must be portable or mkl, got '" + backend + "'");
        }
        const auto attention = result["attention-backend"].as<std::string>();
        if (attention == "fast") options.attention_backend = attn::SDPABackend::fast;
        else if (attention == "step") options.attention_backend = attn::SDPABackend::step;
        else throw std::invalid_argument("--attention-backend must be fast or step, got '" + attention + "'");
        options.compare = result.count("no-compare") == 0;
        options.quick = result.count("quick") > 0;
        if (result.count("record")) {
            options.record = result["record"].as<std::string>();
            if (options.record.empty())  // `--record=` would otherwise write nothing, silently
                throw std::invalid_argument("--record needs a file name (--record=FILE)");
        }
        if (info.seeded && result.count("seed")) options.seed = result["seed"].as<std::uint64_t>();
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n\n" << cli.help() << std::endl;
        std::exit(2);
    }
    return options;
}

TallyOptions parse_tally_args(int argc, char** argv) {
    cxxopts::Options cli("book_tally", "The tally of the chapters' records against the notebooks");
    cli.add_options()("html", "print HTML tables (for the generated book)")(
        "h,help", "print this help and exit")("records", "the records",
                                              cxxopts::value<std::vector<std::string>>());
    cli.parse_positional({"records"});
    cli.positional_help("RECORD.json...");
    TallyOptions options;
    try {
        const auto result = cli.parse(argc, argv);
        if (result.count("help")) {
            std::cout << cli.help() << std::endl;
            std::exit(0);
        }
        if (!result.count("records")) throw std::invalid_argument("no record given");
        options.records = result["records"].as<std::vector<std::string>>();
        options.html = result.count("html") > 0;
    } catch (const std::exception& e) {
        std::cerr << "book_tally: " << e.what() << "\n\n" << cli.help() << std::endl;
        std::exit(2);
    }
    return options;
}

}  // namespace textbook
