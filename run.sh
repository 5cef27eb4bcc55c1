#!/usr/bin/env bash
# The main job on any Linux machine with no FPGA and no GPU: fetch ONNX Runtime and the
# default frames (appliance/scripts/fetch-deps.sh), build fpgagdrd, and run it with the
# simulated card, real frames and the real model. The dashboard address is printed.
# Extra arguments go to fpgagdrd (e.g. ./run.sh --listen 0.0.0.0:8080).
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
cd "$root"
command -v cargo >/dev/null || { echo "run.sh: cargo (Rust 1.95+) is needed: https://rustup.rs" >&2; exit 1; }
appliance/scripts/fetch-deps.sh
cargo build --release --locked -p fpgagdrd
export ORT_DYLIB_PATH="$root/.deps/onnxruntime/libonnxruntime.so"
export FPGAGDR_DATA_DIR="$root/.deps/share"
exec "$root/target/release/fpgagdrd" "$@"
