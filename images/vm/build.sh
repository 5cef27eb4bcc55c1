#!/usr/bin/env bash
# Builds the virtual appliance of the OTA reboot suite (images/vm/run.sh; docs/ota.md,
# "Through real reboots"): a disk with an EFI system partition (GRUB, standing in for the
# Jetson's UEFI rootfs A/B policy) and two root file system slots, APP and APP_b, each
# holding a Debian system with systemd, RAUC, fpgagdrd (this workspace's binary), the
# layer's units, RAUC config, boot-control backend and keyring; and two signed bundles.
#
#   images/vm/build.sh          prints the folder of the built artefacts (as root)
#   images/vm/build.sh --tools  only installs the host tools it and run.sh need
#
# Nothing is loop-mounted: the Debian system comes from mmdebstrap (Debian's packages,
# chroot mode), each slot image from `mke2fs -d`, the ESP from mkfs.vfat + mtools, the
# disk from sgdisk + dd, then qemu-img. Artefacts are cached under images/vm/.cache
# (git-ignored), keyed by their inputs: the Debian system by the package list and
# options (a few minutes to build, downloads included), the appliance by everything that
# goes into it (about a minute), so a second run with nothing changed builds nothing.
# Older cache entries are removed.
#
# Output folder:
#   base.qcow2            factory disk: the factory image in both slots, A/B enabled
#   noab.qcow2            overlay of base: rootfs A/B not enabled in the firmware
#   broken-factory.qcow2  overlay of base: a factory image whose service is unhealthy,
#                         in both slots
#   good.raucb            bundle, image version vm-2.0 (plain format, zstd level 3: a
#                         fifth smaller than lz4 and quick to unpack; xz is slow under
#                         emulation), signed with the development keys; with the boot
#                         chain as fpgagdr-bundle carries it on Orin: a TEST DOUBLE
#                         capsule (bootloader 0x00240600, L4T 36.6.0; the factory
#                         firmware is 0x00240500), a TEST DOUBLE L4TLauncher,
#                         fpgagdr-boot.conf, and kernel and dtb images for the slot's
#                         A_/B_kernel and A_/B_kernel-dtb partitions (RAUC child slots)
#   broken.raucb          bundle, image vm-2.0-broken: the image lacks the service's user,
#                         so fpgagdrd.service never comes up
#   nocard.raucb          bundle, image vm-2.0-nocard: healthy, but without the card's
#                         test double (an update that breaks the module)
#   norauc.raucb          bundle, image vm-2.0-norauc: RAUC's system.conf is broken, so
#                         RAUC never comes up on the bus (an update that breaks RAUC)
#   bundles.img           an ext4 disk image holding nocard.raucb and norauc.raucb, for a
#                         second drive the suite installs from with `rauc install`
#
# Environment: FPGAGDRD_BIN (default target/debug/fpgagdrd, built when missing),
# FPGAGDR_VM_CACHE (default images/vm/.cache).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$here/lib.sh"
cd "$root"

cache=${FPGAGDR_VM_CACHE:-$here/.cache}
layer=$root/meta-fpgagdr
keys=$root/images/rauc/dev-keys
compatible=fpgagdr-vm
slot_mib=448
esp_mib=32
# The slots' kernel and kernel-dtb partitions (A_kernel, B_kernel, A_kernel-dtb,
# B_kernel-dtb, as on the Jetson), written by RAUC with their rootfs slot.
boot_part_mib=1
# GPT partition GUIDs (the kernel finds its root by PARTUUID, grub.cfg picks the slot).
esp_uuid=5b1f07c2-8a0e-4c57-9d4e-2f6a3c1e0001
a_uuid=5b1f07c2-8a0e-4c57-9d4e-2f6a3c1e000a
b_uuid=5b1f07c2-8a0e-4c57-9d4e-2f6a3c1e000b

suite=trixie
mirror=http://deb.debian.org/debian
# RAUC: trixie's 1.13 is the newest in a Debian release or its backports (the image ships
# 1.15, which only Debian testing has). linux-image-cloud-amd64: ext4 and NVMe built in,
# so the kernel needs no initramfs (tiny-initramfs only satisfies the package's
# dependency). e2fsprogs: chattr for efivarfs (backend), mkfs/fsck (RAUC). squashfs-tools:
# RAUC reads a plain bundle's manifest with unsquashfs.
packages=(systemd-sysv udev dbus rauc rauc-service linux-image-cloud-amd64 tiny-initramfs
	e2fsprogs kmod squashfs-tools)
mmopts=(--mode=root --variant=essential --format=tar "--include=$(
	IFS=,
	echo "${packages[*]}"
)" --dpkgopt=force-unsafe-io)
for p in doc man locale info; do mmopts+=("--dpkgopt=path-exclude=/usr/share/$p/*"); done

if [ "${1:-}" = --tools ]; then
	need_vm_tools
	exit 0
fi
((EUID == 0)) || die "building the disk image needs root (mmdebstrap's chroot, file owners in the slot images)"
need_vm_tools
bin=${FPGAGDRD_BIN:-$root/target/debug/fpgagdrd}
if [ -z "${FPGAGDRD_BIN:-}" ]; then cargo build --locked -q -p fpgagdrd --bin fpgagdrd; fi
[ -x "$bin" ] || die "$bin is missing"
# The data directory as fpgagdr-data installs it: appliance/scripts/fetch-deps.sh fills it.
data=$root/.deps/share
if [ ! -d "$data/models" ] || [ ! -d "$data/frames" ]; then
	die "$data has no models/ or frames/: run appliance/scripts/fetch-deps.sh"
fi
images/rauc/make-dev-keys.sh >/dev/null
mkdir -p "$cache"

# --- the Debian system, keyed by what mmdebstrap is asked for
deb_key=$(printf '%s\n' "$suite" "$mirror" "${mmopts[@]}" | sha256sum | cut -c1-16)
deb=$cache/debian-$deb_key.tar
if [ ! -f "$deb" ]; then
	say "Debian $suite system with ${packages[*]} (mmdebstrap, from $mirror)"
	t=$SECONDS
	mmdebstrap "${mmopts[@]}" "$suite" "$deb.part" "$mirror" >"$cache/mmdebstrap.log" 2>&1 ||
		{ tail -n 30 "$cache/mmdebstrap.log" >&2; die "mmdebstrap failed (log: $cache/mmdebstrap.log)"; }
	mv "$deb.part" "$deb"
	say "Debian system built in $((SECONDS - t)) s"
fi

# --- the appliance, keyed by every input
inputs=("$here/build.sh" "$here/lib.sh" "$here/grub.cfg" "$here/nvbootctrl-grubenv-test-double"
	"$here"/guest/* "$layer/recipes-core/rauc/files/rauc-nvbootctrl-backend.sh"
	"$layer/recipes-core/rauc/files/system.conf" "$layer/recipes-core/rauc/files/system-boot-slots.conf"
	"$layer/recipes-core/rauc/files/50-fpgagdr-nv-boot-control.conf"
	"$layer/recipes-core/rauc-health/files/fpgagdr-mark-good.service"
	"$layer/recipes-core/rauc-health/files/50-fpgagdr-health-gate.conf"
	"$layer/recipes-appliance/fpgagdrd/files/fpgagdrd.service"
	"$layer/recipes-appliance/fpgagdrd/files/fpgagdrd.default"
	"$layer/recipes-core/bundles/files/fpgagdr-bundle-hooks.sh"
	"$bin" "$keys/ca.cert.pem" "$keys/signing.cert.pem"
	"$data"/models/* "$data"/frames/*)
key=$( (
	echo "$deb_key"
	sha256sum "${inputs[@]}" | cut -d' ' -f1
) | sha256sum | cut -c1-16)
out=$cache/appliance-$key
if [ -f "$out/base.qcow2" ]; then
	echo "$out"
	exit 0
fi

say "appliance image (slots of $slot_mib MiB; cache key $key)"
t=$SECONDS
rm -rf "$out.part"
mkdir -p "$out.part"
work=$out.part/work
tree=$work/tree
mkdir -p "$tree"
tar -C "$tree" --numeric-owner -xpf "$deb"

# Installed as the layer's recipes install them (fpgagdrd_git.bb, rauc-conf.bbappend,
# fpgagdr-mark-good_1.0.bb, fpgagdr-data_1.0.bb), Debian paths for libdir. Not installed:
# ONNX Runtime. The VM never starts the pipeline (its config says autostart false):
# loading the model alone takes minutes of emulated CPU. The data directory is there all
# the same: a config is judged at boot by the rules a PUT passes, its files found and
# opened, so the site config is in force (and a PATCH that changes nothing is a no-op).
subst() { # subst FILE: the layer's @...@ placeholders
	sed -e 's,@bindir@,/usr/bin,g' -e 's,@libdir@,/usr/lib,g' -e 's,@datadir@,/usr/share,g' \
		-e 's,@sysconfdir@,/etc,g' -e "s,@COMPATIBLE@,$compatible," -e 's,@KEYRING@,ca.cert.pem,' \
		-e 's,@STATUSFILE@,/var/lib/rauc/central.raucs,' -e 's,@LIBEXECDIR@,/usr/libexec,' "$1"
}
objcopy --strip-debug "$bin" "$tree/usr/bin/fpgagdrd"
install -d "$tree/usr/share/fpgagdr/models" "$tree/usr/share/fpgagdr/frames"
install -m 0644 "$data"/models/efficientnet-lite0.onnx "$data"/models/efficientnet-lite0.labels.txt \
	"$tree/usr/share/fpgagdr/models/"
install -m 0644 "$data"/frames/* "$tree/usr/share/fpgagdr/frames/"
subst "$layer/recipes-appliance/fpgagdrd/files/fpgagdrd.service" >"$tree/usr/lib/systemd/system/fpgagdrd.service"
subst "$layer/recipes-core/rauc-health/files/fpgagdr-mark-good.service" \
	>"$tree/usr/lib/systemd/system/fpgagdr-mark-good.service"
{
	cat "$layer/recipes-appliance/fpgagdrd/files/fpgagdrd.default"
	cat "$here/guest/fpgagdrd.default.vm"
} >"$tree/etc/default/fpgagdrd"
install -d "$tree/etc/rauc" "$tree/var/lib/rauc" "$tree/usr/libexec/fpgagdr" "$tree/usr/libexec/fpgagdr-vm"
# system.conf as rauc-conf.bbappend installs it where bundles carry the boot chain (Orin):
# with the kernel and dtb child slots.
cat "$layer/recipes-core/rauc/files/system.conf" "$layer/recipes-core/rauc/files/system-boot-slots.conf" |
	subst /dev/stdin >"$tree/etc/rauc/system.conf"
install -D -m 0644 "$layer/recipes-core/rauc/files/50-fpgagdr-nv-boot-control.conf" \
	"$tree/usr/lib/systemd/system/rauc.service.d/50-fpgagdr-nv-boot-control.conf"
install -D -m 0644 "$here/guest/rauc-vm.conf" "$tree/etc/systemd/system/rauc.service.d/vm.conf"
install -m 0644 "$keys/ca.cert.pem" "$tree/etc/rauc/ca.cert.pem"
install -m 0755 "$layer/recipes-core/rauc/files/rauc-nvbootctrl-backend.sh" \
	"$tree/usr/libexec/fpgagdr/rauc-nvbootctrl-backend"
install -m 0755 "$here/nvbootctrl-grubenv-test-double" "$tree/usr/libexec/fpgagdr-vm/"
ln -sf ../libexec/fpgagdr-vm/nvbootctrl-grubenv-test-double "$tree/usr/sbin/nvbootctrl"
# meta-tegra's nv_update_verifier.service (its test double here) with the layer's drop-in
# (fpgagdr-mark-good_1.0.bb installs it): nvbootctrl verify only after the health gate.
install -m 0644 "$here/guest/nv_update_verifier.service" "$tree/usr/lib/systemd/system/"
install -D -m 0644 "$layer/recipes-core/rauc-health/files/50-fpgagdr-health-gate.conf" \
	"$tree/usr/lib/systemd/system/nv_update_verifier.service.d/50-fpgagdr-health-gate.conf"
install -m 0644 "$here/guest/fpgagdr.sysusers" "$tree/usr/lib/sysusers.d/fpgagdr.conf"
systemd-sysusers --root="$tree" "$tree/usr/lib/sysusers.d/fpgagdr.conf" >/dev/null 2>&1
uid=$(awk -F: '$1 == "fpgagdr" { print $3 ":" $4 }' "$tree/etc/passwd")
[ -n "$uid" ] || die "the fpgagdr user was not created"
install -d -m 0750 -o "${uid%:*}" -g "${uid#*:}" "$tree/etc/fpgagdr"
install -m 0644 "$here/guest/fstab" "$tree/etc/fstab"
install -d "$tree/boot/efi" "$tree/etc/systemd/network"
install -m 0644 "$here/guest/20-wired.network" "$tree/etc/systemd/network/"
echo fpgagdr-vm >"$tree/etc/hostname"
install -m 0644 "$here/guest/fpgagdr-vm-console.service" "$here/guest/fpgagdr-card-test-double.service" \
	"$tree/usr/lib/systemd/system/"
for u in fpgagdrd fpgagdr-mark-good; do
	install -D -m 0644 "$here/guest/console.conf" "$tree/etc/systemd/system/$u.service.d/console.conf"
done
systemctl --root="$tree" enable systemd-networkd.service fpgagdrd.service fpgagdr-mark-good.service \
	nv_update_verifier.service fpgagdr-vm-console.service fpgagdr-card-test-double.service >/dev/null 2>&1
# Less to do at every emulated boot: no login prompts, no logind, no scrubbing or trim
# timers, a journal in memory, and the first-boot ldconfig already done.
systemctl --root="$tree" disable e2scrub_reap.service getty@tty1.service systemd-pstore.service \
	dpkg-db-backup.timer e2scrub_all.timer fstrim.timer >/dev/null 2>&1
systemctl --root="$tree" mask systemd-logind.service serial-getty@ttyS0.service >/dev/null 2>&1
install -D -m 0644 "$here/guest/journald.conf" "$tree/etc/systemd/journald.conf.d/vm.conf"
install -m 0644 "$here/guest/modprobe.conf" "$tree/etc/modprobe.d/fpgagdr-vm.conf"
kernel=$(cd "$tree/boot" && ls vmlinuz-*)
ln -sf "$kernel" "$tree/boot/vmlinuz"
rm -f "$tree"/boot/initrd.img-*
ldconfig -r "$tree"
for f in etc/.updated var/.updated; do
	printf 'TIMESTAMP_NSEC=%s\n' "$(stat -c %.9Y "$tree/usr" | tr -d .)" >"$tree/$f"
	touch -r "$tree/usr" "$tree/$f"
done

# slot_image NAME VERSION [VARIANT] [MIB]: an ext4 image of the tree with that image
# version, MIB in size (default: the contents plus a quarter and 32 MiB, as a build
# sizes a bundle's image; RAUC grows it to the slot, system.conf resize=true).
# VARIANT broken: a release whose image lacks the service's user (a packaging mistake),
# so fpgagdrd.service fails at every start (status 217/USER) and the API never answers;
# fpgagdr-mark-good.service, which runs as root, still works. nocard: the card's test
# double is left out (the update broke the module); the service is healthy on its
# simulated card. norauc: RAUC's system.conf does not parse, so RAUC never comes up on
# the bus (an update that broke RAUC); everything else is healthy.
slot_image() {
	local f mib=${4:-$(($(du -sm "$tree" | cut -f1) * 5 / 4 + 32))} keep=$work/keep
	echo "$2" >"$tree/etc/fpgagdr-image-version"
	rm -rf "$keep"
	mkdir -p "$keep"
	case ${3:-} in
	broken)
		for f in passwd group shadow gshadow; do
			[ -f "$tree/etc/$f" ] || continue
			cp -p "$tree/etc/$f" "$keep/$f"
			sed -i '/^fpgagdr:/d' "$tree/etc/$f"
		done
		;;
	nocard)
		mv "$tree/etc/systemd/system/sysinit.target.wants/fpgagdr-card-test-double.service" "$keep/"
		;;
	norauc)
		cp -p "$tree/etc/rauc/system.conf" "$keep/"
		printf '[system\ncompatible=\n' >"$tree/etc/rauc/system.conf"
		;;
	esac
	mke2fs -q -t ext4 -L rootfs -m 1 -d "$tree" "$work/$1.ext4" "${mib}M" >/dev/null
	case ${3:-} in
	broken) for f in "$keep"/*; do mv "$f" "$tree/etc/"; done ;;
	nocard) mv "$keep/fpgagdr-card-test-double.service" "$tree/etc/systemd/system/sysinit.target.wants/" ;;
	norauc) mv "$keep/system.conf" "$tree/etc/rauc/system.conf" ;;
	esac
}
# The factory image carries a site's config (set over the API on a real device); the
# bundles carry the release default, so the suite can tell a carried config from the
# image's own.
install -m 0600 -o "${uid%:*}" -g "${uid#*:}" "$here/guest/config.json" "$tree/etc/fpgagdr/config.json"
# The factory slots fill their partitions, as the flashing tool writes them.
slot_image factory vm-1.0 "" "$slot_mib"
slot_image broken-factory vm-1.0-broken broken "$slot_mib"
echo '{"autostart": false}' >"$tree/etc/fpgagdr/config.json"
slot_image good vm-2.0
slot_image broken vm-2.0-broken broken
slot_image nocard vm-2.0-nocard nocard
slot_image norauc vm-2.0-norauc norauc

# The ESP: GRUB (standing in for the Jetson's UEFI A/B policy), its config and environment.
grub-mkimage -O x86_64-efi -p /EFI/BOOT -o "$work/BOOTX64.EFI" \
	part_gpt fat ext2 normal configfile linux loadenv test true echo regexp sleep reboot halt
sed -e "s/@PARTUUID_A@/$a_uuid/" -e "s/@PARTUUID_B@/$b_uuid/" "$here/grub.cfg" >"$work/grub.cfg"
esp() { # esp IMAGE AB
	grub-editenv "$work/grubenv" create
	grub-editenv "$work/grubenv" set "ROOTFS_AB=$2" ROOTFS_ACTIVE=A ROOTFS_CURRENT=A \
		ROOTFS_STATUS_A=normal ROOTFS_STATUS_B=normal ROOTFS_RETRY_A=3 ROOTFS_RETRY_B=3 \
		FW_VERSION_A=0x00240500 FW_VERSION_B=0x00240500 FW_LOWEST=0x00240500 CAPSULE_STAGED=0
	rm -f "$1"
	mkfs.vfat -n ESP -C "$1" $((esp_mib * 1024)) >/dev/null
	mmd -i "$1" ::/EFI ::/EFI/BOOT
	mcopy -i "$1" "$work/BOOTX64.EFI" "$work/grub.cfg" "$work/grubenv" ::/EFI/BOOT/
}
esp "$work/esp.img" 1
esp "$work/esp-noab.img" 0

# The factory's kernel and kernel-dtb partition contents (TEST DOUBLES: the VM boots its
# kernel from the rootfs slot through GRUB; these only show which image RAUC wrote).
for part in kernel dtb; do
	printf 'vm-1.0 %s partition (test double)\n' "$part" >"$work/factory-$part.img"
	printf 'vm-2.0 %s partition (test double)\n' "$part" >"$work/bundle-$part.img"
done

# disk RAW ESP SLOT_A SLOT_B: the ESP, APP, APP_b, then A_kernel, B_kernel, A_kernel-dtb,
# B_kernel-dtb with the factory's contents.
disk() {
	truncate -s $((1 + esp_mib + 2 * slot_mib + 4 * boot_part_mib + 1))M "$1"
	sgdisk --clear -n "1:1M:+${esp_mib}M" -t 1:ef00 -c 1:esp -u "1:$esp_uuid" \
		-n "2:0:+${slot_mib}M" -t 2:8300 -c 2:APP -u "2:$a_uuid" \
		-n "3:0:+${slot_mib}M" -t 3:8300 -c 3:APP_b -u "3:$b_uuid" \
		-n "4:0:+${boot_part_mib}M" -c 4:A_kernel -n "5:0:+${boot_part_mib}M" -c 5:B_kernel \
		-n "6:0:+${boot_part_mib}M" -c 6:A_kernel-dtb -n "7:0:+${boot_part_mib}M" -c 7:B_kernel-dtb \
		"$1" >/dev/null
	local at=1 img
	for img in "$2" "$3" "$4"; do
		dd if="$img" of="$1" bs=1M seek="$at" conv=notrunc,sparse status=none
		if [ "$img" = "$2" ]; then at=$((at + esp_mib)); else at=$((at + slot_mib)); fi
	done
	for img in kernel kernel dtb dtb; do
		dd if="$work/factory-$img.img" of="$1" bs=1M seek="$at" conv=notrunc status=none
		at=$((at + boot_part_mib))
	done
}
disk "$work/base.raw" "$work/esp.img" "$work/factory.ext4" "$work/factory.ext4"
qemu-img convert -O qcow2 "$work/base.raw" "$out.part/base.qcow2"
disk "$work/noab.raw" "$work/esp-noab.img" "$work/factory.ext4" "$work/factory.ext4"
disk "$work/broken-factory.raw" "$work/esp.img" "$work/broken-factory.ext4" "$work/broken-factory.ext4"
for v in noab broken-factory; do
	(cd "$out.part" && qemu-img convert -O qcow2 -B base.qcow2 -F qcow2 "$work/$v.raw" "$v.qcow2")
done

# Bundles, as fpgagdr-bundle_1.0.bb makes them: the rootfs image, the layer's hooks
# (install-check; post-install of the rootfs slot), signed with the development keys.
# bundle NAME VERSION [boot]: boot: with the boot chain, as fpgagdr-bundle makes it with
# FPGAGDR_BUNDLE_CAPSULE = "1" (TEST DOUBLES of the capsule and the launcher).
bundle() {
	local b=$work/bundle-$1
	mkdir -p "$b"
	mv "$work/$1.ext4" "$b/rootfs.ext4"
	install -m 0755 "$layer/recipes-core/bundles/files/fpgagdr-bundle-hooks.sh" "$b/hook.sh"
	cat >"$b/manifest.raucm" <<-EOF
		[update]
		compatible=$compatible
		version=$2
		description=fpgagdr virtual appliance $2

		[bundle]
		format=plain

		[hooks]
		filename=hook.sh
		hooks=install-check

		[image.rootfs]
		filename=rootfs.ext4
		hooks=post-install
	EOF
	if [ "${3:-}" = boot ]; then
		cat >"$b/tegra-bl.cap" <<-EOF
			# TEST DOUBLE of meta-tegra's tegra-bl.cap (images/vm): the VM's firmware double
			# (grub.cfg) reads it as a GRUB script; all it says is its version.
			set CAPSULE_VERSION=0x00240600
		EOF
		printf 'L4TLauncher of L4T 36.6.0 (test double)\n' >"$b/BOOTAA64.efi"
		printf 'bootloader_version=0x00240600\nl4t_version=36.6.0\n' >"$b/fpgagdr-boot.conf"
		cp "$work/bundle-kernel.img" "$b/kernel.img"
		cp "$work/bundle-dtb.img" "$b/dtb.img"
		printf '\n[image.kernel]\nfilename=kernel.img\n\n[image.dtb]\nfilename=dtb.img\n' >>"$b/manifest.raucm"
	fi
	rauc bundle --cert="$keys/signing.cert.pem" --key="$keys/signing.key.pem" \
		--mksquashfs-args="-comp zstd -Xcompression-level 3" "$b" "$out.part/$1.raucb" >/dev/null 2>&1 ||
		die "rauc bundle $1 failed"
}
bundle good vm-2.0 boot
bundle broken vm-2.0-broken
bundle nocard vm-2.0-nocard
bundle norauc vm-2.0-norauc
# A second drive with the bundles the fallback scenario installs with `rauc install` (no
# upload over the emulated network: that path is the update scenario's).
mkdir -p "$work/bundles"
ln "$out.part/nocard.raucb" "$out.part/norauc.raucb" "$work/bundles/"
mke2fs -q -t ext4 -L bundles -d "$work/bundles" "$out.part/bundles.img" \
	"$(($(du -sm "$work/bundles" | cut -f1) * 5 / 4 + 32))M" >/dev/null

rm -rf "$work"
find "$cache" -mindepth 1 -maxdepth 1 -name 'appliance-*' ! -name "appliance-$key*" -exec rm -rf {} +
find "$cache" -mindepth 1 -maxdepth 1 -name 'debian-*.tar' ! -name "debian-$deb_key.tar" -delete
mv "$out.part" "$out"
say "appliance built in $((SECONDS - t)) s: $(du -sh "$out" | cut -f1) in $out"
echo "$out"
