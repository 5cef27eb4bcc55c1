#!/bin/sh
# RAUC bundle hooks of fpgagdr-bundle (RAUC_BUNDLE_HOOKS). RAUC runs this from the mounted
# bundle with the hook name as $1.
#
#   install-check      RAUC runs this *instead of* its own compatible check, so it does
#                      that check itself: the bundle's compatible (RAUC_MF_COMPATIBLE)
#                      must equal the system's (RAUC_SYSTEM_COMPATIBLE, system.conf).
#                      It also refuses a device without rootfs A/B redundancy (the
#                      backend would refuse later anyway), and a bundle whose bootloader
#                      capsule is older than the firmware accepts (the ESRT's
#                      lowest_supported_fw_version: meta-tegra's
#                      TEGRA_UEFI_LOWEST_SUPPORTED_VERSION, no downgrade). All before
#                      anything is written; a refusal exits with RAUC's rejection code
#                      (10 or more) and the reason as the last line on stderr, which RAUC
#                      reports ("Hook returned: ..."). Once accepted, a bootloader capsule
#                      that an earlier installation staged and no reboot has applied yet
#                      is withdrawn: it belongs to another bundle, and it would switch
#                      the boot chain to the slot this installation is about to rewrite.
#   slot-post-install  for the rootfs slot, mounted read-write by RAUC:
#                      1. carry the appliance's settings and state over from the running
#                         system into the new slot (list below), so an update keeps the
#                         config, the API token and the device's identity; then write
#                         the installation marker /var/lib/fpgagdr/ota/installation
#                         (id=<uuid>, slot, time) that tells fpgagdrd
#                         --mark-good-after-health this slot came from an update (a slot
#                         without one is a factory boot, never marked bad), and whether
#                         the appliance has its card now (card=present: the fpgagdr
#                         module's /dev/fpgagdr0 exists; the new slot must see it too);
#                      2. when the bundle carries the boot chain (fpgagdr-boot.conf with
#                         its bootloader version, tegra-bl.cap, meta-tegra's UEFI
#                         capsule, and BOOTAA64.efi, the L4TLauncher of the same release)
#                         and the chain to be updated does not hold that version
#                         already (EFI/fpgagdr/boot-chains on the ESP, kept by
#                         fpgagdrd --mark-good-after-health; a chain not recorded is
#                         updated): put the launcher on the ESP, stage the capsule on it
#                         and ask UEFI to apply it at the next boot (OsIndications bit 2),
#                         and leave EFI/fpgagdr/capsule-pending for mark-good to read the
#                         result after the reboot. UEFI then updates the other boot chain
#                         and switches to it, and the rootfs slot follows (L4T R36); the
#                         boot-control backend therefore leaves the chain alone when RAUC
#                         makes the slot primary. Same version: nothing is staged, the
#                         backend switches the chain as for any update.
#                      A failure in either fails the installation: RAUC then leaves the
#                      primary slot as it was, and the half-written slot is never booted.
#
# Carried over (each only when present on the running system; the new slot's copy is
# replaced; files land under a temporary name and are renamed into place):
#   /etc/fpgagdr/             config.json (REST-edited config) and token (API token);
#                             owner set to the new slot's /etc/fpgagdr owner (the fpgagdr
#                             user's uid may differ between builds), modes kept
#   /var/lib/fpgagdr/         service state, except ota/ (the spool holds the bundle being
#                             installed, and the mark-good stamp belongs to this slot)
#   /etc/default/fpgagdrd     site settings (listen address, card, stall limit); settings
#                             added by a newer version keep their defaults from the unit
#   /etc/machine-id           when it holds an id: DHCP client id and journal stay the same
#   /etc/ssh/ssh_host_*       the SSH host keys: clients see the same host after an update
#   /etc/rauc-hawkbit-updater/config.conf and its enablement link: fleet updates go on
#   the admin user's password (its /etc/shadow hash and last-change day, so the one set
#   at the first login stays and is not expired again) and its ~/.ssh/authorized_keys
#   (keys added by images/flash.sh --ssh-key or by hand), owned by the new image's admin
# Not carried: other accounts (the new image's /etc/passwd and /etc/shadow stay), other
# changes made by hand under /etc, anything changed after the installation and before
# the reboot.
#
# Environment for tests (device defaults otherwise): FPGAGDR_CARRY_FROM (the running
# system's root; default /), FPGAGDR_ESP_DIR (a mounted ESP; default: /boot/efi where
# meta-tegra's esp.mount mounts it, else /dev/disk/by-partlabel/esp mounted here),
# FPGAGDR_EFIVARS_DIR, FPGAGDR_NVBOOTCTRL, FPGAGDR_ESRT_DIR (default
# /sys/firmware/efi/esrt), FPGAGDR_CARD_NODE (default <running system>/dev/fpgagdr0).
set -eu

EFIVARS=${FPGAGDR_EFIVARS_DIR:-/sys/firmware/efi/efivars}
NVBOOTCTRL=${FPGAGDR_NVBOOTCTRL:-nvbootctrl}
ESRT=${FPGAGDR_ESRT_DIR:-/sys/firmware/efi/esrt}
GLOBAL_GUID=8be4df61-93ca-11d2-aa0d-00e098032b8c
OSINDICATIONS="$EFIVARS/OsIndications-$GLOBAL_GUID"

die() {
	echo "fpgagdr-bundle-hooks: $*" >&2
	exit 1
}

# RAUC's install-check hook rejects a bundle with an exit code of 10 or more
# (INSTALL_HOOK_REJECT_CODE); the last line on stderr is the reason it reports.
REJECT=10
reject() {
	echo "fpgagdr-bundle-hooks: $*" >&2
	exit "$REJECT"
}

install_check() {
	sys=${RAUC_SYSTEM_COMPATIBLE:-}
	mf=${RAUC_MF_COMPATIBLE:-}
	[ -n "$sys" ] || reject "RAUC passed no system compatible (RAUC_SYSTEM_COMPATIBLE): refusing the bundle"
	[ "$mf" = "$sys" ] ||
		reject "compatible mismatch: the bundle is for '$mf' but this system is '$sys': refusing it (nothing written)"
	n=$("$NVBOOTCTRL" -t rootfs get-number-slots 2>/dev/null) || n=0
	[ "$n" = 2 ] ||
		reject "rootfs A/B redundancy is not enabled on this device: refusing the update (flash the A/B layout first)"
	# The bundle's files: RAUC runs this hook from the mounted bundle (RAUC 1.8 names no
	# RAUC_BUNDLE_MOUNT_POINT for install-check).
	boot_conf=${RAUC_BUNDLE_MOUNT_POINT:-$(dirname "$0")}/fpgagdr-boot.conf
	if [ -f "$boot_conf" ]; then
		want=$(conf_value "$boot_conf" bootloader_version)
		lowest=$(esrt_value lowest_supported_fw_version)
		if [ -n "$want" ] && [ -n "$lowest" ] && [ $((want)) -lt $((lowest)) ]; then
			reject "the bundle's bootloader $want is older than the lowest this firmware accepts ($(hex "$lowest"); meta-tegra's TEGRA_UEFI_LOWEST_SUPPORTED_VERSION, no bootloader downgrade): refusing the update"
		fi
	fi
	withdraw_capsule
}

# conf_value FILE KEY: KEY's value in FILE (KEY=VALUE lines).
conf_value() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

# esrt_value NAME: NAME (fw_version, lowest_supported_fw_version, ...) of the system
# firmware's ESRT entry (fw_type 1, else the first); empty without an ESRT.
esrt_value() {
	first=""
	for e in "$ESRT"/entries/entry*; do
		[ -f "$e/$1" ] || continue
		[ -n "$first" ] || first=$e
		if [ "$(cat "$e/fw_type" 2>/dev/null)" = 1 ]; then
			cat "$e/$1"
			return 0
		fi
	done
	if [ -n "$first" ]; then cat "$first/$1"; fi
}

# hex N: N (decimal or 0x...) as 0x%08x, the form of the bundle's and the record's.
hex() { printf '0x%08x' "$(($1))"; }

# carry_file REL: $FROM/REL into the new slot, modes and owner kept.
carry_file() {
	[ -f "$FROM/$1" ] || return 0
	mkdir -p "$(dirname "$TO/$1")"
	cp -p "$FROM/$1" "$TO/$1.fpgagdr-new" || die "cannot carry /$1 into the new slot"
	mv -f "$TO/$1.fpgagdr-new" "$TO/$1"
}

# carry_link REL: the symbolic link $FROM/REL into the new slot.
carry_link() {
	[ -L "$FROM/$1" ] || return 0
	mkdir -p "$(dirname "$TO/$1")"
	rm -f "$TO/$1"
	ln -s "$(readlink "$FROM/$1")" "$TO/$1" || die "cannot carry /$1 into the new slot"
}

# carry_dir REL OWNER [SKIP]: every entry of $FROM/REL except SKIP into the new slot,
# owned by OWNER (uid:gid, empty: as on the running system).
carry_dir() {
	[ -d "$FROM/$1" ] || return 0
	mkdir -p "$TO/$1"
	for e in "$FROM/$1"/* "$FROM/$1"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		n=${e##*/}
		[ "$n" = "${3:-}" ] && continue
		rm -rf "$TO/$1/$n.fpgagdr-new"
		cp -a "$e" "$TO/$1/$n.fpgagdr-new" || die "cannot carry /$1/$n into the new slot"
		if [ -n "$2" ]; then chown -R -h "$2" "$TO/$1/$n.fpgagdr-new"; fi
		rm -rf "${TO:?}/$1/$n"
		mv "$TO/$1/$n.fpgagdr-new" "$TO/$1/$n"
	done
}

carry_over() {
	FROM=${FPGAGDR_CARRY_FROM:-}
	TO=${RAUC_SLOT_MOUNT_POINT:?RAUC did not mount the new rootfs slot}
	[ -d "$TO/etc" ] || die "$TO is not a root file system: nothing carried over"
	owner=""
	if [ -d "$TO/etc/fpgagdr" ]; then owner=$(stat -c %u:%g "$TO/etc/fpgagdr"); fi
	carry_dir etc/fpgagdr "$owner"
	carry_dir var/lib/fpgagdr "$owner" ota
	carry_file etc/default/fpgagdrd
	if grep -Eqx '[0-9a-f]{32}' "$FROM/etc/machine-id" 2>/dev/null; then carry_file etc/machine-id; fi
	for k in "$FROM"/etc/ssh/ssh_host_*; do
		if [ -f "$k" ]; then carry_file "etc/ssh/${k##*/}"; fi
	done
	carry_file etc/rauc-hawkbit-updater/config.conf
	carry_link etc/systemd/system/multi-user.target.wants/rauc-hawkbit-updater.service
	carry_admin
	mark_installation
	sync
	echo "fpgagdr-bundle-hooks: settings and state carried over into the new slot"
}

# carry_admin: the admin user's password and SSH keys, when both systems have the user.
carry_admin() {
	[ -f "$FROM/etc/passwd" ] && [ -f "$TO/etc/passwd" ] || return 0
	old_home=$(awk -F: '$1 == "admin" { print $6 }' "$FROM/etc/passwd")
	new_entry=$(awk -F: '$1 == "admin" { print $3 ":" $4 ":" $6 }' "$TO/etc/passwd")
	[ -n "$old_home" ] && [ -n "$new_entry" ] || return 0
	ids=${new_entry%:*}
	new_home=${new_entry##*:}
	keys="$FROM$old_home/.ssh/authorized_keys"
	if [ -f "$keys" ]; then
		mkdir -p "$TO$new_home/.ssh"
		cp "$keys" "$TO$new_home/.ssh/authorized_keys.fpgagdr-new" || die "cannot carry admin's authorized_keys into the new slot"
		chmod 0600 "$TO$new_home/.ssh/authorized_keys.fpgagdr-new"
		mv -f "$TO$new_home/.ssh/authorized_keys.fpgagdr-new" "$TO$new_home/.ssh/authorized_keys"
		chmod 0700 "$TO$new_home/.ssh"
		chown -R "$ids" "$TO$new_home/.ssh"
	fi
	[ -f "$FROM/etc/shadow" ] && [ -f "$TO/etc/shadow" ] || return 0
	old=$(awk -F: '$1 == "admin" { print $2 ":" $3 }' "$FROM/etc/shadow")
	case $old in '' | :*) return 0 ;; esac
	grep -q '^admin:' "$TO/etc/shadow" || return 0
	mode=$(stat -c %a "$TO/etc/shadow")
	awk -F: -v OFS=: -v hash="${old%:*}" -v changed="${old##*:}" \
		'$1 == "admin" { $2 = hash; $3 = changed } { print }' "$TO/etc/shadow" >"$TO/etc/shadow.fpgagdr-new" ||
		die "cannot carry admin's password into the new slot"
	chmod "$mode" "$TO/etc/shadow.fpgagdr-new"
	mv -f "$TO/etc/shadow.fpgagdr-new" "$TO/etc/shadow"
}

# mark_installation: the marker fpgagdrd --mark-good-after-health reads in the new slot's
# OTA spool; one id per installation (its verdict is stamped with it).
mark_installation() {
	spool="$TO/var/lib/fpgagdr/ota"
	mkdir -p "$spool" || die "cannot create /var/lib/fpgagdr/ota in the new slot"
	if [ -n "$owner" ]; then chown "$owner" "$TO/var/lib/fpgagdr" "$spool"; fi
	id=$(cat /proc/sys/kernel/random/uuid 2>/dev/null) || id="$(date +%s)-$$"
	# The card the appliance has now: an update must keep it working (mark-good checks).
	card=absent
	if [ -e "${FPGAGDR_CARD_NODE:-$FROM/dev/fpgagdr0}" ]; then card=present; fi
	printf 'id=%s\nslot=%s\ninstalled=%s\ncard=%s\n' "$id" "${RAUC_SLOT_NAME:-}" \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$card" \
		>"$spool/installation.fpgagdr-new" || die "cannot write the installation marker into the new slot"
	mv -f "$spool/installation.fpgagdr-new" "$spool/installation"
}

# open_esp: sets $esp to the mounted ESP (mounting it when nobody has); close_esp undoes
# a mount made here. Fails (status 1) when the ESP cannot be mounted.
open_esp() {
	esp=${FPGAGDR_ESP_DIR:-}
	mounted=""
	[ -z "$esp" ] || return 0
	if grep -qs ' /boot/efi ' /proc/mounts; then
		esp=/boot/efi
		return 0
	fi
	esp=$(mktemp -d)
	if ! mount /dev/disk/by-partlabel/esp "$esp"; then
		rmdir "$esp"
		return 1
	fi
	mounted=1
}
close_esp() {
	if [ -n "$mounted" ]; then umount "$esp" && rmdir "$esp"; fi
}

# capsule_staged: true when OsIndications asks UEFI to process a capsule on disk (bit 2).
capsule_staged() {
	[ -e "$OSINDICATIONS" ] || return 1
	b=$(od -An -tu1 -j4 -N1 "$OSINDICATIONS" 2>/dev/null | tr -d ' ')
	[ -n "$b" ] && [ $((b & 4)) -ne 0 ]
}

# withdraw_capsule: clear bit 2 of OsIndications (its other bits kept; one 12-byte write,
# attributes NV+BS+RT first) and remove the staged file from the ESP where it can be had
# (without the bit UEFI does not look at it).
withdraw_capsule() {
	capsule_staged || return 0
	# shellcheck disable=SC2046 # one word per byte, on purpose
	set -- $(od -An -tu1 -j4 -N8 "$OSINDICATIONS")
	[ $# = 8 ] || reject "cannot read $OSINDICATIONS to withdraw the capsule an earlier installation staged"
	v='\0007\0000\0000\0000'
	first=1
	for b in "$@"; do
		if [ "$first" = 1 ]; then b=$((b & ~4)); first=0; fi
		v="$v$(printf '\\0%03o' "$b")"
	done
	chattr -i "$OSINDICATIONS" 2>/dev/null || true
	printf '%b' "$v" | dd of="$OSINDICATIONS" bs=12 count=1 2>/dev/null ||
		reject "cannot clear $OSINDICATIONS: the capsule an earlier installation staged is still pending"
	if open_esp; then
		rm -f "$esp/EFI/UpdateCapsule/TEGRA_BL.Cap" "$esp/EFI/fpgagdr/capsule-pending"
		close_esp
	fi
	echo "fpgagdr-bundle-hooks: the bootloader capsule of an earlier installation, not yet applied, is withdrawn"
}

# chain_version ESP CHAIN: the firmware version recorded for boot chain CHAIN (A/B).
chain_version() { sed -n "s/^$2=//p" "$1/EFI/fpgagdr/boot-chains" 2>/dev/null | tail -n 1; }

# forget_chain ESP CHAIN: drops CHAIN from the record (its firmware is about to change).
forget_chain() {
	f=$1/EFI/fpgagdr/boot-chains
	[ -f "$f" ] || return 0
	grep -v "^$2=" "$f" >"$f.tmp" || true
	mv "$f.tmp" "$f"
}

# put_file SRC DEST: SRC to DEST under a temporary name, then renamed (one file in place
# at any time, as far as FAT allows).
put_file() {
	mkdir -p "$(dirname "$2")"
	cp "$1" "$2.fpgagdr-new" || return 1
	sync
	mv -f "$2.fpgagdr-new" "$2"
}

stage_capsule() {
	cap="${RAUC_BUNDLE_MOUNT_POINT:?}/tegra-bl.cap"
	conf="${RAUC_BUNDLE_MOUNT_POINT:?}/fpgagdr-boot.conf"
	[ -f "$cap" ] || return 0
	[ -f "$conf" ] || die "the bundle has a bootloader capsule but no fpgagdr-boot.conf (its version): not staged, installation failed"
	want=$(conf_value "$conf" bootloader_version)
	[ -n "$want" ] || die "fpgagdr-boot.conf names no bootloader_version: capsule not staged, installation failed"
	target=${RAUC_SLOT_BOOTNAME:?RAUC did not name the bootname of the slot}
	open_esp || die "cannot mount the ESP to stage the capsule"
	have=$(chain_version "$esp" "$target")
	if [ -n "$have" ] && [ $((have)) -eq $((want)) ]; then
		close_esp
		echo "fpgagdr-bundle-hooks: boot chain $target holds bootloader $(hex "$want") already: no capsule staged"
		return 0
	fi
	echo "fpgagdr-bundle-hooks: boot chain $target holds bootloader ${have:-(not recorded)}, the bundle $(hex "$want"): staging the capsule"
	# The chain is about to change: not known until the firmware reports it booted.
	forget_chain "$esp" "$target"
	launcher="${RAUC_BUNDLE_MOUNT_POINT}/BOOTAA64.efi"
	if [ -f "$launcher" ] && ! cmp -s "$launcher" "$esp/EFI/BOOT/BOOTAA64.efi"; then
		put_file "$launcher" "$esp/EFI/BOOT/BOOTAA64.efi" || die "cannot put the L4TLauncher on the ESP"
		echo "fpgagdr-bundle-hooks: L4TLauncher (EFI/BOOT/BOOTAA64.efi) of the bundle's release put on the ESP"
	fi
	put_file "$cap" "$esp/EFI/UpdateCapsule/TEGRA_BL.Cap" || die "cannot stage the capsule on the ESP"
	mkdir -p "$esp/EFI/fpgagdr"
	if ! printf 'target=%s\nversion=%s\nid=%s\n' "$target" "$(hex "$want")" "$id" \
		>"$esp/EFI/fpgagdr/capsule-pending.tmp" ||
		! mv "$esp/EFI/fpgagdr/capsule-pending.tmp" "$esp/EFI/fpgagdr/capsule-pending"; then
		die "cannot record the staged capsule on the ESP"
	fi
	sync
	close_esp
	var=$OSINDICATIONS
	if [ -e "$var" ]; then chattr -i "$var" 2>/dev/null || true; fi
	# Attributes NV+BS+RT, then EFI_OS_INDICATIONS_FILE_CAPSULE_DELIVERY_SUPPORTED (bit 2).
	printf '\007\000\000\000\004\000\000\000\000\000\000\000' | dd of="$var" bs=12 count=1 2>/dev/null ||
		die "cannot set $var: the capsule is staged but will not be applied"
	echo "fpgagdr-bundle-hooks: bootloader capsule $(hex "$want") staged for boot chain $target; UEFI applies it at the next boot"
}

case ${1:-} in
install-check)
	install_check
	;;
slot-post-install)
	if [ "${RAUC_SLOT_CLASS:-}" = rootfs ]; then
		carry_over
		stage_capsule
	fi
	;;
*) ;;
esac
exit 0
