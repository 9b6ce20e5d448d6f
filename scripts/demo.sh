#!/usr/bin/env bash
# Installs what is missing, builds tingshu and renders every book in samples/
# into output/ with the embedded espeak-ng voices.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release
for book in samples/*.txt; do
  target/release/tingshu build "$book" --out output
done
echo "done: see output/"
