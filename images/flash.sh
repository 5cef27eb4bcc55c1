#!/usr/bin/env bash
# Flash fpgagdr-image onto a Jetson (Orin or Thor) in recovery mode, A/B layout included.
#
# Unpacks the tegraflash package the build made (meta-tegra's image type) into a
# fresh folder under images/out/ and runs its initrd-flash: the Jetson boots a
# flashing kernel over USB (RCM), programs the boot partitions in QSPI (with the
# rootfs-A/B UEFI configuration) and exports its storage (NVMe, or the eMMC) to this
# host, which writes the partition table with APP and APP_b and both root file systems.
# Writing an image straight to the NVMe instead skips the QSPI part: the bootloader
# keeps its old, non-redundant configuration, only slot A ever boots, and every RAUC
# update rolls back. After a flash that initrd-flash reports done, both slots are
# checked in what it wrote and logged (the post-flash check, below). See images/README.md.
#
# usage: images/flash.sh [--machine M] [--image NAME] [--deploy DIR] [--tarball FILE]
#                        [--ssh-key FILE] [--out DIR] [--extract-only]
#                        [-- initrd-flash options]
#   --machine    a machine of the kas files (conf/kas/**/*.yml): jetson-orin-nano-devkit-nvme
#                (default), jetson-agx-orin-devkit, p3768-0000-p3767-0000 (Orin NX 16GB),
#                jetson-agx-thor-devkit (JetPack 7.2)
#   --deploy     where the build put the images (default:
#                images/work/build/tmp/deploy/images/MACHINE, images/work-jp72/... for a
#                machine only JetPack 7.2 builds, or $KAS_WORK_DIR's)
#   --tarball    the tegraflash package itself (overrides --deploy)
#   --ssh-key    an SSH public key file (e.g. ~/.ssh/id_ed25519.pub; one key or
#                several, one a line) for the image's admin user: added to
#                /home/admin/.ssh/authorized_keys of the root file system being
#                flashed (both slots), next to keys the build put there; no rebuild
#   --out        where to unpack (default: images/out/MACHINE/TIME, a fresh folder)
#   --extract-only  unpack and check (and add the key), do not flash
# Options after -- go to initrd-flash (e.g. --usb-instance, --erase-nvme).
# Needs: tar, gzip, debugfs (e2fsprogs) for --ssh-key, and for flashing sgdisk,
# udisksctl, dtc and GNU cpp (Debian/Ubuntu: gdisk udisks2 device-tree-compiler cpp),
# a USB cable to the Jetson's recovery port, and the Jetson in recovery mode.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
machine=jetson-orin-nano-devkit-nvme
image=fpgagdr-image
deploy=
tarball=
ssh_key=
out=
extract_only=0
flash_args=()

say() { printf 'flash: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
usage() { sed -n '/^# usage:/,/^# a USB cable/s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
  case $1 in
    --machine) machine=${2:?}; shift 2 ;;
    --image) image=${2:?}; shift 2 ;;
    --deploy) deploy=${2:?}; shift 2 ;;
    --tarball) tarball=${2:?}; shift 2 ;;
    --ssh-key) ssh_key=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --extract-only) extract_only=1; shift ;;
    -h | --help) usage 0 ;;
    --) shift; flash_args=("$@"); break ;;
    *) say "unknown argument $1"; usage 1 ;;
  esac
done

# The machines the kas files build, and which of them only JetPack 7.2 builds.
kas_dir=$here/../conf/kas
machines=$(sed -n 's/^machine: *//p' "$kas_dir"/*.yml "$kas_dir"/*/*.yml 2>/dev/null | sort -u | tr '\n' ' ')
jp6_machines=$(sed -n 's/^machine: *//p' "$kas_dir"/*.yml 2>/dev/null | sort -u | tr '\n' ' ')
case " $machines " in
  *" $machine "*) ;;
  *) die "unknown machine $machine: the kas files (conf/kas/) build ${machines% } (the Orin Nano's SD card variant, jetson-orin-nano-devkit, is not one of them: no kas file builds it, so neither its A/B layout nor its flashing were looked at)" ;;
esac
default_work=$here/work
case " $jp6_machines " in *" $machine "*) ;; *) default_work=$here/work-jp72 ;; esac
for arg in "${flash_args[@]}"; do
  [ "$arg" != --skip-bootloader ] ||
    die "--skip-bootloader leaves the QSPI as it was: the A/B configuration would not be flashed"
done

# check_public_keys FILE: every line is an OpenSSH public key (authorized_keys syntax:
# options may come first), or a comment; never a private key.
check_public_keys() {
  local f=$1 n=0 line types='(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com)'
  [ -f "$f" ] || die "--ssh-key $f: no such file"
  if grep -q 'PRIVATE KEY' "$f"; then
    die "--ssh-key $f is a private key: give the public key (the .pub file next to it)"
  fi
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in '' | '#'*) continue ;; esac
    grep -Eq "(^|[[:space:]])$types [A-Za-z0-9+/]+={0,2}([[:space:]]|$)" <<<"$line" ||
      die "--ssh-key $f: '${line:0:40}...' is not an SSH public key (expected e.g. 'ssh-ed25519 AAAA... me@host')"
    n=$((n + 1))
  done <"$f"
  [ "$n" -gt 0 ] || die "--ssh-key $f holds no SSH public key"
}

# add_admin_keys IMAGE FILE: append FILE's keys to the admin user's authorized_keys in
# the ext4 root file system IMAGE (debugfs: no mount, no root), owner admin, .ssh 0700,
# authorized_keys 0600; then read it back.
add_admin_keys() {
  local img=$1 keys=$2 entry uid gid home have merged cmds
  command -v debugfs >/dev/null || die "--ssh-key needs debugfs (Debian/Ubuntu: e2fsprogs)"
  entry=$(debugfs -R 'cat /etc/passwd' "$img" 2>/dev/null | awk -F: '$1 == "admin" { print $3 " " $4 " " $6 }')
  [ -n "$entry" ] || die "the root file system $img has no admin user: build it from this repository's fpgagdr-image"
  read -r uid gid home <<<"$entry"
  have=$(debugfs -R "cat $home/.ssh/authorized_keys" "$img" 2>/dev/null || true)
  merged=$(mktemp)
  { [ -z "$have" ] || printf '%s\n' "$have"; grep -v -e '^#' -e '^[[:space:]]*$' "$keys"; } | awk '!seen[$0]++' >"$merged"
  cmds=$(mktemp)
  {
    echo "mkdir $home/.ssh"
    echo "rm $home/.ssh/authorized_keys"
    echo "write $merged $home/.ssh/authorized_keys"
    echo "set_inode_field $home/.ssh mode 040700"
    echo "set_inode_field $home/.ssh uid $uid"
    echo "set_inode_field $home/.ssh gid $gid"
    echo "set_inode_field $home/.ssh/authorized_keys mode 0100600"
    echo "set_inode_field $home/.ssh/authorized_keys uid $uid"
    echo "set_inode_field $home/.ssh/authorized_keys gid $gid"
  } >"$cmds"
  debugfs -w -f "$cmds" "$img" >/dev/null 2>&1 || true
  if [ "$(debugfs -R "cat $home/.ssh/authorized_keys" "$img" 2>/dev/null)" != "$(cat "$merged")" ]; then
    rm -f "$merged" "$cmds"
    die "could not write $home/.ssh/authorized_keys into $img"
  fi
  rm -f "$merged" "$cmds"
  say "SSH key(s) of $ssh_key added for user admin ($home/.ssh/authorized_keys)"
}

[ -z "$ssh_key" ] || check_public_keys "$ssh_key"

if [ -z "$tarball" ]; then
  work=${KAS_WORK_DIR:-$default_work}
  deploy=${deploy:-$work/build/tmp/deploy/images/$machine}
  tarball=$(find "$deploy" -maxdepth 1 -name "$image-$machine*.tegraflash.tar.gz" 2>/dev/null | sort | tail -n 1)
  [ -n "$tarball" ] || die "no $image-$machine*.tegraflash.tar.gz in $deploy (build first: docs/yocto.md)"
fi
[ -f "$tarball" ] || die "$tarball: no such file"

# A fresh folder each time: meta-tegra advises against reusing one across flash methods.
out=${out:-$here/out/$machine/$(date +%Y%m%d-%H%M%S)}
[ ! -e "$out" ] || [ -z "$(ls -A "$out")" ] || die "$out is not empty: flash from a fresh folder"
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

if [ -n "$ssh_key" ]; then
  rootfs=$(sed -n 's/^ROOTFS_IMAGE="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$out/.env.initrd-flash")
  case $rootfs in
    *.ext4) [ -f "$out/$rootfs" ] || die "the package names $rootfs as its root file system, but it is not there" ;;
    *) die "the package's root file system '$rootfs' is not an ext4 image: --ssh-key cannot add the key" ;;
  esac
  add_admin_keys "$out/$rootfs" "$ssh_key"
fi

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

# check_flashed DIR: the post-flash check of both slots, from what initrd-flash left in
# DIR: the layout it wrote (initrd-flash.xml) gives APP and APP_b the root file system
# image, its log shows that image written twice (make-sdcard's "Writing FILE ... to
# DEVICE" lines, two devices) and the device's final status SUCCESS.
check_flashed() {
  local dir=$1 log rootfs layout written
  log=$(find "$dir" -maxdepth 1 -name 'log.initrd-flash.*' | sort | tail -n 1)
  [ -n "$log" ] || die "post-flash check: initrd-flash left no log.initrd-flash.* in $dir"
  grep -q '^Final status: SUCCESS' "$log" ||
    die "post-flash check: $log does not report 'Final status: SUCCESS' ($(grep -m1 '^Final status' "$log" || echo 'no final status'))"
  rootfs=$(sed -n 's/^ROOTFS_IMAGE="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$dir/.env.initrd-flash")
  [ -f "$dir/initrd-flash.xml" ] || die "post-flash check: initrd-flash left no initrd-flash.xml (the layout it wrote) in $dir"
  layout=$(python3 - "$dir/initrd-flash.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
for part in ET.parse(sys.argv[1]).iter("partition"):
    if part.get("name") in ("APP", "APP_b"):
        print(part.get("name"), (part.findtext("filename") or "").strip())
PY
  ) || die "post-flash check: cannot read $dir/initrd-flash.xml"
  for slot in APP APP_b; do
    grep -qx "$slot $rootfs" <<<"$layout" ||
      die "post-flash check: the layout written gives $slot '$(sed -n "s/^$slot //p" <<<"$layout")', not the root file system $rootfs: that slot was not flashed with the image"
  done
  written=$(grep -E "^ *Writing $rootfs \(size=[0-9]+\) to " "$log" | sed 's/.* to \([^ ]*\) .*/\1/' | sort -u | wc -l)
  [ "$written" -ge 2 ] ||
    die "post-flash check: $log shows $rootfs written to $written device(s), not to both APP and APP_b"
  say "post-flash check: both rootfs slots (APP, APP_b) written from $rootfs; final status SUCCESS ($(basename "$log"))"
}

say "flashing $machine with initrd-flash (logs in $out)"
cd "$out"
./initrd-flash "${flash_args[@]}"
check_flashed "$out"
say "done. After boot: 'nvbootctrl -t rootfs dump-slots-info' lists two rootfs slots"
