#!/usr/bin/env bash
# Build the module's pure logic with the user-space unit tests and run them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kmod=$(dirname "$here")
out=${FPGAGDR_TEST_OUT:-$kmod/.cache/tests}
cc=${CC:-gcc}
flags=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$kmod")
if "$cc" -fsanitize=address,undefined -x c -o /dev/null - <<<'int main(void){return 0;}' 2>/dev/null; then
	flags+=('-fsanitize=address,undefined' -fno-sanitize-recover=all)
fi
mkdir -p "$out/gen"
# compat.h includes the features kbuild probes; user space has no kernel to
# probe: an empty one (the shim offers both forms of every API it names)
: >"$out/gen/fpgagdr-features.h"

declare -A srcs=(
	[test-sg]="fpgagdr-sg.c"
	[test-desc]="fpgagdr-desc.c fpgagdr-sg.c"
	[test-pinmath]="fpgagdr-pinmath.c"
	[test-link]="fpgagdr-link.c"
	[test-fdone]="fpgagdr-fdone.c"
	[test-dmasync]="fpgagdr-dmasync.c"
	[test-walk]="fpgagdr-testeng-walk.c"
	[test-xdma]="fpgagdr-xdma.c fpgagdr-desc.c fpgagdr-sg.c fpgagdr-testeng-walk.c tests/xdma-model.c"
	[test-pci]="fpgagdr-xdma.c fpgagdr-desc.c fpgagdr-sg.c fpgagdr-testeng-walk.c tests/xdma-model.c tests/pci-model.c"
)
# test-xdma, test-pci and test-dmasync build kernel sources of the module
# (the XDMA engine, the PCI driver, the per-run DMA sync) against kshim/
# (kernel headers reduced to what they need) and the test doubles: the
# PG195 register model (xdma-model.c), a PCI function (pci-model.c)
declare -A extra=(
	[test-fdone]="-I$kmod/include"
	[test-dmasync]="-I$here/kshim -Wno-unused-parameter"
	[test-xdma]="-I$here/kshim -I$kmod/include -Wno-unused-parameter"
	[test-pci]="-I$here/kshim -I$kmod/include -I$out/gen -Wno-unused-parameter"
)
status=0
for t in test-sg test-desc test-pinmath test-link test-fdone test-dmasync test-walk test-xdma test-pci; do
	objs=()
	for s in ${srcs[$t]}; do
		objs+=("$kmod/$s")
	done
	# shellcheck disable=SC2086 # extra flags are words
	"$cc" "${flags[@]}" ${extra[$t]:-} -o "$out/$t" "$here/$t.c" "${objs[@]}"
	echo "== $t"
	if ! "$out/$t"; then
		status=1
	fi
done
exit "$status"
