#!/usr/bin/env bash
# ONNX Runtime with its CUDA execution provider (PyPI onnxruntime-gpu 1.31.1, CUDA 13,
# cuDNN 9) for the GPU test machine, which has no network and takes at most 64 MiB per
# call. Two steps:
#   appliance/scripts/ort-gpu.sh pack     # here: download (SHA-256 pinned), extract,
#                                         # compress and split into .deps/ortgpu/
#   then carry .deps/ortgpu/p0 … p5 and rest.tar in back-to-back device calls,
#   appliance/scripts/ort-gpu.sh unpack   # there: rebuild .deps/ortgpu/lib/ and check
#                                         # every library's SHA-256
# The CUDA provider finds cuBLAS 13 / cuDNN 9 through LD_LIBRARY_PATH (on the H200
# machine, PyTorch's nvidia-* wheels; see appliance/scripts/gpu-check.sh).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir="$root/.deps/ortgpu"
VERSION=1.31.1
WHEEL=onnxruntime_gpu-$VERSION-cp312-cp312-manylinux_2_28_x86_64.whl
WHEEL_SHA256=05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7
CUDA_SHA256=8387867e857499e045caff5d13ac6a5de29571c801562fa2dde0e45f1f31de52
CORE_SHA256=5104254339ecadae808da771bd0b63b240f0dbd466514234905e54372435c303
PART=35651584 # 34 MiB: one part per device call; with the working tree (≈ 28 MB) under 64 MiB

die() { printf 'ort-gpu: error: %s\n' "$*" >&2; exit 1; }

pack() {
  command -v zstd >/dev/null || die "zstd is needed: apt-get install zstd"
  mkdir -p "$dir/wheel"
  if [ ! -f "$dir/wheel/$WHEEL" ]; then
    python3 -m pip download --quiet --no-deps "onnxruntime-gpu==$VERSION" --only-binary=:all: \
      --python-version 3.12 --platform manylinux_2_28_x86_64 -d "$dir/wheel"
  fi
  echo "$WHEEL_SHA256  $dir/wheel/$WHEEL" | sha256sum -c --quiet - || die "wheel checksum mismatch"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m zipfile -e "$dir/wheel/$WHEEL" "$tmp"
  local capi=$tmp/onnxruntime/capi
  rm -f "$dir"/p? "$dir/rest.tar"
  zstd -19 -T0 -q -c "$capi/libonnxruntime_providers_cuda.so" | split -b "$PART" -d -a 1 - "$dir/p"
  zstd -19 -T0 -q -f "$capi/libonnxruntime.so.$VERSION" -o "$tmp/core.zst"
  tar -C "$tmp" -cf "$dir/rest.tar" core.zst -C "$capi" libonnxruntime_providers_shared.so
  ls -l "$dir"/p? "$dir/rest.tar"
}

unpack() {
  local lib="$dir/lib" py=python3
  mkdir -p "$lib"
  if [ ! -f "$dir/rest.tar" ] || [ ! -f "$dir/p0" ]; then die "carry .deps/ortgpu/p0.. and rest.tar first"; fi
  tar -C "$dir" -xf "$dir/rest.tar"
  cp "$dir/libonnxruntime_providers_shared.so" "$lib/"
  # zstd may be missing there; PyTorch machines have the zstandard module or zstd(1).
  if command -v zstd >/dev/null; then
    cat "$dir"/p? | zstd -d -q -o "$lib/libonnxruntime_providers_cuda.so" -f
    zstd -d -q -f "$dir/core.zst" -o "$lib/libonnxruntime.so.$VERSION"
  else
    [ -x /opt/torch/.venv/bin/python ] && py=/opt/torch/.venv/bin/python
    "$py" - "$dir" "$lib" "$VERSION" <<'PY'
import glob, sys, zstandard
d, lib, v = sys.argv[1:]
def unz(srcs, dst):
    with open(dst, "wb") as out:
        r = zstandard.ZstdDecompressor().stream_reader(b"".join(open(s, "rb").read() for s in srcs))
        while chunk := r.read(1 << 20):
            out.write(chunk)
unz(sorted(glob.glob(d + "/p?")), lib + "/libonnxruntime_providers_cuda.so")
unz([d + "/core.zst"], lib + "/libonnxruntime.so." + v)
PY
  fi
  ln -sf "libonnxruntime.so.$VERSION" "$lib/libonnxruntime.so"
  sha256sum -c --quiet - <<SUMS || die "library checksum mismatch"
$CUDA_SHA256  $lib/libonnxruntime_providers_cuda.so
$CORE_SHA256  $lib/libonnxruntime.so.$VERSION
SUMS
  echo "ort-gpu: ONNX Runtime $VERSION with the CUDA provider in $lib"
}

case "${1:-}" in
  pack) pack ;;
  unpack) unpack ;;
  *) die "usage: $0 pack|unpack" ;;
esac
