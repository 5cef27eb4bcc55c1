#!/usr/bin/env bash
# The main job on any Linux machine with no FPGA and no GPU: fetch ONNX Runtime and the
# default frames (appliance/scripts/fetch-deps.sh), build fpgagdrd, and run it with the
# simulated card, real frames and the real model. The dashboard address is printed.
# Extra arguments go to fpgagdrd (e.g. ./run.sh --listen 0.0.0.0:8080).
set -euo pipefail
# Relative paths in the arguments (--config ./my.json) are the caller's: fpgagdrd runs
# in the folder run.sh was started from.
root=$(cd "$(dirname "$0")" && pwd)
command -v cargo >/dev/null || { echo "run.sh: cargo (Rust 1.95+) is needed: https://rustup.rs" >&2; exit 1; }
"$root/appliance/scripts/fetch-deps.sh"
(cd "$root" && cargo build --release --locked -p fpgagdrd)
export ORT_DYLIB_PATH="$root/.deps/onnxruntime/libonnxruntime.so"
export FPGAGDR_DATA_DIR="$root/.deps/share"
exec "$root/target/release/fpgagdrd" "$@"
