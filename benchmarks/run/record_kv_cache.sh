#!/usr/bin/env bash
# Runs the KV-cache benchmark (benchmarks/cpp/kv_cache_benchmark.cpp) and records its results:
#   data/benchmarks/kv_cache.json         Google Benchmark's JSON (machine, date, every run)
#   data/benchmarks/kv_cache_summary.tsv  median time per token with and without the cache
# Usage: benchmarks/run/record_kv_cache.sh <path to kv_cache_benchmark> [extra benchmark flags]
#   (or `meson compile -C build run-benchmarks`). Not part of the tests.
set -euo pipefail
exe="$1"; shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/data/benchmarks"
mkdir -p "$out"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if ! git -C "$root" diff --quiet HEAD -- lib benchmarks 2>/dev/null; then commit="$commit+uncommitted"; fi
compiler="$(c++ --version 2>/dev/null | head -n1 || echo unknown)"
# The BLAS the program really loads (reference by default, OpenBLAS with -Dblas=openblas).
blas_lib="$(ldd "$exe" 2>/dev/null | grep -oE '/[^ ]*lib(open)?blas[^ ]*' | head -n1 || true)"
blas_pkg="$( [ -n "$blas_lib" ] && dpkg-query -S "$(readlink -f "$blas_lib")" 2>/dev/null | cut -d: -f1 | head -n1 || true)"
blas="${blas_lib:-unknown} (${blas_pkg:-unknown package})"
# One BLAS thread: per-token latency of small products, stable on a shared machine.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
load="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
"$exe" \
  --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/kv_cache.json" \
  --benchmark_out_format=json \
  --benchmark_context="commit=$commit" \
  --benchmark_context="compiler=$compiler" \
  --benchmark_context="blas=$blas" \
  --benchmark_context="loadavg_before=$load" \
  --benchmark_context="OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS" \
  --benchmark_context="script=benchmarks/run/record_kv_cache.sh" \
  "$@"
/usr/bin/env python3 "$root/benchmarks/run/summarise_kv_cache.py" "$out/kv_cache.json" "$out/kv_cache_summary.tsv"
