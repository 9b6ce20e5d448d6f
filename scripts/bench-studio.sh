#!/usr/bin/env bash
# Studio preview latency: `tingshu studio` on a book (default
# samples/灯塔守夜人.txt) with a voices file (default voices/espeak.toml),
# each paragraph of the first chapters previewed once through
# POST /api/preview, as the page does when a paragraph is clicked. A fresh
# output directory, so every preview synthesizes (nothing cached); then the
# same paragraphs again (cached). Median and worst wall time per preview,
# measured by curl. Target: every paragraph under 1 s with the espeak voices.
#
#   scripts/bench-studio.sh [BOOK] [VOICES] [CHAPTERS]
set -euo pipefail
cd "$(dirname "$0")/.."
BOOK=${1:-samples/灯塔守夜人.txt}
VOICES=${2:-voices/espeak.toml}
CHAPTERS=${3:-3}
cargo build --release --quiet
TMP=$(mktemp -d)
cleanup() { [[ -n ${PID:-} ]] && kill "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
target/release/tingshu studio "$BOOK" --voices "$VOICES" --out "$TMP/out" \
    --cast "$TMP/cast.toml" --lexicon "$TMP/lexicon.toml" > "$TMP/url" 2> "$TMP/log" &
PID=$!
for _ in $(seq 100); do [[ -s $TMP/url ]] && break; sleep 0.1; done
URL=$(head -n1 "$TMP/url")
BASE=${URL%/?token=*}
TOKEN=${URL#*token=}
curl -s "$BASE/api/book" > "$TMP/book.json"
# chapter index and paragraph count of the first CHAPTERS chapters
python3 - "$TMP/book.json" "$CHAPTERS" > "$TMP/plan" <<'PY'
import json, sys
book = json.load(open(sys.argv[1]))
for c in book["chapters"][: int(sys.argv[2])]:
    for p in range(1, c["paragraphs"] + 1):
        print(c["index"], p)
PY
sleep 1  # engine workers start with the server
run() {
    local label=$1
    : > "$TMP/times.$label"
    while read -r chapter paragraph; do
        curl -s -o "$TMP/p.wav" -w '%{http_code} %{time_total}\n' \
            -H "X-Tingshu-Token: $TOKEN" -H 'Content-Type: application/json' \
            -d "{\"chapter\": $chapter, \"paragraphs\": [$paragraph, $paragraph]}" \
            "$BASE/api/preview" >> "$TMP/times.$label"
    done < "$TMP/plan"
    python3 - "$TMP/times.$label" "$label" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bad = [r for r in rows if r[0] != "200"]
t = sorted(float(r[1]) for r in rows if r[0] == "200")
print(f"{sys.argv[2]:>8}: {len(t)} paragraphs, median {statistics.median(t)*1e3:.0f} ms, "
      f"p90 {t[int(len(t)*0.9)]*1e3:.0f} ms, worst {t[-1]*1e3:.0f} ms, "
      f"under 1 s: {sum(x < 1 for x in t)}/{len(t)}, failed: {len(bad)}")
PY
}
echo "studio preview latency: $BOOK, $VOICES, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
run uncached
run cached
