#!/usr/bin/env bash
# The service's code on its own architecture: cross-compiles the workspace's tests for
# aarch64-unknown-linux-gnu and runs a trimmed selection as aarch64 binaries under
# qemu-user (docs/testing.md, "arm64 user space"):
#   - fpgagdr: the library's unit and integration tests (the module's suites skip: no
#     /dev/fpgagdr0 here; they run in the arm64 QEMU guest of kmod/qemu/run.sh);
#   - fpgagdr-uapi: its unit tests and the header test (the C header compiled with
#     aarch64-linux-gnu-gcc and run under qemu-user, so the ABI is checked on arm64);
#   - fpgagdrd: the service started on the simulated card, its REST status, and one
#     inference of a real photo (chelsea.png -> a cat) with the real model through the
#     aarch64 ONNX Runtime 1.31.1 from its PyPI wheel (fetch-deps.sh --onnxruntime-only).
#
# What it installs (Debian, as root; nothing of the host's apt setup is changed):
#   - rustc-web (bookworm-security, Rust 1.96) and, unpacked into .deps/aarch64/sysroot,
#     the same version's libstd-rust-web-dev:arm64: the only aarch64 standard library a
#     package registry gives (rustup's targets come from a server that is not one);
#   - gcc-aarch64-linux-gnu (linker, C compiler), libstdc++6-arm64-cross (ONNX Runtime
#     links it), /usr/aarch64-linux-gnu being the emulated programs' root (-L);
#   - qemu-user from bookworm-backports (QEMU 10): 7.2's qemu-aarch64 segfaults in ONNX
#     Runtime's CPU detection. Without qemu-user-binfmt: the tests run through cargo's
#     target runner and spawn their aarch64 programs through $FPGAGDR_TEST_RUNNER, so no
#     binfmt_misc registration (kernel-wide state, privileged) is needed.
# The build has its own target directory (target/aarch64-cross), so the x86 build with
# the CI's Rust is not touched. Emulated waits are stretched by FPGAGDR_TEST_TIME_SCALE
# (default here $scale below; override with FPGAGDR_ARM64_TIME_SCALE).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
apt_get=$root/appliance/scripts/apt-get.sh
cd "$root"

triple=aarch64-unknown-linux-gnu
cache=$root/.deps/aarch64
scale=${FPGAGDR_ARM64_TIME_SCALE:-10}
prefix=/usr/aarch64-linux-gnu

say() { printf 'arm64-tests: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# apt_install [APT-GET OPTIONS --] PACKAGE...: installs those not installed yet.
apt_install() {
	local opts=() missing=() p
	if [[ " $* " == *" -- "* ]]; then
		while [[ $1 != -- ]]; do
			opts+=("$1")
			shift
		done
		shift
	fi
	for p in "$@"; do installed "$p" || missing+=("$p"); done
	((${#missing[@]} == 0)) && return
	((EUID == 0)) || die "missing packages: ${missing[*]} (run as root to install)"
	say "installing ${missing[*]}"
	"$apt_get" "${opts[@]}" update -qq
	DEBIAN_FRONTEND=noninteractive "$apt_get" "${opts[@]}" install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# A private apt state for the two things the host's sources do not give: bookworm-backports
# (qemu-user 10) and arm64 package indexes (the std library); the host's dpkg database is
# the one installed into, its sources lists are left as they are.
private_apt() {
	local apt=$cache/apt
	mkdir -p "$apt"/{etc/sources.list.d,etc/apt.conf.d,etc/preferences.d,lists/partial,archives/partial}
	cat >"$apt/etc/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: bookworm bookworm-updates bookworm-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: http://deb.debian.org/debian-security
		Suites: bookworm-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	cat >"$apt/apt.conf" <<-EOF
		APT::Architecture "amd64";
		APT::Architectures { "amd64"; "arm64"; };
		APT::Sandbox::User "root";
		Dir::Etc "$apt/etc";
		Dir::Etc::SourceList "/dev/null";
		Dir::Etc::SourceParts "$apt/etc/sources.list.d";
		Dir::Etc::Parts "$apt/etc/apt.conf.d";
		Dir::Etc::Preferences "/dev/null";
		Dir::Etc::PreferencesParts "$apt/etc/preferences.d";
		Dir::State::Lists "$apt/lists";
		Dir::Cache "$apt";
		Dir::Cache::archives "$apt/archives";
		Acquire::Languages "none";
	EOF
	echo "$apt/apt.conf"
}

t0=$SECONDS
say "toolchain and emulator"
[[ $(uname -m) == x86_64 ]] || die "this step cross-builds from x86_64 (this is $(uname -m))"
apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross linux-libc-dev-arm64-cross \
	libstdc++6-arm64-cross rustc-web
aptconf=
if ! qemu-aarch64 --version 2>/dev/null | grep -qE 'version ([1-9][0-9]|[89])\.'; then
	aptconf=$(private_apt)
	APT_CONFIG=$aptconf apt_install -t bookworm-backports -- qemu-user
fi
qemu-aarch64 --version | grep -qE 'version ([1-9][0-9]|[89])\.' ||
	die "qemu-aarch64 $(qemu-aarch64 --version | head -n1) is too old (7.2 crashes in ONNX Runtime; bookworm-backports has 10)"

# The aarch64 standard library of exactly the installed rustc-web's version.
rust_version=$(dpkg-query -W -f='${Version}' rustc-web)
sysroot=$cache/sysroot
if [[ $(cat "$sysroot/version" 2>/dev/null) != "$rust_version" ]]; then
	[[ -n $aptconf ]] || aptconf=$(private_apt)
	APT_CONFIG=$aptconf apt-get update -qq
	rm -rf "$sysroot" "$cache/debs"
	mkdir -p "$cache/debs" "$sysroot"
	(cd "$cache/debs" && APT_CONFIG=$aptconf apt-get download -qq "libstd-rust-web-dev:arm64=$rust_version") ||
		die "libstd-rust-web-dev:arm64 $rust_version (rustc-web's version) is not in the archive: apt-get upgrade rustc-web"
	dpkg -x "$cache"/debs/libstd-rust-web-dev_*_arm64.deb "$sysroot"
	rm -rf "$cache/debs"
	echo "$rust_version" >"$sysroot/version"
fi
[[ -d $sysroot/usr/lib/rustlib/$triple/lib ]] || die "$sysroot has no $triple standard library"
appliance/scripts/fetch-deps.sh --onnxruntime-only aarch64
say "ready in $((SECONDS - t0)) s: $(/usr/bin/rustc --version), $(qemu-aarch64 --version | head -n1)"

# Debian's rustc for both host (build scripts, proc macros) and target; the target's
# flags point at the unpacked std. cc-rs (ring) and the uapi header test use $CC.
export CARGO_TARGET_DIR=$root/target/aarch64-cross
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="--sysroot=$sysroot/usr"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $prefix"
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc CC=aarch64-linux-gnu-gcc HOST_CC=cc
export FPGAGDR_TEST_RUNNER="qemu-aarch64 -L $prefix"
export FPGAGDR_TEST_TIME_SCALE=$scale
export ORT_DYLIB_PATH=$root/.deps/onnxruntime-aarch64/libonnxruntime.so
export FPGAGDR_DATA_DIR=$root/.deps/share

lib=(-p fpgagdr -p fpgagdr-uapi --lib --tests)
svc=(-p fpgagdrd --test service)
svc_tests=(frames_flow_through_the_simulated_card chelsea_is_a_cat)

t=$SECONDS
say "cross-compiling the tests for $triple"
cargo test --locked --target "$triple" "${lib[@]}" --no-run
cargo test --locked --target "$triple" "${svc[@]}" --no-run
build_s=$((SECONDS - t))

t=$SECONDS
say "running under $(qemu-aarch64 --version | head -n1) (waits x$scale)"
cargo test --locked --target "$triple" "${lib[@]}"
cargo test --locked --target "$triple" "${svc[@]}" -- --exact "${svc_tests[@]}"
run_s=$((SECONDS - t))

say "ran as aarch64 binaries: fpgagdr (lib + tests), fpgagdr-uapi (lib + header), fpgagdrd service: ${svc_tests[*]}"
say "build ${build_s} s, emulated run ${run_s} s, step $((SECONDS - t0)) s"
