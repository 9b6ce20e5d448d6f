#!/usr/bin/env bash
# Benchmarks of `tingshu build` on sample 004:
# 1. the default (neural, Kokoro) voices: real-time factor (wall / audio) of a
#    cold build, peak RSS of the process tree, a cached rerun, and the
#    latency of `tingshu preview "一句话"` (model load included);
# 2. the espeak-ng voices (voices/espeak.toml): wall time beside one direct
#    `espeak-ng -v cmn-latn-pinyin` run over the same pinyin, and their ratio
#    (best of N runs each).
#   scripts/bench.sh [BOOK] [RUNS]     (NEURAL=0 skips part 1, ESPEAK=0 part 2)
# BIN=path benchmarks another build of tingshu (an older one, for a before and
# after in one sitting). It first prints the CPU and how it runs the model's
# convolutions (figures from different CPUs do not compare). The neural
# build reports the CPU time (user + system) of the process tree per second
# of audio, and the first audio of a streamed preview (`preview TEXT -o -`:
# seconds until the first bytes past the WAV header), model load included.
set -euo pipefail
cd "$(dirname "$0")/.."
book=${1:-../shared/samples/004_a3a7bf909582209b.txt}
runs=${2:-5}
[ -f "$book" ] || { echo "bench: $book is absent" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then cargo build --release -q; fi
bin=$(realpath "${BIN:-target/release/tingshu}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
audio_of() { python3 -c "import json,glob;print(round(sum(c['duration_s'] for m in glob.glob('$1/*/manifest.json') for c in json.load(open(m))['chapters']),1))"; }

if [ "${NEURAL:-1}" != 0 ] && "$bin" voices --voices voices/default.toml >/dev/null 2>&1; then
  # Figures from different CPUs do not compare: say which ran them.
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores;$("$bin" voices --voices voices/default.toml 2>/dev/null | grep -m1 'convolutions as' | sed 's/^ */ /')"
  load0=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(now)
  /usr/bin/time -f '%M %U %S' -o "$tmp/rss" "$bin" build "$book" --voices voices/default.toml --out "$tmp/nout" 2>/dev/null
  t1=$(now)
  "$bin" build "$book" --voices voices/default.toml --out "$tmp/nout" 2>/dev/null
  t2=$(now)
  # A 76-character paragraph, streamed: the first audio is the first clause.
  para="雾从海上漫过来，码头的灯一盏一盏亮了。老周在船上系好绳子，回头看了一眼。阿禾问：“那条船还回来吗？”天亮以前，灯塔的光慢慢扫过黑沉沉的水面，像一只眼睛。"
  (cd "$tmp" && /usr/bin/time -f '%e' -o "$tmp/pv" "$bin" preview "风从海上吹来，他把灯塔的门关紧了。" --voices "$OLDPWD/voices/default.toml" -o p.wav --cache pc >/dev/null 2>&1)
  first1=$(cd "$tmp" && python3 "$OLDPWD/scripts/first-audio.py" -- "$bin" preview "$para" --voices "$OLDPWD/voices/default.toml" -o - --cache fa1)
  first2=$(cd "$tmp" && python3 "$OLDPWD/scripts/first-audio.py" -- "$bin" preview "$para" --voices "$OLDPWD/voices/default.toml" -o - --cache fa2)
  load1=$(cut -d' ' -f1 /proc/loadavg)
  audio_n=$(audio_of "$tmp/nout")
  read -r rss user sys < "$tmp/rss"
  printf 'neural build:     %.1f s wall, %s s of audio, RTF %.3f (aim <= 0.30)\n' "$(python3 -c "print($t1 - $t0)")" "$audio_n" "$(python3 -c "print(($t1 - $t0) / $audio_n)")"
  printf 'neural CPU:       %.1f s user + %.1f s system = %.3f CPU-s per audio-s (aim <= 0.55)\n' "$user" "$sys" "$(python3 -c "print(($user + $sys) / $audio_n)")"
  printf 'neural peak RSS:  %s MB (one process; aim <= 1000)\n' "$(( rss / 1024 ))"
  printf 'neural cached:    %.2f s wall (aim < 1)\n' "$(python3 -c "print($t2 - $t1)")"
  printf 'neural preview:   %s s to the WAV of one sentence, model load included (aim <= 2)\n' "$(cat "$tmp/pv")"
  printf 'first audio:      %s s, then %s s, streamed preview of a 76-character paragraph (first audio, end, bytes; aim <= 1.0 with the graph cached)\n' "$first1" "$first2"
  printf 'load average:     %s before, %s after (2 cores; other work slows these figures)\n' "$load0" "$load1"
fi

[ "${ESPEAK:-1}" != 0 ] || exit 0

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
