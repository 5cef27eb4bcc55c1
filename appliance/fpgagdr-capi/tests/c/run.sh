#!/usr/bin/env bash
# The C API as a C program sees it, from test.sh:
#   1. install libfpgagdr (install.sh) into target/capi/prefix: library, generated
#      header, fpgagdr.pc;
#   2. build examples/c/capture.c and tests/c/capi_test.c with cc, flags from
#      pkg-config against that prefix (-Wall -Wextra -Werror);
#   3. run the example on the simulated card: 8 frames, in sequence, with different
#      checksums; and on a node that does not exist: exit 1 naming rule card-present;
#   4. run the C test on the simulated card under valgrind (memcheck: any invalid
#      access or definite/indirect leak fails).
# Leaves target/capi/capi_test and target/capi/capture (linked with an rpath to the
# prefix) for the QEMU guest's runs against the real module (test.sh passes them in
# FPGAGDR_QEMU_EXTRA; capture there reads 8 frames of $FPGAGDR_DEVICE).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
work=${CARGO_TARGET_DIR:-$root/target}/capi
prefix=$work/prefix
rm -rf "$prefix"
mkdir -p "$work"

"$root/appliance/fpgagdr-capi/install.sh" --strip-debug "$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
read -r -a pc <<<"$(pkg-config --cflags --libs fpgagdr)"
cflags=(-std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -g -O1)
cc "${cflags[@]}" "$root/examples/c/capture.c" "${pc[@]}" -Wl,-rpath,"$prefix/lib" \
  -o "$work/capture"
cc "${cflags[@]}" "$here/capi_test.c" "${pc[@]}" -Wl,-rpath,"$prefix/lib" \
  -o "$work/capi_test"
echo "built capture and capi_test against $prefix (fpgagdr $(pkg-config --modversion fpgagdr))"

"$work/capture" sim 8 | tee "$work/capture.log"
frames=$(grep -c '^frame ' "$work/capture.log")
in_order=$(awk '/^frame / { sub(":", "", $2); if ($2 != n++) bad = 1 } END { print bad ? "no" : "yes" }' \
  "$work/capture.log")
sums=$(grep -o 'fnv1a [0-9a-f]*' "$work/capture.log" | sort -u | wc -l)
if [ "$frames" != 8 ] || [ "$in_order" != yes ] || [ "$sums" != 8 ]; then
  echo "capture: $frames frames (want 8), in order: $in_order, $sums different checksums" >&2
  exit 1
fi
if "$work/capture" /dev/fpgagdr-no-such-node 1 2>"$work/capture-err.log"; then
  echo "capture on a missing node exited 0" >&2
  exit 1
fi
grep -q 'rule card-present' "$work/capture-err.log" || {
  cat "$work/capture-err.log" >&2
  exit 1
}
echo "capture: 8 frames in order with 8 checksums; a missing node: rule card-present"

valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect --error-exitcode=99 \
  "$work/capi_test" >"$work/capi_test.log" 2>&1 || {
  cat "$work/capi_test.log"
  echo "capi_test failed under valgrind (exit code 99: a memcheck error or leak)" >&2
  exit 1
}
grep -E '^(SKIP|FAIL)|checks,' "$work/capi_test.log"
