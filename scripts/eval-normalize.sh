#!/usr/bin/env bash
# Exact-match accuracy of `tingshu normalize` on the NeMo Chinese text
# normalization test cases (../shared/data/tn/nemo-zh/test_cases_*.txt,
# `written~spoken[~alternative…]`). Prints per-file figures, the total and
# every line that differs; then the same for our own web-novel lines
# (tests/fixtures/frontend/normalize-webnovel.txt, `written~spoken`).
#
# Besides the strict figure it prints one that also accepts our deliberate
# readings of three written forms, each a rule on the written text, not a
# list of lines: 号 read as written where NeMo says 日, 零下 where NeMo says
# 负 before a temperature, and 元 where NeMo says 人民币 after ¥/￥. The
# strict figure is the one to quote; the other says how many differences
# are choices rather than misses.
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
total=0 ok=0 accepted=0
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
for file in "$dir"/test_cases_*.txt; do
  name=$(basename "$file" .txt)
  got=$(cut -d'~' -f1 "$file" | "$bin" normalize)
  counts=$(paste -d'\t' "$file" <(printf '%s\n' "$got") | awk -F'\t' -v name="$name" -v out="$failures" '
    { sub(/\r$/, "", $1) }
    $1 == "" { next }
    {
      n = split($1, f, "~"); hit = 0; choice = 0
      for (i = 2; i <= n; i++) {
        if (f[i] == $2) hit = 1
        if (accepted_as(f[1], f[i]) == $2) choice = 1
      }
      if (hit) ok++
      else printf "%s: %s → %s (want %s)%s\n", name, f[1], $2, f[2], choice ? " [deliberate reading]" : "" >> out
      if (hit || choice) acc++
      total++
    }
    # The reference with our deliberate readings of written forms.
    function accepted_as(written, ref) {
      if (index(written, "号") && !index(written, "日")) gsub(/日/, "号", ref)
      if (written ~ /-[0-9.]+ ?(°C|℃|°F|℉|°|度)/) sub(/负/, "零下", ref)
      if ((index(written, "¥") || index(written, "￥")) && !index(written, "人民币")) gsub(/人民币/, "元", ref)
      return ref
    }
    END { printf "%d %d %d\n", ok, total, acc }')
  read -r file_ok file_total file_accepted <<<"$counts"
  printf '%-28s %4d / %4d\n' "$name" "$file_ok" "$file_total"
  ok=$((ok + file_ok)) total=$((total + file_total)) accepted=$((accepted + file_accepted))
done
awk -v ok="$ok" -v total="$total" 'BEGIN { printf "total exact match: %d / %d = %.2f%%\n", ok, total, 100 * ok / total }'
awk -v a="$accepted" -v total="$total" 'BEGIN { printf "exact or a deliberate reading of a written form (号, 零下, 元): %d / %d = %.2f%%\n", a, total, 100 * a / total }'
if [ -s "$failures" ]; then
  echo "differences:"
  cat "$failures"
fi
