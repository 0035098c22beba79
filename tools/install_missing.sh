#!/usr/bin/env bash
# Installs from Debian's archive those of the given packages that are not installed yet,
# through sudo when not root; installs nothing when all are there. apt's and dpkg's progress
# goes to a log that is shown only when the installation fails.
#   tools/install_missing.sh PACKAGE...
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "Installing from Debian: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  if ! { "${sudo[@]}" apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"; } > "$log" 2>&1; then
    cat "$log"
    echo "install_missing: apt-get could not install ${missing[*]} (its output is above)" >&2
    exit 1
  fi
  echo "Installed ${#missing[@]} package(s)."
fi
