#!/usr/bin/env bash
# Checks for kmod/: build against Debian's kernel headers with W=1 and
# sparse (C=2) and fail on any warning, build the nvidia_p2p back-end
# against our compat header, build the TEST-ONLY software card and the
# nvidia_p2p test double of the QEMU tests, fail on a circle between the
# module's .c files, cross-build for arm64 (the Jetson's architecture)
# against Debian's arm64 headers with W=1 and sparse, compile the QEMU
# guest tests, run checkpatch.pl --strict on our C, and the shell scripts
# through ShellCheck, compare docs/card-protocol.md's register table with
# fpgagdr-frames-regs.h and the copies generated from it for the RTL
# (hdl/rtl/fgdr_regs_pkg.sv, hdl/tb/fgdr_regs.py); then run the unit tests.  The QEMU suite itself is
# qemu/run.sh.
#
# As root, missing Debian packages are installed (linux-headers-amd64,
# sparse, linux-source for checkpatch.pl, gcc-aarch64-linux-gnu).
# checkpatch.pl and its data files are extracted from the linux-source
# tarball into kmod/.cache/; Debian's arm64 headers are fetched there by
# scripts/arm64-debs.sh.
#
# Environment: KDIR (headers to build against; default the newest
# /usr/src/linux-headers-*-amd64), FPGAGDR_CHECK_JOBS (make -j).
set -euo pipefail

kmod=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# apt-get that waits for another package manager run (its locks) instead of failing.
apt_get=$kmod/../appliance/scripts/apt-get.sh
cache=$kmod/.cache
jobs=${FPGAGDR_CHECK_JOBS:-$(nproc)}
failed=0

say() { printf '== %s\n' "$*"; }
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	failed=1
}

ensure_packages() {
	local missing=() pkg
	for pkg in linux-headers-amd64 sparse linux-source gcc-aarch64-linux-gnu; do
		if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q 'install ok installed'; then
			missing+=("$pkg")
		fi
	done
	if ((${#missing[@]} == 0)); then
		return
	fi
	if ((EUID != 0)); then
		echo "missing packages: ${missing[*]} (run as root to install)" >&2
		exit 1
	fi
	say "installing ${missing[*]}"
	"$apt_get" update -qq
	DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq "${missing[@]}" >/dev/null
}

find_kdir() {
	if [[ -n ${KDIR:-} ]]; then
		echo "$KDIR"
		return
	fi
	local d
	d=$(find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' -type d |
		sort -V | tail -n 1)
	if [[ -z $d ]]; then
		echo "no /usr/src/linux-headers-*-amd64" >&2
		exit 1
	fi
	echo "$d"
}

ensure_checkpatch() {
	local dir=$cache/scripts tarball
	if [[ -f $dir/checkpatch.pl && -f $dir/spelling.txt &&
		-f $dir/const_structs.checkpatch ]]; then
		return
	fi
	tarball=$(find /usr/src -maxdepth 1 -name 'linux-source-*.tar.xz' |
		sort -V | tail -n 1)
	if [[ -z $tarball ]]; then
		echo "no /usr/src/linux-source-*.tar.xz" >&2
		exit 1
	fi
	say "extracting checkpatch.pl from $tarball"
	mkdir -p "$cache"
	tar -xJf "$tarball" -C "$cache" --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
}

# Build with W=1 C=2; print the log; return 1 on any unexpected warning.
build() {
	local name=$1 allow=$2 log=$cache/build-$1.log
	shift 2
	say "build ($name): make W=1 C=2 $*"
	make -s -C "$kmod" KDIR="$KDIR" "$@" clean >/dev/null
	if ! make -C "$kmod" -j"$jobs" KDIR="$KDIR" W=1 C=2 "$@" \
		>"$log" 2>&1; then
		cat "$log"
		fail "build ($name) failed"
		return
	fi
	if grep -iE 'warning|error' "$log" | grep -vE "$allow" >"$log.bad"; then
		cat "$log.bad"
		fail "build ($name) has warnings"
	fi
	if [[ ! -f $kmod/fpgagdr.ko ]]; then
		fail "build ($name) made no fpgagdr.ko"
	fi
}

ensure_packages
KDIR=$(find_kdir)
ensure_checkpatch
mkdir -p "$cache"
say "kernel headers: $KDIR"

# 1. the module as shipped without NVIDIA: host + dma-buf back-ends
build default '^$' FPGAGDR_NVP2P=n
# 2. with the nvidia_p2p back-end against our compat header; nvidia.ko is
#    not here, so its symbols are the only thing modpost may not resolve
build nvp2p-compat 'modpost: "nvidia_p2p_[a-z_]+" .* undefined!$' \
	FPGAGDR_NVP2P=compat KBUILD_MODPOST_WARN=1
# 3. the QEMU tests' build: the TEST-ONLY software card, nvidia_p2p back-end
build test-engine 'modpost: "nvidia_p2p_[a-z_]+" .* undefined!$' \
	FPGAGDR_TEST_ENGINE=y FPGAGDR_NVP2P=compat KBUILD_MODPOST_WARN=1
# 4. no circle between the module's files (every .c is in this build)
say "no circle between the module's .c files (nm of the objects)"
if ! python3 "$kmod/scripts/object-cycles.py" nm "$kmod"/fpgagdr-*.o; then
	fail "the module's files depend on each other in a circle"
fi
make -s -C "$kmod" KDIR="$KDIR" clean >/dev/null

# 5. arm64, the Jetson's architecture: the shipped build and the QEMU one
abi=${KDIR##*/linux-headers-}
abi=${abi%-amd64}
# shellcheck source=arm64-debs.sh
. "$kmod/scripts/arm64-debs.sh"
if arm64_debs "$abi"; then
	KDIR=$ARM64_KDIR build arm64 '^$' ARCH=arm64 \
		CROSS_COMPILE=aarch64-linux-gnu- FPGAGDR_NVP2P=n
	KDIR=$ARM64_KDIR build arm64-test-engine '^$' ARCH=arm64 \
		CROSS_COMPILE=aarch64-linux-gnu- FPGAGDR_NVP2P=n \
		FPGAGDR_TEST_ENGINE=y
	make -s -C "$kmod" KDIR="$KDIR" clean >/dev/null
else
	fail "arm64: Debian's arm64 kernel headers could not be fetched"
fi

say "build (nvp2p test double): make W=1 C=2"
dbl=$kmod/qemu/nvp2p
if ! make -C "$KDIR" M="$dbl" W=1 C=2 modules >"$cache/build-nvp2p-double.log" 2>&1; then
	cat "$cache/build-nvp2p-double.log"
	fail "build (nvp2p test double) failed"
elif grep -iE 'warning|error' "$cache/build-nvp2p-double.log" |
	grep -v 'Skipping BTF'; then
	fail "build (nvp2p test double) has warnings"
fi
make -s -C "$KDIR" M="$dbl" clean >/dev/null

say "feature probes fail loudly with a broken toolchain (rule probe-control)"
probe_out=$(mktemp -d)
if CROSS_COMPILE=/nonexistent/broken- "$kmod/scripts/probe-features.sh" "$KDIR" \
	"$probe_out/fpgagdr-features.h" >"$probe_out/log" 2>&1; then
	fail "probe-features.sh succeeded with a compiler that does not exist"
elif ! grep -q 'rule probe-control' "$probe_out/log" || [[ -e $probe_out/fpgagdr-features.h ]]; then
	cat "$probe_out/log"
	fail "probe-features.sh failed without naming the rule, or wrote a header"
else
	echo "refused: $(head -n 1 "$probe_out/log")"
fi
rm -rf "$probe_out"

say "compile the QEMU guest tests"
if ! gcc -O2 -Wall -Wextra -Werror -pthread -I"$kmod/include" \
	-o "$cache/fgtest" "$kmod"/qemu/tests/*.c; then
	fail "QEMU guest tests do not compile"
fi

say "checkpatch --strict"
mapfile -t sources < <(cd "$kmod" && find . -path ./.cache -prune -o \
	\( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' |
	grep -vE '^fpgagdr-features\.h$|\.mod\.c$' | sort)
if ! (cd "$kmod" && perl "$cache/scripts/checkpatch.pl" --strict --no-tree \
	--terse --show-types -f "${sources[@]}") >"$cache/checkpatch.log" 2>&1; then
	grep -v 'total: 0 errors, 0 warnings, 0 checks' "$cache/checkpatch.log" || true
	fail "checkpatch"
else
	echo "${#sources[@]} files: 0 errors, 0 warnings, 0 checks"
fi

if command -v shellcheck >/dev/null; then
	say "shellcheck"
	if ! shellcheck -x -P "$kmod/scripts" "$kmod"/scripts/*.sh \
		"$kmod"/tests/run.sh "$kmod"/qemu/*.sh; then
		fail "shellcheck"
	fi
fi

say "card protocol: docs/card-protocol.md against fpgagdr-frames-regs.h and the RTL's copies"
if ! python3 "$kmod/scripts/check-card-protocol.py"; then
	fail "the card protocol's document and header differ"
fi

say "module version: MODULE_VERSION = dkms.conf's PACKAGE_VERSION = the Rust workspace's"
mod_v=$(sed -n 's/^MODULE_VERSION("\(.*\)");$/\1/p' "$kmod/fpgagdr-main.c")
dkms_v=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$kmod/dkms.conf")
cargo_v=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' "$kmod/../Cargo.toml")
if [[ -z $mod_v || $mod_v != "$dkms_v" || $mod_v != "$cargo_v" ]]; then
	fail "versions differ: MODULE_VERSION '$mod_v', dkms.conf '$dkms_v', Cargo.toml '$cargo_v'"
fi

say "unit tests"
if ! FPGAGDR_TEST_OUT=$cache/tests "$kmod/tests/run.sh"; then
	fail "unit tests"
fi

if ((failed)); then
	say "kmod checks FAILED"
	exit 1
fi
say "kmod checks passed"
