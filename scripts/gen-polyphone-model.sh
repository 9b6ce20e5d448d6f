#!/usr/bin/env bash
# Fits the polyphone model (src/frontend/data/polyphone.tsv) on the CPP
# polyphone data (Apache-2.0) in ../shared/data/polyphone and prints its
# k-fold cross-validated accuracy. Generation time only; nothing here runs at
# build, run or test time.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${CPP_DIR:-../shared/data/polyphone}
folds=${FOLDS:-5}
cargo build --release --example train_polyphone
target/release/examples/train_polyphone "$data/cpp-dev.sent" "$data/cpp-dev.lb" \
  --folds "$folds" --out src/frontend/data/polyphone.tsv
