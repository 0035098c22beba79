#!/usr/bin/env bash
# Runs every case of the bad-input table (tests/test_bad_input_*.cpp) in a process of its own
# and counts the outcomes by family, so that a crash or a hang is told apart from a wrong
# outcome and stops nothing else:
#
#   tools/bad_input_by_process.sh [UNIT_TESTS] [SECONDS]    # default: build/tests/unit_tests, 30
#
# Each case runs with ATTN_BAD_INPUT_CASE=N and a time limit of SECONDS. Outcomes:
#   clean     the expected exception and message, or the PyTorch-equal result
#   crash     the process died of a signal (segmentation fault, abort)
#   hang      the time limit passed
#   sanitizer an AddressSanitizer / UndefinedBehaviorSanitizer report (sanitizer builds)
#   silent    it returned: where it must throw, or a result that differs from PyTorch's
#   message   it threw, but another exception type or message (a raw CR, two lines, ...), or
#             where PyTorch returns
# The last line sums them; the exit status is 0 when every case is clean.
set -uo pipefail
bin=${1:-build/tests/unit_tests}
seconds=${2:-30}
export ATTN_DATA_DIR=${ATTN_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/data}
[ -x "$bin" ] || { echo "bad_input_by_process: no test program $bin" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out" "$out.rc"' EXIT
declare -A count
total_bad=0
printf '%-10s %6s %6s %6s %6s %9s %6s %8s\n' family cases clean crash hang sanitizer silent message
for family in $(ATTN_BAD_INPUT_LIST=1 "$bin" "bad-input table*" 2>/dev/null | grep -E '^[a-z]+ [0-9]+ ' | awk '{print $1}' | sort -u); do
  for k in clean crash hang sanitizer silent message; do count[$k]=0; done
  n=$(ATTN_BAD_INPUT_LIST=1 "$bin" "bad-input table ($family)*" 2>/dev/null | grep -c "^$family ")
  for ((i = 0; i < n; i++)); do
    # In a subshell whose own report of the signal ("Segmentation fault") goes nowhere.
    (ATTN_BAD_INPUT_CASE=$i timeout -s KILL "$seconds" "$bin" "bad-input table ($family)*" > "$out" 2>&1
     echo $? > "$out.rc") 2> /dev/null
    rc=$(cat "$out.rc")
    if grep -q -E "Sanitizer|runtime error:" "$out"; then k=sanitizer
    elif [ "$rc" -eq 137 ]; then k=hang  # killed by the time limit
    elif [ "$rc" -ge 128 ]; then k=crash
    elif [ "$rc" -eq 0 ]; then k=clean
    elif grep -q "got returns:" "$out"; then k=silent  # returned: where it must throw, or a wrong result
    else k=message
    fi
    count[$k]=$((count[$k] + 1))
    if [ "$k" != clean ]; then
      total_bad=$((total_bad + 1))
      echo "  $family $i ($k): $(ATTN_BAD_INPUT_LIST=1 "$bin" "bad-input table ($family)*" 2>/dev/null | awk -v i="$i" '$2 == i {sub(/^[^ ]+ [^ ]+ /, ""); print}')" >&2
    fi
  done
  printf '%-10s %6d %6d %6d %6d %9d %6d %8d\n' "$family" "$n" "${count[clean]}" "${count[crash]}" "${count[hang]}" \
    "${count[sanitizer]}" "${count[silent]}" "${count[message]}"
done
echo "bad_input_by_process: $total_bad cases not clean"
((total_bad == 0))
