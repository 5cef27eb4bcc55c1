# Shared by images/vm/build.sh and images/vm/run.sh (sourced, not run).
# shellcheck shell=bash

say() { printf '== vm: %s\n' "$*" >&2; }
# apt-get that waits for another package manager run (its locks) instead of failing.
apt_get=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/appliance/scripts/apt-get.sh
die() {
	printf 'FAIL: vm: %s\n' "$*" >&2
	exit 1
}

installed() {
	# (No pipe into grep -q: under pipefail its early exit can fail the pipeline.)
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == *'install ok installed'* ]]
}

# need_pkgs PKG...: installs the missing Debian packages (root only).
need_pkgs() {
	local missing=() p
	for p in "$@"; do installed "$p" || missing+=("$p"); done
	((${#missing[@]} == 0)) && return 0
	((EUID == 0)) || die "missing Debian packages: ${missing[*]} (run as root to install them)"
	say "installing ${missing[*]}"
	"$apt_get" update -qq
	DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# need_qemu: qemu-system-x86 and qemu-utils as one pair, from bookworm-backports (QEMU
# 10.0: faster TCG than bookworm's 7.2, see shared notes), through a private apt source
# list so the machine's own sources stay as they are. A QEMU already installed is used.
need_qemu() {
	if command -v qemu-system-x86_64 >/dev/null && command -v qemu-img >/dev/null &&
		command -v qemu-io >/dev/null; then
		return 0
	fi
	((EUID == 0)) || die "QEMU is missing (run as root to install it from bookworm-backports)"
	local apt=${TMPDIR:-/tmp}/fpgagdr-vm-apt.$$
	mkdir -p "$apt/lists/partial" "$apt/archives/partial"
	cat >"$apt/sources.list" <<-EOF
		deb http://deb.debian.org/debian bookworm main
		deb http://deb.debian.org/debian bookworm-updates main
		deb http://deb.debian.org/debian-security bookworm-security main
		deb http://deb.debian.org/debian bookworm-backports main
	EOF
	local o=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::lists=$apt/lists" -o "Dir::Cache::archives=$apt/archives")
	say "installing qemu-system-x86 and qemu-utils from bookworm-backports"
	"$apt_get" "${o[@]}" update -qq
	DEBIAN_FRONTEND=noninteractive "$apt_get" "${o[@]}" install -y -qq --no-install-recommends \
		-t bookworm-backports qemu-system-x86 qemu-utils >/dev/null
	rm -rf "$apt"
}

# The host tools the virtual appliance needs.
need_vm_tools() {
	need_qemu
	need_pkgs mmdebstrap ovmf grub-efi-amd64-bin grub-common gdisk dosfstools mtools \
		e2fsprogs rauc squashfs-tools openssl curl jq binutils
}

# --- the serial console of a run ($run/serial.log: the firmware's lines, the guest's) ---
# Boots so far, from the firmware's console lines (grub.cfg prints one per boot).
boots() { grep -c 'fpgagdr-grub: .*booting' "$run/serial.log" || true; }
# The slot of boot N.
boot_slot() {
	grep -a 'fpgagdr-grub: .*booting' "$run/serial.log" | sed -n "${1}p" |
		sed -n 's/.*booting \(rootfs \)\{0,1\}slot \([AB]\).*/\2/p'
}
# boot_log N: the console of boot N (from its firmware line to the next one).
boot_log() {
	tr -d '\r' <"$run/serial.log" | awk -v n="$1" '/fpgagdr-grub: .*booting/ { b++ } b == n'
}
# boot_has N TEXT: whether the console of boot N has a line containing TEXT. awk reads
# the whole log before it answers: `boot_log | grep -q` stops reading at the first
# match, the writer then dies of SIGPIPE, and pipefail turns the match into a failure.
boot_has() {
	boot_log "$1" | awk -v t="$2" 'index($0, t) { found = 1 } END { exit !found }'
}

# log_selftest: the readers above on a made-up console log as long as a real one, the
# line looked for near its start (where `boot_log | grep -q` failed under pipefail).
log_selftest() (
	set -euo pipefail
	run=$(mktemp -d)
	trap 'rm -rf "$run"' EXIT
	{
		echo 'fpgagdr-grub: booting rootfs slot A (2 attempts left)'
		echo 'nv_update_verifier (test double): boot confirmed'
		seq 1 200000 | sed 's/^/[ 1.0] kernel line /'
		echo 'fpgagdr-grub: slot B is unbootable: skipped'
		printf 'fpgagdr-grub: booting rootfs slot B (1 attempts left)\r\n'
		echo 'fpgagdrd: marked slot rootfs.1 as good'
	} >"$run/serial.log"
	[ "$(boots)" = 2 ] || die "self-test: boots counted $(boots), not 2"
	[ "$(boot_slot 2)" = B ] || die "self-test: boot 2's slot read as '$(boot_slot 2)', not B"
	boot_has 1 'nv_update_verifier (test double): boot confirmed' ||
		die "self-test: boot_has missed a line near the start of a long boot"
	boot_has 1 'slot B is unbootable: skipped' || die "self-test: boot_has missed the line before boot 2"
	boot_has 2 'marked slot rootfs.1 as good' || die "self-test: boot_has missed boot 2's line"
	if boot_has 2 'boot confirmed'; then die "self-test: boot_has found boot 1's line in boot 2"; fi
)
