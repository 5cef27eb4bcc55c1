#!/usr/bin/env bash
# Tests images/flash.sh without a Jetson: a tegraflash package made here the way
# meta-tegra lays it out (initrd-flash, .env.initrd-flash naming the root file system
# image, flash.xml.in with APP and APP_b) around a real ext4 root file system with the
# image's admin user, unpacked with --extract-only (initrd-flash is never run). Checks:
#   - --ssh-key puts the public key into /home/admin/.ssh/authorized_keys of the
#     package's rootfs image (both slots are written from it), owned by admin, 0600 in a
#     0700 .ssh, keeping keys the build put there; the deploy tarball is not changed;
#   - a private key, a file that is no public key, and a package whose image has no
#     admin user are refused with the reason, and the image is left as it was;
#   - every machine the kas files build (conf/kas/**/*.yml) flashes: a package per
#     machine, its initrd-flash a TEST DOUBLE that leaves what meta-tegra's leaves (the
#     host log with make-sdcard's lines and the final status, the layout it wrote), the
#     host tools test doubles too; the post-flash check finds both slots written; a
#     flash that wrote one slot only, or whose device reported FAILED, fails it with the
#     reason; a machine no kas file builds (the Orin Nano's SD card variant) is refused.
#
#   images/test/flash-test.sh          (test.sh runs it; needs mkfs.ext4, debugfs, tar)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
flash=$here/../flash.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { printf 'flash-test: ok: %s\n' "$*"; }
bad() { printf 'flash-test: FAILED: %s\n' "$*" >&2; fails=1; }
expect() { # expect WHAT WANTED GOT
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$3', expected '$2'"; fi
}

# package NAME WITH_ADMIN: a tegraflash tarball in $tmp/NAME.tegraflash.tar.gz.
package() {
  local root=$tmp/$1.root pkg=$tmp/$1.pkg
  mkdir -p "$root"/etc "$root"/home/admin "$pkg"
  printf 'root:x:0:0:root:/home/root:/bin/sh\n' >"$root/etc/passwd"
  if [ "$2" = 1 ]; then
    printf 'admin:x:1000:1000::/home/admin:/bin/sh\n' >>"$root/etc/passwd"
    mkdir -p "$root/home/admin/.ssh"
    printf 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBuiltInByTheKasBuild0000000000000000000 build@host\n' \
      >"$root/home/admin/.ssh/authorized_keys"
  fi
  mkfs.ext4 -q -F -d "$root" "$pkg/fpgagdr-image.ext4" 8M >/dev/null
  printf '#!/bin/sh\necho "initrd-flash must not run in this test" >&2\nexit 1\n' >"$pkg/initrd-flash"
  chmod +x "$pkg/initrd-flash"
  printf 'ROOTFS_IMAGE="fpgagdr-image.ext4"\nDEFAULTS[BOARDID]="3767"\n' >"$pkg/.env.initrd-flash"
  printf '<partition name="APP"/>\n<partition name="APP_b"/>\n' >"$pkg/flash.xml.in"
  tar -czf "$tmp/$1.tegraflash.tar.gz" -C "$pkg" .
}

# in IMAGE PATH: the file's text inside the ext4 image.
in_image() { debugfs -R "cat $2" "$1" 2>/dev/null; }
# stat_of IMAGE PATH: "MODE UID GID" (mode in octal) of PATH inside the image.
stat_of() {
  debugfs -R "stat $2" "$1" 2>/dev/null |
    sed -n 's/.*Mode: *\([0-7]*\).*/\1/p; s/^User: *\([0-9]*\) *Group: *\([0-9]*\).*/\1 \2/p' | tr '\n' ' '
}

key=$tmp/id_ed25519.pub
printf 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlashedByFlashSh00000000000000000000000 me@laptop\n' >"$key"

package good 1
before=$(sha256sum "$tmp/good.tegraflash.tar.gz")
if out=$("$flash" --tarball "$tmp/good.tegraflash.tar.gz" --out "$tmp/out" --extract-only \
  --ssh-key "$key" 2>&1); then
  img=$tmp/out/fpgagdr-image.ext4
  keys=$(in_image "$img" /home/admin/.ssh/authorized_keys)
  if grep -q 'me@laptop' <<<"$keys" && grep -q 'build@host' <<<"$keys"; then
    ok "the key is in admin's authorized_keys, next to the build's"
  else
    bad "authorized_keys in the image: '$keys' ($out)"
  fi
  expect "authorized_keys: 0600, owned by admin" "0600 1000 1000 " \
    "$(stat_of "$img" /home/admin/.ssh/authorized_keys)"
  expect ".ssh: 0700, owned by admin" "0700 1000 1000 " "$(stat_of "$img" /home/admin/.ssh)"
  expect "the deploy tarball is unchanged" "$before" "$(sha256sum "$tmp/good.tegraflash.tar.gz")"
else
  bad "flash.sh --ssh-key failed: $out"
fi

# refuse REASON TARBALL KEYFILE PATTERN: flash.sh must fail naming PATTERN, image unchanged.
refuse() {
  local out dir=$tmp/out-$RANDOM
  if out=$("$flash" --tarball "$2" --out "$dir" --extract-only --ssh-key "$3" 2>&1); then
    bad "$1: accepted ($out)"
  elif ! grep -q "$4" <<<"$out"; then
    bad "$1: the refusal does not say '$4': $out"
  elif [ -f "$dir/fpgagdr-image.ext4" ] && in_image "$dir/fpgagdr-image.ext4" /home/admin/.ssh/authorized_keys |
    grep -q 'me@laptop'; then
    bad "$1: the image was changed all the same"
  else
    ok "$1: refused ($(tail -n 1 <<<"$out"))"
  fi
}
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n' >"$tmp/id_ed25519"
refuse "a private key" "$tmp/good.tegraflash.tar.gz" "$tmp/id_ed25519" "private key"
printf 'hello\n' >"$tmp/not-a-key.pub"
refuse "not a public key" "$tmp/good.tegraflash.tar.gz" "$tmp/not-a-key.pub" "not an SSH public key"
package noadmin 0
refuse "an image without the admin user" "$tmp/noadmin.tegraflash.tar.gz" "$key" "no admin user"

# --- every machine of the kas files, flashed through a test double of initrd-flash ---
# flashing_package MACHINE MODE: a package for MACHINE whose initrd-flash is a TEST DOUBLE
# of meta-tegra's: it writes the host log (make-sdcard's partition and "Writing" lines,
# the device's final status) and the layout it "wrote" (initrd-flash.xml) as meta-tegra's
# does. MODE: ok, one-slot (APP_b left without the image), failed (final status FAILED).
flashing_package() {
  local m=$1 mode=$2 pkg=$tmp/flash-$1-$2.pkg
  mkdir -p "$pkg"
  cp "$tmp/good.pkg/fpgagdr-image.ext4" "$pkg/"
  printf 'ROOTFS_IMAGE="fpgagdr-image.ext4"\nMACHINE="%s"\n' "$m" >"$pkg/.env.initrd-flash"
  printf '<partition_layout><device type="nvme"><partition name="APP"><filename> APPFILE </filename></partition>\n<partition name="APP_b"><filename> APPFILE_b </filename></partition></device></partition_layout>\n' \
    >"$pkg/external-flash.xml.in"
  cat >"$pkg/initrd-flash" <<EOF
#!/bin/sh
# TEST DOUBLE of meta-tegra's initrd-flash (images/test/flash-test.sh): writes what the
# real one leaves behind, flashes nothing.
set -e
log=log.initrd-flash.2026-12-07-12.00.00
app_b=fpgagdr-image.ext4
[ "$mode" != one-slot ] || app_b=
printf '<partition_layout><device type="nvme"><partition name="APP"><filename> fpgagdr-image.ext4 </filename></partition>\n<partition name="APP_b"><filename> %s </filename></partition></device></partition_layout>\n' "\$app_b" >initrd-flash.xml
{
  echo "Machine:       $m"
  echo "== Step 6: Writing partitions on external storage device =="
  echo "  [14] name=APP start=1234 size=2048 sectors"
  echo "  [15] name=APP_b start=3282 size=2048 sectors"
  echo "  Writing fpgagdr-image.ext4 (size=8388608) to /dev/sdz14 (size=8388608)..."
  [ "$mode" = one-slot ] || echo "  Writing fpgagdr-image.ext4 (size=8388608) to /dev/sdz15 (size=8388608)..."
  if [ "$mode" = failed ]; then echo "Final status: FAILED"; else echo "Final status: SUCCESS"; fi
} >"\$log"
EOF
  chmod +x "$pkg/initrd-flash"
  tar -czf "$tmp/flash-$m-$mode.tegraflash.tar.gz" -C "$pkg" .
}
# TEST DOUBLES of the host tools flash.sh asks for (no Jetson, no USB here).
mkdir -p "$tmp/host-tools"
for tool in sgdisk udisksctl dtc cpp; do
  printf '#!/bin/sh\n# TEST DOUBLE of %s for flash-test.sh\necho "%s (test double)"\n' "$tool" "$tool" >"$tmp/host-tools/$tool"
  chmod +x "$tmp/host-tools/$tool"
done
mkdir -p "$tmp/good.pkg" && tar -xzf "$tmp/good.tegraflash.tar.gz" -C "$tmp/good.pkg"
kas_machines=$(sed -n 's/^machine: *//p' "$here"/../../conf/kas/*.yml "$here"/../../conf/kas/*/*.yml | sort -u)
[ -n "$kas_machines" ] || bad "no machine in conf/kas"
for m in $kas_machines; do
  flashing_package "$m" ok
  if out=$(PATH="$tmp/host-tools:$PATH" "$flash" --machine "$m" --tarball "$tmp/flash-$m-ok.tegraflash.tar.gz" \
    --out "$tmp/flashed-$m" 2>&1) && grep -q 'post-flash check: both rootfs slots (APP, APP_b) written' <<<"$out"; then
    ok "$m: flashed, both slots found written"
  else
    bad "$m: flash or post-flash check failed: $out"
  fi
done
m=$(head -n 1 <<<"$kas_machines")
for mode in one-slot failed; do
  flashing_package "$m" "$mode"
  want="not to both APP and APP_b"
  if [ "$mode" = one-slot ]; then want="APP_b"; else want="Final status: SUCCESS"; fi
  if out=$(PATH="$tmp/host-tools:$PATH" "$flash" --machine "$m" --tarball "$tmp/flash-$m-$mode.tegraflash.tar.gz" \
    --out "$tmp/flashed-$m-$mode" 2>&1); then
    bad "$m, $mode: the post-flash check passed: $out"
  elif grep -q "post-flash check:.*$want" <<<"$out"; then
    ok "$m, $mode: the post-flash check fails ($(tail -n 1 <<<"$out"))"
  else
    bad "$m, $mode: failed, but not by the post-flash check naming '$want': $out"
  fi
done
if out=$("$flash" --machine jetson-orin-nano-devkit --tarball "$tmp/good.tegraflash.tar.gz" \
  --out "$tmp/out-sd" --extract-only 2>&1); then
  bad "a machine no kas file builds was accepted: $out"
elif grep -q "unknown machine jetson-orin-nano-devkit" <<<"$out"; then
  ok "a machine no kas file builds is refused ($(tail -n 1 <<<"$out"))"
else
  bad "the SD card variant was refused, but not as unknown: $out"
fi

[ "$fails" = 0 ] || { echo "flash-test: some checks failed" >&2; exit 1; }
echo "flash-test: all checks passed"
