# shellcheck shell=sh
# The reporting helpers both guest /init scripts use (init.sh for the module's
# passes, service-init.sh for the service pass); installed by run.sh's new_root as
# /lib/fpgagdr/guest-lib.sh. The caller sets fails=0 first; result counts into it.

mark() { echo "FPGAGDR-QEMU: [$(cut -d' ' -f1 /proc/uptime)] $*"; }

result() { # result PASS|FAIL NAME
	echo "FPGAGDR-RESULT: $1 $2"
	if [ "$1" != PASS ]; then
		fails=$((fails + 1))
	fi
}

check() { # check NAME COMMAND...
	name=$1
	shift
	if "$@"; then
		result PASS "$name"
	else
		result FAIL "$name"
	fi
}

# Waits up to 10 s for the first card's control node.
wait_dev() {
	w=0
	while [ ! -e /dev/fpgagdr0 ] && [ "$w" -lt 100 ]; do
		sleep 0.1
		w=$((w + 1))
	done
	[ -e /dev/fpgagdr0 ]
}
