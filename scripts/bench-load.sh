#!/usr/bin/env bash
# Peak memory under load (issue 29): `tingshu build` of a book of ONE
# chapter lasting about MINUTES minutes (default 174, i.e. 2.9 h) with the
# espeak-only voices, RUNS times on a quiet machine and RUNS times with
# three CPU burners (`yes > /dev/null` ×3) running beside it. Prints the
# peak RSS of the main process (wait4, via /usr/bin/time) and of the
# process tree (tingshu + espeak-ng workers + ffmpeg, sampled every 0.5 s)
# of every run, then the figures the issue asks for: the largest peak of
# all runs (≤ 250 MB) and the ratio of the largest to the smallest (≤ 1.3):
# memory must not follow the load of the machine.
# Usage: scripts/bench-load.sh [MINUTES] [RUNS]    e.g. 174 3 (the default)
#        scripts/bench-load.sh 2 1                 a quick check that it works
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-174}
runs=${2:-3}
cargo build --release --quiet
work=$(mktemp -d)
burners=()
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${burners[@]}"; do wait "$pid" 2>/dev/null || true; done
  burners=()
}
trap 'stop_burners; rm -rf "$work"' EXIT
book="$work/长章$minutes.txt"
# About 285 Han characters a minute with espeak-ng (see bench-mix.sh long);
# every paragraph differs (numbers), so nothing is served twice.
python3 - "$minutes" > "$book" <<'PY'
import sys
minutes = int(sys.argv[1])
paras = max(1, minutes * 285 // 38)
print("第一章 很长的一夜")
for p in range(1, paras + 1):
    print(f"　　第{p}盏灯亮起的时候，守塔人又往炉子里添了一块木柴。他说：“还剩{p}个钟头。”")
PY
peaks=()
one_run() { # label n
  local label=$1 n=$2 out="$work/out-$1-$2"
  /usr/bin/time -f "%M %e" -o "$work/time" target/release/tingshu build "$book" \
    --voices voices/espeak.toml --out "$out" --format wav 2> "$work/stderr" &
  local pid=$! peak=0 tree
  while kill -0 "$pid" 2>/dev/null; do
    tree=$(ps -o rss= --ppid "$pid" --pid "$pid" 2>/dev/null | awk '{s+=$1} END {print s+0}')
    ((tree > peak)) && peak=$tree
    sleep 0.5
  done
  wait "$pid" || { tail -3 "$work/stderr"; exit 1; }
  local rss wall
  read -r rss wall < "$work/time"
  local audio
  audio=$(python3 -c "import json,glob; m=json.load(open(glob.glob('$out/*/manifest.json')[0])); print(round(sum(c['duration_s'] for c in m['chapters'])/60,1))")
  echo "$label run $n: $audio min audio, peak RSS main process $((rss / 1024)) MB, process tree $((peak / 1024)) MB, wall ${wall} s"
  peaks+=("$rss")
  rm -rf "$out"
}
echo "== quiet, $runs run(s) of one ${minutes}-minute chapter"
for n in $(seq 1 "$runs"); do one_run quiet "$n"; done
echo "== with three CPU burners (yes > /dev/null ×3)"
for _ in 1 2 3; do
  yes > /dev/null &
  burners+=($!)
done
for n in $(seq 1 "$runs"); do one_run burners "$n"; done
stop_burners
printf '%s\n' "${peaks[@]}" | sort -n | awk '
  NR == 1 {min = $1} {max = $1}
  END {
    printf "peak RSS of the main process over all runs: %d–%d MB, ratio %.2f (want ≤ 1.3), largest %s 250 MB\n",
      min / 1024, max / 1024, max / min, (max / 1024 <= 250 ? "≤" : ">")
  }'
