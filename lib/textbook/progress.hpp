/// @file progress.hpp
/// @brief A progress line for a chapter's long steps (a training run, many generated tokens):
/// one line on stderr, rewritten in place, only when stderr is a terminal — nothing under CI, in
/// a pipe or with `--record` into a file — and cleared when the step ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace textbook {

/// `Progress bar("training", 90, "tokens")`; `bar.update(37, 512 * 37, "loss 4.07")` prints
/// `training: 37/90 · loss 4.07 · 2,104 tokens/s · 4 min 12 s left` (rate and time left from the
/// time since construction); the destructor clears the line.
class Progress {
public:
    /// `what`: the step's name; `total`: its units of work (steps, tokens); `rate_unit`: what
    /// `update`'s `count` counts, per second (e.g. `tokens`); empty for no rate.
    Progress(std::string what, std::size_t total, std::string rate_unit = "");
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    /// `done` of `total` units finished, `count` things processed so far (for the rate), `note`
    /// shown after the count (e.g. the last loss). Writes only on a terminal, at most 10 times a
    /// second, and always for the last unit.
    void update(std::size_t done, double count = 0, const std::string& note = "");

    /// `update(n, n)` as a callback (e.g. `generate_text_simple_cached`'s `on_token`): `n` of
    /// `total` done, each one counted for the rate.
    std::function<void(std::size_t)> tick();

    /// Clears the line (the destructor does too): call it before printing on after the step.
    void finish();

    /// Seconds since construction.
    double seconds() const;

    /// Whether stderr is a terminal (the line is shown).
    bool shown() const { return shown_; }

private:
    std::string what_, rate_unit_;
    std::size_t total_;
    bool shown_;
    std::chrono::steady_clock::time_point start_, last_;
    std::size_t width_ = 0;  // of the last line written, to clear it
    bool counted_ = false;   // in the StepClock's count of lines shown, until finish()
};

/// The line of a step that has no count of its own (one forward and backward of a large model,
/// a short generation): while the chapter is quiet for more than `kQuietSeconds`, a thread
/// writes `Clipping the gradients: 6 s so far` on stderr, on a terminal only, and updates it every
/// second; the chapter's next output clears it. Silent while a `Progress` line is shown. The
/// chapter harness (Chapter) owns one and names each step; a chapter's own code never sees it.
class StepClock {
public:
    /// Starts the thread when stderr is a terminal; otherwise does nothing at all.
    /// `quiet_seconds`: the quiet time before the line appears (tests shorten it).
    explicit StepClock(double quiet_seconds = kQuietSeconds);
    /// Clears the line and stops the thread.
    ~StepClock();
    StepClock(const StepClock&) = delete;
    StepClock& operator=(const StepClock&) = delete;
    /// The step now running (its title, for the line); counts as output.
    void step(const std::string& title);
    /// The chapter is about to print, or has printed: the line is cleared, the quiet time restarts.
    static void output();
    /// Seconds of quiet before the line appears.
    static constexpr double kQuietSeconds = 2.0;

private:
    struct State;
    State* state_;  // the thread and its stop flag; null when stderr is no terminal
};

/// Writes `line` and a newline to stderr when stderr is a terminal (what this run measured on
/// the reader's machine: not printed into a pipe, a CI log or a `--record`, whose bytes must not
/// depend on the machine).
void terminal_note(const std::string& line);

}  // namespace textbook
