#!/usr/bin/env bash
# Offline checks of the Yocto layer (meta-fpgagdr) and the kas files (conf/kas), as CI
# runs them (test.sh calls this):
#   1. fpgagdrd-crates.inc matches Cargo.lock; the recipes' version matches Cargo.toml;
#      ort-deps-to-inc.py turns a made-up ONNX Runtime archive into the expected pins
#   2. every kas file loaded and validated by kas's own config loader, every layer
#      pinned by commit (scripts/kas-check.py)
#   3. bitbake's own parser (bb from PyPI bitbake-setup) on every .conf, .bb,
#      .bbappend, .bbclass of the layer (scripts/bbparse-check.py)
#   4. oelint-adv --release scarthgap on every recipe, append and class; suppressions
#      with their reasons: scripts/oelint-suppressions.txt
#   5. shellcheck on every shell script of the layer and images/
#   6. systemd's own checker on the layer's units (systemd-analyze verify, with the
#      recipes' @paths@ filled in), and fpgagdrd.service's exposure score
#      (systemd-analyze security --offline) held at 2.0 or better
# Installs the pinned tools of scripts/requirements.txt into a git-ignored venv
# (meta-fpgagdr/.check/), and python3-venv / shellcheck / systemd from Debian when missing
# (needs root). The parse against the real upstream layers is separate:
# meta-fpgagdr/scripts/dry-run.sh (docs/yocto.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
layer=$(dirname "$here")
root=$(dirname "$layer")
cache=$layer/.check

say() { printf 'layer-check: %s\n' "$*"; }
die() { printf 'layer-check: error: %s\n' "$*" >&2; exit 1; }
apt_need() { # apt_need COMMAND-TEST PACKAGE
  if eval "$1" >/dev/null 2>&1; then return 0; fi
  [ "$(id -u)" = 0 ] || die "$2 is needed: sudo apt-get install $2"
  if [ -z "${apt_updated:-}" ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}

# --- tools ---------------------------------------------------------------------
apt_need "command -v shellcheck" shellcheck
apt_need "python3 -c 'import ensurepip, tomllib'" python3-venv
apt_need "command -v systemd-analyze" systemd
# shellcheck source=tools-venv.sh source-path=SCRIPTDIR
. "$here/tools-venv.sh"
tools_venv "$here"
failed=0
check() { # check NAME COMMAND...: run one check, keep going, remember a failure
  local name=$1; shift
  if "$@"; then say "$name: ok"; else say "$name: FAILED"; failed=1; fi
}

# --- 1. crates and version -------------------------------------------------------
versions() {
  local cargo inc
  cargo=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")
  inc=$(sed -n 's/^FPGAGDR_VERSION = "\(.*\)"/\1/p' "$layer/recipes-appliance/include/fpgagdr-source.inc")
  if [ -z "$cargo" ] || [ "$cargo" != "$inc" ]; then
    echo "FPGAGDR_VERSION ($inc) differs from Cargo.toml's workspace version ($cargo)" >&2
    return 1
  fi
}
check "crates inc matches Cargo.lock" "$py" "$here/cargo-lock-to-inc.py" --check
check "recipe version matches Cargo.toml" versions
check "ONNX Runtime pins generator" "$py" "$here/ort-deps-to-inc.py" --self-test

# --- 2. kas ---------------------------------------------------------------------
check "kas files" "$py" "$here/kas-check.py" "$root"

# --- 3. bitbake's parser ----------------------------------------------------------
check "bitbake parser" "$py" "$here/bbparse-check.py" "$layer"

# --- 4. oelint-adv ----------------------------------------------------------------
oelint() {
  local suppress=() recipes=()
  while read -r rule _; do suppress+=("--suppress=$rule"); done \
    < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/oelint-suppressions.txt")
  mapfile -t recipes < <(find "$layer" \( -name '*.bb' -o -name '*.bbappend' -o -name '*.bbclass' \) \
    -not -path "$cache/*" | sort)
  local out
  out=$(cd "$root" && "$venv/bin/oelint-adv" --quiet --relpaths --release scarthgap \
    --constantmods="+$here/oelint-constants.json" "${suppress[@]}" "${recipes[@]}" 2>&1) || true
  echo "oelint-adv: ${#recipes[@]} files, ${#suppress[@]} rules suppressed"
  [ -z "$out" ] || { echo "$out" >&2; return 1; }
}
check "oelint-adv" oelint

# --- 5. shellcheck ----------------------------------------------------------------
scripts() {
  local files=() f
  # *.sh, and any other file that starts with a sh/bash shebang (a test double, a hook).
  while IFS= read -r -d '' f; do
    case $f in
      *.sh) files+=("$f") ;;
      *) if head -n 1 "$f" | grep -Eq '^#!.*/(env )?(ba|da)?sh( |$)'; then files+=("$f"); fi ;;
    esac
  done < <(find "$layer" "$root/images" \( -path "$cache" -o -path "$root/images/work" \
    -o -path "$root/images/out" \) -prune -o -type f -print0 | sort -z)
  echo "shellcheck: ${#files[@]} scripts"
  shellcheck "${files[@]}"
}
check "shellcheck" scripts

# --- 6. systemd units ---------------------------------------------------------------
units() {
  local work unit score
  work=$(mktemp -d)
  # verify wants each ExecStart= executable to exist: the units name @bindir@/fpgagdrd.
  mkdir -p "$work/bin"
  ln -s "$(type -P true)" "$work/bin/fpgagdrd"
  while IFS= read -r -d '' unit; do
    sed -e "s,@bindir@,$work/bin,g" -e 's,@libdir@,/usr/lib,g' -e 's,@datadir@,/usr/share,g' \
      -e 's,@sysconfdir@,/etc,g' "$unit" >"$work/$(basename "$unit")"
  done < <(find "$layer" -path "$cache" -prune -o -name '*.service' -print0)
  # verify warns and carries on over a setting it cannot parse: any word from it fails.
  local said
  if ! said=$(cd "$work" && systemd-analyze verify --man=no ./*.service 2>&1) || [ -n "$said" ]; then
    echo "${said:-systemd-analyze verify failed}" >&2
    rm -rf "$work"
    return 1
  fi
  score=$(systemd-analyze security --offline=true "$work/fpgagdrd.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for fpgagdrd.service: \([0-9.]*\).*/\1/p')
  rm -rf "$work"
  echo "units: $(find "$layer" -path "$cache" -prune -o -name '*.service' -print | wc -l) verified; fpgagdrd.service exposure $score"
  if [ -z "$score" ] || ! awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
    echo "fpgagdrd.service exposure ${score:-?} is worse than 2.0 (docs/yocto.md)" >&2
    return 1
  fi
}
check "systemd units" units

[ "$failed" = 0 ] || die "some checks failed (above)"
say "all checks passed"
