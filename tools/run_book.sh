#!/usr/bin/env bash
# Runs every chapter in order, each writing its record, then prints the tally of the run.
#   tools/run_book.sh BOOK_TALLY CHAPTER... [-- CHAPTER_FLAGS...]
# Stops at the first chapter that fails.
set -euo pipefail
tally="$1"; shift
chapters=(); flags=()
while (($#)); do
  if [ "$1" = "--" ]; then shift; flags=("$@"); break; fi
  chapters+=("$1"); shift
done
records="$(dirname "$tally")/records"
mkdir -p "$records"
recs=()
for chapter in "${chapters[@]}"; do
  name=$(basename "$chapter")
  "$chapter" "${flags[@]}" --record="$records/$name.json"
  recs+=("$records/$name.json")
  echo
done
"$tally" "${recs[@]}"
