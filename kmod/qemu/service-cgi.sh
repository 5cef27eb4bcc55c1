#!/bin/sh
# shellcheck shell=sh
# The guest's control endpoint for kmod/qemu/service-test.py, run
# by busybox httpd as /cgi-bin/ctl?ACTION[&p=PATH][&v=VALUE][&card=CARD]:
#   start     start fpgagdrd (--card CARD, default /dev/fpgagdr0) on :8080,
#             with the stall and change bounds of an emulated machine: one model
#             run (each start's warm-up) can take minutes under TCG
#   kill9     kill -9 fpgagdrd (pins and a frame wait outstanding)
#   alive     "1" while fpgagdrd runs, else "0"
#   reload    (fpgagdrd stopped) unload the module and load it again with the
#             pass's parameters and test_poll=POLL (&poll=0|1): the software
#             card's completion and frame-done by interrupt (0) or by polling
#             its status registers (1; the card's equivalent of poll_mode=1,
#             which only the XDMA PCI driver reads)
#   read      print file PATH (under /sys/kernel/debug/ or /tmp/fg/)
#   write     write VALUE into PATH (same places)
#   put       write the request body into PATH (same places)
#   log       fpgagdrd's stderr so far
#   done      tell /init to finish
# A TEST harness only: it exists in the test guest, never in the image.
fg=/tmp/fg
q=$(httpd -d "${QUERY_STRING:-}")
action=${q%%&*}

param() { # param NAME: the value of NAME= in the query
	echo "&$q" | tr '&' '\n' | sed -n "s/^$1=//p" | head -n 1
}

reply() { # reply STATUS TEXT (busybox httpd passes a status line through as is)
	printf 'HTTP/1.0 %s X\r\nContent-Type: text/plain\r\n\r\n%s\n' "$1" "$2"
	exit 0
}

allowed() { # allowed PATH: the test may touch debugfs and the service's files
	case $1 in
	*..*) return 1 ;;
	/sys/kernel/debug/* | "$fg"/*) return 0 ;;
	*) return 1 ;;
	esac
}

running() {
	[ -f "$fg/pid" ] && kill -0 "$(cat "$fg/pid")" 2>/dev/null
}

case $action in
start)
	running && reply 409 "already running"
	card=$(param card)
	cd "$fg" || reply 500 "no $fg"
	FPGAGDR_TOKEN=fpgagdr-qemu-test ORT_DYLIB_PATH=/lib/ort/libonnxruntime.so \
		FPGAGDR_DATA_DIR=/share RUST_LOG=fpgagdrd=info,fpgagdr=info \
		setsid fpgagdrd --listen 0.0.0.0:8080 --card "${card:-/dev/fpgagdr0}" \
		--config "$fg/config.json" --stall-limit-s 600 --change-timeout-s 900 \
		</dev/null >>"$fg/log" 2>&1 &
	echo $! >"$fg/pid"
	reply 200 "started $!"
	;;
kill9)
	running || reply 409 "not running"
	kill -9 "$(cat "$fg/pid")"
	reply 200 "killed"
	;;
reload)
	running && reply 409 "fpgagdrd still runs: kill9 it first"
	poll=$(param poll)
	case $poll in
	0 | 1) ;;
	*) reply 400 "rule poll: 0 or 1, not '$poll'" ;;
	esac
	rmmod fpgagdr || reply 500 "rmmod fpgagdr failed"
	# shellcheck disable=SC2046 # the pass's module parameters are words
	insmod /lib/fpgagdr/fpgagdr-host.ko $(cat "$fg/module-params") test_poll="$poll" ||
		reply 500 "insmod fpgagdr-host.ko test_poll=$poll failed"
	# shellcheck source-path=SCRIPTDIR source=guest-lib.sh
	. /lib/fpgagdr/guest-lib.sh
	wait_dev || reply 500 "no /dev/fpgagdr0 within 10 s of the reload"
	reply 200 "reloaded test_poll=$poll"
	;;
alive)
	if running; then reply 200 1; else reply 200 0; fi
	;;
read)
	p=$(param p)
	if ! allowed "$p" || [ ! -e "$p" ]; then reply 404 "no such file: $p"; fi
	reply 200 "$(cat "$p" 2>&1)"
	;;
write)
	p=$(param p)
	allowed "$p" || reply 403 "not allowed: $p"
	if param v >"$p"; then reply 200 ok; else reply 500 "write failed"; fi
	;;
put)
	p=$(param p)
	allowed "$p" || reply 403 "not allowed: $p"
	if head -c "${CONTENT_LENGTH:-0}" >"$p"; then reply 200 ok; else reply 500 "write failed"; fi
	;;
log)
	reply 200 "$(cat "$fg/log" 2>/dev/null)"
	;;
done)
	echo "host test finished" >/tmp/done
	reply 200 ok
	;;
*)
	reply 400 "unknown action: $action"
	;;
esac
