#!/usr/bin/env bash
# bench-serve.sh — latency to the first audio bytes and throughput of
# `tingshu serve`'s POST /v1/audio/speech.
#
#   scripts/bench-serve.sh [VOICES.toml] [ROUNDS]
#
# VOICES defaults to the built-in voices (the neural voice when installed).
# Starts `target/release/tingshu serve` on 127.0.0.1:0 with an empty library
# and a fresh cache (so nothing comes from the cache), warms the model with
# one request, then:
#   1. first audio bytes of a 76-character passage (response_format pcm, so
#      the first body byte is audio), ROUNDS times, each with a new
#      passage (a different last sentence), median and worst; the same for
#      mp3 (through ffmpeg);
#   2. throughput with 4 concurrent clients, 3 passages each: seconds of
#      audio per second of wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
VOICES=${1:-}
ROUNDS=${2:-5}
BIN=target/release/tingshu
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib"
ARGS=(serve "$WORK/lib" --cache "$WORK/cache" --max-syntheses 4)
[ -n "$VOICES" ] && ARGS+=(--voices "$VOICES")
"$BIN" "${ARGS[@]}" >"$WORK/url" 2>"$WORK/log" &
PID=$!
for _ in $(seq 100); do [ -s "$WORK/url" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/url")
[ -n "$URL" ] || { cat "$WORK/log"; exit 1; }
echo "server: $URL (voices: ${VOICES:-built-in})"
python3 - "$URL" "$ROUNDS" <<'PY'
import http.client, json, statistics, sys, threading, time, urllib.parse
url, rounds = sys.argv[1], int(sys.argv[2])
u = urllib.parse.urlparse(url)
# 76 characters: narration and one line of dialogue.
# Every sentence carries the passage's number, so that no chunk of one
# passage is in the cache from another: each is synthesized.
SENTENCES = ["第%d夜，雾从海上漫过来，码头的灯一盏一盏亮了。", "老周在%d号船上系好绳子，回头看了一眼。",
             "阿禾问：“%d号船还回来吗？”", "天亮以前，第%d座灯塔的光慢慢扫过水面。"]
def passage(i):
    text = "".join(s % i for s in SENTENCES)
    return text[:75] + "。"
def speak(text, fmt):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    body = json.dumps({"model": "tingshu", "input": text, "response_format": fmt})
    t0 = time.monotonic()
    c.request("POST", "/v1/audio/speech", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise SystemExit("HTTP %d: %s" % (r.status, r.read()[:200]))
    first = r.read1(65536) if hasattr(r, "read1") else r.read(1)
    t1 = time.monotonic()
    rest = r.read()
    t2 = time.monotonic()
    rate = int(r.getheader("x-sample-rate", "24000"))
    c.close()
    return t1 - t0, t2 - t0, (len(first) + len(rest)) / 2 / rate
print("passage: %d characters" % len(passage(0)))
speak(passage(1000), "pcm")  # loads the model / starts the engines
for fmt in ("pcm", "mp3"):
    firsts = []
    for i in range(rounds):
        f, total, n = speak(passage(i + (0 if fmt == "pcm" else 500)), fmt)
        firsts.append(f)
    print("first audio bytes (%s): median %.3f s, worst %.3f s over %d passages"
          % (fmt, statistics.median(firsts), max(firsts), rounds))
results = []
def client(k):
    for j in range(3):
        f, total, seconds = speak(passage(2000 + 10 * k + j), "pcm")
        results.append(seconds)
t0 = time.monotonic()
threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.monotonic() - t0
audio = sum(results)
print("throughput, 4 clients x 3 passages: %.1f s of audio in %.1f s = %.2fx real time"
      % (audio, wall, audio / wall))
PY
