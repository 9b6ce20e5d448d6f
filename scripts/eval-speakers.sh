#!/usr/bin/env bash
# Speaker accuracy of `tingshu split` on WP2021 (《平凡的世界》) instances.
#
#   scripts/eval-speakers.sh [DATA] [NAME_LIST] [--errors N]
#
# Turns the instances into a book (one chapter per instance) and the name
# list into a cast file, runs `tingshu split --cast … --format jsonl`, and
# prints accuracy overall and per category (explicit / implicit / latent).
# With NO_CAST=1 the book is split without the cast file (names discovered in
# the text), and discovered names are mapped to canonical ones by the name
# list's aliases before scoring.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/speaker/wp2021-dev.txt}
NAMES=${2:-../shared/data/speaker/name_list.txt}
shift $(( $# > 2 ? 2 : $# )) || true
if [[ ! -f $DATA || ! -f $NAMES ]]; then
    echo "eval-speakers: $DATA or $NAMES not found; nothing to evaluate" >&2
    exit 0
fi
BIN=${TINGSHU_BIN:-target/release/tingshu}
[[ -x $BIN ]] || cargo build --release --quiet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 scripts/eval_speakers.py make "$DATA" "$NAMES" "$WORK"
if [[ -n ${NO_CAST:-} ]]; then
    "$BIN" split "$WORK/book.txt" --format jsonl > "$WORK/script.jsonl"
    python3 scripts/eval_speakers.py score "$WORK" "$WORK/script.jsonl" --map-names "$@"
else
    "$BIN" split "$WORK/book.txt" --cast "$WORK/cast.toml" --format jsonl > "$WORK/script.jsonl"
    python3 scripts/eval_speakers.py score "$WORK" "$WORK/script.jsonl" "$@"
fi
