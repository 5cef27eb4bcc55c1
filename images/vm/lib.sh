# Shared by images/vm/build.sh and images/vm/run.sh (sourced, not run).
# shellcheck shell=bash

say() { printf '== vm: %s\n' "$*" >&2; }
die() {
	printf 'FAIL: vm: %s\n' "$*" >&2
	exit 1
}

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# need_pkgs PKG...: installs the missing Debian packages (root only).
need_pkgs() {
	local missing=() p
	for p in "$@"; do installed "$p" || missing+=("$p"); done
	((${#missing[@]} == 0)) && return 0
	((EUID == 0)) || die "missing Debian packages: ${missing[*]} (run as root to install them)"
	say "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
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
	apt-get "${o[@]}" update -qq
	DEBIAN_FRONTEND=noninteractive apt-get "${o[@]}" install -y -qq --no-install-recommends \
		-t bookworm-backports qemu-system-x86 qemu-utils >/dev/null
	rm -rf "$apt"
}

# The host tools the virtual appliance needs.
need_vm_tools() {
	need_qemu
	need_pkgs mmdebstrap ovmf grub-efi-amd64-bin grub-common gdisk dosfstools mtools \
		e2fsprogs rauc squashfs-tools openssl curl jq binutils
}
