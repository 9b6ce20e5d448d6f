#!/usr/bin/env bash
# Checks the neural voice's GPU path (TINGSHU_GPU=1 scripts/install-kokoro.sh):
# runs ldd on the CUDA provider with the library search path tingshu uses
# (the installer's onnxruntime-gpu/cuda, then $TINGSHU_CUDA_LIBS and its */lib
# folders, as src/synth/kokoro/cuda.rs searches them) and prints what resolves
# and what does not. Only the driver's libcuda.so.1 may be missing on a machine
# without an NVIDIA driver; anything else missing is an install error (exit 1).
set -euo pipefail

if [ -n "${TINGSHU_DATA:-}" ]; then
  data="$TINGSHU_DATA"
elif [ -n "${XDG_DATA_HOME:-}" ]; then
  data="$XDG_DATA_HOME/tingshu"
else
  data="$HOME/.local/share/tingshu"
fi
gpu="$data/onnxruntime-gpu"
provider="$gpu/libonnxruntime_providers_cuda.so"
if [ ! -f "$provider" ]; then
  echo "$provider: missing (install it with TINGSHU_GPU=1 scripts/install-kokoro.sh)" >&2
  exit 2
fi

dirs=("$gpu/cuda")
if [ -n "${TINGSHU_CUDA_LIBS:-}" ]; then
  IFS=: read -r -a extra <<<"$TINGSHU_CUDA_LIBS"
  for d in "${extra[@]}"; do
    [ -n "$d" ] || continue
    dirs+=("$d")
    for sub in "$d"/*/lib; do
      [ -d "$sub" ] && dirs+=("$sub")
    done
  done
fi
path="$(IFS=:; echo "${dirs[*]}")"
echo "search path: $path"

status=0
cudnn_dir=""
check() {
  local lib="$1"
  local out missing
  out="$(LD_LIBRARY_PATH="$path" ldd "$lib" 2>&1)"
  missing="$(grep 'not found' <<<"$out" | awk '{print $1}' | sort -u || true)"
  echo "$(basename "$lib"): $(grep -c '=>' <<<"$out") libraries, unresolved: ${missing:-none}"
  for m in $missing; do
    [ "$m" = libcuda.so.1 ] || status=1
  done
}
check "$provider"
check "$gpu/libonnxruntime.so.1.31.1"
# What the provider and ONNX Runtime open later by name: cuDNN (and its parts), cuFFT, NVRTC.
for lib in libcudnn.so.9 libcufft.so.12 libnvrtc.so.13; do
  found=""
  for d in "${dirs[@]}"; do
    if [ -f "$d/$lib" ]; then
      found="$d/$lib"
      break
    fi
  done
  if [ -z "$found" ]; then
    echo "$lib: not found in the search path"
    status=1
  else
    check "$found"
    [ "$lib" = libcudnn.so.9 ] && cudnn_dir="$(dirname "$found")"
  fi
done
for lib in "${cudnn_dir:-/nonexistent}"/libcudnn_*.so.9; do
  if [ -f "$lib" ]; then check "$lib"; fi
done
if [ -e /proc/driver/nvidia/version ]; then
  echo "driver: $(head -1 /proc/driver/nvidia/version)"
else
  echo "driver: none (libcuda.so.1 comes from the NVIDIA driver, CUDA 13 needs >= 580)"
fi
if [ "$status" -eq 0 ]; then
  echo "ok: everything the CUDA provider needs resolves (but the driver's libcuda.so.1)"
else
  echo "install error: a library other than libcuda.so.1 is unresolved (rerun TINGSHU_GPU=1 scripts/install-kokoro.sh)"
fi
exit "$status"
