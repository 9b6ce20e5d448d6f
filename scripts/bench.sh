#!/usr/bin/env bash
# Benchmark for the `tingshu build` issue: wall time of `tingshu build` on
# sample 004 beside one direct `espeak-ng -v cmn-latn-pinyin` run over the
# same pinyin text, and their ratio (best of N runs each).
#   scripts/bench.sh [BOOK] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
book=${1:-../shared/samples/004_a3a7bf909582209b.txt}
runs=${2:-5}
[ -f "$book" ] || { echo "bench: $book is absent" >&2; exit 2; }
cargo build --release -q
bin=target/release/tingshu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The pinyin tingshu computes, one paragraph per line.
"$bin" pinyin < "$book" > "$tmp/pinyin.txt"

now() { date +%s.%N; }
best() { sort -g | head -1; }

for _ in $(seq "$runs"); do
  rm -rf "$tmp/out"
  t0=$(now); "$bin" build "$book" --out "$tmp/out" 2>/dev/null; t1=$(now)
  python3 -c "print($t1 - $t0)"
done | best > "$tmp/tingshu.s"

for _ in $(seq "$runs"); do
  t0=$(now); espeak-ng -v cmn-latn-pinyin -f "$tmp/pinyin.txt" -w "$tmp/espeak.wav"; t1=$(now)
  python3 -c "print($t1 - $t0)"
done | best > "$tmp/espeak.s"

# How much the second core is worth right now: on a shared virtual machine
# two busy processes may get well under twice the work of one, and tingshu
# (parallel) suffers from that where espeak-ng (one process) does not.
spin='import time
t = time.process_time()
n = 0
while n < 3_000_000:
    n += 1'
t0=$(now); python3 -c "$spin"; t1=$(now)
python3 -c "$spin" & python3 -c "$spin" & wait; t2=$(now)
speedup=$(python3 -c "print(round(2 * ($t1 - $t0) / ($t2 - $t1), 2))")

audio_t=$(python3 -c "import json,glob;print(round(sum(c['duration_s'] for m in glob.glob('$tmp/out/*/manifest.json') for c in json.load(open(m))['chapters']),1))")
audio_e=$(python3 -c "import wave;w=wave.open('$tmp/espeak.wav');print(round(w.getnframes()/w.getframerate(),1))")
t=$(cat "$tmp/tingshu.s"); e=$(cat "$tmp/espeak.s")
printf 'book:             %s (%s Han characters)\n' "$book" "$(python3 -c "import sys,re;print(len(re.findall(r'[\u4e00-\u9fff]',open(sys.argv[1],encoding='utf-8').read())))" "$book")"
printf 'cores:            %s (two busy processes ran %s× as fast as one)\n' "$(nproc)" "$speedup"
printf 'tingshu build:    %.3f s wall (best of %s), %s s of audio\n' "$t" "$runs" "$audio_t"
printf 'espeak-ng direct: %.3f s wall (best of %s), %s s of audio\n' "$e" "$runs" "$audio_e"
printf 'ratio:            %.2f (tingshu / espeak-ng; aim <= 1.0)\n' "$(python3 -c "print($t / $e)")"
