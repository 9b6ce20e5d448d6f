#!/usr/bin/env bash
# Studio preview latency: `tingshu studio` on a book (default
# samples/灯塔守夜人.txt) with a voices file (default voices/espeak.toml),
# each paragraph of the first chapters previewed once through
# POST /api/preview, as the page does when a paragraph is clicked. A fresh
# output directory, so every preview synthesizes (nothing cached); then the
# same paragraphs again (cached). Median and worst wall time per preview,
# measured by curl. Target: every paragraph under 1 s with the espeak voices.
#
# Then a stand-in for a slow local neural voice: examples/fake_tts_server
# answering each request (a sentence) after SLOW_MS (default 1500 ms, about
# what Kokoro on 2 cores needs for a 20-character sentence), one request at
# a time. For each paragraph: the whole preview's time, and the time to the
# first byte of the streamed preview ("stream": true), which is the first
# sentence's audio. Target: first sentence within 2 s.
#
# Then memory under load: 64 previews of whole chapters sent at once to a
# studio with the espeak voices, first with the default queue (2 at once,
# 8 waiting, the rest 503), then with --max-queued 64 (all 64 wait their
# turn). Peak RSS of the studio (VmHWM) and the peak of the summed RSS of
# the studio and its engine worker processes (sampled every 50 ms), and
# the answers' status counts. Target: ≤ 300 MB.
#
# ONLY=neural: the built-in neural voice (voices/default.toml). The model
# is loaded and a pasted sentence previewed first; then each paragraph of
# the first chapters is previewed once, streamed, nothing cached: time to
# the first audio bytes past the WAV header. Target: ≤ 0.6 s.
#
#   scripts/bench-studio.sh [BOOK] [VOICES] [CHAPTERS]   (SLOW_MS=1500)
#   ONLY=memory scripts/bench-studio.sh [BOOK]             (the last part only)
#   ONLY=neural scripts/bench-studio.sh [BOOK] - [CHAPTERS]
set -euo pipefail
cd "$(dirname "$0")/.."
BOOK=${1:-samples/灯塔守夜人.txt}
VOICES=${2:-voices/espeak.toml}
CHAPTERS=${3:-3}
cargo build --release --quiet --bin tingshu --example fake_tts_server
TMP=$(mktemp -d)
cleanup() {
    [[ -n ${PID:-} ]] && kill "$PID" 2>/dev/null
    [[ -n ${FAKE:-} ]] && kill "$FAKE" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
start() {
    rm -f "$TMP/url"
    target/release/tingshu studio "$BOOK" --voices "$1" --out "$TMP/out.$2" \
        --cast "$TMP/cast.toml" --lexicon "$TMP/lexicon.toml" "${@:3}" > "$TMP/url" 2> "$TMP/log" &
    PID=$!
    for _ in $(seq 100); do [[ -s $TMP/url ]] && break; sleep 0.1; done
    URL=$(head -n1 "$TMP/url")
    BASE=${URL%/?token=*}
    TOKEN=${URL#*token=}
}
memory() {
    local label=$1
    shift
    start voices/espeak.toml "memory-$label" "$@"
    sleep 1
    local chapters
    chapters=$(curl -s "$BASE/api/book" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["chapters"]))')
    # the summed RSS (kB) of the studio and its descendants, every 50 ms
    ( peak=0
      while kill -0 "$PID" 2>/dev/null; do
          total=0
          for p in $PID $(pgrep -P "$PID"; for c in $(pgrep -P "$PID"); do pgrep -P "$c"; done); do
              kb=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
              total=$((total + ${kb:-0}))
          done
          (( total > peak )) && peak=$total && echo "$peak" > "$TMP/tree-peak"
          sleep 0.05
      done ) &
    local sampler=$!
    : > "$TMP/codes"
    for i in $(seq 64); do
        curl -s -o /dev/null -w "%{http_code}\n" -H "X-Tingshu-Token: $TOKEN" \
            -H 'Content-Type: application/json' \
            -d "{\"chapter\": $(( (i - 1) % chapters + 1 ))}" "$BASE/api/preview" >> "$TMP/codes" &
    done
    wait $(jobs -p | grep -v "^$sampler$" | grep -v "^$PID$") 2>/dev/null || true
    local hwm
    hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    wait "$sampler" 2>/dev/null || true
    echo "64 concurrent previews, $label: studio peak RSS $((hwm / 1024)) MB," \
        "studio + workers peak $(( $(cat "$TMP/tree-peak" 2>/dev/null || echo 0) / 1024 )) MB;" \
        "answers: $(sort "$TMP/codes" | uniq -c | awk '{printf "%s×%s ", $1, $2}')(target ≤ 300 MB)"
}
# Streamed previews of every paragraph in $TMP/plan: time to the first
# audio bytes (headers arrive at once, so not curl's time_starttransfer).
stream_first() {
    python3 - "$BASE" "$TOKEN" "$TMP/plan" "$1" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
base, token, plan, target = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
u = urllib.parse.urlparse(base)
first, whole = [], []
for line in open(plan):
    chapter, paragraph = map(int, line.split())
    body = json.dumps({"chapter": chapter, "paragraphs": [paragraph, paragraph], "stream": True})
    c = http.client.HTTPConnection(u.hostname, u.port)
    t0 = time.monotonic()
    c.request("POST", "/api/preview", body, {"X-Tingshu-Token": token, "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.status
    got = r.read1(65536)
    while len(got) <= 44:
        got += r.read1(65536)
    first.append(time.monotonic() - t0)
    r.read()
    whole.append(time.monotonic() - t0)
    c.close()
first.sort()
print(f"{'first audio, stream':>20}: {len(first)} paragraphs, median {statistics.median(first)*1e3:.0f} ms, "
      f"p90 {first[int(len(first)*0.9)]*1e3:.0f} ms, worst {first[-1]*1e3:.0f} ms, "
      f"under {target:g} s: {sum(x < target for x in first)}/{len(first)}; whole stream median {statistics.median(whole)*1e3:.0f} ms")
PY
}
plan() {
    curl -s "$BASE/api/book" > "$TMP/book.json"
    # chapter index and paragraph count of the first CHAPTERS chapters
    python3 - "$TMP/book.json" "$CHAPTERS" > "$TMP/plan" <<'PY'
import json, sys
book = json.load(open(sys.argv[1]))
for c in book["chapters"][: int(sys.argv[2])]:
    for p in range(1, c["paragraphs"] + 1):
        print(c["index"], p)
PY
}
if [[ ${ONLY:-} == neural ]]; then
    start voices/default.toml neural
    plan
    # the model loads with the studio; one pasted sentence waits for it
    curl -s -o /dev/null -H "X-Tingshu-Token: $TOKEN" -H 'Content-Type: application/json' \
        -d '{"text": "风停了。"}' "$BASE/api/preview"
    echo "studio neural preview: $BOOK, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
    stream_first 0.6
    echo "load after: $(cut -d' ' -f1 /proc/loadavg)"
    exit 0
fi
if [[ ${ONLY:-} == memory ]]; then
    memory "default queue"
    memory "64 waiting" --max-queued 64
    exit 0
fi

start "$VOICES" espeak
plan
sleep 1  # engine workers start with the server
run() {
    local label=$1 stream=${2:-false} timing=${3:-time_total}
    : > "$TMP/times.$label"
    while read -r chapter paragraph; do
        curl -s -o "$TMP/p.wav" -w "%{http_code} %{$timing}\n" \
            -H "X-Tingshu-Token: $TOKEN" -H 'Content-Type: application/json' \
            -d "{\"chapter\": $chapter, \"paragraphs\": [$paragraph, $paragraph], \"stream\": $stream}" \
            "$BASE/api/preview" >> "$TMP/times.$label"
    done < "$TMP/plan"
    python3 - "$TMP/times.$label" "$label" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bad = [r for r in rows if r[0] != "200"]
t = sorted(float(r[1]) for r in rows if r[0] == "200")
print(f"{sys.argv[2]:>20}: {len(t)} paragraphs, median {statistics.median(t)*1e3:.0f} ms, "
      f"p90 {t[int(len(t)*0.9)]*1e3:.0f} ms, worst {t[-1]*1e3:.0f} ms, "
      f"under 1 s: {sum(x < 1 for x in t)}/{len(t)}, failed: {len(bad)}")
PY
}
echo "studio preview latency: $BOOK, $VOICES, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
run uncached
run cached
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=

SLOW_MS=${SLOW_MS:-1500}
target/release/examples/fake_tts_server "$SLOW_MS" > "$TMP/server.log" &
FAKE=$!
for _ in $(seq 100); do grep -q listening "$TMP/server.log" 2>/dev/null && break; sleep 0.05; done
ADDR=$(sed -n 's/^listening on //p' "$TMP/server.log")
cat > "$TMP/slow.toml" <<TOML
[backends.slow]
type = "openai"
base_url = "http://$ADDR/v1"
max_in_flight = 1

[voices.narrator]
backend = "slow"
voice = "stand-in"

[casting]
narrator = "narrator"
TOML
start "$TMP/slow.toml" slow
echo "stand-in neural voice: ${SLOW_MS} ms per request, one at a time"
run whole false time_total
# a fresh output directory again: nothing cached for the streamed run
kill "$PID"; wait "$PID" 2>/dev/null || true
start "$TMP/slow.toml" slow-stream
stream_first 2

memory "default queue"
memory "64 waiting" --max-queued 64
