#include "textbook/chapter.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include <cxxopts.hpp>

namespace attn::chapter {

Options parse_args(int argc, char** argv, const std::string& program,
                   const std::string& description) {
    cxxopts::Options cli(program, description);
    cli.add_options()
        ("dropout-backend",
         "Bernoulli backend for dropout masks: portable (PyTorch builds without MKL, "
         "notebook 004) or mkl (Intel x86 wheels, notebook 002)",
         cxxopts::value<std::string>()->default_value("portable"))
        ("no-compare", "hide the '>>>' lines that compare each block with the book")
        ("h,help", "print this help and exit");
    Options options;
    try {
        const auto result = cli.parse(argc, argv);
        if (!result.unmatched().empty())
            throw std::invalid_argument("unexpected argument '" + result.unmatched().front() + "'");
        if (result.count("help")) {
            std::cout << cli.help() << std::endl;
            std::exit(0);
        }
        const auto backend = result["dropout-backend"].as<std::string>();
        if (backend == "portable") options.backend = nn::BernoulliBackend::portable;
        else if (backend == "mkl") options.backend = nn::BernoulliBackend::mkl;
        else throw std::invalid_argument("--dropout-backend must be portable or mkl, got '" + backend + "'");
        options.compare = result.count("no-compare") == 0;
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n\n" << cli.help() << std::endl;
        std::exit(2);
    }
    return options;
}

Printer::Printer(const Options& options, const std::string& title)
    : options_(options), book_(attn::book::Book::load(attn::book::data_dir())) {
    const std::string rule(title.size(), '=');
    std::cout << rule << '\n' << title << '\n' << rule << "\n\n";
}

void Printer::prose(const std::string& text) const {
    // Greedy wrap at 80 columns; blank lines in `text` separate paragraphs.
    std::istringstream paragraphs(text);
    std::string para_line, word;
    std::string line;
    auto flush = [&]() {
        if (!line.empty()) std::cout << line << '\n';
        line.clear();
    };
    while (std::getline(paragraphs, para_line)) {
        if (para_line.empty()) {
            flush();
            std::cout << '\n';
            continue;
        }
        std::istringstream words(para_line);
        while (words >> word) {
            if (!line.empty() && line.size() + 1 + word.size() > 80) flush();
            line += (line.empty() ? "" : " ") + word;
        }
    }
    flush();
    std::cout << '\n';
}

void Printer::book(const std::string& id, const std::string& what, const std::string& text) const {
    const auto& entry = book_.at(id);
    std::cout << "### " << entry.notebook.substr(0, 3) << ' ' << entry.cell << " · " << what << '\n'
              << text << '\n';
    if (options_.compare) {
        const auto c = attn::book::compare(entry, text);
        std::cout << ">>> book " << entry.id << " (" << entry.style << ", " << entry.check
                  << "): " << c.summary() << '\n';
        for (const auto& d : c.differences) std::cout << ">>>   " << d << '\n';
        if (!c.text_check) {
            // Unseeded: show what the notebook printed, so the two can be set side by side.
            std::cout << ">>> the notebook printed:\n";
            std::istringstream lines(attn::book::strip_grad_fn(entry.text));
            std::string l;
            while (std::getline(lines, l)) std::cout << ">>> | " << l << '\n';
        }
    }
    std::cout << '\n';
}

void Printer::fresh(const std::string& what, const std::string& text) const {
    std::cout << "### new · " << what << '\n' << text << '\n';
    if (options_.compare) std::cout << ">>> new: the notebooks do not print this\n";
    std::cout << '\n';
}

}  // namespace attn::chapter
