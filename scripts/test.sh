#!/usr/bin/env bash
# Installs what is missing, then runs every test (unit, integration, end to end
# with the real espeak-ng engine). Tests that use ../shared data skip with a
# message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release
cargo test --release
