#!/usr/bin/env bash
# The real fpgagdr module in a real kernel (issues 5 and 13): build the
# module with its TEST-ONLY software card against Debian's kernel headers,
# the TEST DOUBLE of nvidia_p2p and the guest tests; pack them with static
# busybox into an initramfs; boot Debian's kernel of the same version in
# QEMU with software emulation (TCG, no KVM), once per pass; parse each
# serial log.  Fails on any failed test, a missing final marker (timeout)
# and any kernel warning, BUG, oops, lockdep or KASAN report, and any DMA
# the software card refused; prints the guest log on failure.
#
# Passes (FPGAGDR_QEMU_PASSES, default all, in this order):
#   plain    x86 q35, the card on a hot-pluggable PCIe root port (its link
#            set to 8 GT/s x4, which GET_STATUS must report as the card's
#            path, as in every x86 pass): every
#            suite, the stress test, removal, hot unplug through the QEMU
#            monitor (the guest asks, this script runs device_del and
#            device_add), AER, the load/unload loop, .shutdown
#   swiotlb  x86 with swiotlb=<slabs>,force: every mapping bounced
#   iommu    x86 q35 with intel-iommu, intel_iommu=on iommu.strict=1
#   arm64    qemu-system-aarch64 -M virt with Debian's arm64 kernel, the
#            module cross-built against Debian's arm64 headers
#   service  x86 q35 with a user-mode NIC: the service itself (fpgagdrd,
#            FPGAGDRD_BIN, default target/debug/fpgagdrd) in the guest with --card /dev/fpgagdr0 against the
#            real module, its TEST-ONLY software card and test sensor, ONNX
#            Runtime (CPU, .deps/onnxruntime) and the real model; the host
#            drives its REST API over forwarded loopback ports
#            (service-test.py; guest side service-init.sh, service-cgi.sh):
#            interrupt completion first, then, in the same boot, the module
#            reloaded with the software card's test_poll=1 and the service
#            started again (poll completion)
#
# As root, missing Debian packages are installed: qemu-system-x86 and
# qemu-system-arm (from bookworm-backports, as one version), busybox-static,
# cpio, linux-headers-amd64 and linux-image-<version> for exactly the
# headers' version, linux-source-<major.minor> (the kernel's udmabuf.c, built
# as a TEST-ONLY module into kmod/.cache/udmabuf/: build_udmabuf_x86),
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross.  The
# arm64 kernel, headers and busybox are fetched from Debian's archive with
# apt-get download and a private apt configuration (scripts/arm64-debs.sh)
# into kmod/.cache/arm64/.  Outputs go to kmod/.cache/qemu/.
#
# Environment: KDIR (headers; default the newest
# /usr/src/linux-headers-*-amd64, as scripts/check.sh), FPGAGDR_QEMU_TIMEOUT
# (wall seconds per guest; default 1200 for plain, 480 for the others: TCG
# on a shared machine), FPGAGDR_QEMU_PASSES, FPGAGDR_QEMU_EXTRA
# (more x86 test binaries to run in the plain pass, with
# FPGAGDR_DEVICE=/dev/fpgagdr0 set), FPGAGDR_QEMU_TOOLS (programs those
# tests run, copied to the guest's /bin and not run themselves: the
# fpgagdr-bench binary), FPGAGDR_QEMU_APPEND (more kernel
# command line), FPGAGDR_LOAD_LOOPS (load/unload cycles, default 20).
set -euo pipefail

qdir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kmod=$(dirname "$qdir")
# apt-get that waits for another package manager run (its locks) instead of failing.
apt_get=$kmod/../appliance/scripts/apt-get.sh
out=$kmod/.cache/qemu
passes=${FPGAGDR_QEMU_PASSES:-plain swiotlb iommu arm64 service}
jobs=$(nproc)
started=$SECONDS
failed_passes=()
summary=()

say() { printf '== %s\n' "$*"; }
die() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

apt_install() {
	local missing=() pkg
	for pkg in "$@"; do
		installed "$pkg" || missing+=("$pkg")
	done
	((${#missing[@]} == 0)) && return
	((EUID == 0)) || die "missing packages: ${missing[*]} (run as root to install)"
	say "installing ${missing[*]}"
	"$apt_get" update -qq
	DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
}

# qemu-system-x86 and qemu-system-arm share qemu-system-common, so they
# must be one version; take both from bookworm-backports (QEMU 10), which
# other tests of the project use too, through a private sources list.
install_qemu() {
	local bpo=$kmod/.cache/apt-bpo
	local a=(-o "Dir::Etc::sourcelist=$bpo/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::lists=$bpo/lists" -o "Dir::Cache::archives=$bpo/archives")
	if command -v qemu-system-x86_64 >/dev/null &&
		command -v qemu-system-aarch64 >/dev/null; then
		return
	fi
	((EUID == 0)) || die "QEMU is missing (run as root to install it from bookworm-backports)"
	mkdir -p "$bpo/lists/partial" "$bpo/archives/partial"
	cat >"$bpo/sources.list" <<-EOF
		deb http://deb.debian.org/debian bookworm main
		deb http://deb.debian.org/debian bookworm-updates main
		deb http://deb.debian.org/debian-security bookworm-security main
		deb http://deb.debian.org/debian bookworm-backports main
	EOF
	say "installing qemu-system-x86 and qemu-system-arm from bookworm-backports"
	"$apt_get" "${a[@]}" update -qq
	DEBIAN_FRONTEND=noninteractive "$apt_get" "${a[@]}" install -y -qq \
		--no-install-recommends -t bookworm-backports \
		qemu-system-x86 qemu-system-arm >/dev/null
}

find_kdir() {
	if [[ -n ${KDIR:-} ]]; then
		echo "$KDIR"
		return
	fi
	find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' -type d |
		sort -V | tail -n 1
}

# Build one kbuild tree quietly; fail on an error or a warning.
kbuild() {
	local name=$1 blog=$out/build-$1.log
	shift
	if ! make "$@" >"$blog" 2>&1; then
		cat "$blog"
		die "build of $name failed"
	fi
	if grep -iE '(^|[^-])warning|error' "$blog" | grep -v 'Skipping BTF' >&2; then
		die "build of $name has warnings"
	fi
}

copy_sources() { # copy_sources DIR: the module's sources, unbuilt
	rm -rf "$1"
	mkdir -p "$1/qemu"
	(cd "$kmod" && cp -r ./*.c ./*.h Kbuild Makefile include probes scripts "$1/")
	rm -f "$1/fpgagdr-features.h"
	cp -r "$qdir/nvp2p" "$1/qemu/"
}

build_modules_x86() {
	local src=$out/src dst=$1
	copy_sources "$src"
	say "build: fpgagdr-test-nvp2p.ko (test double)"
	kbuild nvp2p -C "$KDIR" M="$src/qemu/nvp2p" W=1 modules
	cp "$src/qemu/nvp2p/fpgagdr-test-nvp2p.ko" "$dst/"
	say "build: fpgagdr.ko, test engine, nvidia_p2p back-end against the double"
	kbuild fpgagdr-nv -C "$src" -j"$jobs" KDIR="$KDIR" W=1 \
		FPGAGDR_TEST_ENGINE=y FPGAGDR_NVP2P=compat \
		NVIDIA_SYMVERS="$src/qemu/nvp2p/Module.symvers"
	cp "$src/fpgagdr.ko" "$dst/fpgagdr-nv.ko"
	make -s -C "$src" KDIR="$KDIR" clean >/dev/null
	say "build: fpgagdr.ko, test engine, no NVIDIA back-end"
	kbuild fpgagdr-host -C "$src" -j"$jobs" KDIR="$KDIR" W=1 \
		FPGAGDR_TEST_ENGINE=y FPGAGDR_NVP2P=n
	cp "$src/fpgagdr.ko" "$dst/fpgagdr-host.ko"
}

build_modules_arm64() {
	local src=$out/src-arm64 dst=$1
	copy_sources "$src"
	say "build: fpgagdr.ko for arm64 against $ARM64_KDIR, test engine, no NVIDIA back-end"
	kbuild fpgagdr-arm64 -C "$src" -j"$jobs" KDIR="$ARM64_KDIR" W=1 \
		ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- \
		FPGAGDR_TEST_ENGINE=y FPGAGDR_NVP2P=n
	cp "$src/fpgagdr.ko" "$dst/fpgagdr-host.ko"
}

# The kernel's own udmabuf exporter as a TEST-ONLY module (issue 23):
# Debian's kernels leave CONFIG_UDMABUF unset, so drivers/dma-buf/udmabuf.c
# is extracted from Debian's linux-source package of the guest kernel's
# major.minor into kmod/.cache/udmabuf/ (never committed), given one
# #include of qemu/udmabuf/udmabuf-out-of-tree.h (the three unexported
# functions it calls and the DMA_BUF namespace: that header says how and
# why) and built against the headers as linux-udmabuf-test.ko.  Cached
# by kernel version, source version and our two files; extracting the one
# file from the tarball takes ~25 s.
build_udmabuf_x86() { # build_udmabuf_x86 DEST
	local mm=${ver%%-*} src srcver hdrver key dir inc='#include "udmabuf-out-of-tree.h"'
	mm=${mm%.*}
	src=linux-source-$mm
	apt_install "$src"
	srcver=$(dpkg-query -W -f='${Version}' "$src")
	hdrver=$(dpkg-query -W -f='${Version}' "linux-headers-$ver" 2>/dev/null || true)
	key=$ver-$srcver-$(cat "$qdir/udmabuf/Kbuild" "$qdir/udmabuf/udmabuf-out-of-tree.h" |
		sha256sum | cut -c1-12)
	dir=$kmod/.cache/udmabuf/$key
	if [[ ! -f $dir/linux-udmabuf-test.ko ]]; then
		say "build: linux-udmabuf-test.ko, the kernel's udmabuf.c from $src $srcver (headers $hdrver), TEST-ONLY"
		rm -rf "$kmod/.cache/udmabuf"
		mkdir -p "$dir"
		tar -xJf "/usr/src/$src.tar.xz" -C "$dir" --strip-components=3 \
			--occurrence=1 "$src/drivers/dma-buf/udmabuf.c"
		cp "$qdir/udmabuf/Kbuild" "$qdir/udmabuf/udmabuf-out-of-tree.h" "$dir/"
		sed -i "/^#include <linux\/hugetlb.h>\$/a $inc" "$dir/udmabuf.c"
		grep -qxF "$inc" "$dir/udmabuf.c" ||
			die "$src's udmabuf.c has no '#include <linux/hugetlb.h>' line to add $inc after"
		# the kernel's flags, not W=1: our warning rules are for our code
		kbuild udmabuf -C "$KDIR" M="$dir" modules
	fi
	mkdir -p "$1/deps"
	cp "$dir/linux-udmabuf-test.ko" "$1/deps/"
	echo linux-udmabuf-test.ko >>"$1/deps.list"
}

# Copy a binary and the shared libraries ldd names into the root.
copy_with_libs() {
	local bin=$1 dest=$2 lib
	install -m 0755 "$bin" "$dest"
	while read -r lib; do
		[[ -n $lib && -e $lib ]] || continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done < <(ldd "$bin" 2>/dev/null | grep -oE '/[^ ]+' || true)
}

# Kernel modules of the guest's own tree the tests use, and those ours
# depend on (none today).
copy_kernel_deps() { # copy_kernel_deps MODULES_DIR NAME...
	local tree=$1 ko dep path
	shift
	: >"$root/lib/fpgagdr/deps.list"
	for dep in "$@" $(for ko in "$root"/lib/fpgagdr/*.ko; do
		modinfo -F depends "$ko" | tr ',' ' '
	done); do
		[[ $dep == fpgagdr* ]] && continue
		path=$(grep -E "/${dep//_/[-_]}\.ko[^:]*:" "$tree/modules.dep" |
			cut -d: -f1 | head -n 1)
		[[ -n $path ]] || die "module $dep not found in $tree"
		mkdir -p "$root/lib/fpgagdr/deps"
		cp "$tree/$path" "$root/lib/fpgagdr/deps/"
		basename "$path" >>"$root/lib/fpgagdr/deps.list"
	done
}

new_root() { # new_root DIR BUSYBOX
	local applet
	root=$1
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,extra,lib/fpgagdr}
	install -m 0755 "$2" "$root/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
	done
	install -m 0755 "$qdir/init.sh" "$root/init"
	install -m 0644 "$qdir/guest-lib.sh" "$root/lib/fpgagdr/guest-lib.sh"
}

pack() { # pack ROOT INITRD
	(cd "$1" && find . -print0 | cpio --null -o -H newc --quiet) |
		gzip -1 >"$2"
}

build_initramfs_x86() {
	local extra
	new_root "$out/root" /bin/busybox
	build_modules_x86 "$root/lib/fpgagdr"
	say "build: guest tests"
	gcc -O2 -g -Wall -Wextra -Werror -pthread -I"$kmod/include" \
		-o "$out/fgtest" "$qdir"/tests/*.c
	copy_with_libs "$out/fgtest" "$root/bin/fgtest"
	for extra in ${FPGAGDR_QEMU_EXTRA:-}; do
		copy_with_libs "$extra" "$root/extra/$(basename "$extra")"
	done
	for extra in ${FPGAGDR_QEMU_TOOLS:-}; do
		copy_with_libs "$extra" "$root/bin/$(basename "$extra")"
	done
	copy_kernel_deps "/lib/modules/$ver" aer_inject drm drm_shmem_helper vgem
	build_udmabuf_x86 "$root/lib/fpgagdr"
	pack "$root" "$out/initrd-x86.gz"
}

build_initramfs_arm64() {
	new_root "$out/root-arm64" "$ARM64_ROOT/bin/busybox"
	build_modules_arm64 "$root/lib/fpgagdr"
	say "build: guest tests for arm64 (static)"
	aarch64-linux-gnu-gcc -static -O2 -g -Wall -Wextra -Werror -pthread \
		-I"$kmod/include" -o "$out/fgtest-arm64" "$qdir"/tests/*.c
	install -m 0755 "$out/fgtest-arm64" "$root/bin/fgtest"
	copy_kernel_deps "$ARM64_ROOT/lib/modules/$ver_arm64"
	pack "$root" "$out/initrd-arm64.gz"
}

# The service pass's root: the module, fpgagdrd (stripped) and the shared
# libraries it loads, ONNX Runtime, the model, its labels and the photos.
build_initramfs_service() {
	local bin=${FPGAGDRD_BIN:-$kmod/../target/debug/fpgagdrd} deps=$kmod/../.deps lib
	[[ -x $bin ]] ||
		die "the service pass needs a built fpgagdrd: $bin is missing (cargo build -p fpgagdrd, or FPGAGDRD_BIN=PATH; FPGAGDR_QEMU_PASSES leaves the pass out)"
	[[ -f $deps/onnxruntime/libonnxruntime.so ]] ||
		die "the service pass needs ONNX Runtime in .deps (appliance/scripts/fetch-deps.sh)"
	new_root "$out/root-service" /bin/busybox
	install -m 0755 "$qdir/service-init.sh" "$root/init"
	install -m 0755 "$qdir/service-cgi.sh" "$root/lib/fpgagdr/service-cgi.sh"
	if [[ -f $out/root/lib/fpgagdr/fpgagdr-host.ko ]]; then
		cp "$out/root/lib/fpgagdr/fpgagdr-host.ko" "$root/lib/fpgagdr/"
	else
		build_modules_x86 "$root/lib/fpgagdr"
		rm -f "$root/lib/fpgagdr/fpgagdr-nv.ko" "$root/lib/fpgagdr/fpgagdr-test-nvp2p.ko"
	fi
	say "build: the service's root (fpgagdrd, ONNX Runtime, the model, the photos)"
	strip -o "$out/fpgagdrd" "$bin"
	copy_with_libs "$out/fpgagdrd" "$root/bin/fpgagdrd"
	mkdir -p "$root/lib/ort" "$root/share/models" "$root/share/frames"
	lib=$(readlink -f "$deps/onnxruntime/libonnxruntime.so")
	copy_with_libs "$lib" "$root/lib/ort/libonnxruntime.so"
	cp "$kmod"/../models/efficientnet-lite0.onnx "$kmod"/../models/efficientnet-lite0.labels.txt \
		"$root/share/models/"
	cp "$deps"/share/frames/* "$root/share/frames/"
	copy_kernel_deps "/lib/modules/$ver" e1000
	pack "$root" "$out/initrd-service.gz"
}

# Two free TCP ports on the host's loopback, for the forwarded API and control.
free_ports() {
	python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])'
}

# Kernel messages that fail the run wherever they appear.
kernel_problems() { # kernel_problems LOG
	grep -naE '(^|[^A-Za-z])BUG[: ]|WARNING:|Oops|general protection fault|Kernel panic|circular locking|lockdep|KASAN|UBSAN|kmemleak|INFO: task .* blocked|soft lockup|hard LOCKUP|rcu: INFO|Call Trace:|dma_pool_destroy .*busy|refcount_t:|list_(add|del) corruption|TEST ENGINE: chain rejected|TEST ENGINE: refused|DMAR: \[DMA (Read|Write)' \
		"$1" || true
}

# Send one command to QEMU's human monitor on a unix socket.
monitor() { # monitor SOCKET COMMAND
	python3 - "$1" "$2" <<-'EOF'
		import socket, sys, time
		s = socket.socket(socket.AF_UNIX)
		s.connect(sys.argv[1])
		s.settimeout(30)
		def until_prompt():
		    buf = b""
		    while not buf.endswith(b"(qemu) "):
		        chunk = s.recv(4096)
		        if not chunk:
		            break
		        buf += chunk
		    return buf
		until_prompt()
		s.sendall(sys.argv[2].encode() + b"\n")
		until_prompt()
		s.close()
	EOF
}

# Run the QEMU monitor commands the guest asks for on its console.
host_commands() { # host_commands QEMU_PID LOG SOCKET
	local line
	tail --pid="$1" -n +1 -F "$2" 2>/dev/null | while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		FPGAGDR-HOST-CMD:\ *)
			echo "host: ${line#FPGAGDR-HOST-CMD: }" >>"$out/host-commands.log"
			monitor "$3" "${line#FPGAGDR-HOST-CMD: }" ||
				echo "host: monitor command failed" >>"$out/host-commands.log"
			;;
		esac
	done
}

# The guest's uptime at the end of its tests, as it printed it.
guest_seconds() { # guest_seconds LOG
	sed -n 's/^FPGAGDR-QEMU: guest uptime \([0-9]*\).*/\1/p' "$1" | tail -n 1
}

# CPU seconds (user + system) the children of this shell used so far:
# `times` must run in this shell, not in a command substitution's.
children_cpu() {
	times >"$out/times"
	tail -n 1 "$out/times" | awk '{
		n = 0
		for (i = 1; i <= 2; i++) {
			split($i, t, /[ms]/)
			n += t[1] * 60 + t[2]
		}
		printf "%d\n", n
	}'
}

# The NIC of the next boot (none but in the service pass) and the host-side
# driver run while the guest runs (its failure fails the pass).
nic=(-nic none)
driver=()

# Boot one pass, wait for it, check its log.
boot() { # boot PASS QEMU [ARG...]
	local pass=$1 log=$out/guest-$1.log sock=$out/monitor-$1.sock
	local qpid rc=0 drc=0 t0=$SECONDS wall gs cpu0 cpu problems=() passed failed kp tests
	local limit=${FPGAGDR_QEMU_TIMEOUT:-$2}
	shift 2
	children_cpu >"$out/cpu0"
	cpu0=$(<"$out/cpu0")
	say "boot: pass $pass: $1 (TCG), timeout ${limit}s, log $log"
	rm -f "$sock"
	: >"$log"
	timeout --kill-after=10 "$limit" "$@" \
		-nographic -no-reboot "${nic[@]}" \
		-monitor "unix:$sock,server,nowait" </dev/null >"$log" 2>&1 &
	qpid=$!
	host_commands "$qpid" "$log" "$sock" &
	if ((${#driver[@]})); then
		"${driver[@]}" --log "$log" >"$out/driver-$pass.log" 2>&1 || drc=$?
		cat "$out/driver-$pass.log"
	fi
	wait "$qpid" || rc=$?
	wait
	wall=$((SECONDS - t0))
	gs=$(guest_seconds "$log" || true)
	children_cpu >"$out/cpu1"
	cpu=$(($(<"$out/cpu1") - cpu0))

	passed=$(grep -ac '^FPGAGDR-RESULT: PASS' "$log" || true)
	failed=$(grep -a '^FPGAGDR-RESULT: FAIL' "$log" || true)
	((rc == 0)) || problems+=("qemu exited with $rc (124: timeout after ${limit}s)")
	((drc == 0)) || problems+=("the host-side driver ${driver[*]:0:1} failed with $drc (its output above)")
	grep -aq '^FPGAGDR-QEMU-DONE: fails=0' "$log" ||
		problems+=("no final marker 'FPGAGDR-QEMU-DONE: fails=0'")
	[[ -z $failed ]] || problems+=("failed checks:"$'\n'"$failed")
	((passed > 0)) || problems+=("no check passed")
	if [[ $pass == plain ]] &&
		! sed -n '/^FPGAGDR-QEMU-DONE/,$p' "$log" |
		grep -aq 'TEST ENGINE: shutdown: 0 engines busy'; then
		problems+=("power-off with a transfer in flight: no '.shutdown' report 'TEST ENGINE: shutdown: 0 engines busy'")
	fi
	kp=$(kernel_problems "$log")
	[[ -z $kp ]] || problems+=("kernel log problems:"$'\n'"$kp")

	if ((${#problems[@]})); then
		cat "$log"
		printf '\nFAIL (%s): %s\n' "$pass" "${problems[@]}" >&2
		failed_passes+=("$pass")
	else
		grep -aE '^(ok|not ok) - |^FPGAGDR-(QEMU|RESULT): ' "$log" | grep -av '^ok - ' || true
	fi
	# the guest's tests print "ok - "; a host-side driver's checks are its own lines
	if ((${#driver[@]})); then
		tests="$(grep -ac '^ok - ' "$out/driver-$pass.log" || true) host checks ok"
	else
		tests="$(grep -ac '^ok - ' "$log" || true) tests ok"
	fi
	summary+=("pass $pass: $passed checks, $tests; guest ${gs:-?} s of uptime, QEMU ${cpu} CPU s, wall ${wall} s")
}

# The link of root port rp1, the card's only link to the root complex (QEMU's
# pcie-root-port x-speed in GT/s and x-width in lanes; QEMU 10's default is
# 16 GT/s x32): edu is conventional PCI, so this is the path's limiting link
# GET_STATUS must report, and the guest is told to expect exactly it.
rp_speed=8
rp_width=4

x86_machine() { # x86_machine [DEVICE...]: q35, the card on root port rp1
	echo qemu-system-x86_64 -accel tcg -cpu max -M q35 -smp 2 "$@" \
		-device pcie-root-port,id=rp1,slot=1,chassis=1,x-speed=$rp_speed,x-width=$rp_width \
		-device edu,bus=rp1,id=card -kernel "$kernel" -initrd "${initrd:-$out/initrd-x86.gz}"
}

x86_append() { # x86_append PASS [ARG...]
	local pass=$1
	shift
	echo "console=ttyS0 panic=-1 oops=panic loglevel=5 slub_debug=FZPU hung_task_timeout_secs=60 FPGAGDR_PASS=$pass FPGAGDR_EXPECT_PATH=$rp_speed:$rp_width FPGAGDR_LOAD_LOOPS=${FPGAGDR_LOAD_LOOPS:-20} $* ${FPGAGDR_QEMU_APPEND:-}"
}

want() { [[ " $passes " == *" $1 "* ]]; }

# A pass list that names no known pass would "pass" having run nothing.
for p in $passes; do
	case $p in
	plain | swiotlb | iommu | arm64 | service) ;;
	*) die "FPGAGDR_QEMU_PASSES: unknown pass '$p' (rule: space-separated names from plain swiotlb iommu arm64 service)" ;;
	esac
done
[[ -n ${passes// /} ]] || die "FPGAGDR_QEMU_PASSES is empty (rule: at least one of plain swiotlb iommu arm64 service)"

apt_install busybox-static cpio linux-headers-amd64 gcc make kmod python3
install_qemu
KDIR=$(find_kdir)
[[ -n $KDIR && -d $KDIR ]] || die "no kernel headers in /usr/src"
ver=${KDIR##*/linux-headers-}
kernel=/boot/vmlinuz-$ver
[[ -f $kernel ]] || apt_install "linux-image-$ver"
[[ -f $kernel ]] || die "no $kernel after installing linux-image-$ver"
say "kernel $ver: headers $KDIR, image $kernel; passes: $passes"
mkdir -p "$out"
: >"$out/host-commands.log"

if want plain || want swiotlb || want iommu; then
	build_initramfs_x86
fi
if want service; then
	build_initramfs_service
fi
if want arm64; then
	apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	# shellcheck source=arm64-debs.sh
	. "$kmod/scripts/arm64-debs.sh"
	arm64_debs "${ver%-amd64}"
	ver_arm64=${ver%-amd64}-arm64
	build_initramfs_arm64
fi

if want plain; then
	# shellcheck disable=SC2046 # the machine's words
	boot plain 1200 $(x86_machine) -m 1G -append "$(x86_append plain)"
fi
if want swiotlb; then
	# 64 Ki slabs of 2 KiB: a 128 MiB bounce pool, room for the suites' pins
	# shellcheck disable=SC2046 # the machine's words
	boot swiotlb 480 $(x86_machine) -m 1536M \
		-append "$(x86_append swiotlb swiotlb=65536,force)"
fi
if want iommu; then
	# shellcheck disable=SC2046 # the machine's words
	# DMA remapping only: TCG's IO-APIC does not work through interrupt
	# remapping ("timer doesn't work through Interrupt-remapped IO-APIC")
	boot iommu 480 $(x86_machine -device intel-iommu,intremap=off) -m 1G \
		-append "$(x86_append iommu intel_iommu=on iommu.strict=1)"
fi
if want arm64; then
	boot arm64 480 qemu-system-aarch64 -accel tcg -M virt -cpu max,pauth-impdef=on \
		-smp 2 -m 1G -device edu,id=card \
		-kernel "$ARM64_ROOT/boot/vmlinuz-$ver_arm64" -initrd "$out/initrd-arm64.gz" \
		-append "console=ttyAMA0 panic=-1 oops=panic loglevel=5 slub_debug=FZPU hung_task_timeout_secs=60 FPGAGDR_PASS=arm64 ${FPGAGDR_QEMU_APPEND:-}"
fi

if want service; then
	read -r api_port ctl_port < <(free_ports)
	nic=(-nic "user,model=e1000,hostfwd=tcp:127.0.0.1:$api_port-:8080,hostfwd=tcp:127.0.0.1:$ctl_port-:8081")
	driver=(python3 "$qdir/service-test.py" --api "http://127.0.0.1:$api_port"
		--ctl "http://127.0.0.1:$ctl_port" --frames "$kmod/../.deps/share/frames")
	initrd=$out/initrd-service.gz
	# shellcheck disable=SC2046 # the machine's words
	boot service 1800 $(x86_machine) -m 2G \
		-append "$(x86_append service FPGAGDR_MODULE_PARAMS=test_slot_count=2)"
	initrd=
	nic=(-nic none)
	driver=()
fi

printf '%s\n' "${summary[@]}"
if ((${#failed_passes[@]})); then
	say "QEMU suite FAILED in: ${failed_passes[*]} (total $((SECONDS - started))s)"
	exit 1
fi
say "QEMU suite passed: $passes (total $((SECONDS - started))s)"
