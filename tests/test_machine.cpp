// Unit tests for textbook/machine.hpp: the recorded benchmarks' figures a chapter puts beside
// its own run on a terminal (read from data/benchmarks/, whose values these expectations are
// taken from), the row chosen for the reader's thread count, and the read-bandwidth probe's
// refusals. (The probe's speed itself is measured, not tested.)
#include <cmath>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "textbook/machine.hpp"

namespace test_machine {  // every test file is a namespace of its own (tests/meson.build)

TEST_CASE("recorded_summary: the generation benchmark's 200 cached tokens, by threads") {
    // data/benchmarks/generation.json, summary: case "generate", library tokens_per_s.
    const auto two = textbook::recorded_summary("generation", "generate", 2, "tokens_per_s");
    REQUIRE(two.has_value());
    CHECK(std::fabs(two->value - 41.67780909862113) < 1e-9);
    CHECK(two->threads == 2);
    CHECK(two->cpu == "Intel(R) Xeon(R) Processor");
    CHECK(two->commit == "d5047ab92da3");
    // A reader with 8 cores gets the largest row recorded (2 threads), one core the 1-thread row.
    CHECK(textbook::recorded_summary("generation", "generate", 8, "tokens_per_s")->threads == 2);
    CHECK(std::fabs(textbook::recorded_summary("generation", "generate", 1, "tokens_per_s")->value - 23.81226332538703) < 1e-9);
    // A decode step is told apart by its context (arg).
    CHECK(std::fabs(textbook::recorded_summary("generation", "decode", 1, "tokens_per_s", 1023)->value - 10.899366278439699) < 1e-9);
    // What is not there: nullopt, not a number.
    CHECK_FALSE(textbook::recorded_summary("generation", "prefill", 1, "tokens_per_s").has_value());  // null
    CHECK_FALSE(textbook::recorded_summary("generation", "no such case", 2, "tokens_per_s").has_value());
    CHECK_FALSE(textbook::recorded_summary("no_such_benchmark", "generate", 2, "tokens_per_s").has_value());
    CHECK_FALSE(textbook::recorded_summary("generation", "generate", 0, "tokens_per_s").has_value());
}

TEST_CASE("recorded_whole_run: chapter 26's whole run as the pretraining benchmark models it") {
    // data/benchmarks/pretraining.json, whole_run: 90 train steps; the library's total_s.
    const auto two = textbook::recorded_whole_run("pretraining", 2, "total_s", 90);
    REQUIRE(two.has_value());
    CHECK(std::fabs(two->value - 574.906563580189) < 1e-9);
    CHECK(two->cpu == "AMD EPYC");
    CHECK(std::fabs(textbook::recorded_whole_run("pretraining", 1, "total_s", 90)->value - 947.9573519577316) < 1e-9);
    // Another run (appendix D's 135 steps, exercise 5.4's 9) is not compared with it.
    CHECK_FALSE(textbook::recorded_whole_run("pretraining", 2, "total_s", 135).has_value());
    CHECK_FALSE(textbook::recorded_whole_run("pretraining", 2, "no_such_field", 90).has_value());
}

TEST_CASE("read_bytes_per_second refuses an empty probe; threads_text counts") {
    CHECK_THROWS_AS(textbook::read_bytes_per_second(0), std::invalid_argument);
    CHECK_THROWS_AS(textbook::read_bytes_per_second(1, 0), std::invalid_argument);
    CHECK_THROWS_AS(textbook::read_bytes_per_second(1, 1024, 0), std::invalid_argument);
    CHECK(textbook::read_bytes_per_second(2, 1 << 20, 1) > 0.0);  // 1 MB: a positive rate
    CHECK(textbook::threads_text(1) == "1 thread");
    CHECK(textbook::threads_text(2) == "2 threads");
    CHECK_FALSE(textbook::cpu_model().empty());
}

}  // namespace test_machine
