#!/usr/bin/env bash
# A throw-away RAUC installation for tests: keys, two file-backed slots, a private
# D-Bus bus with `rauc service` on it (booted from slot A, boot control through the
# layer's backend and the nvbootctrl test double), and a signed bundle good.raucb.
# Used by the dashboard's browser test (webui/tests/update.test.mjs); the Rust tests
# (appliance/fpgagdrd/tests/ota.rs) build the same by themselves.
#
#   rauc-env.sh start DIR    prints the bus address (unix:path=DIR/bus) when RAUC is up
#   rauc-env.sh stop DIR     stops what start started
#
# Needs root (RAUC mounts bundles), rauc, dbus-daemon, mksquashfs, openssl.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
layer=$(cd "$here/../../../meta-fpgagdr" && pwd)
cmd=${1:?usage: rauc-env.sh start|stop DIR}
dir=${2:?usage: rauc-env.sh start|stop DIR}
compatible=fpgagdr-ci-test

if [ "$cmd" = stop ]; then
  for p in rauc dbus; do
    if [ -f "$dir/$p.pid" ]; then kill "$(cat "$dir/$p.pid")" 2>/dev/null || true; fi
  done
  exit 0
fi
[ "$cmd" = start ] || { echo "rauc-env.sh: unknown command $cmd" >&2; exit 2; }

mkdir -p "$dir"/{slots,mnt,efivars,bundle}
dir=$(cd "$dir" && pwd)
"$here/../make-dev-keys.sh" "$dir/keys" >/dev/null
truncate -s 4M "$dir/slots/A.img" "$dir/slots/B.img"
printf 'ab=1\ncurrent=0\nactive=0\n' >"$dir/nvbootctrl.state"
cat >"$dir/system.conf" <<CONF
[system]
compatible=$compatible
bootloader=custom
mountprefix=$dir/mnt
statusfile=$dir/status.raucs

[keyring]
path=$dir/keys/ca.cert.pem
check-purpose=codesign

[handlers]
bootloader-custom-backend=$layer/recipes-core/rauc/files/rauc-nvbootctrl-backend.sh

[slot.rootfs.0]
device=$dir/slots/A.img
type=raw
bootname=A

[slot.rootfs.1]
device=$dir/slots/B.img
type=raw
bootname=B
CONF
bus="unix:path=$dir/bus"
cat >"$dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>$bus</listen>
<policy context="default"><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/></policy>
</busconfig>
CONF
dbus-daemon --config-file="$dir/bus.conf" --fork --print-pid >"$dir/dbus.pid" 2>/dev/null

export DBUS_STARTER_BUS_TYPE=session DBUS_SESSION_BUS_ADDRESS=$bus
export FPGAGDR_NVBOOTCTRL=$here/nvbootctrl-test-double FPGAGDR_EFIVARS_DIR=$dir/efivars
export NVBOOTCTRL_TEST_STATE=$dir/nvbootctrl.state
rauc --conf="$dir/system.conf" service --override-boot-slot=A >"$dir/rauc.log" 2>&1 &
echo $! >"$dir/rauc.pid"
for _ in $(seq 100); do
  if rauc --conf="$dir/system.conf" status >/dev/null 2>&1; then break; fi
  sleep 0.1
done
rauc --conf="$dir/system.conf" status >/dev/null 2>&1 || { cat "$dir/rauc.log" >&2; exit 1; }

head -c 2000000 /dev/urandom >"$dir/bundle/rootfs.img"
printf '[update]\ncompatible=%s\nversion=2.0-browser\n\n[bundle]\nformat=plain\n\n[image.rootfs]\nfilename=rootfs.img\n' \
  "$compatible" >"$dir/bundle/manifest.raucm"
rauc --cert="$dir/keys/signing.cert.pem" --key="$dir/keys/signing.key.pem" \
  bundle "$dir/bundle" "$dir/good.raucb" >/dev/null 2>&1
echo "$bus"
