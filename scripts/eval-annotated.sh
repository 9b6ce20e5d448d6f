#!/usr/bin/env bash
# Speakers, genders and voices of `tingshu split` without a cast file on a
# book whose quotes carry their speakers (tests/fixtures/speaker/webnovel-*.txt).
#
#   scripts/eval-annotated.sh SOURCE TRUTH [--errors]
#
# SOURCE tags every quote with its speaker (see scripts/eval_annotated.py);
# TRUTH gives the characters' genders (`0|1 name alias…`, 0 female).
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
    echo "usage: scripts/eval-annotated.sh SOURCE TRUTH [--errors]" >&2
    exit 2
fi
SOURCE=$1
TRUTH=$2
shift 2
BIN=${TINGSHU_BIN:-target/release/tingshu}
[[ -x $BIN ]] || cargo build --release --quiet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 scripts/eval_annotated.py strip "$SOURCE" "$WORK"
"$BIN" split "$WORK/book.txt" --suggest-cast > "$WORK/suggested.toml"
"$BIN" split "$WORK/book.txt" --format jsonl > "$WORK/script.jsonl"
python3 scripts/eval_annotated.py score "$WORK" "$WORK/script.jsonl" "$WORK/suggested.toml" "$TRUTH" "$@"
