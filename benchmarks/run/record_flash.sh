#!/usr/bin/env bash
# Runs chapter 12's benchmark (benchmarks/cpp/flash_benchmark.cpp), one process per benchmark and
# run, so that each peak RSS belongs to one benchmark; the runs are interleaved (naive, tiled,
# naive, ...) and repeated ROUNDS times (default 3); the summary keeps the minimum time.
#   data/benchmarks/flash.json         every run's Google Benchmark JSON, with the context
#   data/benchmarks/flash_summary.tsv  per benchmark: min wall and CPU time, peak RSS, runs
# Usage: benchmarks/run/record_flash.sh <path to flash_benchmark> (or `meson compile -C build
# run-flash-benchmark`). Not part of the tests; record `uptime` beside the numbers.
set -euo pipefail
exe="$1"; shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/data/benchmarks"
mkdir -p "$out"
rounds="${ROUNDS:-3}"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if ! git -C "$root" diff --quiet HEAD -- lib benchmarks 2>/dev/null; then commit="$commit+uncommitted"; fi
compiler="$(c++ --version 2>/dev/null | head -n1 || echo unknown)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
names="$("$exe" --benchmark_list_tests=true "$@")"
for round in $(seq 1 "$rounds"); do
  for name in $names; do
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    file="$tmp/$(echo "$name" | tr '/:' '__')_$round.json"
    "$exe" --benchmark_filter="^${name}\$" --benchmark_out="$file" --benchmark_out_format=json \
      --benchmark_context="commit=$commit" --benchmark_context="compiler=$compiler" \
      --benchmark_context="loadavg_before=$load" --benchmark_context="round=$round" \
      --benchmark_context="script=benchmarks/run/record_flash.sh" "$@" >/dev/null
    echo "round $round: $name done (load before: $load)"
  done
done
/usr/bin/env python3 - "$tmp" "$out/flash.json" "$out/flash_summary.tsv" <<'PY'
import glob, json, sys
tmp, out_json, out_tsv = sys.argv[1:4]
runs = [json.load(open(f)) for f in sorted(glob.glob(tmp + "/*.json"))]
json.dump({"runs": runs}, open(out_json, "w"), indent=1)
best = {}
for r in runs:
    for b in r["benchmarks"]:
        key = b["name"]
        e = best.setdefault(key, {"label": b["label"], "T": int(b["T"]), "ms": [], "cpu": [], "rss": []})
        e["ms"].append(b["real_time"])
        e["cpu"].append(b["cpu_time"])
        e["rss"].append(b["peak_rss_bytes"])
with open(out_tsv, "w") as f:
    f.write("path\tT\tmin_ms\tmin_cpu_ms\tpeak_rss_MiB\truns\n")
    for key, e in sorted(best.items(), key=lambda kv: (kv[1]["T"], kv[1]["label"])):
        f.write(f"{e['label']}\t{e['T']}\t{min(e['ms']):.1f}\t{min(e['cpu']):.1f}\t{max(e['rss']) / 2**20:.1f}\t{len(e['ms'])}\n")
print(open(out_tsv).read())
PY
