#!/bin/sh
# shellcheck shell=sh
# /init of the QEMU guest that kmod/qemu/run.sh boots (issue 5): mount,
# load the real fpgagdr module with its TEST-ONLY software card, run the
# tests, print one "FPGAGDR-RESULT: PASS|FAIL name" line per check and a
# final "FPGAGDR-QEMU-DONE: fails=N", the kernel log, then power off.
#
# /lib/fpgagdr holds fpgagdr-nv.ko (nvidia_p2p back-end against the
# double), fpgagdr-host.ko (no NVIDIA back-end: the Orin-style build) and
# fpgagdr-test-nvp2p.ko (the TEST DOUBLE of nvidia_p2p).  /extra holds
# extra test binaries (run.sh FPGAGDR_QEMU_EXTRA), run with
# FPGAGDR_DEVICE=/dev/fpgagdr0.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp

mods=/lib/fpgagdr
dbg=/sys/kernel/debug
fails=0
loops=${FPGAGDR_LOAD_LOOPS:-20}

mark() { echo "FPGAGDR-QEMU: $*"; }

result() { # result PASS|FAIL NAME
	echo "FPGAGDR-RESULT: $1 $2"
	if [ "$1" != PASS ]; then
		fails=$((fails + 1))
	fi
}

check() { # check NAME COMMAND...
	name=$1
	shift
	if "$@"; then
		result PASS "$name"
	else
		result FAIL "$name"
	fi
}

wait_dev() {
	w=0
	while [ ! -e /dev/fpgagdr0 ] && [ "$w" -lt 100 ]; do
		sleep 0.1
		w=$((w + 1))
	done
	[ -e /dev/fpgagdr0 ]
}

load() { # load MODULE [PARAM...]
	m=$1
	shift
	insmod "$mods/$m" "$@" && wait_dev
}

pins_zero() {
	grep -qx 'pins 0' "$dbg/fpgagdr/fpgagdr0/counters"
}

nv_clean() {
	s=$dbg/fpgagdr-test-nvp2p/stats
	grep -qx 'tables 0' "$s" && grep -qx 'mappings 0' "$s" &&
		grep -qx 'misuse 0' "$s"
}

mem_kib() { # mem_kib FIELD: a /proc/meminfo value in KiB
	awk -v f="$1:" '$1 == f { print $2 }' /proc/meminfo
}

# The text of the loaded fpgagdr: "ADDR SIZE", hex, for slabrange.
module_text() {
	awk '$1 == "fpgagdr" { sub(/^0x/, "", $6); printf "%s %x\n", $6, $2 }' \
		/proc/modules
}

mark "kernel $(uname -r), $(nproc) CPUs"
# kernel modules ours need, from the kernel's own tree (none today)
if [ -s "$mods/deps.list" ]; then
	while read -r d; do
		check "load-dep-$d" insmod "$mods/deps/$d"
	done <"$mods/deps.list"
fi

mark "pass A: nvidia_p2p double, software card with interrupts"
check A/load-nvp2p-double insmod "$mods/fpgagdr-test-nvp2p.ko"
check A/load load fpgagdr-nv.ko
for s in functional nvp2p faults badioctl host; do
	check "A/$s" fgtest "$s"
done
for t in /extra/*; do
	if [ -x "$t" ]; then
		check "A/extra/${t##*/}" env FPGAGDR_DEVICE=/dev/fpgagdr0 "$t"
	fi
done
check A/pins-released pins_zero
check A/unload rmmod fpgagdr
check A/nvp2p-double-clean nv_clean

mark "pass B: no NVIDIA back-end (Orin-style build), polled, 64-byte alignment"
check B/load load fpgagdr-host.ko test_poll=1 test_addr_align=64 test_len_gran=64
for s in functional host faults badioctl; do
	check "B/$s" fgtest "$s"
done
check B/pins-released pins_zero
check B/unload rmmod fpgagdr

mark "pass C: load, pin, unload $loops times"
leaks=0
i=1
while [ "$i" -le "$loops" ]; do
	if ! load fpgagdr-nv.ko; then
		result FAIL "C/load-$i"
		break
	fi
	base=$(fgtest slabsites fpgagdr)
	fgtest pinhold >/tmp/pinhold.log 2>&1 || {
		cat /tmp/pinhold.log
		result FAIL "C/pinhold-$i"
	}
	# the pins died with the process: the module's objects are back
	after=$(fgtest slabsites fpgagdr)
	if [ "$after" != "$base" ]; then
		echo "cycle $i: fpgagdr slab objects $base -> $after"
		SHOW=1 fgtest slabsites fpgagdr
		leaks=$((leaks + 1))
	fi
	pins_zero || leaks=$((leaks + 1))
	text=$(module_text)
	if ! rmmod fpgagdr; then
		result FAIL "C/unload-$i"
		break
	fi
	# objects freed by RCU callbacks may take a moment
	w=0
	while :; do
		# shellcheck disable=SC2086 # two words: address and size
		left=$(fgtest slabrange $text | tail -n 1)
		[ "$left" = 0 ] || [ "$w" -ge 20 ] && break
		sleep 0.1
		w=$((w + 1))
	done
	if [ "$left" != 0 ]; then
		echo "cycle $i: $left objects allocated by the unloaded module"
		# shellcheck disable=SC2086 # two words: address and size
		fgtest slabrange $text
		leaks=$((leaks + 1))
	fi
	pinned=$(awk '$1 == "nr_foll_pin_acquired" { a = $2 }
		$1 == "nr_foll_pin_released" { r = $2 } END { print a - r }' /proc/vmstat)
	if [ "$pinned" != 0 ]; then
		echo "cycle $i: $pinned user pages still pinned"
		leaks=$((leaks + 1))
	fi
	echo "cycle $i: Slab $(mem_kib Slab) KiB, MemAvailable $(mem_kib MemAvailable) KiB"
	if [ "$i" -eq 2 ]; then
		slab2=$(mem_kib Slab)
		avail2=$(mem_kib MemAvailable)
	fi
	i=$((i + 1))
done
slab_end=$(mem_kib Slab)
avail_end=$(mem_kib MemAvailable)
mark "Slab ${slab2:-?} -> $slab_end KiB, MemAvailable ${avail2:-?} -> $avail_end KiB (cycle 2 -> $loops)"
check C/loops-completed test "$i" -gt "$loops"
check C/no-leaked-objects test "$leaks" -eq 0
check C/slab-stable test "$((slab_end - ${slab2:-0}))" -lt 2048
check C/memory-stable test "$((${avail2:-0} - avail_end))" -lt 32768
check C/nvp2p-double-clean nv_clean
check C/unload-nvp2p-double rmmod fpgagdr_test_nvp2p

mark "kernel log"
echo "FPGAGDR-DMESG-BEGIN"
dmesg
echo "FPGAGDR-DMESG-END"
echo "FPGAGDR-QEMU-DONE: fails=$fails"
poweroff -f
