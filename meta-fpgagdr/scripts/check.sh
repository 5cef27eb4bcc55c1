#!/usr/bin/env bash
# Offline checks of the Yocto layer (meta-fpgagdr) and the kas files (conf/kas), as CI
# runs them (test.sh calls this):
#   1. fpgagdrd-crates.inc matches Cargo.lock; the crates' licences (appliance/crate-
#      licenses.txt, the recipes' *-licenses.inc, the root LICENSE's checksum) match it
#      (scripts/crate-licenses.py --check); the recipes' version matches Cargo.toml;
#      ort-deps-to-inc.py turns a made-up ONNX Runtime archive into the expected pins
#   2. every kas file loaded and validated by kas's own config loader, every layer
#      pinned by commit (scripts/kas-check.py)
#   3. bitbake's own parser (bb from PyPI bitbake-setup) on every .conf, .bb,
#      .bbappend, .bbclass of the layer (scripts/bbparse-check.py)
#   3b. the release build's development-key check (fpgagdr_rauc.bbclass) run through
#      bitbake's parser on real keyrings: one certificate, and two (release CA and
#      development CA, both orders) (scripts/dev-key-check-test.py)
#   3c. the admin user's initial password hash is that of the documented password, and
#      its sudoers rule parses (visudo -c)
#   3d. fpgagdr-module's nvidia_p2p choice per machine, through bitbake's parser: "n" on
#      Jetson Orin and Thor, any other FPGAGDR_NVP2P refused with the SoC's reason
#      (scripts/module-nvp2p-test.py)
#   3e. the CUDA version fpgagdrd's and libfpgagdr's recipes export to cudarc's build
#      script (CUDARC_CUDA_VERSION) per machine, through bitbake's parser: the
#      machine's CUDA on Jetson, 12.6 elsewhere (scripts/cudarc-version-test.py)
#   4. oelint-adv --release scarthgap on every recipe, append and class; suppressions
#      with their reasons: scripts/oelint-suppressions.txt
#   5. shellcheck on every shell script of the layer and images/
#   6. systemd's own checker on the layer's units (systemd-analyze verify, with the
#      recipes' @paths@ filled in), and fpgagdrd.service's exposure score
#      (systemd-analyze security --offline) held at 2.0 or better; the health gate as
#      systemd's loader resolves it: meta-tegra's nv_update_verifier.service (a
#      stand-in with its ordering and command) with the layer's drop-in runs after,
#      and requires, fpgagdr-mark-good.service, which has no FailureAction; mark-good
#      and rauc.service (with the layer's drop-in) come after meta-tegra's
#      setup-nv-boot-control.service (stand-ins of meta-tegra's and meta-rauc's units)
# Installs the pinned tools of scripts/requirements.txt into a git-ignored venv
# (meta-fpgagdr/.check/), and python3-venv / shellcheck / systemd / openssl / sudo (visudo) from Debian when missing
# (needs root). The parse against the real upstream layers is separate:
# meta-fpgagdr/scripts/dry-run.sh (docs/yocto.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
apt_get=$here/../../appliance/scripts/apt-get.sh
layer=$(dirname "$here")
root=$(dirname "$layer")
cache=$layer/.check

say() { printf 'layer-check: %s\n' "$*"; }
die() { printf 'layer-check: error: %s\n' "$*" >&2; exit 1; }
apt_need() { # apt_need COMMAND-TEST PACKAGE
  if eval "$1" >/dev/null 2>&1; then return 0; fi
  [ "$(id -u)" = 0 ] || die "$2 is needed: sudo apt-get install $2"
  if [ -z "${apt_updated:-}" ]; then "$apt_get" update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq "$2" >/dev/null
}

# --- tools ---------------------------------------------------------------------
apt_need "command -v shellcheck" shellcheck
apt_need "python3 -c 'import ensurepip, tomllib'" python3-venv
apt_need "command -v systemd-analyze" systemd
apt_need "command -v openssl" openssl
apt_need "command -v visudo" sudo
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
check "crate licences match Cargo.lock" "$py" "$here/crate-licenses.py" --check
check "recipe version matches Cargo.toml" versions
check "ONNX Runtime pins generator" "$py" "$here/ort-deps-to-inc.py" --self-test

# --- 2. kas ---------------------------------------------------------------------
check "kas files" "$py" "$here/kas-check.py" "$root"

# --- 3. bitbake's parser ----------------------------------------------------------
check "bitbake parser" "$py" "$here/bbparse-check.py" "$layer"

check "development-key check" "$py" "$here/dev-key-check-test.py" "$layer"
check "module's nvidia_p2p per machine" "$py" "$here/module-nvp2p-test.py" "$layer"
check "cudarc's CUDA version per machine" "$py" "$here/cudarc-version-test.py" "$layer"

# The admin user's initial password hash in the image recipe is that of the password
# docs/yocto.md gives ("fpgagdr").
admin_password() {
  local hash salt
  hash=$(sed -n 's/^FPGAGDR_ADMIN_PASSWORD_HASH ??= "\(.*\)"$/\1/p' "$layer/recipes-core/images/fpgagdr-image.bb" | tr -d '\134')
  salt=$(cut -d'$' -f3 <<<"$hash")
  if [ -z "$hash" ] || [ "$(openssl passwd -6 -salt "$salt" fpgagdr)" != "$hash" ]; then
    echo "FPGAGDR_ADMIN_PASSWORD_HASH is not the hash of the documented initial password 'fpgagdr'" >&2
    return 1
  fi
  echo "admin: initial password hash is that of 'fpgagdr' (expired at first login)"
}
check "admin initial password" admin_password
# sudo's own parser on the admin rule the image installs.
check "sudoers rule (visudo)" visudo -c -f "$layer/recipes-core/fpgagdr-admin/files/50-fpgagdr-admin.sudoers"

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
    -o -path "$root/images/out" -o -path "$root/images/vm/.cache" \) -prune -o -type f -print0 | sort -z)
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
  ln -s "$(type -P true)" "$work/bin/nvbootctrl"
  while IFS= read -r -d '' unit; do
    sed -e "s,@bindir@,$work/bin,g" -e 's,@libdir@,/usr/lib,g' -e 's,@datadir@,/usr/share,g' \
      -e 's,@sysconfdir@,/etc,g' "$unit" >"$work/$(basename "$unit")"
  done < <(find "$layer" -path "$cache" -prune -o -name '*.service' -print0)
  # meta-tegra's nv_update_verifier.service (tegra-redundant-boot) is not in this layer:
  # a stand-in with its ordering and command, and the layer's drop-in for it.
  printf '%s\n' '[Unit]' 'Description=OTA bootloader update verifier (stand-in)' \
    'After=nvstartup.service' '' '[Service]' 'Type=simple' \
    "ExecStart=$work/bin/nvbootctrl verify" '' '[Install]' 'WantedBy=multi-user.target' \
    >"$work/nv_update_verifier.service"
  mkdir -p "$work/nv_update_verifier.service.d"
  cp "$layer"/recipes-core/rauc-health/files/50-fpgagdr-health-gate.conf "$work/nv_update_verifier.service.d/"
  # meta-tegra's setup-nv-boot-control.service (nvbootctrl's configuration, written at
  # boot) and meta-rauc's rauc.service, stand-ins with their ordering and type, and the
  # layer's drop-in for rauc.service.
  printf '%s\n' '[Unit]' 'Description=Set up redundant boot configuration (stand-in)' \
    'DefaultDependencies=no' 'Before=nv_update_verifier.service' '' '[Service]' 'Type=oneshot' \
    "ExecStart=$work/bin/nvbootctrl" '' '[Install]' 'WantedBy=multi-user.target' \
    >"$work/setup-nv-boot-control.service"
  printf '%s\n' '[Unit]' 'Description=Rauc Update Service (stand-in)' '' '[Service]' \
    'Type=dbus' 'BusName=de.pengutronix.rauc' "ExecStart=$work/bin/rauc service" \
    >"$work/rauc.service"
  ln -s "$(type -P true)" "$work/bin/rauc"
  mkdir -p "$work/rauc.service.d"
  cp "$layer"/recipes-core/rauc/files/50-fpgagdr-nv-boot-control.conf "$work/rauc.service.d/"
  # verify warns and carries on over a setting it cannot parse: any word from it fails.
  local said
  if ! said=$(cd "$work" && systemd-analyze verify --man=no ./*.service 2>&1) || [ -n "$said" ]; then
    echo "${said:-systemd-analyze verify failed}" >&2
    rm -rf "$work"
    return 1
  fi
  # The health gate, as systemd's loader resolves the units (its debug dump of each).
  local dump verifier markgood gate=0
  dump=$(cd "$work" && SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --man=no ./*.service 2>&1)
  unit_dump() { printf '%s\n' "$dump" | awk -v u="-> Unit $1:" 'index($0, u) { on = 1; next } /-> Unit / { on = 0 } on'; }
  verifier=$(unit_dump nv_update_verifier.service)
  markgood=$(unit_dump fpgagdr-mark-good.service)
  # nvbootctrl (RAUC's backend, mark-good) only after its configuration is written.
  local u deps
  for u in rauc.service fpgagdr-mark-good.service; do
    # (Into a variable first: grep -q's early exit would fail the pipe under pipefail.)
    deps=$(unit_dump "$u")
    if ! grep -q 'After: setup-nv-boot-control.service' <<<"$deps"; then
      echo "$u is not ordered after setup-nv-boot-control.service: nvbootctrl may run before its configuration exists" >&2
      gate=1
    fi
  done
  for dep in 'After: fpgagdr-mark-good.service' 'Requires: fpgagdr-mark-good.service'; do
    if ! grep -q "$dep" <<<"$verifier"; then
      echo "nv_update_verifier.service (nvbootctrl verify) lacks '$dep': it would confirm the boot before the health gate" >&2
      gate=1
    fi
  done
  # systemd prints "Failure Action:" only when one is set.
  if ! grep -q 'Fragment Path:' <<<"$markgood"; then
    echo "systemd did not load fpgagdr-mark-good.service" >&2
    gate=1
  elif grep 'Failure Action:' <<<"$markgood" | grep -vq 'none'; then
    echo "fpgagdr-mark-good.service has a FailureAction: a failure there would reboot (loop)" >&2
    gate=1
  fi
  if [ "$gate" != 0 ]; then rm -rf "$work"; return 1; fi
  score=$(systemd-analyze security --offline=true "$work/fpgagdrd.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for fpgagdrd.service: \([0-9.]*\).*/\1/p')
  rm -rf "$work"
  echo "units: $(find "$layer" -path "$cache" -prune -o -name '*.service' -print | wc -l) verified, nvbootctrl verify after the health gate, mark-good and RAUC after setup-nv-boot-control; fpgagdrd.service exposure $score"
  if [ -z "$score" ] || ! awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
    echo "fpgagdrd.service exposure ${score:-?} is worse than 2.0 (docs/yocto.md)" >&2
    return 1
  fi
}
check "systemd units" units

[ "$failed" = 0 ] || die "some checks failed (above)"
say "all checks passed"
