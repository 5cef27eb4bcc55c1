# shellcheck shell=bash
# Sourced by check.sh and dry-run.sh: the pinned Python tools of requirements.txt
# (kas, oelint-adv, bitbake's parser) in the git-ignored venv meta-fpgagdr/.check/venv,
# made or remade when requirements.txt changes. Needs python3-venv (check.sh installs
# it from Debian when missing).
#
#   tools_venv DIR_OF_REQUIREMENTS   sets $venv and $py; prints a line when it installs

tools_venv() {
  local here=$1 stamp
  venv=$(dirname "$here")/.check/venv
  stamp=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
  if [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$stamp" ]; then
    printf 'installing the pinned tools into %s\n' "$venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt"
    echo "$stamp" >"$venv/.stamp"
  fi
  # shellcheck disable=SC2034  # read by the scripts that source this file
  py=$venv/bin/python
}
