// Catch2's main(), compiled once, in a translation unit of its own (tests/meson.build): the
// unit tests' unity file includes only Catch2's declarations, so editing a test does not
// compile Catch2's runner again.
//
// Each test file is a test of its own in `meson test`, selected by its file name: every test
// case carries its file's name as a tag (Catch2's --filenames-as-tags, always on here), so
// `unit_tests '[#test_loss]'` runs the test cases of tests/test_loss.cpp. A run whose filters
// select no test case fails: a renamed or mistyped file must not pass by running nothing.
#define CATCH_CONFIG_RUNNER
// Failure reports show printed tensors (80 columns, as PyTorch prints them) indented by the
// reporter: Catch2's console reporter would wrap them at its default width of 80.
#define CATCH_CONFIG_CONSOLE_WIDTH 120
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>

namespace {

bool tests_ran = false;  // false for --help, --list-tests, ...
std::uint64_t selected_test_cases = 0;

// Listens to the run only to count the test cases that passed the filters.
struct CountSelected : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testRunEnded(const Catch::TestRunStats& stats) override {
        tests_ran = true;
        selected_test_cases = stats.totals.testCases.total();
        TestEventListenerBase::testRunEnded(stats);
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(CountSelected)

int main(int argc, char** argv) {
    Catch::Session session;
    session.configData().filenamesAsTags = true;  // `[#test_loss]` on test_loss.cpp's test cases
    if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
    const int status = session.run();
    if (status == 0 && tests_ran && selected_test_cases == 0) {
        std::fprintf(stderr, "unit_tests: no test case matches the filters\n");
        return 1;
    }
    return status;
}
