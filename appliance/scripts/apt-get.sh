#!/usr/bin/env bash
# apt-get ARGS...: apt-get that waits for another package manager run instead of failing
# with "Could not get lock" (a fresh machine installs its updates at first boot; other
# jobs install beside ours). dpkg's frontend lock is waited for by apt itself
# (DPkg::Lock::Timeout); apt's own locks (the package lists of `update`, the archives of
# `install` and `download`) are not (apt 2.6), so a run that failed on one of those is
# tried again, for at most 10 minutes. Output and exit status are apt-get's; the
# environment (DEBIAN_FRONTEND, APT_CONFIG) passes through.
set -uo pipefail
wait_s=600
deadline=$((SECONDS + wait_s))
err=$(mktemp)
trap 'rm -f "$err"' EXIT
while :; do
  apt-get -o DPkg::Lock::Timeout="$wait_s" "$@" 2>"$err"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q 'Could not get lock' "$err" && [ "$SECONDS" -lt "$deadline" ]; then
    echo "apt-get: $(grep -m1 'Could not get lock' "$err"); waiting for it" >&2
    sleep 5
    continue
  fi
  cat "$err" >&2
  exit "$rc"
done
