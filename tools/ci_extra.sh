#!/usr/bin/env bash
# CI's second half (issue 15): what a user's machine may differ in. Run by .ci/run after the
# gcc build and its test suite; also usable by hand:
#
#   tools/ci_extra.sh [GCC_BUILD_DIR]      # default: build (must be built already)
#
# 0. benchmarks: the Google Benchmark programs, which the first build skips, built in the gcc
#               build (`meson compile benchmarks`) so that they cannot rot.
# 0b. recordings: every chapter with a recorded whole run (data/recordings/: the training runs of
#               chapter 26 and appendix D, chapter 27) run whole again: it must print its recording, block for block.
# 0c. backends: every chapter (--quick) prints the same bytes with --attention-backend=step as
#               on the default fast backend, with --dropout-backend=mkl too where it draws masks.
# 0d. browser:  Debian's chromium installed, and the book measured in it at 390 and 1400 pixels
#               (docs/test_phone.py, which the test suite skips without a browser): no page pans
#               on a phone, every figure fits its column at 1400 px, no figure text too small.
# 1. clang:     a clang 14 build in build-clang; its test suite (without the book's tests,
#               -Dbook_tests=false); every executable chapter
#               must print byte for byte what the gcc build prints (--quick).
# 2. sanitizers: a clang 14 build with AddressSanitizer + UndefinedBehaviorSanitizer in
#               build-asan; its test suite without the book's and the full-size tests
#               (-Dbook_tests=false -Dfull_size_tests=false) and every chapter (--quick, as many at
#               a time as there are cores, one OpenMP thread each), halting
#               on the first report.
# 3. fuzzers:   the libFuzzer targets (tests/fuzz/, built in build-asan, so also under ASan +
#               UBSan): the five data parsers, GPT-2's tokenizer (fuzz_gpt2_tokenizer),
#               the attention modules' fuzzers (fuzz_modules, fuzz_cross_attention), the GPT
#               model's pieces (fuzz_model: LayerNorm, GELU, FeedForward, TransformerBlock,
#               GPTModel on fuzzed shapes, ids and caches), the safetensors reader
#               (fuzz_safetensors, seeded with data/oracle/safetensors/, with the format's words
#               as its dictionary), Hugging Face's config.json (fuzz_config, seeded with
#               data/oracle/gpt2_hf/config*.json) for FUZZ_SECONDS each (default 60)
#               and the structured fuzzer of the library's core for STRUCTURED_FUZZ_SECONDS
#               (default 120), as many at a time as there are cores: 0 crashes, hangs, sanitizer
#               reports or broken invariants. Each target first runs the inputs that once failed
#               it (tests/fuzz/regressions/<target>/, among its seeds).
#
# Each part prints how long it took. The counts of all checks go to
# GCC_BUILD_DIR/ci-extra-counts as "passed failed skipped" for .ci/run's closing line; the exit
# status is 0 only when every check passed.
set -uo pipefail
cd "$(dirname "$0")/.."
gcc_build=${1:-build}
fuzz_seconds=${FUZZ_SECONDS:-60}
structured_seconds=${STRUCTURED_FUZZ_SECONDS:-120}
counts_file="$gcc_build/ci-extra-counts"
logs="$gcc_build/ci-extra-logs"  # every part's full output
mkdir -p "$logs"
passed=0
failed=0
skipped=0
echo "0 1 0" > "$counts_file"  # until the end: a crash of this script counts as a failure

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "ci_extra: FAILED: $*"; }

# Adds a meson test log's results to the counts.
count_meson() {
  local log="$1/meson-logs/testlog.json"
  if [ ! -f "$log" ]; then fail "no test log in $1"; return; fi
  passed=$((passed + $(grep -c '"result": "OK"' "$log" || true)))
  failed=$((failed + $(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)))
  skipped=$((skipped + $(grep -c '"result": "SKIP"' "$log" || true)))
}

timed() {  # timed NAME COMMAND...: runs a part and prints its wall time
  local name=$1 start=$SECONDS
  shift
  echo "ci_extra: === $name ==="
  "$@"
  echo "ci_extra: $name took $((SECONDS - start)) s"
}

# What these parts need beyond tools/bootstrap.sh: clang 14 and its runtimes (ASan, UBSan,
# libFuzzer), all from Debian 12.
install_tools() {
  ./tools/install_missing.sh clang-14 libclang-rt-14-dev
}

# Every executable chapter of a build directory.
chapters_of() {
  local c
  for c in "$1"/chapters/chapter_*; do
    [ -f "$c" ] && [ -x "$c" ] && echo "$c"
  done
}

setup() {  # setup DIR [meson options...]: configures DIR with clang 14 once
  local dir=$1
  shift
  [ -f "$dir/build.ninja" ] || CC=clang-14 CXX=clang++-14 meson setup "$dir" "$@" > "$logs/$dir.setup.log" 2>&1 \
    || { tail -n 30 "$logs/$dir.setup.log"; return 1; }
}

part_benchmarks() {
  if meson compile -C "$gcc_build" benchmarks > "$logs/benchmarks.log" 2>&1; then
    pass
  else
    tail -n 40 "$logs/benchmarks.log"; fail "building the benchmark programs"
  fi
}

# The chapters whose whole run takes minutes (data/recordings/): run whole again in the gcc
# build, each must print its recording block for block (tools/recordings.py check).
part_recordings() {
  if python3 tools/recordings.py check --build "$gcc_build" > "$logs/recordings.log" 2>&1; then
    pass; cat "$logs/recordings.log"
  else
    tail -n 60 "$logs/recordings.log"; fail "a recorded whole run no longer prints its recording"
  fi
}

part_clang() {
  # -Dbook_tests=false: no HTML book and no tests that run every chapter again; every chapter
  # runs below, and must print what gcc's prints.
  if ! { setup build-clang -Dbook_tests=false && ninja -C build-clang > "$logs/build-clang.log" 2>&1; }; then
    tail -n 40 "$logs/build-clang.log"; fail "clang build"; return
  fi
  pass
  meson test -C build-clang --print-errorlogs > "$logs/build-clang-test.log" 2>&1 || tail -n 40 "$logs/build-clang-test.log"
  count_meson build-clang
  mkdir -p "$logs/gcc-output"
  local c name n=0 same=0
  for c in $(chapters_of "$gcc_build"); do
    name=$(basename "$c")
    n=$((n + 1))
    if [ ! -x "build-clang/chapters/$name" ]; then fail "clang did not build $name"; continue; fi
    local ok=1 args
    for args in "--quick"; do
      # gcc's output as the backends part kept it, else run again.
      local gcc_out="$logs/gcc-output/$name ${args// /_}.txt"
      # shellcheck disable=SC2086
      [ -f "$gcc_out" ] || "$c" $args > "$gcc_out" 2>&1
      # shellcheck disable=SC2086
      if ! cmp -s "$gcc_out" <("build-clang/chapters/$name" $args 2>&1); then
        ok=0
        echo "ci_extra: $name ${args:-(default)}: clang's output differs from gcc's:"
        # shellcheck disable=SC2086
        diff "$gcc_out" <("build-clang/chapters/$name" $args 2>&1) | head -n 10
      fi
    done
    if ((ok)); then pass; same=$((same + 1)); else fail "$name: clang output differs"; fi
  done
  echo "ci_extra: $same of $n chapters print byte for byte the same with clang 14 as with gcc"
  ((n > 0)) || fail "no chapters found in $gcc_build"
}

# Every chapter prints the same bytes on the attention core's step backend as on its fast one
# (the default), on both dropout backends where the chapter draws dropout masks: the backends'
# "same bits" seen through the whole book.
part_backends() {
  local c name n=0 same=0 args
  for c in $(chapters_of "$gcc_build"); do
    name=$(basename "$c")
    local sets=("--quick")
    "$c" --help | grep -q -- --dropout-backend && sets+=("--quick --dropout-backend=mkl")
    for args in "${sets[@]}"; do
      n=$((n + 1))
      # gcc's --quick output is kept for the clang part, which compares with it.
      local out="$logs/gcc-output/$name ${args// /_}.txt"
      mkdir -p "$logs/gcc-output"
      # shellcheck disable=SC2086
      "$c" $args > "$out" 2>&1
      # shellcheck disable=SC2086
      if cmp -s "$out" <("$c" $args --attention-backend=step 2>&1); then
        pass; same=$((same + 1))
      else
        echo "ci_extra: $name $args: the step backend's output differs from the fast one's:"
        # shellcheck disable=SC2086
        diff "$out" <("$c" $args --attention-backend=step 2>&1) | head -n 10
        fail "$name $args: the attention backends print differently"
      fi
    done
  done
  echo "ci_extra: $same of $n chapter runs print byte for byte the same on the step and fast attention backends"
  ((n > 0)) || fail "no chapters found in $gcc_build"
}

part_browser() {
  if ! ./tools/install_missing.sh chromium > "$logs/chromium-install.log" 2>&1; then
    tail -n 20 "$logs/chromium-install.log"; fail "installing chromium"; return
  fi
  if python3 docs/test_phone.py --html "$gcc_build/docs/html" > "$logs/test_phone.log" 2>&1; then
    pass; tail -n 1 "$logs/test_phone.log"
  else
    tail -n 30 "$logs/test_phone.log"; fail "the book in chromium (docs/test_phone.py)"
  fi
}

sanitizer_env() {
  export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1
  # tests/ubsan.supp: only xtensor's stride computation, which the bad-input table's
  # deliberately broken arrays overflow (the library checks every shape it makes first).
  export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1:suppressions=$PWD/tests/ubsan.supp
}

part_sanitizers() {
  sanitizer_env
  # -fsanitize=fuzzer-no-link: the libraries carry libFuzzer's coverage (tests/fuzz/meson.build).
  # No HTML book and none of the tests that run every chapter again or GPT-2 at 124M (under the
  # sanitizers they took 1,900 of this part's 2,500 s): every chapter runs below, and the other
  # tests run the same code at small sizes.
  # tests/fuzz/coverage_ignorelist.txt: the micro-kernels without coverage (it made them three
  # times slower, and they branch only on sizes).
  if ! { setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
         "-Dcpp_args=-fsanitize=fuzzer-no-link -fsanitize-coverage-ignorelist=$PWD/tests/fuzz/coverage_ignorelist.txt" \
         -Dbook_tests=false -Dfull_size_tests=false \
         && ninja -C build-asan > "$logs/build-asan.log" 2>&1; }; then
    tail -n 40 "$logs/build-asan.log"; fail "ASan + UBSan build"; return
  fi
  pass
  meson test -C build-asan --print-errorlogs --timeout-multiplier 4 > "$logs/build-asan-test.log" 2>&1 \
    || tail -n 60 "$logs/build-asan-test.log"
  count_meson build-asan
  # Every chapter (--quick), as many at a time as there are cores, each on one OpenMP thread
  # (its bits do not depend on the count); then their results in order.
  local c name jobs running=0 status_dir names=()
  jobs=$(nproc 2>/dev/null || echo 2)
  status_dir=$(mktemp -d)
  for c in $(chapters_of build-asan); do
    name=$(basename "$c")
    names+=("$name")
    if ((running >= jobs)); then wait -n; running=$((running - 1)); fi
    # --quick once, comparisons included (--no-compare only hides their lines). A chapter that
    # runs as MPI processes runs without the leak check: Open MPI's allocations at MPI_Init,
    # in components unloaded at MPI_Finalize, cannot be suppressed by name (tests/meson.build).
    ( log="$logs/$name.sanitizers.log"
      asan=$ASAN_OPTIONS
      "$c" --help | grep -q "MPI processes" && asan="$ASAN_OPTIONS:detect_leaks=0"
      if OMP_NUM_THREADS=1 ASAN_OPTIONS=$asan "$c" --quick > /dev/null 2> "$log" && ! grep -q -E "Sanitizer|runtime error" "$log"; then
        echo ok > "$status_dir/$name"
      else
        echo failed > "$status_dir/$name"
      fi ) &
    running=$((running + 1))
  done
  wait
  for name in "${names[@]}"; do
    if [ "$(cat "$status_dir/$name" 2>/dev/null)" = ok ]; then
      pass
    else
      tail -n 30 "$logs/$name.sanitizers.log"; fail "$name under ASan + UBSan"
    fi
  done
  rm -rf "$status_dir"
}

part_fuzzers() {
  sanitizer_env
  local dir tmp target seeds seconds
  dir=build-asan/tests/fuzz
  tmp=$(mktemp -d)
  mkdir -p "$tmp/seeds/fuzz_manifest" "$tmp/seeds/fuzz_block" "$tmp/seeds/fuzz_tokenizer" \
    "$tmp/seeds/fuzz_page" "$tmp/seeds/fuzz_record" "$tmp/seeds/fuzz_structured" "$tmp/seeds/fuzz_modules" \
    "$tmp/seeds/fuzz_gpt2_tokenizer" "$tmp/seeds/fuzz_cross_attention" "$tmp/seeds/fuzz_model" \
    "$tmp/seeds/fuzz_safetensors" "$tmp/seeds/fuzz_config"
  head -n 20 data/book/manifest.tsv > "$tmp/seeds/fuzz_manifest/manifest.tsv"
  # Inputs that once failed (tests/fuzz/regressions/<target>/): run first, as seeds, so that a
  # regression fails at once rather than when the fuzzer happens to find it again.
  local d
  for d in tests/fuzz/regressions/*/; do
    [ -d "$tmp/seeds/$(basename "$d")" ] && cp "$d"* "$tmp/seeds/$(basename "$d")/"
  done
  local i=0 f
  for f in $(find data/book -name '*.txt' | sort | head -n 20); do
    cp "$f" "$tmp/seeds/fuzz_block/block$i.txt"; i=$((i + 1))
  done
  for f in data/tokenizer/*.tsv; do cp "$f" "$tmp/seeds/fuzz_tokenizer/"; done
  # GPT-2's tokenizer: the recorded texts (varied scripts, whitespace, emoji), one file each.
  python3 -c 'import json, sys
for i, line in enumerate(l for f in sys.argv[2:] for l in open(f, encoding="utf-8") if l.startswith("text_json\t")):
    open(f"{sys.argv[1]}/text{i}", "w", encoding="utf-8").write(json.loads(line.split("\t")[1]))' \
    "$tmp/seeds/fuzz_gpt2_tokenizer" data/tokenizer/gpt2_*.tsv
  # Safetensors files as the reference writer lays them out (data/oracle/safetensors/).
  cp data/oracle/safetensors/*.safetensors "$tmp/seeds/fuzz_safetensors/"
  # Hugging Face's config.json, as its layout is (data/oracle/gpt2_hf/).
  cp data/oracle/gpt2_hf/config*.json "$tmp/seeds/fuzz_config/"
  for f in "$gcc_build"/chapters/0[1-3]*.prose.json; do cp "$f" "$tmp/seeds/fuzz_page/"; done
  # A record as a chapter writes it (the gcc build's chapter 3, if it is there).
  if [ -x "$gcc_build/chapters/chapter_03_simple_mask" ]; then
    "$gcc_build/chapters/chapter_03_simple_mask" --record="$tmp/seeds/fuzz_record/ch03.json" > /dev/null 2>&1 || true
  fi
  # The fuzzers run one process each, single-threaded: as many at a time as there are cores,
  # then their results are read in order.
  local targets=(fuzz_manifest fuzz_block fuzz_tokenizer fuzz_page fuzz_record fuzz_gpt2_tokenizer fuzz_structured
                 fuzz_modules fuzz_cross_attention fuzz_model fuzz_safetensors fuzz_config)
  local jobs running=0
  jobs=$(nproc 2>/dev/null || echo 2)
  for target in "${targets[@]}"; do
    [ -x "$dir/$target" ] || continue
    seconds=$fuzz_seconds
    [ "$target" = fuzz_structured ] && seconds=$structured_seconds
    mkdir -p "$tmp/corpus/$target" "$tmp/artifacts/$target" "$tmp/work/$target"
    seeds="$tmp/seeds/$target"
    local dict=()
    [ -f "tests/fuzz/${target#fuzz_}.dict" ] && dict=(-dict="tests/fuzz/${target#fuzz_}.dict")
    if ((running >= jobs)); then wait -n; running=$((running - 1)); fi
    ( if TMPDIR="$tmp/work/$target" "$dir/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
           -max_len=4096 -print_final_stats=1 -artifact_prefix="$tmp/artifacts/$target/" "${dict[@]}" \
           "$tmp/corpus/$target" "$seeds" > "$tmp/$target.log" 2>&1; then
        echo "ok $seconds" > "$tmp/$target.status"
      else
        echo "failed $seconds" > "$tmp/$target.status"
      fi ) &
    running=$((running + 1))
  done
  wait
  for target in "${targets[@]}"; do
    if [ ! -x "$dir/$target" ]; then fail "$target was not built"; continue; fi
    read -r status seconds < "$tmp/$target.status" || status=failed
    if [ "$status" = ok ]; then
      pass
      echo "ci_extra: $target: $(grep -E '^stat::number_of_executed_units' "$tmp/$target.log" | awk '{print $2}') inputs, 0 crashes in ${seconds} s"
    else
      tail -n 40 "$tmp/$target.log"
      # Kept for reproduction: "$dir/$target" ARTIFACT runs the input again.
      mkdir -p "$logs/fuzz-artifacts/$target" && cp "$tmp/artifacts/$target"/* "$logs/fuzz-artifacts/$target/" 2>/dev/null
      fail "$target found a crash (artifacts in $logs/fuzz-artifacts/$target: $(ls "$tmp/artifacts/$target"))"
    fi
  done
  rm -rf "$tmp"
}

total_start=$SECONDS
timed "benchmark programs (gcc)" part_benchmarks
timed "the recorded whole runs, run whole again (gcc)" part_recordings
timed "chapters byte-identical on both attention backends, both dropout backends (gcc)" part_backends
timed "the book in chromium, 390 and 1400 px" part_browser
timed "install clang 14" install_tools || fail "installing clang 14"
timed "clang 14 build, tests, chapters byte-identical to gcc" part_clang
timed "ASan + UBSan build, tests, chapters" part_sanitizers
timed "libFuzzer targets, ${fuzz_seconds} s each, the structured one ${structured_seconds} s, $(nproc 2>/dev/null || echo 2) at a time" part_fuzzers
echo "ci_extra: all parts took $((SECONDS - total_start)) s"
echo "$passed $failed $skipped" > "$counts_file"
echo "ci_extra: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
