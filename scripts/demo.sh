#!/usr/bin/env bash
# Installs what is missing, builds tingshu and renders every book in samples/
# into output/ with the built-in voices: the neural voice (installed by
# scripts/install-deps.sh), or espeak-ng where it could not be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release
for book in samples/*.txt; do
  cast=()
  [ -f "${book%.txt}.cast.toml" ] && cast=(--cast "${book%.txt}.cast.toml")
  target/release/tingshu build "$book" --out output "${cast[@]}"
done
echo "done: see output/"
