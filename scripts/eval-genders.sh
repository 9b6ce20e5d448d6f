#!/usr/bin/env bash
# Genders of `tingshu split --suggest-cast` (no cast file) against a truth list.
#
#   scripts/eval-genders.sh wp2021 [DATA] [NAME_LIST]   WP2021 instances as a book:
#       genders of the suggested characters, and the share of target quotes
#       voiced with the wrong gender without a cast file
#   scripts/eval-genders.sh book BOOK TRUTH [--errors]  any book and truth list
#       (tests/fixtures/speaker/hongloumeng-genders.txt for 《红楼梦》)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TINGSHU_BIN:-target/release/tingshu}
[[ -x $BIN ]] || cargo build --release --quiet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
case ${1:-} in
    wp2021)
        DATA=${2:-../shared/data/speaker/wp2021-train.txt}
        NAMES=${3:-../shared/data/speaker/name_list.txt}
        python3 scripts/eval_speakers.py make "$DATA" "$NAMES" "$WORK"
        "$BIN" split "$WORK/book.txt" --suggest-cast > "$WORK/suggested.toml"
        "$BIN" split "$WORK/book.txt" --format jsonl > "$WORK/script.jsonl"
        python3 scripts/eval_genders.py cast "$WORK/suggested.toml" "$NAMES" "${@:4}"
        python3 scripts/eval_genders.py lines "$WORK" "$WORK/script.jsonl" "$WORK/suggested.toml" "$NAMES"
        ;;
    book)
        "$BIN" split "$2" --suggest-cast > "$WORK/suggested.toml"
        python3 scripts/eval_genders.py cast "$WORK/suggested.toml" "$3" "${@:4}"
        ;;
    *)
        sed -n '2,9p' "$0" >&2
        exit 2
        ;;
esac
