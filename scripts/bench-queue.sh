#!/usr/bin/env bash
# Benchmark for the scale-out issue: wall time for 1 and for 3 `tingshu
# worker` processes (concurrency 4 each) to render a generated 600-segment
# book from one queue (PostgreSQL or Redis, started here on 127.0.0.1) and one
# shared cache directory, synthesizing through a local OpenAI-compatible HTTP
# server with a fixed 200 ms latency per request
# (examples/fake_tts_server.rs, max_in_flight = 4 per worker).
# Target: 3 workers ≤ 0.4 × 1 worker.
#   scripts/bench-queue.sh [postgres|redis] [SEGMENTS] [LATENCY_MS]
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${1:-postgres}
segments=${2:-600}
latency=${3:-200}
cargo build --release -q --bin tingshu --example fake_tts_server
bin=$PWD/target/release/tingshu
tmp=$(mktemp -d)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
as_pg=()
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
redis_pid=
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  if [ "$engine" = postgres ]; then
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1 || true
  elif [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
case $engine in
  postgres)
    [ -x "$pgbin/initdb" ] || { echo "bench-queue: PostgreSQL is absent (scripts/install-deps.sh)" >&2; exit 2; }
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$tmp"; as_pg=(runuser -u postgres --); fi
    "${as_pg[@]}" "$pgbin/initdb" -D "$tmp/data" -U tingshu --auth=trust -E UTF8 --no-sync >/dev/null
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/pg.log" -w \
      -o "-h 127.0.0.1 -p $port -k $tmp -c fsync=off" start >/dev/null
    url="postgres://tingshu@127.0.0.1:$port/postgres"
    reset() {
      PGOPTIONS="-c client_min_messages=warning" "${as_pg[@]}" "$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U tingshu postgres \
        -c 'DROP TABLE IF EXISTS tingshu_tasks, tingshu_deps, tingshu_job_tasks' >/dev/null
    }
    ;;
  redis)
    command -v redis-server >/dev/null || { echo "bench-queue: redis-server is absent (scripts/install-deps.sh)" >&2; exit 2; }
    redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$tmp" >/dev/null &
    redis_pid=$!
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
    url="redis://127.0.0.1:$port/0"
    reset() { redis-cli -p "$port" flushdb >/dev/null; }
    ;;
  *) echo "bench-queue: engine must be postgres or redis" >&2; exit 2 ;;
esac

target/release/examples/fake_tts_server "$latency" > "$tmp/server.log" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/server.log" 2>/dev/null && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$tmp/server.log")
cat > "$tmp/voices.toml" <<TOML
[backends.server]
type = "openai"
base_url = "http://$addr/v1"
max_in_flight = 4

[voices.narrator]
backend = "server"
voice = "bench"

[casting]
narrator = "narrator"
TOML
# Requests the fake server has answered so far (bash's /dev/tcp, no curl).
served() {
  local host=${addr%:*} port=${addr##*:}
  exec 3<>"/dev/tcp/$host/$port"
  printf 'GET /requests HTTP/1.0\r\nHost: %s\r\n\r\n' "$addr" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}

# An original book: 20 chapters, one distinct sentence per paragraph.
python3 - "$segments" > "$tmp/book.txt" <<'EOF'
import sys
n = int(sys.argv[1])
people = ["阿明", "林姐", "老周", "小雨", "船长", "阿青"]
actions = ["慢慢走过", "停下来看着", "轻轻推开", "抬头望向", "低声数着", "绕过", "记下了"]
things = ["潮湿的石阶", "远处的灯光", "半开的木门", "一张旧地图", "码头边的铁链", "窗外的雨", "桌上的茶杯", "墙角的木箱"]
places = ["在港口", "在山路上", "在旧城里", "在河岸边", "在灯塔下"]
combos = [(p, a, t, w) for w in places for p in people for a in actions for t in things]
per = max(1, n // 20)
for i in range(n):
    if i % per == 0:
        print(f"第{i // per + 1}章 夜航\n")
    p, a, t, w = combos[(i * 97) % len(combos)]
    print(f"{p}{w}{a}{t}。\n")
EOF

run() { # workers → seconds
  local workers=$1
  reset
  rm -rf "$tmp/out" "$tmp/cache"
  "$bin" enqueue "$tmp/book.txt" --queue "$url" --out "$tmp/out" --voices "$tmp/voices.toml" 2>"$tmp/enqueue.log"
  local t0 t1 pids=() asked
  asked=$(served)
  t0=$(date +%s.%N)
  for i in $(seq "$workers"); do
    "$bin" worker --queue "$url" --cache "$tmp/cache" --concurrency 4 --until-idle \
      --name "w$i" 2>>"$tmp/workers.log" &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(date +%s.%N)
  local chapters
  chapters=$(ls "$tmp/out/book/"*.wav | wc -l)
  echo "$workers worker(s): $(python3 -c "print(round($t1 - $t0, 2))") s, $(cat "$tmp/enqueue.log"), $chapters chapter files, $(find "$tmp/cache" -name '*.wav' | wc -l) chunks stored, $(( $(served) - asked )) requests served" >&2
  python3 -c "print($t1 - $t0)"
}

one=$(run 1)
three=$(run 3)
chunks=$(find "$tmp/cache" -name '*.wav' | wc -l)
printf 'queue:       %s\n' "$engine"
printf 'book:        %s segments (%s distinct chunks), %s ms latency per request\n' "$segments" "$chunks" "$latency"
printf 'ideal:       1 worker %.1f s, 3 workers %.1f s (chunks × latency / in flight)\n' \
  "$(python3 -c "print($chunks * $latency / 1000 / 4)")" "$(python3 -c "print($chunks * $latency / 1000 / 12)")"
printf '1 worker:    %.2f s\n' "$one"
printf '3 workers:   %.2f s\n' "$three"
printf 'ratio:       %.2f (3 workers / 1 worker; target <= 0.40)\n' "$(python3 -c "print($three / $one)")"
