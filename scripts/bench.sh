#!/usr/bin/env bash
# Benchmarks of `tingshu build` on sample 004:
# 1. the default (neural, Kokoro) voices: real-time factor (wall / audio) of a
#    cold build, peak RSS of the process tree, a cached rerun, and the
#    latency of `tingshu preview "一句话"` (model load included);
# 2. the espeak-ng voices (voices/espeak.toml): wall time beside one direct
#    `espeak-ng -v cmn-latn-pinyin` run over the same pinyin, and their ratio
#    (best of N runs each).
#   scripts/bench.sh [BOOK] [RUNS]     (NEURAL=0 skips part 1)
set -euo pipefail
cd "$(dirname "$0")/.."
book=${1:-../shared/samples/004_a3a7bf909582209b.txt}
runs=${2:-5}
[ -f "$book" ] || { echo "bench: $book is absent" >&2; exit 2; }
cargo build --release -q
bin=target/release/tingshu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
audio_of() { python3 -c "import json,glob;print(round(sum(c['duration_s'] for m in glob.glob('$1/*/manifest.json') for c in json.load(open(m))['chapters']),1))"; }

if [ "${NEURAL:-1}" != 0 ] && "$bin" voices --voices voices/default.toml >/dev/null 2>&1; then
  load0=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(now)
  /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" build "$book" --voices voices/default.toml --out "$tmp/nout" 2>/dev/null
  t1=$(now)
  "$bin" build "$book" --voices voices/default.toml --out "$tmp/nout" 2>/dev/null
  t2=$(now)
  (cd "$tmp" && /usr/bin/time -f '%e' -o "$tmp/pv" "$OLDPWD/$bin" preview "风从海上吹来，他把灯塔的门关紧了。" --voices "$OLDPWD/voices/default.toml" -o p.wav --cache pc >/dev/null 2>&1)
  load1=$(cut -d' ' -f1 /proc/loadavg)
  audio_n=$(audio_of "$tmp/nout")
  printf 'neural build:     %.1f s wall, %s s of audio, RTF %.3f (aim <= 0.35)\n' "$(python3 -c "print($t1 - $t0)")" "$audio_n" "$(python3 -c "print(($t1 - $t0) / $audio_n)")"
  printf 'neural peak RSS:  %s MB (one process; aim <= 800)\n' "$(( $(cat "$tmp/rss") / 1024 ))"
  printf 'neural cached:    %.2f s wall (aim < 1)\n' "$(python3 -c "print($t2 - $t1)")"
  printf 'neural preview:   %s s to the WAV, model load included (aim <= 2)\n' "$(cat "$tmp/pv")"
  printf 'load average:     %s before, %s after (2 cores; other work slows these figures)\n' "$load0" "$load1"
fi

# The pinyin tingshu computes, one paragraph per line.
"$bin" pinyin < "$book" > "$tmp/pinyin.txt"

best() { sort -g | head -1; }

for _ in $(seq "$runs"); do
  rm -rf "$tmp/out"
  t0=$(now); "$bin" build "$book" --voices voices/espeak.toml --out "$tmp/out" 2>/dev/null; t1=$(now)
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
