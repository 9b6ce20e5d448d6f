#!/usr/bin/env bash
# Refits the weights of the latent-quote scorer (src/text/speaker/scorer.rs)
# on WP2021 train, cut into PARTS books as eval-parts.sh cuts it.
#
#   scripts/train-speaker-scorer.sh [DATA] [NAME_LIST] [PARTS]
#   scripts/train-speaker-scorer.sh --inline
#
# --inline refits WEIGHTS_INLINE instead (books that put tags in the
# quote's paragraph) on tests/fixtures/speaker/webnovel-{a,c,e,f,g}.txt,
# leaving each book out in turn for the held-out figure; webnovel-b.txt,
# webnovel-d.txt, webnovel-h.txt, webnovel-k.txt and webnovel-m.txt are held
# out and never fitted on (webnovel-i.txt, -j.txt and -l.txt are tuned on
# but not fitted).
#
# Prints the held-out accuracy of leaving each part out (against the rules
# alone on the same quotes), then the weights fitted on every part as the
# WEIGHTS constant to paste into scorer.rs. The features depend on the
# speakers already given, so run it again after pasting until the figures
# settle (twice is usually enough). Never fit on WP2021 dev: it is the
# held-out set.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --inline ]]; then
    BIN=${TINGSHU_BIN:-target/release/tingshu}
    [[ -x $BIN ]] || cargo build --release --quiet
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
    F=tests/fixtures/speaker
    BOOKS=()
    for b in a c e f g; do
        BOOKS+=("$F/webnovel-$b.txt" "$F/webnovel-$b.genders.txt")
    done
    python3 scripts/train_speaker_scorer.py collect-annotated "$BIN" "$WORK/records.jsonl" "${BOOKS[@]}"
    python3 scripts/train_speaker_scorer.py fit "$WORK/records.jsonl" --cv --l2 0.01 --rust
    exit 0
fi
DATA=${1:-../shared/data/speaker/wp2021-train.txt}
NAMES=${2:-../shared/data/speaker/name_list.txt}
PARTS=${3:-6}
if [[ ! -f $DATA || ! -f $NAMES ]]; then
    echo "train-speaker-scorer: $DATA or $NAMES not found" >&2
    exit 1
fi
BIN=${TINGSHU_BIN:-target/release/tingshu}
[[ -x $BIN ]] || cargo build --release --quiet
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 scripts/train_speaker_scorer.py collect "$BIN" "$DATA" "$NAMES" "$PARTS" "$WORK/records.jsonl"
python3 scripts/train_speaker_scorer.py fit "$WORK/records.jsonl" --cv --l2 0.003 --rust
