#!/usr/bin/env bash
# The OTA tests, as CI runs them: real RAUC (Debian's rauc service) on a private D-Bus
# bus with file-backed slots, bundles built and signed at test time, the layer's
# boot-control backend against the nvbootctrl test double, fpgagdrd driving it all over
# its REST API, RAUC killed mid-install, and the real mark-good binary judging boots
# (appliance/fpgagdrd/tests/ota.rs); the bundle's own hooks run by RAUC into ext4 slots:
# the compatible check, settings and state carried over, the capsule staged and the boot
# chain left to the firmware, the installation marker read by mark-good
# (appliance/fpgagdrd/tests/ota_hooks.rs).
#
#   images/rauc/test/run.sh            (from anywhere; test.sh calls it)
#
# Installs rauc, dbus, squashfs-tools, openssl and e2fsprogs from Debian when missing (needs root,
# as RAUC itself does to mount bundles). FPGAGDR_REQUIRE_RAUC=1 makes a missing
# prerequisite a failure instead of a skip. Also shellchecks the OTA scripts.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
apt_get=$root/appliance/scripts/apt-get.sh
cd "$root"

need() { # need COMMAND PACKAGE
  command -v "$1" >/dev/null && return 0
  [ "$(id -u)" = 0 ] || { echo "ota tests: $1 is needed: sudo apt-get install $2" >&2; exit 1; }
  if [ -z "${apt_updated:-}" ]; then "$apt_get" update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq "$2" >/dev/null
}
need rauc rauc
need dbus-daemon dbus
need mksquashfs squashfs-tools
need openssl openssl
need mkfs.ext4 e2fsprogs
[ "$(id -u)" = 0 ] || { echo "ota tests: RAUC mounts bundles on loop devices: run as root" >&2; exit 1; }

shellcheck -s sh meta-fpgagdr/recipes-core/rauc/files/*.sh images/rauc/test/nvbootctrl-test-double
shellcheck images/rauc/make-dev-keys.sh images/rauc/test/run.sh

export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-$root/.deps/onnxruntime/libonnxruntime.so}
export FPGAGDR_DATA_DIR=${FPGAGDR_DATA_DIR:-$root/.deps/share}
FPGAGDR_REQUIRE_RAUC=1 cargo test --locked -p fpgagdrd --test ota --test ota_hooks
