#!/usr/bin/env bash
# Polyphone accuracy on the CPP dev set (../shared/data/polyphone/cpp-dev.sent
# with the target character wrapped in ▁…▁, gold pinyin in cpp-dev.lb, ü
# written u:).
#
# 1. The shipped binary: `tingshu pinyin --jsonl` on every sentence, reading
#    the element of the target character. The shipped polyphone model was
#    fitted on this very file, so this is a training-set figure.
# 2. The honest figure: k-fold cross-validation (default 5) of the same
#    model and features, each fold read by a model fitted on the other folds
#    (examples/train_polyphone.rs), plus the dictionary-only baseline.
# 3. Our own everyday sentences, Simplified and Traditional
#    (tests/fixtures/frontend/polyphones.tsv, or $OWN: target in ▁…▁, tab, reading).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${CPP_DIR:-../shared/data/polyphone}
folds=${FOLDS:-5}
bin=${TINGSHU:-target/release/tingshu}
if [ ! -f "$dir/cpp-dev.sent" ]; then
  echo "skip: $dir/cpp-dev.sent not found" >&2
  exit 0
fi
cargo build --release --bin tingshu --example train_polyphone
own=${OWN:-tests/fixtures/frontend/polyphones.tsv}
grep -v '^#' "$own" | cut -f1 | sed 's/▁//g' | "$bin" pinyin --jsonl |
  paste -d'\t' <(grep -v '^#' "$own") - | LC_ALL=C awk -F'\t' '
    {
      # Characters before the marker (UTF-8 lead bytes only).
      split($1, parts, "▁"); t = parts[1]; gsub(/[\200-\277]/, "", t); index_ = length(t)
      row = $3; gsub(/^\[|\]$/, "", row); n = split(row, cells, ",")
      got = cells[index_ + 1]; gsub(/"/, "", got)
      total++; if (got == $2) ok++; else bad = bad sprintf("  %s: %s (want %s)\n", $1, got, $2)
    }
    END { printf "own everyday sentences: %d / %d = %.2f%%\n%s", ok, total, 100 * ok / total, bad }'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed 's/▁.*$//' "$dir/cpp-dev.sent" | "$bin" pinyin --jsonl >"$work/prefix.jsonl"
sed 's/▁//g' "$dir/cpp-dev.sent" | "$bin" pinyin --jsonl >"$work/full.jsonl"
sed 's/\r$//; s/u:/v/g' "$dir/cpp-dev.lb" >"$work/gold"
paste -d'\t' "$work/prefix.jsonl" "$work/full.jsonl" "$work/gold" | awk -F'\t' '
  {
    p = $1; gsub(/^\[|\]$/, "", p); index_ = (p == "") ? 0 : split(p, a, ",")
    f = $2; gsub(/^\[|\]$/, "", f); split(f, b, ",")
    got = b[index_ + 1]; gsub(/"/, "", got)
    total++; if (got == $3) ok++
  }
  END { printf "shipped binary (model fitted on this file: training-set figure): %d / %d = %.2f%%\n", ok, total, 100 * ok / total }'
target/release/examples/train_polyphone "$dir/cpp-dev.sent" "$dir/cpp-dev.lb" --folds "$folds" |
  grep -E "examples:|dictionary only|cross-validated"
