#!/usr/bin/env bash
# Every test of the project, as CI runs it (.ci/run calls exactly this):
# formatting, lints (clippy -D warnings, rustdoc -D warnings, shellcheck, no import
# circles among crates, modules or folders, the service's order of rooms), the Rust unit, integration and
# doc tests (library rules, SimCard, pipeline, the service over HTTP with the real model
# and real frames), a trimmed set of them cross-built for aarch64 and run under qemu-user
# (library, uapi, the service's start and one inference with the aarch64 ONNX Runtime), the C API (libfpgagdr installed with its generated header and
# pkg-config file, examples/c and a C test built with cc, valgrind), the dashboard in
# headless Chromium, and the kernel module (built
# against Debian's kernel headers with W=1 and sparse, for x86 and cross-built for arm64,
# no circle between its files, checkpatch --strict, the user-space unit tests of its
# descriptor, SG and pin arithmetic, then the real module in Debian's kernel under QEMU
# with its test-only software card, driven by C tests and by the Rust library's
# functional suite, in four guests: x86, x86 with every mapping bounced (swiotlb=force),
# x86 behind a virtual IOMMU, and arm64 with Debian's arm64 kernel; card removal, hot
# unplug, AER and shutdown included; and fpgagdrd itself in a fifth guest against the
# module, its test sensor and the real model, driven over REST from here), the card's
# reference RTL (hdl/: its register map against the document, Verilator lint, Yosys
# synthesis, the cocotb testbench on Icarus Verilog), the OTA tests against a real RAUC, flash.sh's key
# injection, the REST API against its generated OpenAPI document (schemathesis), the
# Yocto layer's offline checks, the dashboard's type check (tsc on its JSDoc), and OTA through
# real reboots of a virtual appliance in QEMU.
# Installs what it needs from Debian and npm when missing (needs root for apt-get).
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
# apt-get that waits for another package manager run (its locks) instead of failing.
apt_get=$root/appliance/scripts/apt-get.sh
cd "$root"

# Each stage's time, printed at the end (also when a stage fails).
stages=() stage="" stage_t=$SECONDS
end_stage() {
  if [ -n "$stage" ]; then stages+=("$((SECONDS - stage_t))|$stage"); fi
  stage=""
}
say() {
  end_stage
  stage=$* stage_t=$SECONDS
  printf '\n== %s\n' "$*"
}
report() {
  local rc=$? s
  end_stage
  printf '\n== time per stage, s\n'
  for s in "${stages[@]}"; do printf '%6s  %.90s\n' "${s%%|*}" "${s#*|}"; done
  printf '%6s  %s\n' "$SECONDS" "all of ./test.sh"
  [ "$rc" = 0 ] || printf 'stopped by a failure in the last stage (exit %s)\n' "$rc"
}
trap report EXIT
apt_need() { # apt_need COMMAND PACKAGE
  command -v "$1" >/dev/null && return 0
  [ "$(id -u)" = 0 ] || { echo "test.sh: $1 is needed: sudo apt-get install $2" >&2; exit 1; }
  if [ -z "${apt_updated:-}" ]; then "$apt_get" update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq "$2" >/dev/null
}

say "dependencies"
appliance/scripts/fetch-deps.sh
apt_need shellcheck shellcheck
apt_need chromium chromium
apt_need node nodejs
apt_need npm npm
apt_need valgrind valgrind
apt_need pkg-config pkg-config
# The real MQTT broker and its clients for the results-out tests.
apt_need mosquitto mosquitto
apt_need mosquitto_sub mosquitto-clients
# openssl makes the CA and the broker certificate of the MQTT-over-TLS test.
apt_need openssl openssl
# promtool lints /metrics (fpgagdrd's telemetry and results tests).
apt_need promtool prometheus
# QEMU (one matching qemu-system-x86/qemu-utils pair), OVMF, GRUB, mmdebstrap, disk tools.
images/vm/build.sh --tools
export ORT_DYLIB_PATH="$root/.deps/onnxruntime/libonnxruntime.so"
export FPGAGDR_DATA_DIR="$root/.deps/share"

say "format and lints"
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace --quiet
# No circle among the crates, a crate's modules or its folders, and no import against a
# crate's declared order of rooms (fpgagdrd's Cargo.toml); the self-test first proves the
# check still catches a module circle, a folder circle and an import against the order.
python3 appliance/scripts/check-circles.py --self-test
shellcheck run.sh test.sh .ci/run appliance/scripts/*.sh appliance/fpgagdr-capi/install.sh \
  appliance/fpgagdr-capi/tests/c/run.sh hdl/run.sh

say "Rust tests"
cargo test --locked --workspace
# The GPU tests pass by skipping where no CUDA driver loads; show why they skipped.
# --workspace keeps the features of the run above, so nothing is rebuilt; the whole
# output is shown when the run fails or reports no result.
gpu_log=$(mktemp)
if ! cargo test --locked -q --workspace --test gpu -- --nocapture >"$gpu_log" 2>&1 ||
    ! grep -q 'test result: ok' "$gpu_log"; then
    cat "$gpu_log"
    echo "the GPU tests failed or printed no result (their output is above)" >&2
    exit 1
fi
grep -oE 'skipped: .*|test result: .*' "$gpu_log" | sort | uniq -c
rm -f "$gpu_log"
echo "disk after the Rust tests: $(df -h . | awk 'NR == 2 { print $4 " free of " $2 }')"

say "arm64 user space: the workspace's tests cross-built for aarch64 and run under qemu-user (library, uapi, service start, one inference)"
# docs/testing.md, *arm64 user space*: Debian's Rust and arm64 std, QEMU 10 from
# bookworm-backports, the aarch64 ONNX Runtime wheel; target/aarch64-cross.
t=$SECONDS
appliance/scripts/arm64-tests.sh
echo "arm64 user space: passed in $((SECONDS - t)) s"

say "C API: libfpgagdr installed (generated header, .pc), examples/c and the C test on the simulated card under valgrind"
appliance/fpgagdr-capi/tests/c/run.sh

say "OTA: the service against Debian's real RAUC on a private D-Bus, file-backed slots, signed bundles"
images/rauc/test/run.sh

say "flash.sh: the admin's SSH key into a flash package's root file system (no Jetson)"
apt_need debugfs e2fsprogs
images/test/flash-test.sh

say "REST API against its generated OpenAPI document: schemathesis on the real binary, real RAUC"
# 0 server errors, 0 responses the document does not describe (tests/api_conformance.rs
# runs appliance/scripts/api-conformance.sh; schemathesis comes from PyPI into .deps/).
FPGAGDR_API_CONFORMANCE=1 FPGAGDR_REQUIRE_RAUC=1 \
  cargo test --locked -q -p fpgagdrd --test api_conformance -- --nocapture

say "kernel module"
kmod/scripts/check.sh

say "the card's RTL (hdl/): register map, lint (Verilator), synthesis (Yosys), simulation (cocotb on Icarus)"
# docs/testing.md, *The card's RTL*; budget 6 minutes on the 2-core CI machine, the
# script prints each step's time and the total.
t=$SECONDS
hdl/run.sh
echo "the card's RTL: passed in $((SECONDS - t)) s"

say "kernel module in real kernels (QEMU: x86, swiotlb, IOMMU, arm64), driven by the C tests, the Rust library and libfpgagdr's C test; the service itself in a guest against the module"
# The library's suites against the module: kernel_functional, and kernel_nvp2p (its
# nvidia_p2p path against the double, in the plain pass's pass A).
ktest=$(cargo test --locked -q -p fpgagdr --test kernel_functional --test kernel_nvp2p --no-run --message-format=json |
  python3 -c 'import json, sys; print(*[m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable")])')
# fpgagdr-bench's CLI against the module: its test runs as an extra, the tool
# itself goes to the guest's /bin.
btest=$(cargo test --locked -q -p fpgagdr-bench --test kernel_cli --no-run --message-format=json |
  python3 -c 'import json, sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and m["target"]["name"] == "kernel_cli"][-1])')
# target/capi/capi_test and target/capi/capture: libfpgagdr's C test and examples/c
# (built by the C API step above), against /dev/fpgagdr0 in the plain pass (capi_test
# also in pass D, against cards that break the frame protocol).
FPGAGDR_QEMU_EXTRA="$ktest $btest $root/target/capi/capi_test $root/target/capi/capture" \
  FPGAGDR_QEMU_TOOLS="$root/target/debug/fpgagdr-bench" FPGAGDRD_BIN="$root/target/debug/fpgagdrd" \
  kmod/qemu/run.sh

say "Yocto layer (kas files, bitbake parser, oelint-adv, crates pinned by Cargo.lock)"
meta-fpgagdr/scripts/check.sh

say "dashboard in headless Chromium"
(cd webui && npm ci --no-audit --no-fund --silent && npm run --silent typecheck)
FPGAGDRD_BIN="$root/target/debug/fpgagdrd" node --test webui/tests/

# docs/ota.md, *Through real reboots*; CI budget ~15 minutes, image build included.
# FPGAGDR_VM_OTA=0 leaves it out (for a quick local run; CI always runs it).
if [ "${FPGAGDR_VM_OTA:-1}" != 0 ]; then
  say "OTA through real reboots: the virtual appliance in QEMU, updated over its REST API"
  t=$SECONDS
  images/vm/run.sh
  echo "OTA through real reboots: passed in $((SECONDS - t)) s (image build included)"
else
  say "OTA through real reboots: left out (FPGAGDR_VM_OTA=0)"
fi
