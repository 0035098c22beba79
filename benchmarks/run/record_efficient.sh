#!/usr/bin/env bash
# Chapter 11's speed table: every C++ layout (benchmarks/cpp/efficient_benchmark.cpp), each in a
# process of its own, then PyTorch's implementations (benchmarks/peers/torch_efficient.py), in
# ROUNDS interleaved rounds (default 2); the summary keeps each implementation's minimum.
#   data/benchmarks/efficient.json         every run (Google Benchmark JSON and PyTorch's lines)
#   data/benchmarks/efficient_summary.tsv  impl, side (C++/PyTorch), T, min_ms, runs
# Usage: benchmarks/run/record_efficient.sh <path to efficient_benchmark>; EFFICIENT_T=1024.
# One thread everywhere (OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)). Not a test.
set -euo pipefail
exe="$1"; shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/data/benchmarks"
mkdir -p "$out"
rounds="${ROUNDS:-2}"
export EFFICIENT_T="${EFFICIENT_T:-1024}" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if ! git -C "$root" diff --quiet HEAD -- lib benchmarks 2>/dev/null; then commit="$commit+uncommitted"; fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
names="$("$exe" --benchmark_list_tests=true "$@")"
for round in $(seq 1 "$rounds"); do
  for name in $names; do
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    "$exe" --benchmark_filter="^${name}\$" --benchmark_out="$tmp/cpp_$(echo "$name" | tr '/:' '__')_$round.json" \
      --benchmark_out_format=json --benchmark_context="commit=$commit" \
      --benchmark_context="loadavg_before=$load" --benchmark_context="round=$round" "$@" >/dev/null
    echo "round $round: $name done (load before: $load)"
  done
  echo "{\"loadavg_before\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"round\": $round}" > "$tmp/torch_$round.jsonl"
  /usr/bin/python3 "$root/benchmarks/peers/torch_efficient.py" --T "$EFFICIENT_T" >> "$tmp/torch_$round.jsonl"
  echo "round $round: PyTorch done"
done
/usr/bin/env python3 - "$tmp" "$out/efficient.json" "$out/efficient_summary.tsv" "$commit" <<'PY'
import glob, json, sys
tmp, out_json, out_tsv, commit = sys.argv[1:5]
cpp = [json.load(open(f)) for f in sorted(glob.glob(tmp + "/cpp_*.json"))]
torch_runs = [[json.loads(l) for l in open(f) if l.strip()] for f in sorted(glob.glob(tmp + "/torch_*.jsonl"))]
json.dump({"commit": commit, "cpp": cpp, "torch": torch_runs}, open(out_json, "w"), indent=1)
best = {}
for r in cpp:
    for b in r["benchmarks"]:
        best.setdefault((b["label"], "C++", int(b["T"])), []).append(b["real_time"])
for run in torch_runs:
    for line in run[1:]:
        best.setdefault((line["impl"], "PyTorch", line["T"]), []).extend(line["ms"])
with open(out_tsv, "w") as f:
    f.write("impl\tside\tT\tmin_ms\truns\n")
    for (impl, side, T), ms in sorted(best.items(), key=lambda kv: min(kv[1])):
        f.write(f"{impl}\t{side}\t{T}\t{min(ms):.1f}\t{len(ms)}\n")
print(open(out_tsv).read())
PY
