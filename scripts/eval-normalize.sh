#!/usr/bin/env bash
# Exact-match accuracy of `tingshu normalize` on the NeMo Chinese text
# normalization test cases (../shared/data/tn/nemo-zh/test_cases_*.txt,
# `written~spoken[~alternative…]`). Prints per-file figures, the total and
# every line that differs; then the same for our own web-novel lines
# (tests/fixtures/frontend/normalize-webnovel.txt, `written~spoken`).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TN_DIR:-../shared/data/tn/nemo-zh}
bin=${TINGSHU:-target/release/tingshu}
[ -x "$bin" ] || cargo build --release
own=tests/fixtures/frontend/normalize-webnovel.txt
paste -d'~' "$own" <(cut -d'~' -f1 "$own" | "$bin" normalize) | awk -F'~' '
  $1 == "" { next }
  { total++; if ($2 == $3) ok++; else bad = bad sprintf("  %s → %s (want %s)\n", $1, $3, $2) }
  END { printf "own web-novel lines exact match: %d / %d = %.2f%%\n%s", ok, total, 100 * ok / total, bad }'
if ! ls "$dir"/test_cases_*.txt >/dev/null 2>&1; then
  echo "skip: no test cases in $dir" >&2
  exit 0
fi
total=0 ok=0
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
for file in "$dir"/test_cases_*.txt; do
  name=$(basename "$file" .txt)
  got=$(cut -d'~' -f1 "$file" | "$bin" normalize)
  counts=$(paste -d'\t' "$file" <(printf '%s\n' "$got") | awk -F'\t' -v name="$name" -v out="$failures" '
    { sub(/\r$/, "", $1) }
    $1 == "" { next }
    {
      n = split($1, f, "~"); hit = 0
      for (i = 2; i <= n; i++) if (f[i] == $2) hit = 1
      if (hit) ok++; else printf "%s: %s → %s (want %s)\n", name, f[1], $2, f[2] >> out
      total++
    }
    END { printf "%d %d\n", ok, total }')
  read -r file_ok file_total <<<"$counts"
  printf '%-28s %4d / %4d\n' "$name" "$file_ok" "$file_total"
  ok=$((ok + file_ok)) total=$((total + file_total))
done
awk -v ok="$ok" -v total="$total" 'BEGIN { printf "total exact match: %d / %d = %.2f%%\n", ok, total, 100 * ok / total }'
if [ -s "$failures" ]; then
  echo "differences:"
  cat "$failures"
fi
