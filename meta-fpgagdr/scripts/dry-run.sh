#!/usr/bin/env bash
# Parse every recipe and dry-run a target's whole task graph against real upstream
# layers, with no network and without building anything, then check how the image
# wires the Jetson's GPU (docs/yocto.md, "Against the real layers"):
#
#   meta-fpgagdr/scripts/dry-run.sh LAYERS KAS_FILE|MACHINE [TARGET]
#
# KAS_FILE is one of conf/kas's machine files (a bare MACHINE means
# conf/kas/MACHINE.yml, the JetPack 6 targets); its layers, machine and distro are the
# ones `kas build` would use (scripts/kas-layers.py reads them with kas's own loader).
# LAYERS is a folder outside this repository holding a checkout of each repository the
# kas file names, under that name (poky, meta-tegra, meta-rust-bin, meta-rauc for
# JetPack 6; bitbake, openembedded-core, meta-tegra, meta-rauc for JetPack 7.2), each at
# the commit the kas file pins: a checkout at another commit is reported and the run
# goes on. TARGET defaults to the kas file's target (fpgagdr-image). The build folder
# is LAYERS/build-fpgagdr-MACHINE (bitbake's caches: a second run is faster); the logs
# (parse.log, dry.log, checks.log) and a summary (record.txt) are written there.
#
# After the dry run, the GPU wiring checks (bitbake-getvar on the parsed recipes):
#   nvrtc    the service pulls in cuda-nvrtc and the package whose ld.so.conf.d entry
#            puts CUDA's library folder, where libnvrtc is, on the loader's path, and
#            that libnvrtc's major version is the one the service's cudarc looks for
#   ort      the ONNX Runtime the service loads is the source build with the CUDA and
#            TensorRT execution providers, and that build pulls both providers in
#   module   the module is built without the nvidia_p2p back-end and depends on no
#            NVIDIA kernel module (Thor has no nvidia_p2p; Orin uses the host back-end)
#
# Exit status: 0 when the parse, the dry run and the checks are clean, 1 otherwise
# (the first errors printed), 2 on bad arguments. Host tools bitbake insists on
# (chrpath, diffstat, lz4, zstd, a UTF-8 locale) are installed from Debian when missing
# and this runs as root; the pinned kas comes from scripts/tools-venv.sh.
set -euo pipefail

usage() { echo "usage: $0 LAYERS KAS_FILE|MACHINE [TARGET]" >&2; exit 2; }
[ $# -ge 2 ] || usage
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
apt_get=$here/../../appliance/scripts/apt-get.sh
layer=$(dirname "$here")
root=$(dirname "$layer")
say() { printf 'dry-run: %s\n' "$*"; }

[ -d "$1" ] || { say "no folder $1"; exit 2; }
layers=$(cd "$1" && pwd)
case $2 in
  *.yml) kas_file=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") ;;
  *) kas_file=$root/conf/kas/$2.yml ;;
esac
[ -f "$kas_file" ] || { say "no kas file $kas_file (a machine file of conf/kas)"; exit 2; }
case $kas_file in "$root"/conf/kas/include/*) say "$kas_file is an include, not a machine file"; exit 2 ;; esac
case $layers/ in "$root"/*) say "LAYERS must be outside the repository"; exit 2 ;; esac

# Host tools bitbake's parser and dry run want; nothing here compiles.
need=()
for t in chrpath diffstat gawk lz4 zstd file cpio; do command -v "$t" >/dev/null || need+=("$t"); done
if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then need+=(locales); fi
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { say "needed: ${need[*]} (apt-get install them)"; exit 1; }
  "$apt_get" update -qq
  DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq "${need[@]}" >/dev/null
  if printf '%s\n' "${need[@]}" | grep -qx locales; then
    sed -i 's/^# *en_US.UTF-8/en_US.UTF-8/' /etc/locale.gen && locale-gen >/dev/null
  fi
fi

# What the kas file builds, as kas merges it.
# shellcheck source=tools-venv.sh source-path=SCRIPTDIR
. "$here/tools-venv.sh"
tools_venv "$here" >&2
spec=$("$py" "$here/kas-layers.py" "$kas_file")
machine=$(awk '$1 == "machine" { print $2 }' <<<"$spec")
distro=$(awk '$1 == "distro" { print $2 }' <<<"$spec")
target=${3:-$(awk '$1 == "target" { print $2 }' <<<"$spec")}

# Each checkout against the commit the kas file pins; bblayers in the kas file's order.
bblayers=() init=() pins=()
while read -r _ name commit paths; do
  if [ "$commit" = - ]; then
    dir=$root
  else
    dir=$layers/$name
    [ -d "$dir" ] || { say "missing checkout $dir (the kas file names $name)"; exit 1; }
    have=$(git -C "$dir" rev-parse HEAD 2>/dev/null || echo '?')
    [ "$have" = "$commit" ] || say "$name is at $have, $(basename "$kas_file") pins $commit"
    pins+=("$name $have")
    [ -f "$dir/oe-init-build-env" ] && init+=("$dir/oe-init-build-env")
  fi
  for p in $paths; do
    if [ "$p" = . ]; then bblayers+=("$dir"); else bblayers+=("$dir/$p"); fi
  done
done < <(awk '$1 == "repo"' <<<"$spec")
[ ${#init[@]} = 1 ] || { say "expected one oe-init-build-env among the checkouts, found ${#init[@]}"; exit 1; }

build=$layers/build-fpgagdr-$machine
mkdir -p "$build/conf"
cat >"$build/conf/bblayers.conf" <<EOF
POKY_BBLAYERS_CONF_VERSION = "2"
BBPATH = "\${TOPDIR}"
BBFILES ?= ""
BBLAYERS ?= "${bblayers[*]}"
EOF
# The distro and machine as kas sets them; no network, no host sanity checks (nothing
# is built), no uninative download.
cat >"$build/conf/local.conf" <<EOF
MACHINE = "$machine"
DISTRO = "$distro"
CONF_VERSION = "2"
BB_NUMBER_THREADS = "$(nproc)"
BB_NO_NETWORK = "1"
INHERIT:remove = "sanity uninative"
EOF

export LANG=en_US.UTF-8
set +u
# shellcheck disable=SC1090  # oe-core's environment script, from the checkout
. "${init[0]}" "$build" >/dev/null
set -u
start=$(date +%s)
if ! bitbake -p >"$build/parse.log" 2>&1; then
  grep -E '^ERROR' "$build/parse.log" | head -5
  say "parse failed ($build/parse.log)"
  exit 1
fi
parsed=$(date +%s)
warnings=$(grep -cE '^WARNING' "$build/parse.log" || true)
recipes=$(sed -n 's/.*Parsing of \([0-9]*\) .bb files complete.*/\1/p' "$build/parse.log" | tail -1)
if ! bitbake -n "$target" >"$build/dry.log" 2>&1; then
  grep -E '^ERROR' "$build/dry.log" | head -5
  say "dry run of $target failed ($build/dry.log)"
  exit 1
fi
dried=$(date +%s)
tasks=$(sed -n 's/.*Attempted \([0-9]*\) tasks.*/\1/p' "$build/dry.log" | tail -1)
dry_warnings=$(grep -cE '^WARNING' "$build/dry.log" || true)

# --- the GPU wiring checks -------------------------------------------------------
getvar() { # getvar RECIPE VARIABLE: its expanded value ("" when unset)
  bitbake-getvar -q --ignore-undefined --value -r "$1" "$2" 2>>"$build/checks.log" || true
}
words() { tr -s ' \t' '\n' | sed -e 's/(.*//' -e '/^$/d'; } # one package a line, no versions
has() { grep -qxF "$1"; }
failed=()
fail() { failed+=("$1"); say "check $1: FAILED: $2"; }
: >"$build/checks.log"

# nvrtc: cudarc dlopens libnvrtc.so.<major> by name, the major of the CUDA version its
# build script was given (CUDARC_CUDA_VERSION, recipes-appliance/include/fpgagdr-cudarc.inc); meta-tegra installs libnvrtc in CUDA's own folder, which is on
# the loader's path only through an ld.so.conf.d file and the rootfs's ldconfig.
cuda_version=$(getvar cuda-nvrtc CUDA_VERSION)
nvrtc_files=$(getvar cuda-nvrtc FILES:cuda-nvrtc)
ldconf_pkg=
if getvar cuda-cudart do_install | grep -q 'ld.so.conf.d'; then ldconf_pkg=cuda-cudart; fi
service_rdeps=$( { getvar fpgagdrd RDEPENDS:fpgagdrd; getvar fpgagdrd RRECOMMENDS:fpgagdrd; } | words)
ldconfig=$(getvar fpgagdrd DISTRO_FEATURES | words | grep -cx ldconfig || true)
# CUDARC_CUDA_VERSION (MAJOR0MINOR0) as the recipe exports it to cudarc's build script
cudarc_version=$(getvar fpgagdrd CUDARC_CUDA_VERSION)
cudarc_major=${cudarc_version%???}
if ! grep -q "/local/cuda-" <<<"$nvrtc_files"; then
  fail nvrtc "cuda-nvrtc no longer installs libnvrtc under /usr/local/cuda-*: revisit the loader-path reasoning"
elif [ -z "$ldconf_pkg" ]; then
  fail nvrtc "no package of meta-tegra writes CUDA's ld.so.conf.d entry (cuda-cudart did)"
elif ! has cuda-nvrtc <<<"$service_rdeps"; then
  fail nvrtc "fpgagdrd does not pull in cuda-nvrtc"
elif ! has "$ldconf_pkg" <<<"$service_rdeps"; then
  fail nvrtc "fpgagdrd pulls in cuda-nvrtc, whose libnvrtc is in /usr/local/cuda-$cuda_version/lib, but not $ldconf_pkg, whose ld.so.conf.d entry puts that folder on the loader's path: the service's dlopen fails and preprocessing falls back to the CPU"
elif [ "$ldconfig" = 0 ]; then
  fail nvrtc "the ldconfig distro feature is off: no /etc/ld.so.cache, so the ld.so.conf.d entry is never read"
elif [ "${cuda_version%%.*}" != "$cudarc_major" ]; then
  fail nvrtc "the image has CUDA $cuda_version (libnvrtc.so.${cuda_version%%.*}); the service's cudarc is built for CUDA $cudarc_major (CUDARC_CUDA_VERSION=$cudarc_version) and looks for libnvrtc.so.$cudarc_major: preprocessing falls back to the CPU"
else
  say "check nvrtc: ok (libnvrtc.so.$cudarc_major in /usr/local/cuda-$cuda_version/lib, on the loader's path through $ldconf_pkg's ld.so.conf.d entry)"
fi

# ort: the library the service loads, and its execution providers.
ort=$(getvar fpgagdrd VIRTUAL-RUNTIME_onnxruntime)
ort_recs=$(getvar "$ort" "RRECOMMENDS:$ort" | words)
ort_eps=()
for ep in cuda tensorrt; do has "$ort-provider-$ep" <<<"$ort_recs" && ort_eps+=("$ep"); done
if ! has "$ort" <<<"$service_rdeps"; then
  fail ort "fpgagdrd does not depend on $ort (VIRTUAL-RUNTIME_onnxruntime)"
elif [ ${#ort_eps[@]} != 2 ]; then
  fail ort "$ort pulls in the providers [${ort_eps[*]}], not cuda and tensorrt: the image would infer on the CPU"
else
  say "check ort: ok ($ort $(getvar "$ort" PV), providers cuda tensorrt and the built-in cpu, CUDA architectures $(getvar "$ort" CUDA_ARCHITECTURES))"
fi

# module: no nvidia_p2p anywhere on Jetson.
oemake=$(getvar fpgagdr-module EXTRA_OEMAKE)
mdeps=$(getvar fpgagdr-module DEPENDS | words)
kernel=$(getvar virtual/kernel PN)
if ! grep -q 'FPGAGDR_NVP2P=n' <<<"$oemake"; then
  fail module "fpgagdr-module is not built with FPGAGDR_NVP2P=n"
elif grep -q '^nvidia-kernel-oot' <<<"$mdeps"; then
  fail module "fpgagdr-module depends on NVIDIA's kernel modules"
else
  say "check module: ok (FPGAGDR_NVP2P=n, against $kernel $(getvar virtual/kernel PV))"
fi
done_at=$(date +%s)

{
  echo "kas file: ${kas_file#"$root"/}"
  echo "machine: $machine, distro: $distro, target: $target"
  echo "fpgagdr: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- meta-fpgagdr conf/kas || echo ', with uncommitted changes to the layer or kas files')"
  printf 'layer: %s\n' "${pins[@]}"
  echo "parse: ${recipes:-?} recipes, $warnings warnings, $((parsed - start)) s"
  echo "dry run: ${tasks:-?} tasks, $dry_warnings warnings, $((dried - parsed)) s"
  echo "checks: ${#failed[@]} failed, $((done_at - dried)) s"
} >"$build/record.txt"
if [ ${#failed[@]} -gt 0 ]; then
  say "checks failed: ${failed[*]} ($build/checks.log)"
  exit 1
fi
say "parse ok (${recipes:-?} recipes, $warnings warnings), dry run of $target for $machine ok (${tasks:-?} tasks), checks ok, $((done_at - start)) s"
