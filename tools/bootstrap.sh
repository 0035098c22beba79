#!/usr/bin/env bash
# The first Quick start command: installs what is missing from Debian's packages, configures,
# builds, and runs every chapter of the book in order. Safe to run again: it installs nothing
# that is already there and rebuilds only what changed.
#
#   ./tools/bootstrap.sh            # as root, or as a user who may sudo
#   ./tools/bootstrap.sh --whole-runs   # the same, with the whole training runs (chapter 26, appendix D)
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the project needs, all from Debian 12's own archive.
packages=(
  g++ meson ninja-build pkg-config            # compiler and build
  libxtensor-dev libxtensor-blas-dev         # tensors and their BLAS bindings
  libblas-dev libopenblas-dev libsleef-dev   # reference BLAS (default), OpenBLAS, PyTorch's exp
  libcxxopts-dev nlohmann-json3-dev           # command line, JSON (oracle files)
  libpcre2-dev libssl-dev                     # GPT-2's tokenizer: its pattern, its files' SHA-256
  catch2 libbenchmark-dev                     # tests, benchmarks
  python3-pylatexenc                          # the chapters' formulas, set for the terminal
  doxygen libjs-mathjax doxygen-awesome-css   # the generated book
  libopenmpi-dev openmpi-bin                  # Part VI: attention across processes (mpirun)
)

./tools/install_missing.sh "${packages[@]}"

if [ ! -f build/build.ninja ]; then
  echo "Configuring the build in build/ (meson setup build)"
  meson setup build
  echo "Building the library, the chapters and the generated book; the first build takes about"
  echo "2 minutes on 2 cores (ninja's [n/N] shows the progress; the tests build with meson test)"
fi
meson compile -C build book-programs
chapters=()
for chapter in build/chapters/chapter_*; do
  [ -x "$chapter" ] && [ -f "$chapter" ] && chapters+=("$chapter")
done
# Every chapter in reading order, each saving its record, then the tally of the run. The Quick
# start's run is --quick: a chapter whose whole run takes minutes (chapter 26 trains GPT-2 on a
# story) does a shortened one and says what it leaves out; `./tools/bootstrap.sh --whole-runs`
# runs them whole (chapter 26 alone: about 10 minutes of CPU).
quick=(--quick)
if [ "${1:-}" = "--whole-runs" ]; then shift; quick=(); fi
status=0
./tools/run_book.sh build/chapters/book_tally "${chapters[@]}" -- "${quick[@]}" "$@" || status=$?
echo
# The generated book. When the run above was the book's own (--quick, no other flags, the
# project's data/, every chapter done), its pages are made from that run's records
# (docs/tools/build_docs.py: ATTN_BOOK_RECORDS) instead of running every chapter a second time.
if [ "$status" -eq 0 ] && [ ${#quick[@]} -eq 1 ] && [ $# -eq 0 ] && [ -z "${ATTN_DATA_DIR:-}" ]; then
  ATTN_BOOK_RECORDS="$PWD/build/chapters/records" meson compile -C build book
else
  meson compile -C build book
fi
[ "$status" -eq 0 ] || exit "$status"
echo
echo "The generated book (chapters with their output, formulas and pictures): build/docs/html/index.html"
