#!/usr/bin/env bash
# Writes src/text/speaker/data/given-name-gender.tsv: for given-name
# characters, how much more often they name a man than a woman, from the
# character counts of Chinese names by gender in the `ngender` 0.1.1 sdist on
# PyPI (`ngender/charfreq.csv`, MIT). Generation time only: nothing here runs
# at build, run or test time.
#
# Each row: character TAB round(100 · ln(P(char | male) / P(char | female))),
# add-one smoothed, for characters seen in at least MIN_NAMES names whose
# ratio is at least e^MIN_LOG_ODDS / 100 either way (male positive).
set -euo pipefail
cd "$(dirname "$0")/.."
MIN_NAMES=${MIN_NAMES:-100}
MIN_LOG_ODDS=${MIN_LOG_ODDS:-50}
SHA256=e62b1a0e431f090aba9f8fbbf43c1f1da7ab52d9ef7b3d2e1eb22b0e1059b643
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download --quiet --no-deps --no-binary :all: ngender==0.1.1 -d "$tmp"
echo "$SHA256  $tmp/ngender-0.1.1.tar.gz" | sha256sum --check --quiet
tar -xzf "$tmp/ngender-0.1.1.tar.gz" -C "$tmp"
python3 - "$tmp/ngender-0.1.1/ngender/charfreq.csv" "$MIN_NAMES" "$MIN_LOG_ODDS" \
    > src/text/speaker/data/given-name-gender.tsv <<'PY'
import math, sys
path, min_names, min_log_odds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
with open(path, encoding="utf-8") as f:
    next(f)
    for line in f:
        char, male, female = line.strip().split(",")
        rows.append((char, int(male), int(female)))
men = sum(m for _, m, _ in rows)
women = sum(w for _, _, w in rows)
print("# given-name character\tround(100 * ln(P(char | man) / P(char | woman))); from ngender 0.1.1 (MIT), scripts/gen-name-prior.sh")
for char, m, w in sorted(rows, key=lambda r: r[0]):
    if m + w < min_names or len(char) != 1:
        continue
    log_odds = round(100 * math.log(((m + 1) / men) / ((w + 1) / women)))
    if abs(log_odds) >= min_log_odds:
        print(f"{char}\t{log_odds}")
PY
wc -l src/text/speaker/data/given-name-gender.tsv
