#!/usr/bin/env bash
# The real fpgagdr module in a real kernel (issue 5): build the module with
# its TEST-ONLY software card against Debian's kernel headers, the TEST
# DOUBLE of nvidia_p2p and the guest tests; pack them with static busybox
# into an initramfs; boot Debian's kernel of the same version in QEMU with
# software emulation (TCG, no KVM); parse the serial log.  Fails on any
# failed test, a missing final marker (timeout) and any kernel warning,
# BUG, oops, lockdep or KASAN report; prints the guest log on failure.
#
# As root, missing Debian packages are installed: qemu-system-x86,
# busybox-static, cpio, linux-headers-amd64 and linux-image-<version> for
# exactly the headers' version.  Outputs go to kmod/.cache/qemu/.
#
# Environment: KDIR (headers; default the newest
# /usr/src/linux-headers-*-amd64, as scripts/check.sh), FPGAGDR_QEMU_TIMEOUT
# (seconds for the guest, default 480), FPGAGDR_QEMU_EXTRA (more test
# binaries to run in the guest, with FPGAGDR_DEVICE=/dev/fpgagdr0 set),
# FPGAGDR_QEMU_APPEND (more kernel command line), FPGAGDR_LOAD_LOOPS
# (load/unload cycles, default 20).
set -euo pipefail

qdir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kmod=$(dirname "$qdir")
out=$kmod/.cache/qemu
log=$out/guest.log
timeout_s=${FPGAGDR_QEMU_TIMEOUT:-480}
jobs=$(nproc)
started=$SECONDS

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
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
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

build_modules() {
	local src=$out/src dst=$1
	rm -rf "$src"
	mkdir -p "$src/qemu"
	(cd "$kmod" && cp -r ./*.c ./*.h Kbuild Makefile include probes scripts "$src/")
	rm -f "$src/fpgagdr-features.h"
	cp -r "$qdir/nvp2p" "$src/qemu/"
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

# Kernel modules ours depend on (none today), from the kernel's own tree.
copy_kernel_deps() {
	local ko dep path
	: >"$root/lib/fpgagdr/deps.list"
	for ko in "$root"/lib/fpgagdr/*.ko; do
		for dep in $(modinfo -F depends "$ko" | tr ',' ' '); do
			[[ $dep == fpgagdr* ]] && continue
			path=$(grep -E "/${dep//_/[-_]}\.ko[^:]*:" \
				"/lib/modules/$ver/modules.dep" | cut -d: -f1 | head -n 1)
			[[ -n $path ]] || die "module dependency $dep not found"
			mkdir -p "$root/lib/fpgagdr/deps"
			cp "/lib/modules/$ver/$path" "$root/lib/fpgagdr/deps/"
			basename "$path" >>"$root/lib/fpgagdr/deps.list"
		done
	done
}

build_initramfs() {
	local applet extra
	root=$out/root
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,extra,lib/fpgagdr}
	build_modules "$root/lib/fpgagdr"
	say "build: guest tests"
	gcc -O2 -g -Wall -Wextra -Werror -pthread -I"$kmod/include" \
		-o "$out/fgtest" "$qdir"/tests/*.c
	copy_with_libs "$out/fgtest" "$root/bin/fgtest"
	for extra in ${FPGAGDR_QEMU_EXTRA:-}; do
		copy_with_libs "$extra" "$root/extra/$(basename "$extra")"
	done
	install -m 0755 /bin/busybox "$root/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
	done
	install -m 0755 "$qdir/init.sh" "$root/init"
	copy_kernel_deps
	(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) |
		gzip -1 >"$out/initrd.gz"
}

# Kernel messages that fail the run wherever they appear.
kernel_problems() {
	grep -naE '(^|[^A-Za-z])BUG[: ]|WARNING:|Oops|general protection fault|Kernel panic|circular locking|lockdep|KASAN|UBSAN|kmemleak|INFO: task .* blocked|soft lockup|hard LOCKUP|rcu: INFO|Call Trace:|dma_pool_destroy .*busy|refcount_t:|list_(add|del) corruption|TEST ENGINE: chain rejected' \
		"$log" || true
}

apt_install qemu-system-x86 busybox-static cpio linux-headers-amd64 gcc make kmod
KDIR=$(find_kdir)
[[ -n $KDIR && -d $KDIR ]] || die "no kernel headers in /usr/src"
ver=${KDIR##*/linux-headers-}
kernel=/boot/vmlinuz-$ver
[[ -f $kernel ]] || apt_install "linux-image-$ver"
[[ -f $kernel ]] || die "no $kernel after installing linux-image-$ver"
say "kernel $ver: headers $KDIR, image $kernel"
mkdir -p "$out"
build_initramfs

say "boot: qemu-system-x86_64 (TCG), timeout ${timeout_s}s, log $log"
boot_started=$SECONDS
rc=0
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max \
	-m 1G -smp 2 -nographic -no-reboot -nic none \
	-device pci-testdev \
	-kernel "$kernel" -initrd "$out/initrd.gz" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=5 slub_debug=FZPU hung_task_timeout_secs=60 FPGAGDR_LOAD_LOOPS=${FPGAGDR_LOAD_LOOPS:-20} ${FPGAGDR_QEMU_APPEND:-}" \
	</dev/null >"$log" 2>&1 || rc=$?
boot_s=$((SECONDS - boot_started))

problems=()
passed=$(grep -ac '^FPGAGDR-RESULT: PASS' "$log" || true)
failed=$(grep -a '^FPGAGDR-RESULT: FAIL' "$log" || true)
((rc == 0)) || problems+=("qemu exited with $rc (124: timeout after ${timeout_s}s)")
grep -aq '^FPGAGDR-QEMU-DONE: fails=0' "$log" ||
	problems+=("no final marker 'FPGAGDR-QEMU-DONE: fails=0'")
[[ -z $failed ]] || problems+=("failed checks:"$'\n'"$failed")
((passed > 0)) || problems+=("no check passed")
kp=$(kernel_problems)
[[ -z $kp ]] || problems+=("kernel log problems:"$'\n'"$kp")

if ((${#problems[@]})); then
	cat "$log"
	printf '\nFAIL: %s\n' "${problems[@]}" >&2
	say "QEMU suite FAILED ($passed checks passed; guest ${boot_s}s, total $((SECONDS - started))s)"
	exit 1
fi
grep -aE '^(ok|not ok) - |^FPGAGDR-(QEMU|RESULT): ' "$log" | grep -av '^ok - ' || true
say "QEMU suite passed: $passed checks, $(grep -ac '^ok - ' "$log") tests ok (guest ${boot_s}s, total $((SECONDS - started))s)"
