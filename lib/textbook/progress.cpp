// The progress line of a chapter's long steps (progress.hpp).
#include "textbook/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace textbook {

namespace {

// 2104.6 -> "2,104"
std::string progress_grouped(double v) {
    std::string digits = std::to_string(static_cast<long long>(std::llround(v))), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string progress_duration(double seconds) {
    const auto s = static_cast<long long>(std::llround(seconds));
    if (s < 60) return std::to_string(s) + " s";
    return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
}

}  // namespace

Progress::Progress(std::string what, std::size_t total, std::string rate_unit)
    : what_(std::move(what)), rate_unit_(std::move(rate_unit)), total_(total), shown_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() { finish(); }

void Progress::finish() {
    if (shown_ && width_ > 0) std::fprintf(stderr, "\r%*s\r", static_cast<int>(width_), "");
    width_ = 0;
}

std::function<void(std::size_t)> Progress::tick() {
    return [this](std::size_t n) { update(n, static_cast<double>(n)); };
}

double Progress::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void terminal_note(const std::string& line) {
    if (isatty(STDERR_FILENO) != 1) return;
    std::cout.flush();  // after what the chapter printed before it
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", line.c_str());
}

void Progress::update(std::size_t done, double count, const std::string& note) {
    if (!shown_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string line = what_ + ": " + std::to_string(done) + "/" + std::to_string(total_);
    if (!note.empty()) line += " · " + note;
    if (!rate_unit_.empty() && elapsed > 0) line += " · " + progress_grouped(count / elapsed) + " " + rate_unit_ + "/s";
    if (done > 0 && done < total_) line += " · " + progress_duration(elapsed * double(total_ - done) / double(done)) + " left";
    const std::size_t width = line.size();
    std::fprintf(stderr, "\r%s%*s", line.c_str(), static_cast<int>(width_ > width ? width_ - width : 0), "");
    std::fflush(stderr);
    width_ = width;
}

}  // namespace textbook
