#!/usr/bin/env bash
# Flash fpgagdr-image onto a Jetson Orin in recovery mode, A/B layout included.
#
# Unpacks the tegraflash package the build made (meta-tegra's image type) into a
# fresh folder under images/out/ and runs its initrd-flash: the Jetson boots a
# flashing kernel over USB (RCM), programs the boot partitions in QSPI (with the
# rootfs-A/B UEFI configuration) and exports its storage (NVMe, or the eMMC) to this
# host, which writes the partition table with APP and APP_b and both root file systems.
# Writing an image straight to the NVMe instead skips the QSPI part: the bootloader
# keeps its old, non-redundant configuration, only slot A ever boots, and every RAUC
# update (issue 9) rolls back. See images/README.md.
#
# usage: images/flash.sh [--machine M] [--image NAME] [--deploy DIR] [--tarball FILE]
#                        [--extract-only] [-- initrd-flash options]
#   --machine    jetson-orin-nano-devkit-nvme (default) or jetson-agx-orin-devkit
#   --deploy     where the build put the images (default:
#                images/work/build/tmp/deploy/images/MACHINE, or $KAS_WORK_DIR's)
#   --tarball    the tegraflash package itself (overrides --deploy)
#   --extract-only  unpack and check, do not flash
# Options after -- go to initrd-flash (e.g. --usb-instance, --erase-nvme).
# Needs: tar, gzip, and for flashing sgdisk, udisksctl, dtc and GNU cpp
# (Debian/Ubuntu: gdisk udisks2 device-tree-compiler cpp), a USB cable to the
# Jetson's recovery port, and the Jetson in recovery mode.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
machine=jetson-orin-nano-devkit-nvme
image=fpgagdr-image
deploy=
tarball=
extract_only=0
flash_args=()

say() { printf 'flash: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
usage() { sed -n '/^# usage:/,/^# Jetson.s recovery/s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
  case $1 in
    --machine) machine=${2:?}; shift 2 ;;
    --image) image=${2:?}; shift 2 ;;
    --deploy) deploy=${2:?}; shift 2 ;;
    --tarball) tarball=${2:?}; shift 2 ;;
    --extract-only) extract_only=1; shift ;;
    -h | --help) usage 0 ;;
    --) shift; flash_args=("$@"); break ;;
    *) say "unknown argument $1"; usage 1 ;;
  esac
done

case $machine in
  jetson-orin-nano-devkit-nvme | jetson-agx-orin-devkit) ;;
  *) die "unknown machine $machine (conf/kas/ has jetson-orin-nano-devkit-nvme, jetson-agx-orin-devkit)" ;;
esac
for arg in "${flash_args[@]}"; do
  [ "$arg" != --skip-bootloader ] ||
    die "--skip-bootloader leaves the QSPI as it was: the A/B configuration would not be flashed"
done

if [ -z "$tarball" ]; then
  work=${KAS_WORK_DIR:-$here/work}
  deploy=${deploy:-$work/build/tmp/deploy/images/$machine}
  tarball=$(find "$deploy" -maxdepth 1 -name "$image-$machine*.tegraflash.tar.gz" 2>/dev/null | sort | tail -n 1)
  [ -n "$tarball" ] || die "no $image-$machine*.tegraflash.tar.gz in $deploy (build first: docs/yocto.md)"
fi
[ -f "$tarball" ] || die "$tarball: no such file"

# A fresh folder each time: meta-tegra advises against reusing one across flash methods.
out=$here/out/$machine/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
say "unpacking $(basename "$tarball") into $out"
tar -xzf "$tarball" -C "$out"
if [ ! -x "$out/initrd-flash" ] || [ ! -f "$out/.env.initrd-flash" ]; then
  die "$tarball has no initrd-flash: was it built by meta-tegra with the tegraflash image type?"
fi

# The package must carry the redundant (A/B) layout (flash.xml.in, and
# external-flash.xml.in for NVMe), or the flashed device cannot update.
layout_ok=0
for xml in "$out"/*.xml.in; do
  [ -f "$xml" ] || continue
  if grep -q 'name="APP_b"' "$xml"; then layout_ok=1; fi
done
[ "$layout_ok" = 1 ] ||
  die "no APP_b partition in the package's layouts: build with the fpgagdr distro (USE_REDUNDANT_FLASH_LAYOUT_DEFAULT = 1)"
say "A/B layout present (APP and APP_b)"

if [ "$extract_only" = 1 ]; then
  say "unpacked; to flash: cd $out && ./initrd-flash"
  exit 0
fi

missing=()
for tool in sgdisk udisksctl dtc cpp; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] || die "missing host tools: ${missing[*]} (Debian/Ubuntu: gdisk udisks2 device-tree-compiler cpp)"
cpp --version 2>/dev/null | head -n 1 | grep -qi clang && die "cpp is clang's; the NVIDIA tools need GNU cpp"

# NVIDIA's USB vendor id in recovery mode; initrd-flash waits for the device anyway.
if command -v lsusb >/dev/null && ! lsusb -d 0955: >/dev/null 2>&1; then
  say "no NVIDIA device in recovery mode on USB yet: hold REC, press RESET, release REC"
fi

say "flashing $machine with initrd-flash (logs in $out)"
cd "$out"
./initrd-flash "${flash_args[@]}"
say "done. After boot: 'nvbootctrl -t rootfs dump-slots-info' lists two rootfs slots"
