#!/usr/bin/env bash
# Parse every recipe and dry-run a target's whole task graph against real upstream
# layers, with no network and without building anything (docs/yocto.md, "Against the
# real layers"):
#
#   meta-fpgagdr/scripts/dry-run.sh LAYERS MACHINE [TARGET]
#
# LAYERS is a folder outside this repository holding checkouts named poky, meta-tegra,
# meta-rust-bin and meta-rauc, each at the commit conf/kas/include/base.yml pins (a
# checkout at another commit is reported and the run goes on). MACHINE is one of
# conf/kas's machines; TARGET defaults to fpgagdr-image. The build folder is
# LAYERS/build-fpgagdr-MACHINE (bitbake's caches: a second run is faster). Exit status:
# 0 when the parse and the dry run are clean, 1 otherwise (the first errors printed).
# Host tools bitbake insists on (chrpath, diffstat, lz4, zstd, a UTF-8 locale) are
# installed from Debian when missing and this runs as root.
set -euo pipefail

usage() { echo "usage: $0 LAYERS MACHINE [TARGET]" >&2; exit 2; }
[ $# -ge 2 ] || usage
layers=$(cd "$1" && pwd)
machine=$2
target=${3:-fpgagdr-image}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
layer=$(dirname "$here")
root=$(dirname "$layer")
base=$root/conf/kas/include/base.yml
say() { printf 'dry-run: %s\n' "$*"; }

[ -f "$root/conf/kas/$machine.yml" ] || { say "no conf/kas/$machine.yml: not a machine of this project"; exit 2; }
case $layers/ in "$root"/*) say "LAYERS must be outside the repository"; exit 2 ;; esac

# Host tools bitbake's parser and dry run want; nothing here compiles.
need=()
for t in chrpath diffstat gawk lz4 zstd file cpio; do command -v "$t" >/dev/null || need+=("$t"); done
if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then need+=(locales); fi
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { say "needed: ${need[*]} (apt-get install them)"; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  if printf '%s\n' "${need[@]}" | grep -qx locales; then
    sed -i 's/^# *en_US.UTF-8/en_US.UTF-8/' /etc/locale.gen && locale-gen >/dev/null
  fi
fi

# Each checkout against the commit base.yml pins for it.
for repo in poky meta-tegra meta-rust-bin meta-rauc; do
  [ -d "$layers/$repo" ] || { say "missing checkout $layers/$repo"; exit 1; }
  want=$(awk -v r="  $repo:" '$0 == r { f = 1; next } f && /commit:/ { print $2; exit } f && /^  [a-z]/ { exit }' "$base")
  have=$(git -C "$layers/$repo" rev-parse HEAD 2>/dev/null || echo '?')
  if [ -n "$want" ] && [ "$want" != "$have" ]; then
    say "$repo is at $have, base.yml pins $want"
  fi
done

build=$layers/build-fpgagdr-$machine
mkdir -p "$build/conf"
cat >"$build/conf/bblayers.conf" <<EOF
POKY_BBLAYERS_CONF_VERSION = "2"
BBPATH = "\${TOPDIR}"
BBFILES ?= ""
BBLAYERS ?= "$layers/poky/meta $layers/meta-tegra $layers/meta-rust-bin $layers/meta-rauc $layer"
EOF
# The distro and machine as kas sets them; no network, no host sanity checks (nothing
# is built), no uninative download.
cat >"$build/conf/local.conf" <<EOF
MACHINE = "$machine"
DISTRO = "fpgagdr"
CONF_VERSION = "2"
BB_NUMBER_THREADS = "$(nproc)"
BB_NO_NETWORK = "1"
INHERIT:remove = "sanity uninative"
EOF

export LANG=en_US.UTF-8
set +u
# shellcheck disable=SC1091  # poky's environment script, from the checkout
. "$layers/poky/oe-init-build-env" "$build" >/dev/null
set -u
start=$(date +%s)
if ! bitbake -p >"$build/parse.log" 2>&1; then
  grep -E '^ERROR' "$build/parse.log" | head -5
  say "parse failed ($build/parse.log)"
  exit 1
fi
warnings=$(grep -cE '^WARNING' "$build/parse.log" || true)
if ! bitbake -n "$target" >"$build/dry.log" 2>&1; then
  grep -E '^ERROR' "$build/dry.log" | head -5
  say "dry run of $target failed ($build/dry.log)"
  exit 1
fi
tasks=$(sed -n 's/.*Attempted \([0-9]*\) tasks.*/\1/p' "$build/dry.log" | tail -1)
say "parse ok ($warnings warnings), dry run of $target for $machine ok (${tasks:-?} tasks), $(($(date +%s) - start)) s"
