#!/usr/bin/env bash
# Benchmarks for the mixer and outputs (figures go to notes/mixer.md):
#  1. mixing + writing time per hour of audio (examples/bench_mix.rs:
#     synthetic clips of two voices at 22.05 and 16 kHz → 24 kHz chapters,
#     then MP3 and M4B through ffmpeg);
#  2. peak memory of `tingshu build` on a synthetic book of CHAPTERS chapters
#     (default 1000) with the embedded espeak-ng voice, measured with
#     /usr/bin/time -v (largest single process) and by sampling the summed
#     RSS of the whole process tree (main process + espeak workers).
#  3. `scripts/bench-mix.sh long [MINUTES...]` (issue 17): peak RSS of
#     `tingshu build` on books of ONE chapter lasting about MINUTES minutes
#     each (default 20 180) with the espeak-only voices, main process
#     (wait4, via /usr/bin/time) and summed process tree; the ratio of the
#     longest to the shortest is the figure (memory must not grow with a
#     chapter's length).
# Usage: scripts/bench-mix.sh [CHAPTERS] [FORMATS]   e.g. 1000 wav,m4b
#        scripts/bench-mix.sh long [MINUTES...]      e.g. long 20 180
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == long ]]; then
  shift
  minutes=("$@")
  ((${#minutes[@]})) || minutes=(20 180)
  cargo build --release --quiet
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  for m in "${minutes[@]}"; do
    book="$work/长章$m.txt"
    # About 285 Han characters a minute with espeak-ng at rate 230 (measured
    # on 20 min: see BENCHMARKS.md); every paragraph differs (numbers).
    python3 - "$m" > "$book" <<'PY'
import sys
minutes = int(sys.argv[1])
paras = minutes * 285 // 38
print("第一章 很长的一夜")
for p in range(1, paras + 1):
    print(f"　　第{p}盏灯亮起的时候，守塔人又往炉子里添了一块木柴。他说：“还剩{p}个钟头。”")
PY
    out="$work/out$m"
    /usr/bin/time -f "%M %e" -o "$work/time$m" target/release/tingshu build "$book" \
      --voices voices/espeak.toml --out "$out" 2> "$work/stderr$m" &
    pid=$!
    peak=0
    while kill -0 "$pid" 2>/dev/null; do
      # tingshu and its espeak-ng workers (and ffmpeg): its direct children.
      tree=$(ps -o rss= --ppid "$pid" --pid "$pid" 2>/dev/null | awk '{s+=$1} END {print s+0}')
      ((tree > peak)) && peak=$tree
      sleep 0.5
    done
    wait "$pid" || { tail -3 "$work/stderr$m"; exit 1; }
    read -r rss wall < "$work/time$m"
    audio=$(python3 -c "import json,glob; m=json.load(open(glob.glob('$out/*/manifest.json')[0])); print(round(sum(c['duration_s'] for c in m['chapters'])/60,1))")
    wav=$(du -m "$out"/*/*.wav | awk '{print $1}')
    echo "one chapter of $audio min audio ($wav MB WAV): peak RSS main process $((rss / 1024)) MB, process tree $((peak / 1024)) MB, wall ${wall} s"
  done
  exit 0
fi
chapters=${1:-1000}
formats=${2:-wav}
cargo build --release --quiet --example bench_mix
cargo build --release --quiet

echo "== mixing and writing time per hour of audio (10-minute chapters)"
target/release/examples/bench_mix 1

echo "== peak memory mixing one 60-minute chapter (no encoding)"
/usr/bin/time -f "Maximum resident set size (kbytes): %M" target/release/examples/bench_mix 1 60 wav-only 2>&1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
book="$work/合成长书.txt"
# A synthetic book: every chapter a few short paragraphs of narration and
# dialogue, varied by chapter number (original filler text).
python3 - "$chapters" > "$book" <<'PY'
import sys
n = int(sys.argv[1])
lines = [
    "　　天色渐渐暗了下来，街口的路灯一盏接一盏地亮起。",
    "　　“今天的风有点大。”他把衣领竖起来，低声说道。",
    "　　她点点头，没有说话，只是把手里的纸条又看了一遍。",
    "　　远处传来火车的汽笛声，像是在提醒他们时间不多了。",
]
for c in range(1, n + 1):
    print(f"第{c}章 第{c}个夜晚")
    for k in range(4):
        print(lines[(c + k) % len(lines)])
    print()
PY

echo "== tingshu build: $chapters chapters, formats $formats"
out="$work/out"
sampler() {
  local peak=0
  while kill -0 "$1" 2>/dev/null; do
    local total
    total=$(ps -o rss= --ppid "$1" --pid "$1" 2>/dev/null | awk '{s+=$1} END {print s+0}')
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
      total=$((total + $(ps -o rss= --ppid "$child" 2>/dev/null | awk '{s+=$1} END {print s+0}')))
    done
    ((total > peak)) && peak=$total
    sleep 0.2
  done
  echo "$peak" > "$work/tree-peak-kb"
}
start=$(date +%s.%N)
/usr/bin/time -v -o "$work/time.txt" target/release/tingshu build "$book" --out "$out" --format "$formats" 2> "$work/stderr.txt" &
pid=$!
sampler "$pid" &
wait "$pid" || { tail -5 "$work/stderr.txt"; exit 1; }
wait
end=$(date +%s.%N)
tail -1 "$work/stderr.txt" || true
grep -E "Maximum resident set size|Elapsed \(wall clock\)" "$work/time.txt"
echo "summed RSS of the process tree (sampled every 0.2 s): $(( $(cat "$work/tree-peak-kb") / 1024 )) MB"
python3 - "$out" "$start" "$end" <<'PY'
import json, sys, glob
m = json.load(open(glob.glob(sys.argv[1] + "/*/manifest.json")[0]))
hours = sum(c["duration_s"] for c in m["chapters"]) / 3600
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"chapters in manifest: {len(m['chapters'])}, audio: {hours:.2f} h, wall {wall:.1f} s")
PY
