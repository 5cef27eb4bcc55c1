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
mkdir -p "$out"

declare -A srcs=(
	[test-sg]="fpgagdr-sg.c"
	[test-desc]="fpgagdr-desc.c fpgagdr-sg.c"
	[test-pinmath]="fpgagdr-pinmath.c"
	[test-link]="fpgagdr-link.c"
	[test-walk]="fpgagdr-testeng-walk.c"
	[test-xdma]="fpgagdr-xdma.c fpgagdr-desc.c fpgagdr-sg.c fpgagdr-testeng-walk.c tests/xdma-model.c"
)
# test-xdma builds the XDMA engine's kernel source against kshim/ (kernel
# headers reduced to what it needs) and the register model
declare -A extra=(
	[test-xdma]="-I$here/kshim -I$kmod/include -Wno-unused-parameter"
)
status=0
for t in test-sg test-desc test-pinmath test-link test-walk test-xdma; do
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
