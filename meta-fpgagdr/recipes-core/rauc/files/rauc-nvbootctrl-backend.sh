#!/bin/sh
# RAUC custom boot-control backend for Jetson Orin (L4T R36, UEFI), over nvbootctrl's
# rootfs A/B slots. system.conf: bootloader=custom, [handlers]
# bootloader-custom-backend=<this file>; slots rootfs.0 (bootname A, partition APP) and
# rootfs.1 (bootname B, partition APP_b).
#
#   get-primary             print the bootname the bootloader boots next (A or B)
#   set-primary A|B         make that slot bootable again, then make it the active slot
#   get-state A|B           print good or bad
#   set-state A|B good|bad  good: make it bootable; bad: nvbootctrl set-slot-as-unbootable
#   get-current             print the bootname of the running slot
#
# The set-primary trap: during an install RAUC marks the target slot bad (set-state bad,
# i.e. unbootable), writes it, then only calls set-primary. nvbootctrl's
# set-active-boot-slot does not clear "unbootable", and UEFI skips an unbootable slot, so
# the update would silently never boot. set-primary therefore resets the slot's UEFI
# status variable (RootfsStatusSlotA/B) to normal first, and checks the result.
#
# Bootloader capsule: when a UEFI capsule is staged (OsIndications has bit 2,
# EFI_OS_INDICATIONS_FILE_CAPSULE_DELIVERY_SUPPORTED; the bundle's post-install hook
# stages tegra-bl.cap), UEFI applies it at the next boot to the *other* boot chain and
# switches to that chain, and on L4T R36 (rootfs A/B unified with the boot chain) the
# rootfs slot follows. Switching the chain by hand first (set-active-boot-slot) would
# make the firmware skip the capsule (OE4T's swupdate example for Jetson and TIER IV's
# Autoware OTA client leave it out when a capsule is staged). So, with a capsule staged:
#   set-primary OTHER   makes OTHER bootable and leaves the switch to the firmware (an
#                       earlier switch by hand, active != current, is undone first: it
#                       too makes the firmware skip the capsule)
#   set-primary CURRENT withdraws the capsule (clears the bit), then switches as usual
#   get-primary         reports OTHER, the chain the firmware switches to
#
# Fails closed: any answer from nvbootctrl that is not understood is an error (non-zero
# exit, message on stderr), never a guess. Every command first checks that rootfs A/B
# redundancy is enabled (two rootfs slots); without it RAUC's install stops before
# anything is written (its first call marks the target bad).
#
# Environment (for tests; the defaults are the device's): FPGAGDR_NVBOOTCTRL (the
# nvbootctrl to run), FPGAGDR_EFIVARS_DIR (efivarfs mount point).
set -eu

NVBOOTCTRL=${FPGAGDR_NVBOOTCTRL:-nvbootctrl}
EFIVARS=${FPGAGDR_EFIVARS_DIR:-/sys/firmware/efi/efivars}
# NVIDIA's L4T vendor GUID of the RootfsStatusSlot* variables.
L4T_GUID=781e084c-a330-417c-b678-38e696380cb9
# UEFI's global variable GUID (OsIndications).
GLOBAL_GUID=8be4df61-93ca-11d2-aa0d-00e098032b8c
OSINDICATIONS="$EFIVARS/OsIndications-$GLOBAL_GUID"

die() {
	echo "rauc-nvbootctrl-backend: $*" >&2
	exit 1
}

rootfs() {
	"$NVBOOTCTRL" -t rootfs "$@"
}

require_ab() {
	n=$(rootfs get-number-slots 2>/dev/null) ||
		die "rootfs A/B redundancy is not enabled on this device (nvbootctrl -t rootfs get-number-slots failed); refusing. Flash the image with the redundant (A/B) layout."
	[ "$n" = 2 ] ||
		die "rootfs A/B redundancy is not enabled on this device (nvbootctrl reports '$n' rootfs slots, need 2); refusing. Flash the image with the redundant (A/B) layout."
}

slot_number() {
	case $1 in
	A) echo 0 ;;
	B) echo 1 ;;
	*) die "unknown bootname '$1' (expected A or B)" ;;
	esac
}

bootname() {
	case $1 in
	0 | A) echo A ;;
	1 | B) echo B ;;
	*) die "nvbootctrl reported slot '$1'; expected 0/1 or A/B" ;;
	esac
}

# The dump-slots-info text, once per call.
dump() {
	rootfs dump-slots-info 2>/dev/null || die "nvbootctrl -t rootfs dump-slots-info failed"
}

# status_word SLOT_NUMBER: normal, unbootable, ... as nvbootctrl prints it.
status_word() {
	w=$(dump | sed -n "s/^slot: *$1,.*status: *\([A-Za-z_-]*\).*/\1/p")
	[ -n "$w" ] || die "no status for rootfs slot $1 in nvbootctrl's dump-slots-info"
	echo "$w"
}

# make_bootable SLOT_NUMBER: RootfsStatusSlot<X> := normal (attributes NV+BS+RT, value 0).
make_bootable() {
	var="$EFIVARS/RootfsStatusSlot$(bootname "$1")-$L4T_GUID"
	[ -d "$EFIVARS" ] || die "$EFIVARS is not mounted: cannot make rootfs slot $1 bootable"
	# efivarfs files are immutable until told otherwise; not every filesystem knows chattr.
	if [ -e "$var" ]; then chattr -i "$var" 2>/dev/null || true; fi
	# One write() of 8 bytes, as efivarfs requires.
	printf '\007\000\000\000\000\000\000\000' | dd of="$var" bs=8 count=1 2>/dev/null ||
		die "writing $var failed"
	[ "$(status_word "$1")" = normal ] ||
		die "rootfs slot $1 is still not bootable after resetting $var"
}

# current_number: the running slot, 0 or 1.
current_number() {
	cur=$(rootfs get-current-slot 2>/dev/null) || die "nvbootctrl -t rootfs get-current-slot failed: the running slot is unknown"
	slot_number "$(bootname "$cur")"
}

other_bootname() {
	if [ "$1" = 0 ]; then echo B; else echo A; fi
}

# capsule_staged: true when OsIndications asks UEFI to process a capsule on disk.
capsule_staged() {
	[ -e "$OSINDICATIONS" ] || return 1
	b=$(od -An -tu1 -j4 -N1 "$OSINDICATIONS" 2>/dev/null | tr -d ' ')
	[ -n "$b" ] && [ $((b & 4)) -ne 0 ]
}

# withdraw_capsule: clear bit 2 of OsIndications, keep its other bits (one 12-byte write:
# attributes NV+BS+RT, then the 8-byte value).
withdraw_capsule() {
	# shellcheck disable=SC2046 # one word per byte, on purpose
	set -- $(od -An -tu1 -j4 -N8 "$OSINDICATIONS")
	[ $# = 8 ] || die "cannot read $OSINDICATIONS to withdraw the staged capsule"
	v='\0007\0000\0000\0000'
	first=1
	for b in "$@"; do
		if [ "$first" = 1 ]; then b=$((b & ~4)); first=0; fi
		v="$v$(printf '\\0%03o' "$b")"
	done
	chattr -i "$OSINDICATIONS" 2>/dev/null || true
	printf '%b' "$v" | dd of="$OSINDICATIONS" bs=12 count=1 2>/dev/null ||
		die "writing $OSINDICATIONS failed: the staged capsule is still pending"
	# The bundle hook's note of the staged capsule (read by mark-good after the reboot)
	# goes with it, where the ESP is mounted.
	rm -f "${FPGAGDR_ESP_DIR:-/boot/efi}/EFI/fpgagdr/capsule-pending"
}

cmd=${1:-}
[ -n "$cmd" ] || die "usage: $0 get-primary|set-primary X|get-state X|set-state X good|bad|get-current"
require_ab

case $cmd in
get-current)
	bootname "$(current_number)"
	;;
get-primary)
	if capsule_staged; then
		other_bootname "$(current_number)"
		exit 0
	fi
	act=$(dump | sed -n 's/^Active rootfs slot: *\([A-Za-z0-9]*\).*/\1/p')
	[ -n "$act" ] || die "no 'Active rootfs slot' in nvbootctrl's dump-slots-info"
	bootname "$act"
	;;
set-primary)
	n=$(slot_number "${2:-}")
	if capsule_staged; then
		cur=$(current_number)
		if [ "$n" != "$cur" ]; then
			# An earlier switch by hand (active chain != current) also makes the firmware
			# skip the capsule: put the active chain back to the current one first.
			act=$(dump | sed -n 's/^Active rootfs slot: *\([A-Za-z0-9]*\).*/\1/p')
			if [ "$(bootname "${act:-?}")" != "$(bootname "$cur")" ]; then
				rootfs set-active-boot-slot "$cur" >/dev/null || die "nvbootctrl -t rootfs set-active-boot-slot $cur failed"
			fi
			make_bootable "$n"
			echo "rauc-nvbootctrl-backend: a bootloader capsule is staged: UEFI updates boot chain $2 at the next boot and switches to it, the rootfs slot with it; the chain is not switched by hand (that would cancel the capsule update)" >&2
			exit 0
		fi
		withdraw_capsule
		echo "rauc-nvbootctrl-backend: staying on slot $2: the staged bootloader capsule is withdrawn" >&2
	fi
	make_bootable "$n"
	rootfs set-active-boot-slot "$n" >/dev/null || die "nvbootctrl -t rootfs set-active-boot-slot $n failed"
	act=$(dump | sed -n 's/^Active rootfs slot: *\([A-Za-z0-9]*\).*/\1/p')
	[ "$(bootname "${act:-?}")" = "$2" ] || die "active rootfs slot is '$act' after set-active-boot-slot $n"
	;;
get-state)
	n=$(slot_number "${2:-}")
	case $(status_word "$n") in
	normal) echo good ;;
	unbootable) echo bad ;;
	*) die "rootfs slot $n has status '$(status_word "$n")', neither normal nor unbootable" ;;
	esac
	;;
set-state)
	n=$(slot_number "${2:-}")
	case ${3:-} in
	good) make_bootable "$n" ;;
	bad) rootfs set-slot-as-unbootable "$n" >/dev/null || die "nvbootctrl -t rootfs set-slot-as-unbootable $n failed" ;;
	*) die "set-state: state must be good or bad, not '${3:-}'" ;;
	esac
	;;
*)
	die "unknown command '$cmd'"
	;;
esac
