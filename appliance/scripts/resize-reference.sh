#!/usr/bin/env bash
# The reference input tensors of frames, from Pillow: runs models/verify_model.py
# --tensors-to OUT_DIR FRAME... (Pillow's crop and antialiased bilinear resize, the
# preprocessing the model was verified with) in a venv of pinned Pillow and numpy,
# installed from PyPI into .deps/pillow-venv (git-ignored) on first use, with
# python3-venv from Debian when missing (needs root).
#
# Usage: appliance/scripts/resize-reference.sh OUT_DIR FRAME...
# fpgagdr-infer's tests/reference.rs runs it (./test.sh) and fails when the Rust
# preprocessing drifts from these tensors by more than one grey level.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
apt_get=$root/appliance/scripts/apt-get.sh
out=${1:?usage: resize-reference.sh OUT_DIR FRAME...}
shift
[ $# -gt 0 ] || { echo "usage: resize-reference.sh OUT_DIR FRAME..." >&2; exit 2; }
venv=$root/.deps/pillow-venv
# Pinned as in models/export-requirements.txt (the versions the reference was made with).
pillow=pillow==13.0.0
numpy=numpy==2.4.6

if ! "$venv/bin/python" -c 'import PIL, numpy' 2>/dev/null; then
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "resize-reference: python3-venv is needed: sudo apt-get install python3-venv" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq python3-venv >/dev/null
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --only-binary=:all: "$pillow" "$numpy"
fi
mkdir -p "$out"
"$venv/bin/python" "$root/models/verify_model.py" --tensors-to "$out" "$@"
