#!/usr/bin/env bash
# Speakers and genders without a cast on small books: WP2021 instances cut
# into PARTS parts of equal size, each split as a book of its own (a short
# book finds fewer names and less gender evidence than the whole set does).
#
#   scripts/eval-parts.sh [DATA] [NAME_LIST] [PARTS]
#
# Default: WP2021 train in 6 parts of 333 instances. Prints, per part, the
# share of quotes attributed right (`eval-speakers.sh`, no cast) and the
# characters' genders and the quotes' voices (`eval-genders.sh`), then the sums.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/speaker/wp2021-train.txt}
NAMES=${2:-../shared/data/speaker/name_list.txt}
PARTS=${3:-6}
if [[ ! -f $DATA || ! -f $NAMES ]]; then
    echo "eval-parts: $DATA or $NAMES not found; nothing to evaluate" >&2
    exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 scripts/eval_speakers.py cut "$DATA" "$PARTS" "$WORK"
for ((p = 0; p < PARTS; p++)); do
    R=$(NO_CAST=1 scripts/eval-speakers.sh "$WORK/part$p.txt" "$NAMES" 2>/dev/null)
    S=$(grep '^overall' <<<"$R")
    E=$(grep '^errors' <<<"$R")
    G=$(scripts/eval-genders.sh wp2021 "$WORK/part$p.txt" "$NAMES" 2>/dev/null | grep -E '^(gender right|quotes)' | tr '\n' ' ')
    echo "part $p: speakers ${S#overall } | $G| ${E#errors }"
done | tee "$WORK/all.txt"
python3 - "$WORK/all.txt" <<'PY'
import re, sys
t = open(sys.argv[1], encoding="utf-8").read()
right = sum(int(a) for a, _ in re.findall(r"speakers\s+(\d+)/(\d+)", t))
total = sum(int(b) for _, b in re.findall(r"speakers\s+(\d+)/(\d+)", t))
g = re.findall(r"gender right (\d+)/(\d+) = [\d.]+%, wrong (\d+), unknown (\d+)", t)
q = re.findall(r"quotes (\d+): voice of the right gender (\d+) \([\d.]+%\), wrong gender (\d+)", t)
print(f"all parts: speakers {right}/{total} = {100 * right / total:.1f}%", end="")
gr, gt, gu = (sum(int(x[k]) for x in g) for k in (0, 1, 3))
print(f" | genders right {gr}/{gt} = {100 * gr / gt:.1f}%, unknown {gu}", end="")
qt, qw = sum(int(x[0]) for x in q), sum(int(x[2]) for x in q)
print(f" | quotes in a voice of the wrong gender {qw}/{qt} = {100 * qw / qt:.1f}%")
kinds = {}
for k, v in re.findall(r"(speaker never found|no speaker given|another speaker) (\d+)", t):
    kinds[k] = kinds.get(k, 0) + int(v)
print("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
PY
