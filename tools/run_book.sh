#!/usr/bin/env bash
# Runs every chapter given on the command line, in order, and stops at the first failure.
set -euo pipefail
for chapter in "$@"; do
  "$chapter"
  echo
done
