#!/usr/bin/env bash
# Batch runs with encoded formats (figures go to notes/batch2.md): a
# generated serial of CHAPTERS chapters (default 120) × 6 paragraphs, one job
# with formats FORMATS (default ["wav","mp3","m4b"]), embedded espeak-ng
# voice. Times (wall, /usr/bin/time) of:
#  1. the first run (render + encode everything);
#  2. a run with nothing changed (must write nothing);
#  3. a run after one chapter is appended (that chapter + M4B/playlist/manifest);
#  4. a run after one chapter's MP3 is deleted (that MP3 only).
# Usage: scripts/bench-batch-formats.sh [CHAPTERS] [FORMATS]
set -euo pipefail
cd "$(dirname "$0")/.."
chapters=${1:-120}
formats=${2:-'["wav", "mp3", "m4b"]'}
cargo build --release --quiet
bin=$PWD/target/release/tingshu

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/books"
gen() {
  python3 - "$1" "$2" <<'PY'
import sys
first, last = int(sys.argv[1]), int(sys.argv[2])
lines = [
    "　　第{c}夜，潮水退到礁石后面，守塔人把灯芯剪短，记下风向和浪高。",
    "　　“今晚有{c}条船进港。”他对着窗外的雾说。",
    "　　雾里传来汽笛声，一声长，一声短，像是在数他的心跳。",
    "　　他把日志合上，又打开，添了一行：风从东南来。",
    "　　楼梯上的脚步声停在门口，没有人敲门。",
    "　　天快亮的时候，灯塔的影子慢慢缩回了塔脚。",
]
for c in range(first, last + 1):
    print(f"第{c}章 第{c}个夜晚")
    for k in range(6):
        print(lines[(c + k) % len(lines)].format(c=c))
PY
}
gen 1 "$chapters" > "$work/books/serial.txt"
cat > "$work/jobs.toml" <<TOML
[[job]]
name = "serial"
source = "books/serial.txt"
out = "out"
formats = $formats
TOML

timed() {
  echo "== $1"
  /usr/bin/time -f "wall %e s, user %U s, sys %S s" "$bin" batch run "$work/jobs.toml" 2>&1 \
    | grep -E "^job |^wall "
}
snapshot() {
  (cd "$work/out/serial" && find . -type f ! -name last-run.json ! -name lock -printf '%p %s %T@\n' | sort)
}

timed "first run: $chapters chapters, formats $formats"
snapshot > "$work/a"
timed "second run, nothing changed"
snapshot > "$work/b"
echo "files changed by the second run: $(diff "$work/a" "$work/b" | grep -c '^>' || true) of $(wc -l < "$work/a")"
gen $((chapters + 1)) $((chapters + 1)) >> "$work/books/serial.txt"
timed "one chapter appended"
snapshot > "$work/c"
echo "files changed: $(diff "$work/b" "$work/c" | grep '^>' | awk '{print $2}' | tr '\n' ' ')"
victim=$(cd "$work/out/serial" && ls ./*.mp3 2>/dev/null | sed -n 2p || true)
if [ -n "$victim" ]; then
  rm "$work/out/serial/$victim"
  timed "one chapter's MP3 deleted ($victim)"
  snapshot > "$work/d"
  echo "files changed: $(diff "$work/c" "$work/d" | grep '^>' | awk '{print $2}' | tr '\n' ' ')"
fi
for i in 1 2 3 4 5; do
  /usr/bin/time -f "%e" "$bin" batch run "$work/jobs.toml" 2>&1 | tail -1
done | tr '\n' ' ' | sed 's/^/no-change runs, wall s: /'
echo
