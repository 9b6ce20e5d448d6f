#!/usr/bin/env bash
# Throughput of `tingshu normalize` and `tingshu pinyin` (plain and --jsonl)
# on one core, over ../shared/data/novels/西游记.txt (or $BENCH_TEXT).
# Prints seconds (best of $RUNS) and MB/s of input; target ≥ 1 MB/s each.
set -euo pipefail
cd "$(dirname "$0")/.."
text=${BENCH_TEXT:-../shared/data/novels/西游记.txt}
runs=${RUNS:-3}
bin=${TINGSHU:-target/release/tingshu}
[ -x "$bin" ] || cargo build --release
if [ ! -f "$text" ]; then
  echo "skip: $text not found" >&2
  exit 0
fi
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
bytes=$(stat -c %s "$text")
start_ms() { date +%s%N; }
# Startup: one short line, so the dictionary and model are loaded.
t0=$(start_ms); echo 你好 | "${pin[@]}" "$bin" pinyin >/dev/null; t1=$(start_ms)
echo "startup (pinyin of one line, dictionary and model load): $(( (t1 - t0) / 1000000 )) ms"
for mode in "normalize" "pinyin" "pinyin --jsonl"; do
  best=""
  for _ in $(seq "$runs"); do
    t0=$(start_ms)
    # shellcheck disable=SC2086
    "${pin[@]}" "$bin" $mode <"$text" >/dev/null
    t1=$(start_ms)
    ms=$(( (t1 - t0) / 1000000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  awk -v m="$mode" -v ms="$best" -v b="$bytes" \
    'BEGIN { printf "%-16s %8.3f s  %6.2f MB/s  (%d bytes, one core)\n", m, ms / 1000, b / 1e6 / (ms / 1000), b }'
done
