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
)
status=0
for t in test-sg test-desc test-pinmath; do
	objs=()
	for s in ${srcs[$t]}; do
		objs+=("$kmod/$s")
	done
	"$cc" "${flags[@]}" -o "$out/$t" "$here/$t.c" "${objs[@]}"
	echo "== $t"
	if ! "$out/$t"; then
		status=1
	fi
done
exit "$status"
