#!/bin/sh
# RAUC bundle hooks of fpgagdr-bundle (RAUC_BUNDLE_HOOKS). RAUC runs this from the mounted
# bundle with the hook name as $1.
#
#   install-check      refuse early (before anything is written) when the device has no
#                      rootfs A/B redundancy: the backend would refuse later anyway.
#   slot-post-install  for the rootfs slot: when the bundle carries the bootloader capsule
#                      (tegra-bl.cap, meta-tegra's UEFI capsule), stage it on the ESP and
#                      ask UEFI to apply it at the next boot (OsIndications bit 2).
#
# Environment for tests (device defaults otherwise): FPGAGDR_ESP_DIR (a mounted ESP;
# default: mount /dev/disk/by-partlabel/esp), FPGAGDR_EFIVARS_DIR, FPGAGDR_NVBOOTCTRL.
set -eu

EFIVARS=${FPGAGDR_EFIVARS_DIR:-/sys/firmware/efi/efivars}
NVBOOTCTRL=${FPGAGDR_NVBOOTCTRL:-nvbootctrl}
GLOBAL_GUID=8be4df61-93ca-11d2-aa0d-00e098032b8c

die() {
	echo "fpgagdr-bundle-hooks: $*" >&2
	exit 1
}

stage_capsule() {
	cap="${RAUC_BUNDLE_MOUNT_POINT:?}/tegra-bl.cap"
	[ -f "$cap" ] || return 0
	esp=${FPGAGDR_ESP_DIR:-}
	mounted=""
	if [ -z "$esp" ]; then
		esp=$(mktemp -d)
		mount /dev/disk/by-partlabel/esp "$esp" || die "cannot mount the ESP to stage the capsule"
		mounted=1
	fi
	mkdir -p "$esp/EFI/UpdateCapsule"
	cp "$cap" "$esp/EFI/UpdateCapsule/TEGRA_BL.Cap.tmp"
	sync
	mv "$esp/EFI/UpdateCapsule/TEGRA_BL.Cap.tmp" "$esp/EFI/UpdateCapsule/TEGRA_BL.Cap"
	sync
	if [ -n "$mounted" ]; then umount "$esp" && rmdir "$esp"; fi
	var="$EFIVARS/OsIndications-$GLOBAL_GUID"
	if [ -e "$var" ]; then chattr -i "$var" 2>/dev/null || true; fi
	# Attributes NV+BS+RT, then EFI_OS_INDICATIONS_FILE_CAPSULE_DELIVERY_SUPPORTED (bit 2).
	printf '\007\000\000\000\004\000\000\000\000\000\000\000' | dd of="$var" bs=12 count=1 2>/dev/null ||
		die "cannot set $var: the capsule is staged but will not be applied"
	echo "fpgagdr-bundle-hooks: bootloader capsule staged; UEFI applies it at the next boot"
}

case ${1:-} in
install-check)
	n=$("$NVBOOTCTRL" -t rootfs get-number-slots 2>/dev/null) || n=0
	[ "$n" = 2 ] || die "rootfs A/B redundancy is not enabled on this device: refusing the update (flash the A/B layout first)"
	;;
slot-post-install)
	[ "${RAUC_SLOT_CLASS:-}" = rootfs ] && stage_capsule
	;;
*) ;;
esac
exit 0
