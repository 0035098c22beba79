#!/usr/bin/env bash
# Installs the attention benchmark's peers (never needed by the build, the chapters or the
# tests): Debian's PyTorch 1.13 and ONNX (python3-torch, python3-onnx, python3-numpy) and
# Node.js with npm from Debian when no node is there; then ONNX Runtime from npm, as locked in
# benchmarks/peers/onnxruntime/package-lock.json. `--ignore-scripts`: onnxruntime-node's
# install script downloads GPU libraries, which the CPU benchmark does not need; its CPU
# binaries ship inside the package. Safe to run again: installs only what is missing.
#
#   benchmarks/peers/install_peers.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
packages=(python3-torch python3-onnx python3-numpy)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
"$here/../../tools/install_missing.sh" "${packages[@]}"
cd "$here/onnxruntime"
if ! node -e "require.resolve('onnxruntime-node')" 2>/dev/null ||
   [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "Installing ONNX Runtime (npm ci --ignore-scripts in benchmarks/peers/onnxruntime)"
  npm ci --ignore-scripts --no-audit --no-fund
fi
