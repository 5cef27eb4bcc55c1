#!/bin/sh
# shellcheck shell=sh
# /init of the QEMU guests that kmod/qemu/run.sh boots (issues 5 and 13):
# mount, load the real fpgagdr module with its TEST-ONLY software card, run
# the suites this guest's pass selects, print one "FPGAGDR-RESULT:
# PASS|FAIL name" line per check and a final "FPGAGDR-QEMU-DONE: fails=N",
# the kernel log, then power off.
#
# The pass comes from the kernel command line (FPGAGDR_PASS=...):
#   plain    x86, no IOMMU, no bounce buffers: A (nvidia_p2p double,
#            interrupts: every suite, the stress test, frame capture, card
#            removal, hot unplug through the host's QEMU monitor, AER,
#            recovery: PCIe errors and a function reset while frames flow,
#            an interrupt storm, a card gone), B
#            (no NVIDIA back-end, polled, 64-byte alignment, frame capture
#            polled), D (cards that break the frame protocol), C
#            (load/unload loop), then power off with a transfer in flight
#            (.shutdown)
#   swiotlb  x86 with swiotlb=force: every DMA mapping bounced
#   iommu    x86 with a virtual Intel IOMMU in strict mode
#   arm64    arm64 (qemu-system-aarch64 -M virt), the Orin-style build
#
# /lib/fpgagdr holds fpgagdr-nv.ko (nvidia_p2p back-end against the
# double; x86 only), fpgagdr-host.ko (no NVIDIA back-end: the Orin-style
# build), fpgagdr-test-nvp2p.ko (the TEST DOUBLE of nvidia_p2p; x86 only)
# and deps/ (kernel modules of the guest's own tree: aer_inject, drm,
# drm_shmem_helper and vgem on x86; and linux-udmabuf-test.ko, the kernel's
# udmabuf exporter built for the tests from Debian's linux-source), loaded
# first in deps.list's order.
# /extra holds extra test binaries (run.sh FPGAGDR_QEMU_EXTRA), run in the
# plain pass with FPGAGDR_DEVICE=/dev/fpgagdr0; /extra/capi_test (libfpgagdr's
# C test) also runs as "capi_test bad-card" in pass D.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup

mods=/lib/fpgagdr
dbg=/sys/kernel/debug
fails=0
loops=${FPGAGDR_LOAD_LOOPS:-20}
pass=${FPGAGDR_PASS:-plain}
export FPGAGDR_PASS="$pass"

# shellcheck source-path=SCRIPTDIR source=guest-lib.sh
. /lib/fpgagdr/guest-lib.sh

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

# Trimmed frame capture selections (CI budget, DESIGN 10): polled, arm64.
frames_only_polled=frame_info,frames_flow,queue_overflow,stall_timeout_abort,kill_with_wait
frames_only_arm64=frame_info,frames_flow,stall_timeout_abort,bad_events,event_nodes,user_node,link_path
# Through the IOMMU: engines running through a non-fatal PCIe error.
recovery_only_iommu=engine_through_nonfatal,channel_node_through_nonfatal

# FPGAGDR_SKIP=a,b on the kernel command line leaves suites out, FPGAGDR_ONLY=x,y
# runs only those tests of a suite (debugging).
suites() { # suites PREFIX SUITE...
	p=$1
	shift
	for s in "$@"; do
		case ",${FPGAGDR_SKIP:-}," in
		*",$s,"*) mark "$p/$s skipped (FPGAGDR_SKIP)" ;;
		*)
			case $s in
			frames_polled) check "$p/$s" env FPGAGDR_ONLY="$frames_only_polled" fgtest frames ;;
			frames_arm64) check "$p/$s" env FPGAGDR_ONLY="$frames_only_arm64" fgtest frames ;;
			recovery_iommu) check "$p/$s" env FPGAGDR_ONLY="$recovery_only_iommu" fgtest recovery ;;
			*) check "$p/$s" fgtest "$s" ;;
			esac
			;;
		esac
	done
}

# Pass A: the nvidia_p2p back-end against the double, interrupts.
pass_nv() { # pass_nv PREFIX SUITE...
	p=$1
	shift
	check "$p/load-nvp2p-double" insmod "$mods/fpgagdr-test-nvp2p.ko"
	check "$p/load" load fpgagdr-nv.ko
	suites "$p" "$@"
	check "$p/pins-released" pins_zero
	check "$p/unload" rmmod fpgagdr
	check "$p/nvp2p-double-clean" nv_clean
}

# The Orin-style build (no NVIDIA back-end) with the given parameters.
pass_host() { # pass_host PREFIX "PARAMS" SUITE...
	p=$1
	params=$2
	shift 2
	# shellcheck disable=SC2086 # parameters are words
	check "$p/load" load fpgagdr-host.ko $params
	suites "$p" "$@"
	check "$p/pins-released" pins_zero
	check "$p/unload" rmmod fpgagdr
}

# Cards whose user register block breaks a frame protocol rule (issue 15):
# the module names the rule, frame capture answers ENXIO, the DMA works.
pass_badcards() {
	mark "pass D: cards that break the frame protocol"
	for c in "2 test_user_magic=0x12345678" "1 test_user_bar=0" \
		"4 test_slot_count=1" "5 test_slot_size=32" \
		"7 test_slot_base=0x7ff00000 test_slot_count=16"; do
		# shellcheck disable=SC2086 # state and parameters are words
		set -- $c
		state=$1
		shift
		if check "D/load-state-$state" load fpgagdr-host.ko "$@"; then
			check "D/badcard-$state" fgtest badcard "$state"
			# libfpgagdr's C test (test.sh's FPGAGDR_QEMU_EXTRA): rules
			# card-protocol and capability through the C API
			if [ -x /extra/capi_test ]; then
				check "D/capi-badcard-$state" env FPGAGDR_DEVICE=/dev/fpgagdr0 \
					/extra/capi_test bad-card
			fi
			check "D/unload-state-$state" rmmod fpgagdr
		fi
	done
}

pass_loops() {
	mark "pass C: load, pin, unload $loops times"
	if ! grep -q '^fpgagdr_test_nvp2p ' /proc/modules; then
		check C/load-nvp2p-double insmod "$mods/fpgagdr-test-nvp2p.ko"
	fi
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
		echo 1 >/proc/sys/vm/stat_refresh
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
}

# Leave a transfer running and power off: the driver's .shutdown must stop
# the engines (the software card reports what it finds, run.sh checks).
shutdown_with_transfer_in_flight() {
	mark "shutdown: power off with a transfer in flight"
	if ! load fpgagdr-host.ko; then
		result FAIL shutdown/load
		return
	fi
	fgtest hang >/tmp/hang.log 2>&1 &
	w=0
	while ! grep -q 'transfer started' /tmp/hang.log && [ "$w" -lt 100 ]; do
		sleep 0.1
		w=$((w + 1))
	done
	check shutdown/transfer-in-flight grep -q 'transfer started' /tmp/hang.log
	sleep 0.2
}

mark "kernel $(uname -r), $(nproc) CPUs, pass $pass"
# kernel modules of the guest's own tree the tests need
if [ -s "$mods/deps.list" ]; then
	while read -r d; do
		check "load-dep-$d" insmod "$mods/deps/$d"
	done <"$mods/deps.list"
fi

case $pass in
plain)
	mark "pass A: nvidia_p2p double, software card with interrupts"
	check A/load-nvp2p-double insmod "$mods/fpgagdr-test-nvp2p.ko"
	check A/load load fpgagdr-nv.ko
	suites A functional nvp2p faults badioctl host dmabuf stress frames recovery
	for t in /extra/*; do
		if [ -x "$t" ]; then
			check "A/extra/${t##*/}" env FPGAGDR_DEVICE=/dev/fpgagdr0 "$t"
		fi
	done
	FPGAGDR_HOTPLUG=1 suites A removal
	check A/pins-released pins_zero
	check A/unload rmmod fpgagdr
	check A/nvp2p-double-clean nv_clean

	mark "pass B: no NVIDIA back-end (Orin-style build), polled, 64-byte alignment"
	pass_host B "test_poll=1 test_addr_align=64 test_len_gran=64" \
		functional host faults badioctl frames_polled
	pass_badcards
	pass_loops
	shutdown_with_transfer_in_flight
	;;
swiotlb)
	mark "pass S: every DMA mapping bounced (swiotlb=force), Orin-style build"
	pass_host S "" functional host faults dmabuf
	;;
iommu)
	mark "pass I: virtual IOMMU, strict: every bus address translated"
	pass_nv I functional host faults nvp2p dmabuf removal recovery_iommu
	;;
arm64)
	mark "pass R: arm64, Orin-style build"
	pass_host R "" functional host faults frames_arm64
	;;
*)
	result FAIL "unknown-pass-$pass"
	;;
esac

echo "FPGAGDR-QEMU: guest uptime $(cut -d' ' -f1 /proc/uptime) s"
mark "kernel log"
echo "FPGAGDR-DMESG-BEGIN"
dmesg
echo "FPGAGDR-DMESG-END"
echo "FPGAGDR-QEMU-DONE: fails=$fails"
poweroff -f
