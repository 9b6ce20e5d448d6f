#!/usr/bin/env bash
# Throughput of `tingshu normalize` and `tingshu pinyin` (plain and --jsonl)
# over ../shared/data/novels/西游记.txt (or $BENCH_TEXT), on one core
# (taskset -c 0; PIN=0 to let it run anywhere).
#
# Each mode runs $RUNS times (default 5); the medians of wall-clock and CPU
# time (user + sys) are printed with MB/s of input. Wall time depends on
# what else the machine runs, so the load average is printed first.
# With TINGSHU_BEFORE=path/to/an/older/tingshu, that build is run in the
# same loop (alternating with this one) so that both see the same load.
set -euo pipefail
cd "$(dirname "$0")/.."
text=${BENCH_TEXT:-../shared/data/novels/西游记.txt}
runs=${RUNS:-5}
bin=${TINGSHU:-target/release/tingshu}
before=${TINGSHU_BEFORE:-}
[ -x "$bin" ] || cargo build --release
if [ ! -f "$text" ]; then
  echo "skip: $text not found" >&2
  exit 0
fi
pin=()
[ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null && pin=(taskset -c 0)
bytes=$(stat -c %s "$text")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)  (nproc $(nproc))"
builds=("$bin")
[ -n "$before" ] && builds=("$before" "$bin")

# One timed run: prints "wall cpu" in seconds.
timed() {
  local TIMEFORMAT='%R %U %S'
  local t
  t=$({ time "$@" >/dev/null 2>&1; } 2>&1)
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Startup: one short line, so the dictionary and model are loaded.
for b in "${builds[@]}"; do
  samples=$(for _ in $(seq "$runs"); do echo 你好 | timed "${pin[@]}" "$b" pinyin; done)
  printf 'startup  %-28s wall %6.3f s  cpu %6.3f s\n' "$b" \
    "$(cut -d' ' -f1 <<<"$samples" | median)" "$(cut -d' ' -f2 <<<"$samples" | median)"
done
for mode in "normalize" "pinyin" "pinyin --jsonl"; do
  declare -A wall=() cpu=()
  for _ in $(seq "$runs"); do
    for b in "${builds[@]}"; do
      # shellcheck disable=SC2086
      read -r w c < <(timed "${pin[@]}" "$b" $mode <"$text")
      wall[$b]+="$w "
      cpu[$b]+="$c "
    done
  done
  for b in "${builds[@]}"; do
    w=$(tr ' ' '\n' <<<"${wall[$b]}" | grep . | median)
    c=$(tr ' ' '\n' <<<"${cpu[$b]}" | grep . | median)
    awk -v m="$mode" -v b="$b" -v w="$w" -v c="$c" -v n="$bytes" 'BEGIN {
      printf "%-15s %-28s wall %6.3f s %6.2f MB/s   cpu %6.3f s %6.2f MB/s\n", m, b, w, n / 1e6 / w, c, n / 1e6 / c
    }'
  done
  unset wall cpu
done
echo "(medians of $runs runs over $bytes bytes)"
