// doctest's main(), compiled once for the unit-test program. A run whose filters select no
// test case fails: `meson test` selects each file by name (`--source-file=*/test_loss.cpp`),
// and a renamed or mistyped file must not pass by running nothing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

unsigned selected_test_cases = 0;

// Listens to the run only to count the test cases that passed the filters.
struct CountSelected : doctest::IReporter {
    explicit CountSelected(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats& stats) override {
        selected_test_cases = stats.numTestCasesPassingFilters;
    }
    void test_case_start(const doctest::TestCaseData&) override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("count_selected", 1, CountSelected);

}  // namespace

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    const int status = context.run();
    if (context.shouldExit()) return status;  // --help, --list-test-cases, ...
    if (status == 0 && selected_test_cases == 0) {
        std::fprintf(stderr, "unit_tests: no test case matches the filters\n");
        return 1;
    }
    return status;
}
