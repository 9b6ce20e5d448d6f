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

run() {
  local start end
  start=$(date +%s.%N)
  target/release/tingshu build "$work/bench.txt" --voices "$work/voices.toml" \
    --out "$work/out" --cache "$work/cache" 2> "$work/stderr" || { cat "$work/stderr"; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

first=$(run)
requests_first=$(curl -s "http://$addr/requests")
grep -q "1 of 1 chapters rendered" "$work/stderr"
second=$(run)
requests_second=$(curl -s "http://$addr/requests")
segments=$(python3 -c "import json,sys; print(sum(len(c['segments']) for c in json.load(open(sys.argv[1]))['chapters']))" "$work/out/bench/manifest.json")

echo "segments in the chapter:        $segments"
echo "cold run (200 ms/request, 8 in flight): ${first} s, ${requests_first} requests (ideal 5.0 s, target ≤ 5.5 s)"
echo "cached rerun:                   ${second} s, $((requests_second - requests_first)) requests (target < 1 s, 0 requests)"
ok=$(echo "$first <= 5.5 && $second < 1.0" | bc)
[ "$ok" = 1 ] && [ "$requests_second" = "$requests_first" ] && echo "PASS" || { echo "FAIL"; exit 1; }
