// Unit tests for textbook/progress.hpp's StepClock: the line a chapter's quiet step shows on a
// terminal (stderr moved onto a pseudo-terminal here), cleared by the chapter's next output,
// silent while a Progress line is shown and when stderr is no terminal.
#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "textbook/progress.hpp"

namespace test_progress {  // every test file is a namespace of its own (tests/meson.build)

namespace {

// Runs `body` with stderr on a pseudo-terminal (or a pipe when `terminal` is false) and returns
// what it wrote there.
template <class Body>
std::string stderr_of(bool terminal, Body body) {
    int reader = -1, writer = -1;
    if (terminal) {
        REQUIRE(openpty(&reader, &writer, nullptr, nullptr, nullptr) == 0);
    } else {
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        reader = fds[0], writer = fds[1];
    }
    const int saved = dup(STDERR_FILENO);
    REQUIRE(dup2(writer, STDERR_FILENO) == STDERR_FILENO);
    body();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(writer);
    fcntl(reader, F_SETFL, O_NONBLOCK);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(reader, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    close(reader);
    return out;
}

void wait_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("a quiet step shows its title and time on a terminal; the next output clears it") {
    const std::string out = stderr_of(true, [] {
        textbook::StepClock clock(0.2);
        clock.step("Step 4 \u00b7 Gradient clipping");
        wait_ms(600);
        textbook::StepClock::output();
    });
    // "0 s so far" or, on a loaded machine, "1 s so far": the seconds since the step began.
    const std::string head = "\rStep 4 \u00b7 Gradient clipping: ";
    const std::size_t at = out.find(head);
    REQUIRE(at != std::string::npos);
    CHECK(out.compare(at + head.size() + 1, 9, " s so far") == 0);
    // Cleared: a carriage return, as many spaces as the line, a carriage return.
    const std::size_t line = head.size() - 1 + 1 + 9;
    CHECK(out.find("\r" + std::string(line, ' ') + "\r") != std::string::npos);
}

TEST_CASE("the clock keeps quiet while a Progress line is shown, and off a terminal") {
    const std::string during = stderr_of(true, [] {
        textbook::StepClock clock(0.2);
        clock.step("Training");
        textbook::Progress bar("training", 10, "tokens");
        wait_ms(600);
    });
    CHECK(during.find("so far") == std::string::npos);
    const std::string piped = stderr_of(false, [] {
        textbook::StepClock clock(0.2);
        clock.step("Training");
        wait_ms(600);
    });
    CHECK(piped.empty());
}

}  // namespace test_progress
