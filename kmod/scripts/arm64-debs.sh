# shellcheck shell=bash
# Sourced by scripts/check.sh and qemu/run.sh: Debian's arm64 kernel, its
# headers and a static busybox, fetched from Debian's archive with
# apt-get download through a private apt configuration (the host's apt
# setup is neither read nor changed), unpacked with dpkg -x and cached in
# kmod/.cache/arm64/ (git-ignored).  The arm64 headers' Makefile includes
# the architecture-independent linux-headers-<abi>-common that the host's
# amd64 headers package installed, and their scripts/ and tools/ are
# relative links into linux-kbuild-6.1 (Multi-Arch: foreign), so the
# host's amd64 kbuild serves them through one link in the unpacked tree.
#
# arm64_debs ABI (e.g. 6.1.0-57, the host headers' version) sets
# ARM64_ROOT (the unpacked tree: boot/vmlinuz-ABI-arm64, lib/modules/,
# bin/busybox) and ARM64_KDIR (the headers, for KDIR=).

arm64_debs() {
	local abi=$1 cache dir apt pkgs=() p
	cache=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/arm64
	dir=$cache/$abi
	apt=$cache/apt
	ARM64_ROOT=$dir/root
	ARM64_KDIR=$ARM64_ROOT/usr/src/linux-headers-$abi-arm64
	if [[ -f $dir/done && -f $ARM64_ROOT/boot/vmlinuz-$abi-arm64 ]]; then
		return
	fi
	[[ -d /usr/src/linux-headers-$abi-common ]] ||
		{ echo "arm64: /usr/src/linux-headers-$abi-common is missing (linux-headers-amd64 installs it)" >&2; return 1; }
	[[ -d /usr/lib/linux-kbuild-${abi%%.0-*} ]] ||
		{ echo "arm64: /usr/lib/linux-kbuild-${abi%%.0-*} is missing" >&2; return 1; }
	echo "== arm64: fetching Debian's arm64 kernel $abi, its headers and busybox-static"
	rm -rf "$dir"
	mkdir -p "$apt"/{etc/sources.list.d,etc/preferences.d,etc/apt.conf.d,lists/partial,archives/partial} \
		"$dir/debs" "$ARM64_ROOT"
	cat >"$apt/etc/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: bookworm bookworm-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: http://deb.debian.org/debian-security
		Suites: bookworm-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	cat >"$apt/apt.conf" <<-EOF
		APT::Architecture "arm64";
		APT::Architectures { "arm64"; };
		APT::Sandbox::User "root";
		Dir::Etc "$apt/etc";
		Dir::Etc::SourceList "/dev/null";
		Dir::Etc::SourceParts "$apt/etc/sources.list.d";
		Dir::Etc::Parts "$apt/etc/apt.conf.d";
		Dir::Etc::Preferences "/dev/null";
		Dir::Etc::PreferencesParts "$apt/etc/preferences.d";
		Dir::State "$apt";
		Dir::State::Lists "$apt/lists";
		Dir::State::status "/dev/null";
		Dir::Cache "$apt";
		Dir::Cache::archives "$apt/archives";
		Acquire::Languages "none";
	EOF
	APT_CONFIG=$apt/apt.conf apt-get update -qq
	pkgs=("linux-image-$abi-arm64" "linux-headers-$abi-arm64" busybox-static)
	(cd "$dir/debs" && APT_CONFIG=$apt/apt.conf apt-get download -qq "${pkgs[@]}")
	for p in "$dir"/debs/*.deb; do
		dpkg -x "$p" "$ARM64_ROOT"
	done
	mkdir -p "$ARM64_ROOT/usr/lib"
	ln -sfn "/usr/lib/linux-kbuild-${abi%%.0-*}" \
		"$ARM64_ROOT/usr/lib/linux-kbuild-${abi%%.0-*}"
	[[ -f $ARM64_ROOT/boot/vmlinuz-$abi-arm64 && -d $ARM64_KDIR &&
		-x $ARM64_ROOT/bin/busybox ]] ||
		{ echo "arm64: the downloaded packages lack the kernel, headers or busybox" >&2; return 1; }
	touch "$dir/done"
}
