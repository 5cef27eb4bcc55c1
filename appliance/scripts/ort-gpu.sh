#!/usr/bin/env bash
# ONNX Runtime with its CUDA and TensorRT execution providers (PyPI onnxruntime-gpu
# 1.31.1, CUDA 13, cuDNN 9) for the GPU test machine, which has no network, no zstd and
# takes at most 64 MiB per call (the working tree included). Two steps:
#   appliance/scripts/ort-gpu.sh pack [PART_MIB]   # here: download the wheel (SHA-256
#       # pinned) and split it as it is into parts of PART_MIB MiB (default 40: a 64 MiB
#       # call minus a ~21 MiB working tree) in .deps/ortgpu/parts/ (pNN, SHA256SUMS)
#   then carry the parts in back-to-back device calls (a warm machine is given back after
#   30 s idle; copy each part out of the tree, e.g. to /root/parts, in its own call), and
#   appliance/scripts/ort-gpu.sh unpack PARTS_DIR  # there: join the parts, check the
#       # wheel's SHA-256, take the four libraries out with Python's zipfile into
#       # .deps/ortgpu/lib/ and check each one's SHA-256
# The wheel travels as it is: its libraries are already deflated (255 MB for 314 MB),
# and the CUDA provider's GPU code is mostly compressed already, so xz gained little
# over it and took over 20 minutes on the shared 2-core build machine (six parts).
# The CUDA provider finds cuBLAS 13 / cuDNN 9 through LD_LIBRARY_PATH (on the H200
# machine, PyTorch's nvidia-* wheels; see appliance/scripts/gpu-check.sh). The TensorRT
# provider library is there so that its failure to load libnvinfer is what is tested.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir="$root/.deps/ortgpu"
VERSION=1.31.1
WHEEL=onnxruntime_gpu-$VERSION-cp312-cp312-manylinux_2_28_x86_64.whl
WHEEL_SHA256=05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7
LIBS=("libonnxruntime.so.$VERSION" libonnxruntime_providers_shared.so
  libonnxruntime_providers_cuda.so libonnxruntime_providers_tensorrt.so)
SUMS="5104254339ecadae808da771bd0b63b240f0dbd466514234905e54372435c303  libonnxruntime.so.$VERSION
086ec1d5388f64153d9c63470d126693db9a182c8ce236d3a1119068471b8a0d  libonnxruntime_providers_shared.so
8387867e857499e045caff5d13ac6a5de29571c801562fa2dde0e45f1f31de52  libonnxruntime_providers_cuda.so
1882ee49fdb0e6fc2d272b00cfaf9a3310bf8580a34385c0eec4d82014ea172e  libonnxruntime_providers_tensorrt.so"

die() { printf 'ort-gpu: error: %s\n' "$*" >&2; exit 1; }

pack() {
  local part_mib=${1:-40}
  mkdir -p "$dir/wheel"
  if [ ! -f "$dir/wheel/$WHEEL" ]; then
    python3 -m pip download --quiet --no-deps "onnxruntime-gpu==$VERSION" --only-binary=:all: \
      --python-version 3.12 --platform manylinux_2_28_x86_64 -d "$dir/wheel"
  fi
  echo "$WHEEL_SHA256  $dir/wheel/$WHEEL" | sha256sum -c --quiet - || die "wheel checksum mismatch"
  rm -rf "$dir/parts"
  mkdir -p "$dir/parts"
  split -b "${part_mib}M" -d -a 2 "$dir/wheel/$WHEEL" "$dir/parts/p"
  echo "$SUMS" >"$dir/parts/SHA256SUMS"
  ls -l "$dir/parts"
}

unpack() {
  local parts=${1:-$dir/parts} lib="$dir/lib" whl
  parts=$(cd "$parts" && pwd)
  if [ ! -f "$parts/p00" ] || [ ! -f "$parts/SHA256SUMS" ]; then die "no parts in $parts (carry p00.. and SHA256SUMS first)"; fi
  mkdir -p "$lib"
  whl=$(mktemp)
  cat "$parts"/p[0-9][0-9] >"$whl"
  echo "$WHEEL_SHA256  $whl" | sha256sum -c --quiet - || die "the joined parts are not the wheel (a part missing?)"
  python3 - "$whl" "$lib" "${LIBS[@]}" <<'PY'
import os, shutil, sys, zipfile
whl, lib, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(whl) as z:
    for n in names:
        with z.open("onnxruntime/capi/" + n) as src, open(os.path.join(lib, n), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
  rm -f "$whl"
  (cd "$lib" && sha256sum -c --quiet "$parts/SHA256SUMS") || die "library checksum mismatch"
  ln -sf "libonnxruntime.so.$VERSION" "$lib/libonnxruntime.so"
  echo "ort-gpu: ONNX Runtime $VERSION with the CUDA and TensorRT providers in $lib"
}

case "${1:-}" in
  pack) pack "${2:-}" ;;
  unpack) unpack "${2:-}" ;;
  *) die "usage: $0 pack [PART_MIB] | unpack [PARTS_DIR]" ;;
esac
