// The progress line of a chapter's long steps (progress.hpp).
#include "textbook/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

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

// What the StepClock's thread and the chapter's output share.
struct ClockShared {
    std::mutex mutex;
    std::chrono::steady_clock::time_point last_output = std::chrono::steady_clock::now(), step_start = last_output;
    std::string title, line;  // the step's, and the line on screen (empty: none)
    int progress_lines = 0;   // Progress lines shown: the clock keeps quiet
};

ClockShared& clock_shared() {
    static ClockShared shared;
    return shared;
}

// With the mutex held: clears the clock's line, and restarts the quiet time.
void clock_output_locked(ClockShared& s) {
    if (!s.line.empty()) {
        std::fprintf(stderr, "\r%*s\r", static_cast<int>(s.line.size()), "");
        std::fflush(stderr);
        s.line.clear();
    }
    s.last_output = std::chrono::steady_clock::now();
}

}  // namespace

struct StepClock::State {
    std::thread thread;
    std::mutex mutex;
    std::condition_variable wake;
    bool stop = false;
};

StepClock::StepClock(double quiet_seconds) : state_(nullptr) {
    if (isatty(STDERR_FILENO) != 1) return;
    state_ = new State;
    state_->thread = std::thread([st = state_, quiet_seconds] {
        std::unique_lock<std::mutex> lock(st->mutex);
        while (!st->wake.wait_for(lock, std::chrono::milliseconds(quiet_seconds < 1 ? 50 : 250), [st] { return st->stop; })) {
            ClockShared& s = clock_shared();
            const std::lock_guard<std::mutex> guard(s.mutex);
            const auto now = std::chrono::steady_clock::now();
            if (s.progress_lines > 0 || now - s.last_output < std::chrono::duration<double>(quiet_seconds)) continue;
            const std::string line = (s.title.empty() ? std::string("working") : s.title) + ": " +
                                     progress_duration(std::chrono::duration<double>(now - s.step_start).count()) +
                                     " so far";
            if (line == s.line) continue;
            std::fprintf(stderr, "\r%s%*s", line.c_str(),
                         static_cast<int>(s.line.size() > line.size() ? s.line.size() - line.size() : 0), "");
            std::fflush(stderr);
            s.line = line;
        }
    });
}

StepClock::~StepClock() {
    if (!state_) return;
    {
        const std::lock_guard<std::mutex> lock(state_->mutex);
        state_->stop = true;
    }
    state_->wake.notify_all();
    state_->thread.join();
    output();
    delete state_;
}

void StepClock::step(const std::string& title) {
    ClockShared& s = clock_shared();
    const std::lock_guard<std::mutex> guard(s.mutex);
    clock_output_locked(s);
    s.title = title;
    s.step_start = s.last_output;
}

void StepClock::output() {
    ClockShared& s = clock_shared();
    const std::lock_guard<std::mutex> guard(s.mutex);
    clock_output_locked(s);
}

Progress::Progress(std::string what, std::size_t total, std::string rate_unit)
    : what_(std::move(what)), rate_unit_(std::move(rate_unit)), total_(total), shown_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_(start_) {
    if (!shown_) return;
    ClockShared& s = clock_shared();
    const std::lock_guard<std::mutex> guard(s.mutex);
    clock_output_locked(s);
    ++s.progress_lines;
    counted_ = true;
}

Progress::~Progress() { finish(); }

void Progress::finish() {
    if (shown_ && width_ > 0) std::fprintf(stderr, "\r%*s\r", static_cast<int>(width_), "");
    width_ = 0;
    if (counted_) {
        ClockShared& s = clock_shared();
        const std::lock_guard<std::mutex> guard(s.mutex);
        --s.progress_lines;
        s.last_output = std::chrono::steady_clock::now();
        counted_ = false;
    }
}

std::function<void(std::size_t)> Progress::tick() {
    return [this](std::size_t n) { update(n, static_cast<double>(n)); };
}

double Progress::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void terminal_note(const std::string& line) {
    if (isatty(STDERR_FILENO) != 1) return;
    StepClock::output();
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
