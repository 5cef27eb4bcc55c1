#!/usr/bin/env bash
# The reference RTL's checks (hdl/README.md, docs/testing.md "The card's RTL"):
#   1. the register map: docs/card-protocol.md's tables against the SystemVerilog package,
#      the testbench's constants and kmod/fpgagdr-frames-regs.h;
#   2. lint: verilator --lint-only -Wall, several parameter sets;
#   3. synthesis: yosys to generic cells, no warning allowed, the resource count printed;
#   4. simulation: the cocotb tests on Icarus Verilog (hdl/tb), two at a time, against
#      frames of the simulated card's Rust TestPattern.
# Usage: hdl/run.sh [--prove-broken [--only REGEX]] [--jobs N]
#   --prove-broken  instead of 4., compile every deliberately broken RTL variant
#                   (FGDR_BROKEN_*, hdl/tb/scenarios.py) and run the tests it must fail;
#                   it fails if any of them passes.  --only: the "BUILD DEFINE TEST"
#                   lines matching REGEX (grep -E) only.
# Installs iverilog, verilator, yosys (Debian, needs root) and the pinned Python packages
# of hdl/requirements.txt (into .deps/hdl-venv) when missing.  Work files: hdl/build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hdl=$root/hdl
build=$hdl/build
prove=0
only=.
jobs=2
while [ $# -gt 0 ]; do
  case $1 in
    --prove-broken) prove=1 ;;
    --jobs) jobs=$2; shift ;;
    --only) only=$2; shift ;;
    *) echo "usage: hdl/run.sh [--prove-broken [--only REGEX]] [--jobs N]" >&2; exit 2 ;;
  esac
  shift
done
t0=$SECONDS
stage() { printf '\n-- hdl: %s\n' "$*"; }

apt_need() { # apt_need COMMAND PACKAGE
  command -v "$1" >/dev/null && return 0
  [ "$(id -u)" = 0 ] || { echo "hdl/run.sh: $1 is needed: sudo apt-get install $2" >&2; exit 1; }
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$2" >/dev/null
}
apt_need iverilog iverilog
apt_need verilator verilator
apt_need yosys yosys

venv=$root/.deps/hdl-venv
stamp=$venv/requirements.txt
if ! cmp -s "$hdl/requirements.txt" "$stamp" || ! "$venv/bin/python" -c 'import cocotb, cocotbext.axi' 2>/dev/null; then
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "hdl/run.sh: python3-venv is needed: sudo apt-get install python3-venv" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-venv >/dev/null
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$hdl/requirements.txt"
  cp "$hdl/requirements.txt" "$stamp"
fi
export PATH=$venv/bin:$PATH
mkdir -p "$build"

rtl="fgdr_regs_pkg.sv fgdr_fifo.sv fgdr_timestamp.sv fgdr_irq.sv fgdr_user_regs.sv
     fgdr_test_pattern.sv fgdr_frame_writer.sv fgdr_card.sv"
rtl_paths=()
for f in $rtl; do rtl_paths+=("$hdl/rtl/$f"); done

stage "register map: docs/card-protocol.md against the RTL package, the testbench and the module's header"
t=$SECONDS
python3 "$root/kmod/scripts/check-card-protocol.py"
python3 "$root/kmod/scripts/check-card-protocol.py" --self-test
echo "register map: $((SECONDS - t)) s"

stage "lint: verilator --lint-only -Wall"
t=$SECONDS
for params in "" \
    "-GDATA_W=128 -GFORMAT=2 -GWIDTH=20 -GSTRIDE=64 -GHEIGHT=3 -GVIDEO_SOURCE=1 -GNUM_USR_IRQ=16 -GUSER_IRQ=15 -GSLOT_COUNT=2" \
    "-GDATA_W=256 -GFORMAT=2 -GWIDTH=1920 -GSTRIDE=5760 -GHEIGHT=1080 -GSLOT_SIZE=6221824 -GVIDEO_SOURCE=1 -GSLOT_COUNT=1024"; do
  # shellcheck disable=SC2086 # the parameters are words
  verilator --lint-only -Wall $params --top-module fgdr_card "${rtl_paths[@]}"
  echo "lint clean: fgdr_card ${params:-(defaults)}"
done
echo "lint: $((SECONDS - t)) s"

stage "synthesis: yosys to generic cells"
t=$SECONDS
synth_params="DATA_W=64 WIDTH=640 HEIGHT=480 FORMAT=1 STRIDE=640 SLOT_SIZE=311296 SLOT_COUNT=4 VIDEO_SOURCE=1 FIFO_DEPTH_LOG2=9"
{
  echo "read_verilog -sv ${rtl_paths[*]}"
  for kv in $synth_params; do echo "chparam -set ${kv%=*} ${kv#*=} fgdr_card"; done
  cat "$hdl/synth.ys"
} > "$build/synth.ys"
yosys -q -l "$build/synth.log" "$build/synth.ys" >/dev/null
if grep -i "warning" "$build/synth.log"; then
  echo "hdl/run.sh: yosys warned (hdl/build/synth.log)" >&2
  exit 1
fi
echo "fgdr_card ($synth_params), generic cells:"
sed -n '/=== fgdr_card ===/,/^$/p;/Number of cells:/,/^$/p' "$build/synth.log" | tail -n +1 | sed -n '1,60p' | grep -E "cells|memor|\\\$_|\\\$mem" | sort | uniq
echo "synthesis: $((SECONDS - t)) s"

stage "the Rust TestPattern's frames (appliance/fpgagdr-sim, example testpattern_frames)"
t=$SECONDS
(cd "$root" && nice cargo build --locked -q -p fpgagdr-sim --example testpattern_frames)
for b in main wide pad; do
  # shellcheck disable=SC2046 # FORMAT WIDTH HEIGHT
  "$root/target/debug/examples/testpattern_frames" $(cd "$hdl/tb" && python3 builds.py pattern "$b") 0 300 \
    > "$build/pattern-$b.bin"
done
echo "reference frames: $((SECONDS - t)) s"

# sim BUILD DEFINE TESTS LOG: one cocotb run; prints PASS/FAIL counts, status 0 if all passed
# shellcheck disable=SC2317 # called through xargs
sim() {
  local b=$1 define=$2 tests=$3 log=$4 params iv=() out
  params=$(cd "$hdl/tb" && python3 builds.py params "$b")
  for kv in $params; do iv+=("-Ptb_card.$kv"); done
  [ -n "$define" ] && iv+=("-D$define")
  out=$build/sim-$(basename "$log" .log)   # one per job: two may build at once
  mkdir -p "$out"
  (cd "$hdl/tb" && FGDR_BUILD=$b FGDR_PARAMS="$params" FGDR_PATTERN_REF="$build/pattern-$b.bin" \
    COCOTB_RESULTS_FILE="$log.xml" make -s SIM_BUILD="$out" FGDR_IVERILOG_ARGS="${iv[*]}" \
    TESTCASE="$tests" > "$log" 2>&1) || true
  python3 - "$log.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
except (OSError, ET.ParseError):
    print("no results"); sys.exit(1)
bad = [c.get("name") for c in cases if c.find("failure") is not None or c.find("error") is not None]
cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
print(f"{len(cases) - len(bad)} passed" + (f", failed: {' '.join(bad)}" if bad else ""))
sys.exit(1 if bad or not cases else 0)
PY
}
export -f sim
export hdl build

fail=0
if [ "$prove" = 1 ]; then
  stage "proof: every broken RTL variant fails the tests named for it"
  t=$SECONDS
  (cd "$hdl/tb" && python3 builds.py broken) | grep -E -- "$only" > "$build/broken.txt"
  # shellcheck disable=SC2016 # expanded by the inner shell
  xargs -P "$jobs" -L 1 bash -c '
    log=$build/proof-$1-$2.log
    if FGDR_PROOF=1 sim "$0" "$1" "$2" "$log" >/dev/null; then
      echo "NOT CAUGHT: $1 passes $2 ($0)"; exit 1
    fi
    why=$(grep -m1 -A1 -E "^ *AssertionError:" "$log" | tr -s " \n" " " | cut -c1-200)
    echo "caught: $1 fails $2 ($0): $why"
  ' < "$build/broken.txt" || fail=1
  echo "proof: $((SECONDS - t)) s"
  echo "hdl/run.sh --prove-broken: $((SECONDS - t0)) s"
  exit "$fail"
fi

stage "simulation: cocotb on Icarus Verilog"
t=$SECONDS
# jobs, longest first so that two slots stay busy: BUILD TESTS
{
  for mode in msi msix legacy; do echo "main random_run_$mode"; done
  (cd "$hdl/tb" && python3 builds.py tests main) | grep -v '^random_run_' | paste -sd, - | sed 's/^/main /'
  for b in stream wide pad; do (cd "$hdl/tb" && python3 builds.py tests "$b") | paste -sd, - | sed "s/^/$b /"; done
} > "$build/jobs.txt"
# shellcheck disable=SC2016 # expanded by the inner shell
xargs -P "$jobs" -L 1 bash -c '
  log=$build/test-$0-${1%%,*}.log
  s=$SECONDS
  if r=$(sim "$0" "" "$1" "$log"); then
    echo "$0: $r ($((SECONDS - s)) s) [$1]"
  else
    echo "$0: $r ($((SECONDS - s)) s) [$1]; log: ${log#$hdl/}"; exit 1
  fi
' < "$build/jobs.txt" || fail=1
echo "simulation: $((SECONDS - t)) s"
echo "hdl/run.sh: lint, synthesis and simulation in $((SECONDS - t0)) s"
exit "$fail"
