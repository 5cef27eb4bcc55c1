#!/bin/sh
# shellcheck shell=sh
# /init of the QEMU guest that runs the service (kmod/qemu/run.sh's
# "service" pass): mount, load the real fpgagdr module with its TEST-ONLY
# software card and test sensor, bring up the network QEMU's user-mode NIC
# offers, and serve a small control endpoint for the host's test driver
# (kmod/qemu/service-test.py) on port 8081: start fpgagdrd against
# /dev/fpgagdr0, kill -9 it, reload the module in poll mode, read the module's debugfs files, write the test
# sensor's.  fpgagdrd itself listens on port 8080; run.sh forwards both to the
# host's loopback.  When the host asks for "done" (or after
# FPGAGDR_SERVICE_TIMEOUT seconds), print the kernel log and power off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp

mods=/lib/fpgagdr
limit=${FPGAGDR_SERVICE_TIMEOUT:-1700}
fails=0

# shellcheck source-path=SCRIPTDIR source=guest-lib.sh
. /lib/fpgagdr/guest-lib.sh

mark "kernel $(uname -r), $(nproc) CPUs, pass service"
if [ -s "$mods/deps.list" ]; then
	while read -r d; do
		check "load-dep-$d" insmod "$mods/deps/$d"
	done <"$mods/deps.list"
fi
# shellcheck disable=SC2086 # parameters are words
check service/load insmod "$mods/fpgagdr-host.ko" ${FPGAGDR_MODULE_PARAMS:-}
check service/device wait_dev

ip link set lo up
dev=
for n in /sys/class/net/*; do
	[ "${n##*/}" = lo ] || dev=${n##*/}
done
ip addr add 10.0.2.15/24 dev "$dev"
ip link set "$dev" up
ip route add default via 10.0.2.2
check service/network test -n "$dev"

mkdir -p /tmp/fg /www/cgi-bin
# the control endpoint's "reload" loads the module again with these
echo "${FPGAGDR_MODULE_PARAMS:-}" >/tmp/fg/module-params
cp /lib/fpgagdr/service-cgi.sh /www/cgi-bin/ctl
chmod 0755 /www/cgi-bin/ctl
httpd -p 8081 -h /www
mark "control endpoint on :8081"
echo "FPGAGDR-SERVICE: ready"

# The host says when it is done; the guest gives up after $limit seconds.
w=0
while [ ! -e /tmp/done ] && [ "$w" -lt "$limit" ]; do
	sleep 1
	w=$((w + 1))
done
[ -e /tmp/done ] || result FAIL service/host-finished-in-time
[ -e /tmp/done ] && cat /tmp/done
if [ -f /tmp/fg/pid ] && kill -0 "$(cat /tmp/fg/pid)" 2>/dev/null; then
	kill -TERM "$(cat /tmp/fg/pid)"
	sleep 2
fi
mark "fpgagdrd log"
cat /tmp/fg/log 2>/dev/null
check service/pins-released grep -qx 'pins 0' /sys/kernel/debug/fpgagdr/fpgagdr0/counters
check service/unload rmmod fpgagdr
echo "FPGAGDR-QEMU: guest uptime $(cut -d' ' -f1 /proc/uptime) s"
echo "FPGAGDR-DMESG-BEGIN"
dmesg
echo "FPGAGDR-DMESG-END"
echo "FPGAGDR-QEMU-DONE: fails=$fails"
poweroff -f
