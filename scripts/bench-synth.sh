#!/usr/bin/env bash
# Synthesis client benchmark: a 200-segment chapter against a local
# OpenAI-compatible server with 200 ms latency per request and
# max_in_flight = 8 (ideal: 200 × 0.2 s / 8 = 5 s; target ≤ 5.5 s), then a
# fully cached rerun (target < 1 s, no request).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tingshu --example fake_tts_server
work=$(mktemp -d)
trap 'kill $server_pid 2>/dev/null || true; rm -rf "$work"' EXIT

target/release/examples/fake_tts_server 200 > "$work/server.log" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$work/server.log" 2>/dev/null && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/server.log")

cat > "$work/voices.toml" <<TOML
[backends.server]
type = "openai"
base_url = "http://$addr/v1"
max_in_flight = 8

[voices.narrator]
backend = "server"
voice = "bench"

[casting]
narrator = "narrator"
TOML

# One chapter, 200 paragraphs of one short sentence each, all different.
digits=(零 一 二 三 四 五 六 七 八 九)
{
  echo "第一章 基准"
  for i in $(seq 0 199); do
    echo "　　第${digits[$((i / 100))]}${digits[$((i / 10 % 10))]}${digits[$((i % 10))]}盏灯亮了起来"
  done
} > "$work/bench.txt"

# GET a path from the fake server with bash's /dev/tcp (no curl needed).
get() {
  local host=${addr%:*} port=${addr##*:}
  exec 3<>"/dev/tcp/$host/$port"
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$addr" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}

calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }

run() {
  local start end
  start=$(date +%s.%N)
  target/release/tingshu build "$work/bench.txt" --voices "$work/voices.toml" \
    --out "$work/out" --cache "$work/cache" 2> "$work/stderr" || { cat "$work/stderr"; exit 1; }
  end=$(date +%s.%N)
  echo "$start $end" > "$work/times"
  calc "$end - $start"
}

first=$(run)
read -r start end < "$work/times"
read -r first_arrival last_arrival < <(get /timeline)
requests_first=$(get /requests)
grep -q "1 of 1 chapters rendered" "$work/stderr"
second=$(run)
requests_second=$(get /requests)
segments=$(python3 -c "import json,sys; print(sum(len(c['segments']) for c in json.load(open(sys.argv[1]))['chapters']))" "$work/out/bench/manifest.json")

echo "segments in the chapter:        $segments"
echo "cold run (200 ms/request, 8 in flight): ${first} s, ${requests_first} requests (ideal 5.0 s, target ≤ 5.5 s)"
echo "  of which: start → first request $(calc "($first_arrival - $start) * 1000") ms," \
  "first → last request $(calc "($last_arrival - $first_arrival) * 1000") ms (ideal 4800)," \
  "last request → exit $(calc "($end - $last_arrival) * 1000") ms (200 of them the server's latency)"
echo "cached rerun:                   ${second} s, $((requests_second - requests_first)) requests (target < 1 s, 0 requests)"
ok=$(awk "BEGIN { print ($first <= 5.5 && $second < 1.0) ? 1 : 0 }")
[ "$ok" = 1 ] && [ "$requests_second" = "$requests_first" ] && echo "PASS" || { echo "FAIL"; exit 1; }
