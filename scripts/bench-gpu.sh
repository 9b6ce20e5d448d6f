#!/usr/bin/env bash
# GPU benchmark of the neural voice (docs/gpu.md): on one NVIDIA GPU, prints
#   - sample 004 (tingshu build): audio-seconds per second, RTF (wall / audio);
#   - a 20-chapter book made from sample 004's paragraphs: the same;
#   - first audio: seconds from start to the first audio bytes (past the WAV
#     header) of `tingshu preview "<76-character paragraph>" -o -`, twice;
#   - GPU memory: the peak nvidia-smi saw during the runs, above the idle figure.
# One command, under 8 minutes on one GPU (each step is bounded by `timeout`).
#
#   scripts/bench-gpu.sh [BOOK]
#
# Needs: an NVIDIA GPU and driver >= 580 (CUDA 13), tingshu built or cargo, and
# the GPU path: either `TINGSHU_GPU=1 scripts/install-kokoro.sh` (registries), or,
# on a machine without registry access, libraries already present:
#   TINGSHU_CUDA_LIBS=/path/site-packages/nvidia   CUDA 13 + cuDNN 9 (nvidia-* wheels)
#   ORT_GPU_WHEEL=/path/onnxruntime_gpu-1.31.1-cp3*-manylinux_2_28_x86_64.whl
#       (or its three libraries already in $TINGSHU_DATA/onnxruntime-gpu/)
# plus the CPU install (model, packs) in the data directory.
set -euo pipefail
cd "$(dirname "$0")/.."
book=${1:-../shared/samples/004_a3a7bf909582209b.txt}
[ -f "$book" ] || { echo "bench-gpu: $book is absent" >&2; exit 2; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "bench-gpu: no NVIDIA GPU here (nvidia-smi lists none); this benchmark needs one" >&2
  exit 2
fi
bin=${TINGSHU_BIN:-target/release/tingshu}
[ -x "$bin" ] || cargo build --release -q
tmp=$(mktemp -d)
cleanup() {
  [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ -n "${TINGSHU_DATA:-}" ]; then data="$TINGSHU_DATA"
elif [ -n "${XDG_DATA_HOME:-}" ]; then data="$XDG_DATA_HOME/tingshu"
else data="$HOME/.local/share/tingshu"; fi
if [ -n "${ORT_GPU_WHEEL:-}" ]; then
  # A scratch data directory: the installed model and packs, the wheel's libraries.
  mkdir -p "$tmp/data/onnxruntime-gpu"
  ln -s "$(realpath "$data/kokoro")" "$tmp/data/kokoro"
  ln -s "$(realpath "$data/onnxruntime")" "$tmp/data/onnxruntime"
  python3 - "$ORT_GPU_WHEEL" "$tmp/data/onnxruntime-gpu" <<'PY'
import sys, zipfile, os
wheel, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in ("libonnxruntime.so.1.31.1", "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"):
        with z.open("onnxruntime/capi/" + name) as src, open(os.path.join(dest, name), "wb") as out:
            out.write(src.read())
PY
  data="$tmp/data"
fi
export TINGSHU_DATA="$data"

sed 's/^type = "kokoro"$/type = "kokoro"\ndevice = "cuda"/' voices/default.toml >"$tmp/gpu.toml"
echo "== $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
"$bin" voices --voices "$tmp/gpu.toml" | grep -A1 '^  neural' || {
  "$bin" voices --voices "$tmp/gpu.toml" >/dev/null
  exit 2
}
scripts/check-gpu-install.sh | tail -3 || echo "bench-gpu: scripts/check-gpu-install.sh found a problem (above); going on"

nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 >"$tmp/idle"
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 200 >"$tmp/mem" &
sampler=$!

now() { date +%s.%N; }
audio_of() { python3 -c "import json,glob;print(sum(c['duration_s'] for m in glob.glob('$1/*/manifest.json') for c in json.load(open(m))['chapters']))"; }
report() { # name wall audio
  python3 -c "w,a=$2,$3;print(f'$1: {a:.1f} s of audio in {w:.1f} s: {a/w:.1f} audio-s per s, RTF {w/a:.4f}')"
}

# 1. Sample 004.
t0=$(now)
timeout 200 "$bin" build "$book" --voices "$tmp/gpu.toml" --out "$tmp/s004" --cache "$tmp/c1" >/dev/null 2>"$tmp/s004.err" ||
  { cat "$tmp/s004.err" >&2; exit 1; }
t1=$(now)
report "sample 004" "$(python3 -c "print($t1-$t0)")" "$(audio_of "$tmp/s004")"

# 2. A 20-chapter book of sample 004's sentences: each chapter a quarter of
# them in its own order and grouping, so that its chunks are new ones, not
# cache hits (the build's requests / cache line is printed to show it).
python3 - "$book" "$tmp/book20.txt" <<'PY'
import random, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
sentences = [s.strip() for s in re.findall(r"[^。！？\n]+[。！？]*[”」]?", text) if len(s.strip()) > 4]
per = max(12, len(sentences) // 4)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for n in range(20):
        rng = random.Random(n)
        picked = rng.sample(sentences, min(per, len(sentences)))
        out.write(f"第{n + 1}章 夜里的灯\n\n")
        i = 0
        while i < len(picked):
            k = rng.randint(1, 3)
            out.write("".join(picked[i:i + k]) + "\n\n")
            i += k
PY
t0=$(now)
timeout 240 "$bin" build "$tmp/book20.txt" --voices "$tmp/gpu.toml" --out "$tmp/b20" --cache "$tmp/c2" >"$tmp/b20.out" 2>"$tmp/b20.err" ||
  { cat "$tmp/b20.err" >&2; exit 1; }
t1=$(now)
report "20 chapters" "$(python3 -c "print($t1-$t0)")" "$(audio_of "$tmp/b20")"
grep -h "requests sent" "$tmp/b20.out" "$tmp/b20.err" || true

# 3. First audio of a 76-character paragraph, streamed to a pipe.
para="海风吹过灯塔的窗户，老人点亮了灯，望着远处的渔船慢慢靠近港口。他想起年轻时第一次守夜的情景，那时候海上还没有这么多船。他轻轻叹了口气，把茶杯放回桌上，走"
for run in 1 2; do
  timeout 60 python3 - "$bin" "$tmp/gpu.toml" "$para" "$tmp/p$run" <<'PY'
import subprocess, sys, time, os
binary, voices, text, cache = sys.argv[1:]
t0 = time.monotonic()
p = subprocess.Popen([binary, "preview", text, "--voices", voices, "-o", "-", "--cache", cache],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
got, first, head = 0, None, b""
while True:
    chunk = p.stdout.read1(65536)
    if not chunk:
        break
    got += len(chunk)
    head = (head + chunk)[:44]
    if first is None and got > 44:
        first = time.monotonic() - t0
p.wait()
total = time.monotonic() - t0
print(f"first audio: {first:.2f} s (all {total:.2f} s, {(got - 44) / max(1, int.from_bytes(head[28:32], 'little')):.1f} s of audio)" if first else "first audio: none")
PY
done

kill "$sampler" 2>/dev/null || true
sampler=""
python3 -c "
idle=int(open('$tmp/idle').read().split()[0]); used=[int(x) for x in open('$tmp/mem').read().split() if x.isdigit()]
print(f'GPU memory: peak {max(used)} MiB, {max(used)-idle} MiB above the idle {idle} MiB')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
