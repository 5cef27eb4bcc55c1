#!/usr/bin/env bash
# ONNX Runtime with its CUDA and TensorRT execution providers (PyPI onnxruntime-gpu
# 1.31.1, CUDA 13, cuDNN 9) for the GPU test machine, which has no network, no zstd and
# takes at most 64 MiB per call (the working tree included). Two steps:
#   appliance/scripts/ort-gpu.sh pack [PART_MIB]   # here: download the wheel (SHA-256
#       # pinned), take its four libraries out, pack them as one xz-compressed tar and
#       # split that into parts of PART_MIB MiB (default 30: a 64 MiB call minus the
#       # working tree, ~33 MB with the two models) in .deps/ortgpu/parts/ (pNN,
#       # TARSUM, SHA256SUMS)
#   then carry the parts in back-to-back device calls (a warm machine is given back after
#   30 s idle; copy each part out of the tree, e.g. to /root/parts, in its own call), and
#   appliance/scripts/ort-gpu.sh unpack PARTS_DIR  # there: join the parts, check the
#       # tar's SHA-256, take the libraries out with Python's tarfile (the GPU machine has
#       # no zstd; Python's lzma needs no xz binary) into .deps/ortgpu/lib/ and check
#       # each one's SHA-256
# Why xz over the wheel as it is: the wheel deflates its 314 MB of libraries to 255 MB;
# xz -9 takes them to about 194 MB (the CUDA provider 284 -> 186 MB) in about 3 minutes
# on the 2-core build machine: 7 parts of 30 MiB instead of 9.
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
  local part_mib=${1:-30} tmp
  mkdir -p "$dir/wheel"
  if [ ! -f "$dir/wheel/$WHEEL" ]; then
    python3 -m pip download --quiet --no-deps "onnxruntime-gpu==$VERSION" --only-binary=:all: \
      --python-version 3.12 --platform manylinux_2_28_x86_64 -d "$dir/wheel"
  fi
  echo "$WHEEL_SHA256  $dir/wheel/$WHEEL" | sha256sum -c --quiet - || die "wheel checksum mismatch"
  tmp=$(mktemp -d)
  python3 - "$dir/wheel/$WHEEL" "$tmp" "${LIBS[@]}" <<'PY'
import os, shutil, sys, zipfile
whl, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(whl) as z:
    for n in names:
        with z.open("onnxruntime/capi/" + n) as src, open(os.path.join(out, n), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
  (cd "$tmp" && echo "$SUMS" | sha256sum -c --quiet -) || die "library checksum mismatch in the wheel"
  rm -rf "$dir/parts"
  mkdir -p "$dir/parts"
  tar -C "$tmp" -cf - "${LIBS[@]}" | xz -9 -T0 >"$tmp/ort.tar.xz"
  (cd "$tmp" && sha256sum ort.tar.xz) >"$dir/parts/TARSUM"
  split -b "${part_mib}M" -d -a 2 "$tmp/ort.tar.xz" "$dir/parts/p"
  echo "$SUMS" >"$dir/parts/SHA256SUMS"
  rm -rf "$tmp"
  ls -l "$dir/parts"
}

unpack() {
  local parts=${1:-$dir/parts} lib="$dir/lib" tmp
  parts=$(cd "$parts" && pwd)
  for f in p00 TARSUM SHA256SUMS; do
    [ -f "$parts/$f" ] || die "no $f in $parts (carry p00.., TARSUM and SHA256SUMS first)"
  done
  mkdir -p "$lib"
  tmp=$(mktemp -d)
  cat "$parts"/p[0-9][0-9] >"$tmp/ort.tar.xz"
  (cd "$tmp" && sha256sum -c --quiet "$parts/TARSUM") ||
    die "the joined parts are not the packed tar (a part missing?)"
  python3 - "$tmp/ort.tar.xz" "$lib" "${LIBS[@]}" <<'PY'
import os, shutil, sys, tarfile
tar, lib, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with tarfile.open(tar, "r:xz") as t:
    for n in names:
        with t.extractfile(n) as src, open(os.path.join(lib, n), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
PY
  rm -rf "$tmp"
  (cd "$lib" && sha256sum -c --quiet "$parts/SHA256SUMS") || die "library checksum mismatch"
  ln -sf "libonnxruntime.so.$VERSION" "$lib/libonnxruntime.so"
  echo "ort-gpu: ONNX Runtime $VERSION with the CUDA and TensorRT providers in $lib"
}

case "${1:-}" in
  pack) pack "${2:-}" ;;
  unpack) unpack "${2:-}" ;;
  *) die "usage: $0 pack [PART_MIB] | unpack [PARTS_DIR]" ;;
esac
