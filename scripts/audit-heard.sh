#!/usr/bin/env bash
# Where the wrong syllables come from (issue 28): the requests tingshu sends
# for BOOK against what the meter heard in its render.
#
#   scripts/audit-heard.sh BOOK ASR.json [VOICES] [-- audit_heard.py options]
#
# ASR.json is the meter's --json of BOOK's render with the same voices
# (../shared/tools/asr/asr_cer.py --manifest OUT/BOOK/manifest.json --json F).
# Prints the mismatches by class, tone and homophone counts, SER and pace
# by chunk length, examples and the worst segments. Needs the meter's venv
# (bash ../shared/tools/asr/asr_setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
book=${1:?BOOK}; asr=${2:?ASR.json}; shift 2
voices=voices/default.toml
if [[ $# -gt 0 && $1 != -- ]]; then voices=$1; shift; fi
[[ ${1:-} == -- ]] && shift
venv=${ASR_VENV:-/tmp/asr-venv}
[[ -x $venv/bin/python ]] || { echo "audit-heard: no meter venv at $venv (run bash ../shared/tools/asr/asr_setup.sh)" >&2; exit 2; }
cargo build --release --quiet --example dump_requests
requests=$(mktemp --suffix=.jsonl)
trap 'rm -f "$requests"' EXIT
target/release/examples/dump_requests "$book" "$voices" --jsonl >"$requests"
"$venv/bin/python" scripts/audit_heard.py "$requests" "$asr" "$@"
