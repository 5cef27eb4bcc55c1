// SPDX-License-Identifier: GPL-2.0
/*
 * Frame capture against the real module and the software
 * card's TEST-ONLY sensor: FRAME_INFO, WAIT_FRAME, poll(), ABORT of waits,
 * the event queue and its overflow, the frame-done rules, every frame's
 * header and CRCs after a real C2H DMA of its slot, captured + overrun +
 * missed = produced, stalls, the event and user register nodes as Xilinx's
 * tools use them, capture off when nobody listens, kill -9 with a wait
 * outstanding, removal waking waiters, and what protocol 1.1 adds on the
 * card's side (docs/card-protocol.md): EPOCH, LIVE_SEQ_LO without a latch,
 * CAPTURE 0->1 clearing a stale FRAME_PENDING, frames dropped whole and
 * counted in DROPPED without a sequence, and the header written last, so a
 * copy that overlaps the card's write is caught by the torn-frame check.
 * "fgtest badcard STATE" checks a card whose registers break a rule
 * (loaded with test_* parameters).
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tframes.h"

/* The card's geometry and state as the module read them at bind. */
static void test_frame_info(void)
{
	struct fpgagdr_frame_info fi;
	int fd = t_open();

	CHECK_OK(frame_info(fd, &fi));
	CHECK(fi.state == FPGAGDR_FRAMES_OK, "state %u", fi.state);
	CHECK(fi.proto_version == PROTO_1_1, "version %#x", fi.proto_version);
	CHECK(fi.slot_count == SLOTS && fi.slot_size == SLOT_SIZE &&
	      fi.slot_base == SLOT_BASE && fi.user_irq == 0,
	      "geometry %u x %u at %#llx irq %u", fi.slot_count, fi.slot_size,
	      (unsigned long long)fi.slot_base, fi.user_irq);
	/* the rules every ioctl shares */
	memset(&fi, 0, sizeof(fi));
	fi.abi_version = 2;
	CHECK(ioctl(fd, FPGAGDR_IOC_FRAME_INFO, &fi) && errno == EPROTO &&
	      fi.abi_version == FPGAGDR_ABI_VERSION, "old ABI not EPROTO");
	memset(&fi, 0, sizeof(fi));
	fi.abi_version = FPGAGDR_ABI_VERSION;
	fi.events = 1;
	CHECK(ioctl(fd, FPGAGDR_IOC_FRAME_INFO, &fi) && errno == EINVAL,
	      "[out] field set on input: not EINVAL");
	close(fd);
}

/*
 * The card's link attribute @attr in sysfs (the PCI core's own reading of
 * the same registers): the generation for a *_speed file ("8.0 GT/s PCIe"
 * is 3), the lanes for a *_width file; 0 when the file is absent (the
 * function has no PCIe capability), -1 when it cannot be understood.
 */
static int sysfs_link(const char *bdf, const char *attr)
{
	static const char *const speeds[] = { "2.5 ", "5.0 ", "8.0 ", "16.0 ",
					      "32.0 ", "64.0 " };
	char path[128], text[64] = "";
	unsigned int i;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (!fgets(text, sizeof(text), f))
		text[0] = 0;
	fclose(f);
	if (strstr(attr, "width"))
		return atoi(text);
	for (i = 0; i < ARRAY_SIZE(speeds); i++)
		if (!strncmp(text, speeds[i], strlen(speeds[i])))
			return i + 1;
	return -1;
}

/*
 * The path's limiting link as the PCI core computes it, redone here from
 * sysfs: walk from the card up through its parents in /sys/devices (each
 * PCI device's parent is its upstream bridge), read each one's
 * current_link_speed and _width, and keep the least bandwidth after
 * encoding (PCIE_SPEED2MBS_ENC's Mb/s per lane), a tie going upstream.
 * Fills @gen, @width and @dev as GET_STATUS packs them; 0 on success.
 */
static const unsigned int link_mbs[] = { 0, 2000, 4000, 7876, 15753,
					 31507, 64000 };

static int sysfs_link_path(const char *bdf, unsigned int *gen,
			   unsigned int *width, unsigned int *dev)
{
	char path[256], *real, *name;
	unsigned int bw = 0, d, b, s, f, nbw;
	int g, w;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", bdf);
	real = realpath(path, NULL);
	if (!real)
		return -errno;
	*gen = *width = *dev = 0;
	for (;;) {
		name = strrchr(real, '/');
		if (!name || sscanf(name + 1, "%x:%x:%x.%x", &d, &b, &s, &f) != 4)
			break;
		g = sysfs_link(name + 1, "current_link_speed");
		w = sysfs_link(name + 1, "current_link_width");
		nbw = (g > 0 && g <= 6 && w > 0) ? (unsigned int)w * link_mbs[g] : 0;
		if (!bw || nbw <= bw) {
			bw = nbw;
			*gen = g > 0 ? g : 0;
			*width = w > 0 ? w : 0;
			*dev = d << 16 | b << 8 | s << 3 | f;
		}
		*name = 0;
	}
	free(real);
	if (!bw)
		*gen = *width = *dev = 0;
	return 0;
}

/*
 * GET_STATUS's path link (link_path_*, were reserved[0] and pad0): what the
 * PCI core's pcie_bandwidth_available() says, checked against the same
 * computation over sysfs; with FPGAGDR_EXPECT_PATH=GTS:LANES (run.sh sets
 * the root port's x-speed and x-width and says so), exactly that link.
 */
static void test_link_path(void)
{
	static const char *const gts[] = { "2.5", "5", "8", "16", "32", "64" };
	const char *want = getenv("FPGAGDR_EXPECT_PATH");
	unsigned int gen = 0, width = 0, dev = 0, i, want_gen = 0, want_width = 0;
	struct fpgagdr_status st;
	char bdf[32], speed[8] = "";
	int fd = t_open();

	CHECK_OK(t_status(fd, &st));
	CHECK_OK(t_card_bdf(bdf, sizeof(bdf)));
	printf("    path: gen %u x%u at %04x:%02x:%02x.%x (card %s: gen %u x%u)\n",
	       st.link_path_gen, st.link_path_width, st.link_path_dev >> 16,
	       (st.link_path_dev >> 8) & 0xff, (st.link_path_dev >> 3) & 0x1f,
	       st.link_path_dev & 7, bdf, st.link_gen, st.link_width);
	CHECK_OK(sysfs_link_path(bdf, &gen, &width, &dev));
	CHECK(st.link_path_gen == gen && st.link_path_width == width &&
	      st.link_path_dev == (gen ? dev : 0),
	      "path gen %u x%u at %#x, sysfs says gen %u x%u at %#x",
	      st.link_path_gen, st.link_path_width, st.link_path_dev, gen,
	      width, dev);
	/* the card's own link is on the path: the path carries no more */
	CHECK(!st.link_gen || !st.link_path_gen || st.link_gen > 6 ||
	      st.link_path_gen > 6 ||
	      st.link_path_width * link_mbs[st.link_path_gen] <=
	      st.link_width * link_mbs[st.link_gen],
	      "path gen %u x%u wider than the card's own gen %u x%u",
	      st.link_path_gen, st.link_path_width, st.link_gen,
	      st.link_width);
	if (!want) {
		close(fd);
		return;
	}
	CHECK(sscanf(want, "%7[0-9.]:%u", speed, &want_width) == 2,
	      "FPGAGDR_EXPECT_PATH=%s: not GTS:LANES", want);
	for (i = 0; i < ARRAY_SIZE(gts); i++)
		if (!strcmp(speed, gts[i]))
			want_gen = i + 1;
	CHECK(want_gen, "FPGAGDR_EXPECT_PATH=%s: no such speed", want);
	CHECK(st.link_path_gen == want_gen && st.link_path_width == want_width,
	      "path gen %u x%u, the root port was set to %s GT/s x%u (gen %u)",
	      st.link_path_gen, st.link_path_width, speed, want_width,
	      want_gen);
	close(fd);
}

/* GET_STATUS's link and PIN's method (the rest of the ABI bump). */
static void test_link_and_pin_method(void)
{
	unsigned char *buf = t_alloc(64 * KIB);
	struct fpgagdr_status st;
	struct fpgagdr_pin p;
	char bdf[32];
	int fd = t_open();

	CHECK_OK(t_status(fd, &st));
	/* the module's link against the PCI core's (sysfs), negotiated and capable */
	CHECK_OK(t_card_bdf(bdf, sizeof(bdf)));
	printf("    link: gen %u x%u (capable gen %u x%u), MPS %u, MRRS %u\n",
	       st.link_gen, st.link_width, st.link_cap_gen, st.link_cap_width,
	       st.link_max_payload, st.link_max_read_req);
	CHECK((int)st.link_gen == sysfs_link(bdf, "current_link_speed") &&
	      (int)st.link_width == sysfs_link(bdf, "current_link_width") &&
	      (int)st.link_cap_gen == sysfs_link(bdf, "max_link_speed") &&
	      (int)st.link_cap_width == sysfs_link(bdf, "max_link_width"),
	      "link gen %u x%u cap gen %u x%u, sysfs says %d x%d cap %d x%d",
	      st.link_gen, st.link_width, st.link_cap_gen, st.link_cap_width,
	      sysfs_link(bdf, "current_link_speed"),
	      sysfs_link(bdf, "current_link_width"),
	      sysfs_link(bdf, "max_link_speed"),
	      sysfs_link(bdf, "max_link_width"));
	CHECK(!st.link_gen == !st.link_cap_gen &&
	      st.link_gen <= st.link_cap_gen && st.link_width <= st.link_cap_width,
	      "negotiated gen %u x%u above capable gen %u x%u", st.link_gen,
	      st.link_width, st.link_cap_gen, st.link_cap_width);
	/* edu is conventional PCI in QEMU: no link to report, all zero */
	CHECK(st.link_gen <= 6, "link generation %u", st.link_gen);
	CHECK(!st.link_gen == !st.link_width && !st.link_gen ==
	      !st.link_max_payload && !st.link_gen == !st.link_max_read_req,
	      "link gen %u width %u mps %u mrrs %u: all or nothing",
	      st.link_gen, st.link_width, st.link_max_payload,
	      st.link_max_read_req);
	CHECK(!st.link_max_payload ||
	      (st.link_max_payload >= 128 && st.link_max_payload <= 4096 &&
	       !(st.link_max_payload & (st.link_max_payload - 1))),
	      "max payload %u", st.link_max_payload);
	memset(&p, 0, sizeof(p));
	p.abi_version = FPGAGDR_ABI_VERSION;
	p.kind = FPGAGDR_MEM_HOST;
	p.addr = (unsigned long)buf;
	p.length = 64 * KIB;
	p.dmabuf_fd = -1;
	p.method = FPGAGDR_PIN_METHOD_HOST;
	CHECK(ioctl(fd, FPGAGDR_IOC_PIN, &p) && errno == EINVAL,
	      "method set on input: not EINVAL");
	p.method = 0;
	CHECK(ioctl(fd, FPGAGDR_IOC_PIN, &p) == 0, "PIN: %s", strerror(errno));
	CHECK(p.method == FPGAGDR_PIN_METHOD_HOST, "method %u", p.method);
	close(fd);
	t_free(buf, 64 * KIB);
}

/*
 * Frames flow: every event's sequence grows, its slot is sequence mod N,
 * its arrival time is CLOCK_MONOTONIC and grows; every frame DMA'd from
 * its slot has a valid header and CRC and the event's sequence (or a
 * later one: an overrun); and captured + overrun + missed equals the
 * sequences the card produced, exactly.
 */
static void test_frames_flow(void)
{
	struct fpgagdr_wait_frame w;
	long long captured = 0, overrun = 0, missed = 0, n = 0;
	__u64 first = 0, prev = 0, prev_ns = 0;
	double end;
	struct cap c;
	int ret, kind;

	sensor_defaults();
	cap_open(&c);
	end = t_now() + 2;
	while (t_now() < end) {
		ret = wait_frame(c.fd, 2000, 0, &w);
		if (ret) {
			t_fail(__FILE__, __LINE__, "WAIT_FRAME: %s", t_errname(-ret));
			break;
		}
		if (!n++) {
			first = w.sequence;
			CHECK(w.missed == 0, "first event missed %llu",
			      (unsigned long long)w.missed);
		} else {
			CHECK(w.sequence > prev, "sequence %llu after %llu",
			      (unsigned long long)w.sequence,
			      (unsigned long long)prev);
			CHECK(w.missed == w.sequence - prev - 1,
			      "missed %llu, gap %llu", (unsigned long long)w.missed,
			      (unsigned long long)(w.sequence - prev - 1));
			CHECK(w.arrival_ns > prev_ns, "arrival did not grow");
		}
		CHECK(w.slot == w.sequence % SLOTS, "slot %u of sequence %llu",
		      w.slot, (unsigned long long)w.sequence);
		CHECK(w.length == FRAME_LEN, "length %u", w.length);
		CHECK(w.arrival_ns <= (__u64)(t_now() * 1e9) + 1000,
		      "arrival in the future");
		CHECK(w.overflows <= w.missed, "overflows %llu > missed",
		      (unsigned long long)w.overflows);
		missed += w.missed;
		kind = cap_check(&c, &w);
		CHECK(kind == FRAME_OK || kind == FRAME_OVERRUN,
		      "frame %llu in slot %u is broken (%d)",
		      (unsigned long long)w.sequence, w.slot, kind);
		captured += kind == FRAME_OK;
		overrun += kind == FRAME_OVERRUN;
		prev = w.sequence;
		prev_ns = w.arrival_ns;
	}
	printf("    %lld events, %lld captured, %lld overrun, %lld missed, sequences %llu..%llu\n",
	       n, captured, overrun, missed, (unsigned long long)first,
	       (unsigned long long)prev);
	CHECK(n >= 10, "only %lld events in 2 s at 50 fps", n);
	CHECK(captured + overrun + missed == (long long)(prev - first + 1),
	      "captured %lld + overrun %lld + missed %lld != produced %llu",
	      captured, overrun, missed, (unsigned long long)(prev - first + 1));
	CHECK(sensor_stat("control") == capture_on(),
	      "CONTROL %lld while waiting, want %d", sensor_stat("control"),
	      capture_on());
	cap_close(&c);
	/* nobody listens: capture off, interrupt masked */
	CHECK(sensor_stat("control") == 0, "CONTROL %lld after close",
	      sensor_stat("control"));
	CHECK(t_dbg(DBG_FRAMES, "subscribers") == 0, "subscribers left");
}

/*
 * A slot read after the card rewrote it holds a later frame: counted as
 * an overrun, and the frame itself is whole.
 */
static void test_overrun(void)
{
	struct fpgagdr_wait_frame w, later;
	long long produced;
	struct cap c;
	double end;

	sensor_defaults();
	cap_open(&c);
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	/* do not read the slot until the card went once round its slots */
	end = t_now() + 5;
	do {
		CHECK_OK(wait_frame(c.fd, 2000, 0, &later));
	} while (later.sequence < w.sequence + SLOTS && t_now() < end);
	CHECK(cap_check(&c, &w) == FRAME_OVERRUN,
	      "slot %u read after %llu more frames: no overrun",
	      w.slot, (unsigned long long)(later.sequence - w.sequence));
	/* the sensor's overrun fault: SLOT_COUNT + 1 frames in one tick */
	produced = sensor_stat("produced");
	sensor("overrun", 1);
	end = t_now() + 3;
	while (sensor_stat("produced") < produced + SLOTS + 1 && t_now() < end)
		usleep(10000);
	CHECK(sensor_stat("produced") >= produced + SLOTS + 1,
	      "overrun fault produced %lld frames",
	      sensor_stat("produced") - produced);
	cap_close(&c);
}

/*
 * The sensor's overrun fault: a frame, then, once the module latched its
 * record, SLOT_COUNT more.  The module queued the first frame's event (not
 * only the burst's last one, coalesced), and its slot, read after the
 * burst, holds a later frame: the overrun the service's test counts.
 */
static void test_overrun_fault(void)
{
	struct fpgagdr_wait_frame w;
	long long produced;
	struct cap c;
	double end;

	sensor_defaults();
	sensor("fps", 2);
	cap_open(&c);
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));	/* subscribed */
	sensor("stall", 1);
	while (!wait_frame(c.fd, 700, 0, &w))
		;			/* drain what came before the stall */
	produced = sensor_stat("produced");
	sensor("overrun", 1);
	sensor("stall", 0);		/* the next tick is the fault's */
	end = t_now() + 3;
	while (sensor_stat("produced") < produced + SLOTS + 1 && t_now() < end)
		usleep(10000);
	CHECK(sensor_stat("produced") >= produced + SLOTS + 1,
	      "overrun fault produced %lld frames",
	      sensor_stat("produced") - produced);
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	CHECK(w.sequence == (__u64)produced,
	      "first event after the fault: frame %llu, want %lld (the fault's first, announced before the burst)",
	      (unsigned long long)w.sequence, produced);
	CHECK(cap_check(&c, &w) == FRAME_OVERRUN,
	      "slot %u of frame %llu read after the burst: no overrun",
	      w.slot, (unsigned long long)w.sequence);
	cap_close(&c);
	sensor_defaults();
}

/* Each file's queue holds 64 events; more are dropped and counted. */
static void test_queue_overflow(void)
{
	struct fpgagdr_frame_info a, b;
	struct fpgagdr_wait_frame w;
	__u64 prev, overflows = 0, missed = 0, n = 0;
	struct cap c;
	int ret;

	sensor_defaults();
	sensor("fps", 100);
	cap_open(&c);
	CHECK_OK(frame_info(c.fd, &a));
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	prev = w.sequence;
	/* do not wait while more than a queue's worth of events arrive */
	while (t_dbg(DBG_FRAMES, "events") - (long long)a.events <
	       FPGAGDR_EVENT_QUEUE_LEN + 20)
		usleep(20000);
	while (!(ret = wait_frame(c.fd, 1, FPGAGDR_WAIT_NOWAIT, &w))) {
		n++;
		overflows += w.overflows;
		missed += w.missed;
		CHECK(w.missed == w.sequence - prev - 1, "missed %llu, gap %llu",
		      (unsigned long long)w.missed,
		      (unsigned long long)(w.sequence - prev - 1));
		prev = w.sequence;
		if (n > 4 * FPGAGDR_EVENT_QUEUE_LEN)
			break;
	}
	CHECK(ret == -EAGAIN, "queue drained: %s, want EAGAIN", t_errname(-ret));
	CHECK_OK(frame_info(c.fd, &b));
	printf("    %llu queued events read, %llu overflows, %llu missed\n",
	       (unsigned long long)n, (unsigned long long)overflows,
	       (unsigned long long)missed);
	CHECK(n >= FPGAGDR_EVENT_QUEUE_LEN, "only %llu events were queued",
	      (unsigned long long)n);
	CHECK(overflows > 0, "no overflow reported");
	CHECK(b.queue_overflows - a.queue_overflows >= overflows,
	      "FRAME_INFO counts %llu overflows, WAIT_FRAME %llu",
	      (unsigned long long)(b.queue_overflows - a.queue_overflows),
	      (unsigned long long)overflows);
	CHECK(missed >= overflows, "missed %llu < overflows %llu",
	      (unsigned long long)missed, (unsigned long long)overflows);
	cap_close(&c);
}

static void *abort_waiter(void *arg)
{
	struct t_bg *b = arg;
	struct fpgagdr_wait_frame w;

	b->ret = wait_frame(b->fd, 20000, 0, &w);
	return NULL;
}

/*
 * A stall: waits end at their bound (ETIMEDOUT), NOWAIT says EAGAIN,
 * poll() sees nothing, ABORT with FPGAGDR_ABORT_WAITS wakes a waiter
 * (ECANCELED); when the sensor resumes, frames flow again by themselves.
 */
static void test_stall_timeout_abort(void)
{
	struct fpgagdr_wait_frame w;
	struct t_bg b = { 0 };
	struct pollfd pfd;
	double t0;
	int fd = t_open(), ret;

	sensor_defaults();
	CHECK_OK(wait_frame(fd, 2000, 0, &w));
	sensor("stall", 1);
	usleep(100000);
	while (!wait_frame(fd, 1, FPGAGDR_WAIT_NOWAIT, &w))
		;
	CHECK_ERR(wait_frame(fd, 1, FPGAGDR_WAIT_NOWAIT, &w), EAGAIN);
	t0 = t_now();
	CHECK_ERR(wait_frame(fd, 300, 0, &w), ETIMEDOUT);
	CHECK(t_now() - t0 >= 0.25, "timed out after %.3f s, bound 0.3 s",
	      t_now() - t0);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 200) == 0, "poll() saw an event during a stall");
	/* bad input of the new ioctl and flag */
	CHECK_ERR(wait_frame(fd, 0, 0, &w), EINVAL);
	CHECK_ERR(wait_frame(fd, FPGAGDR_TIMEOUT_MAX_MS + 1, 0, &w), EINVAL);
	CHECK_ERR(wait_frame(fd, 100, 2, &w), EINVAL);
	CHECK_ERR(abort_waits(fd, FPGAGDR_DIR_H2C, 0, FPGAGDR_ABORT_WAITS),
		  EINVAL);
	CHECK_ERR(abort_waits(fd, 0, 0, 2), EINVAL);
	/* ABORT wakes a waiter of the same file */
	b.fd = fd;
	pthread_create(&b.th, NULL, abort_waiter, &b);
	usleep(200000);
	t0 = t_now();
	CHECK_OK(abort_waits(fd, 0, 0, FPGAGDR_ABORT_WAITS));
	pthread_join(b.th, NULL);
	CHECK(b.ret == -ECANCELED, "waiter: %s, want ECANCELED",
	      t_errname(-b.ret));
	CHECK(t_now() - t0 < 2, "ABORT took %.1f s to wake the waiter",
	      t_now() - t0);
	/* the sensor resumes: frames again, no intervention */
	sensor("stall", 0);
	ret = wait_frame(fd, 3000, 0, &w);
	CHECK(ret == 0, "after the stall: %s", t_errname(-ret));
	CHECK(poll(&pfd, 1, 3000) == 1 && (pfd.revents & POLLIN),
	      "poll() did not report a frame");
	close(fd);
}

/* A payload CRC the card got wrong is there for the reader to see. */
static void test_bad_crc(void)
{
	struct fpgagdr_wait_frame w;
	int i, bad = 0, ok = 0, kind;
	struct cap c;

	sensor_defaults();
	sensor("fps", 20);
	cap_open(&c);
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	sensor("bad_crc", 1);
	for (i = 0; i < 10; i++) {
		CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
		kind = cap_check(&c, &w);
		bad += kind == FRAME_BAD_CRC;
		ok += kind == FRAME_OK;
	}
	CHECK(bad == 1 && ok == 9, "%d frames with a bad CRC, %d good; want 1, 9",
	      bad, ok);
	cap_close(&c);
}

/*
 * A card that breaks the protocol at run time: each bad record is handed
 * back with EBADMSG, counted, logged with the rule, and the next frames
 * flow.
 */
static void test_bad_events(void)
{
	static const struct {
		int fault;
		const char *rule;
	} cases[] = {
		{ 1, "the sequence must grow" },
		{ 2, "the slot must be sequence mod 8" },
		{ 3, "a frame is 64..1048576 bytes, the slot size" },
	};
	struct fpgagdr_frame_info a, b;
	struct fpgagdr_wait_frame w;
	int fd = t_open(), ret, i, k, badmsg;

	sensor_defaults();
	sensor("fps", 20);
	CHECK_OK(wait_frame(fd, 2000, 0, &w));
	for (i = 0; i < (int)ARRAY_SIZE(cases); i++) {
		/* what queued up meanwhile is not this case's */
		while (!wait_frame(fd, 1, FPGAGDR_WAIT_NOWAIT, &w))
			;
		CHECK_OK(frame_info(fd, &a));
		sensor("bad_event", cases[i].fault);
		badmsg = 0;
		/* the next record the module latches is the bad one */
		for (k = 0; k < 4 && !badmsg; k++) {
			ret = wait_frame(fd, 2000, 0, &w);
			if (ret == -EBADMSG) {
				badmsg++;
				if (cases[i].fault == 3)
					CHECK(w.length > SLOT_SIZE, "length %u", w.length);
				if (cases[i].fault == 2)
					CHECK(w.slot != w.sequence % SLOTS, "slot %u", w.slot);
			} else {
				CHECK(ret == 0, "%s", t_errname(-ret));
			}
		}
		/* and the frames after it flow */
		CHECK_OK(wait_frame(fd, 2000, 0, &w));
		CHECK(badmsg == 1, "fault %d: %d EBADMSG, want 1", cases[i].fault,
		      badmsg);
		CHECK_OK(frame_info(fd, &b));
		CHECK(b.protocol_errors == a.protocol_errors + 1,
		      "protocol_errors %llu -> %llu",
		      (unsigned long long)a.protocol_errors,
		      (unsigned long long)b.protocol_errors);
		CHECK(dmesg_has(cases[i].rule), "kernel log does not say \"%s\"",
		      cases[i].rule);
	}
	close(fd);
}

/* Frames pushed through debugfs come out of the slots byte for byte. */
static void test_pushed_frames(void)
{
	unsigned char *f = malloc(64 + 3 * 40 * 30);
	struct fpgagdr_wait_frame w;
	size_t plen = 3 * 40 * 30, i;
	struct cap c;
	int fd, k;

	memset(f, 0, 64);
	memcpy(f, "FGDRFRM1", 8);
	f[8] = 1;
	f[10] = 64;
	f[12] = 2;			/* rgb8 */
	f[16] = 40;
	f[20] = 30;
	f[24] = 120;
	f[28] = plen & 0xff;
	f[29] = plen >> 8;
	for (i = 0; i < plen; i++)
		f[64 + i] = (unsigned char)(i * 7 + 3);
	*(__u32 *)(f + 48) = crc32(f + 64, plen);
	sensor_defaults();
	fd = open(DBG_TE "sensor_frames", O_WRONLY);
	CHECK(fd >= 0 && write(fd, f, 64 + plen) == (ssize_t)(64 + plen),
	      "push a frame");
	close(fd);
	/* a frame whose length disagrees with its header is refused */
	fd = open(DBG_TE "sensor_frames", O_WRONLY);
	CHECK(fd >= 0 && write(fd, f, 64 + plen - 1) == (ssize_t)(64 + plen - 1),
	      "push a short frame");
	close(fd);
	CHECK(sensor_stat("push_refused") >= 1, "short frame not refused");
	CHECK(sensor_stat("pushed") == 1, "pushed %lld", sensor_stat("pushed"));
	cap_open(&c);
	for (k = 0; k < 3; k++) {
		CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
		CHECK(w.length == 64 + plen, "length %u", w.length);
		CHECK_OK(cap_read(&c, &w));
		CHECK(!memcmp(c.buf, "FGDRFRM1", 8) &&
		      le32(c.buf + 60) == crc32(c.buf, 60) &&
		      le32(c.buf + 48) == crc32(c.buf + 64, plen),
		      "pushed frame's header or CRC broken");
		CHECK(le64(c.buf + 32) == w.sequence, "sequence %llu, event %llu",
		      (unsigned long long)le64(c.buf + 32),
		      (unsigned long long)w.sequence);
		CHECK(!memcmp(c.buf + 64, f + 64, plen), "payload differs");
	}
	cap_close(&c);
	CHECK_OK(t_dbg_write(DBG_TE "sensor_frames_clear", "1"));
	free(f);
}

/*
 * fpgagdrN_events_K as Xilinx's tools read it: a 4-byte count, a bounded
 * block; an interrupt without a known acknowledge is masked until read.
 * events_0 (frame-done) turns capture on by itself.
 */
static void test_event_nodes(void)
{
	char path[64];
	__u32 v = 0;
	int fd, ret;
	double t0;

	snprintf(path, sizeof(path), "%s_events_3", t_dev);
	if (t_dbg(DBG_FRAMES, "polled") == 1) {
		CHECK(access(path, F_OK), "%s exists without interrupts", path);
		printf("    (no event nodes without interrupts)\n");
		return;
	}
	sensor_defaults();
	CHECK_OK(t_dbg_write(EVENTS_WAIT, "300"));
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "open %s", path);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	CHECK(read(fd, &v, 4) < 0 && errno == EAGAIN, "nothing yet: not EAGAIN");
	fcntl(fd, F_SETFL, 0);
	CHECK(read(fd, &v, 2) < 0 && errno == EINVAL, "2-byte read: not EINVAL");
	t0 = t_now();
	CHECK(read(fd, &v, 4) < 0 && errno == ETIMEDOUT,
	      "blocking read with no interrupt: not ETIMEDOUT");
	/* a bound in jiffies: the first one may be partly gone */
	CHECK(t_now() - t0 >= 0.25, "waited %.3f s of 0.3", t_now() - t0);
	sensor("raise", 3);
	/* masked after the first: the second raise does not reach the host */
	usleep(50000);
	sensor("raise", 3);
	ret = read(fd, &v, 4);
	CHECK(ret == 4 && v == 1, "read %d, count %u; want 4, 1", ret, v);
	sensor("raise", 3);
	ret = read(fd, &v, 4);
	CHECK(ret == 4 && v == 1, "after unmask: read %d, count %u", ret, v);
	close(fd);

	snprintf(path, sizeof(path), "%s_events_0", t_dev);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "open %s", path);
	ret = read(fd, &v, 4);
	CHECK(ret == 4 && v >= 1, "frame-done events: read %d, count %u", ret, v);
	CHECK(sensor_stat("control") == 3, "CONTROL %lld with events_0 open",
	      sensor_stat("control"));
	close(fd);
	CHECK(sensor_stat("control") == 0, "CONTROL %lld after close",
	      sensor_stat("control"));
	CHECK_OK(t_dbg_write(EVENTS_WAIT, "5000"));
}

/*
 * fpgagdrN_user as reg_rw and register scripts use it: pread/pwrite of
 * 32-bit words, and a shared mapping of the design's own registers above
 * the protocol's 4 KiB block.  The block itself is not mappable (a load
 * of DONE_SEQ_LO through a mapping would latch the record between the
 * handler's reads: EACCES), and a pread of it holds interrupts off for
 * the record's words only (the software card counts the module's reads
 * with interrupts off outside the interrupt handler).
 */
static void test_user_node(void)
{
	char path[64];
	__u32 r[4], v, *block = malloc(4096);
	long long irqsoff;
	__u32 *m;
	int fd;

	snprintf(path, sizeof(path), "%s_user", t_dev);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0, "open %s", path);
	CHECK(pread(fd, r, 16, 0) == 16, "pread 16 bytes at 0");
	CHECK(!memcmp(r, "FGDR", 4) && r[1] == PROTO_1_1 &&
	      r[2] == (__u32)SLOT_BASE && r[3] == 0,
	      "registers %08x %08x %08x %08x", r[0], r[1], r[2], r[3]);
	CHECK(pread(fd, r, 4, 2) < 0 && errno == EINVAL, "unaligned: not EINVAL");
	CHECK(pread(fd, r, 3, 0) < 0 && errno == EINVAL, "3 bytes: not EINVAL");
	CHECK(pread(fd, r, 4, 1 << 20) == 0, "past the end: not EOF");
	v = 0xa5a55a5a;
	CHECK(pwrite(fd, &v, 4, 0x100) == 4, "pwrite scratch");
	v = 0;
	CHECK(pread(fd, &v, 4, 0x100) == 4 && v == 0xa5a55a5a,
	      "scratch reads %08x", v);
	v = 0;
	CHECK(pwrite(fd, &v, 4, 0) == 4, "pwrite MAGIC");
	CHECK(pread(fd, &v, 4, 0) == 4 && !memcmp(&v, "FGDR", 4),
	      "MAGIC is read-only, reads %08x", v);
	/* the whole block: interrupts off for the record's four words */
	irqsoff = t_dbg(DBG_TE "stats", "user_irqsoff_reads");
	CHECK(pread(fd, block, 4096, 0) == 4096, "pread of the block");
	CHECK(t_dbg(DBG_TE "stats", "user_irqsoff_reads") - irqsoff <= 4,
	      "%lld register reads with interrupts off for one pread",
	      t_dbg(DBG_TE "stats", "user_irqsoff_reads") - irqsoff);
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 4096) == MAP_FAILED &&
	      errno == EINVAL, "private mapping: not EINVAL");
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED &&
	      errno == EACCES, "the protocol's block mapped (not EACCES)");
	CHECK(mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 4096) == MAP_FAILED,
	      "a mapping past the BAR");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4096);
	CHECK(m != MAP_FAILED, "mmap of the design's registers: %s",
	      strerror(errno));
	if (m != MAP_FAILED) {
		__atomic_store_n(&m[1], 0x12345678, __ATOMIC_RELAXED);
		CHECK(pread(fd, &v, 4, 4096 + 4) == 4 && v == 0x12345678,
		      "write through the mapping reads back %08x", v);
		v = 0x0badf00d;
		CHECK(pwrite(fd, &v, 4, 4096 + 8) == 4, "pwrite above the block");
		CHECK(__atomic_load_n(&m[2], __ATOMIC_RELAXED) == 0x0badf00d,
		      "the mapping reads %08x", m[2]);
		munmap(m, 4096);
	}
	close(fd);
	free(block);
}

/* kill -9 of a process with pins and a wait outstanding: all undone. */
static void test_kill_with_wait(void)
{
	struct fpgagdr_wait_frame w;
	pid_t pid;
	int st;

	sensor_defaults();
	sensor("stall", 1);
	pid = fork();
	if (!pid) {
		struct cap c;

		cap_open(&c);
		wait_frame(c.fd, 60000, 0, &w);
		_exit(0);
	}
	usleep(500000);
	CHECK(t_dbg(DBG_FRAMES, "subscribers") == 1, "subscribers %lld",
	      t_dbg(DBG_FRAMES, "subscribers"));
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 1, "pins %lld",
	      t_dbg(DBG_COUNTERS, "pins"));
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st), "child was not killed");
	CHECK(t_dbg(DBG_FRAMES, "subscribers") == 0, "subscribers left");
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "pins left");
	CHECK(sensor_stat("control") == 0, "capture still on");
	CHECK(t_dbg(DBG_FRAMES, "user_irq_enabled") == 0,
	      "user interrupts still unmasked");
	sensor("stall", 0);
}

static void *removal_waiter(void *arg)
{
	struct t_bg *b = arg;
	struct fpgagdr_wait_frame w;

	b->ret = wait_frame(b->fd, 30000, 0, &w);
	return NULL;
}

/*
 * Removal wakes a frame waiter (ENODEV) and an event-node reader, and a
 * mapping of the user block is gone (SIGBUS); a rescan brings the card
 * back with frames flowing.
 */
static void test_removal_wakes_waiters(void)
{
	struct fpgagdr_wait_frame w;
	struct t_bg b = { 0 };
	char bdf[32], dev[96], path[64];
	__u32 *m, epoch;
	pid_t pid;
	int ufd, st, fd;
	double t0;

	if (t_pass_is("arm64")) {
		printf("    (sysfs removal runs in the x86 passes)\n");
		return;
	}
	sensor_defaults();
	sensor("stall", 1);
	CHECK_OK(t_card_bdf(bdf, sizeof(bdf)));
	snprintf(dev, sizeof(dev), "/sys/bus/pci/devices/%s/remove", bdf);
	fd = t_open();
	b.fd = fd;
	pthread_create(&b.th, NULL, removal_waiter, &b);
	snprintf(path, sizeof(path), "%s_user", t_dev);
	ufd = open(path, O_RDWR);
	CHECK_OK(pwrite(ufd, "FGDR", 4, 4096) == 4 ? 0 : -errno);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ufd, 4096);
	CHECK(m != MAP_FAILED && m[0] == 0x52444746, "mapping before removal");
	epoch = user_rd(REG_EPOCH);
	usleep(200000);
	t0 = t_now();
	CHECK_OK(t_dbg_write(dev, "1"));
	pthread_join(b.th, NULL);
	CHECK(b.ret == -ENODEV, "waiter: %s, want ENODEV", t_errname(-b.ret));
	CHECK(t_now() - t0 < 3, "removal took %.1f s", t_now() - t0);
	pid = fork();
	if (!pid) {
		(void)__atomic_load_n(m, __ATOMIC_RELAXED);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS,
	      "a mapping of the removed card still reads");
	CHECK(pread(ufd, &st, 4, 0) < 0 && errno == ENODEV,
	      "pread of the removed card: not ENODEV");
	munmap(m, 4096);
	close(ufd);
	close(fd);
	sensor("stall", 0);
	CHECK_OK(t_dbg_write("/sys/bus/pci/rescan", "1"));
	CHECK(t_wait_path(t_dev, true, 10), "no %s after rescan", t_dev);
	fd = t_open();
	CHECK_OK(wait_frame(fd, 3000, 0, &w));
	/* a card that came back is a new one: a new EPOCH, its own sequence */
	CHECK(user_rd(REG_EPOCH) && user_rd(REG_EPOCH) != epoch,
	      "EPOCH %#x after removal and rescan, %#x before",
	      user_rd(REG_EPOCH), epoch);
	CHECK(w.sequence < 100, "the rescanned card's first event is frame %llu",
	      (unsigned long long)w.sequence);
	close(fd);
}

/*
 * Protocol 1.1 on the card's side, nobody subscribed, CONTROL set through
 * the user node: EPOCH is not 0; LIVE_SEQ_LO follows the frames without
 * latching the record; CAPTURE 0->1 clears a FRAME_PENDING nobody took.
 */
static void test_card_11_registers(void)
{
	__u32 epoch, done, slot, live;

	sensor_defaults();
	CHECK(t_dbg(DBG_FRAMES, "subscribers") == 0, "a file is subscribed");
	epoch = user_rd(REG_EPOCH);
	CHECK(epoch != 0, "EPOCH reads 0 on a 1.1 card");
	CHECK(user_rd(REG_DROPPED) == (__u32)sensor_stat("dropped"),
	      "DROPPED %u, the card dropped %lld", user_rd(REG_DROPPED),
	      sensor_stat("dropped"));
	user_wr(REG_CONTROL, 1);		/* CAPTURE, no interrupt */
	usleep(100000);
	done = user_rd(REG_DONE_SEQ_LO);	/* latches */
	slot = user_rd(REG_DONE_SLOT);
	usleep(100000);
	live = user_rd(REG_LIVE_SEQ_LO);
	CHECK(live - done >= 1 && live - done < 100,
	      "LIVE_SEQ_LO %u, latched %u 100 ms before at 50 fps", live, done);
	CHECK(user_rd(REG_DONE_SLOT) == slot,
	      "reading LIVE_SEQ_LO latched the record (DONE_SLOT %u -> %u)",
	      slot, user_rd(REG_DONE_SLOT));
	CHECK(user_rd(REG_IRQ_STATUS) == 1, "no FRAME_PENDING after frames");
	sensor("stall", 1);
	user_wr(REG_CONTROL, 0);
	user_wr(REG_CONTROL, 1);
	CHECK(user_rd(REG_IRQ_STATUS) == 0,
	      "FRAME_PENDING from before CAPTURE 0->1 still set");
	user_wr(REG_CONTROL, 0);
	sensor("stall", 0);
	CHECK(user_rd(REG_EPOCH) == epoch, "EPOCH changed without a reset");
}

/*
 * Frames dropped whole (card memory too slow, sensor_drop): DROPPED counts
 * them, they take no sequence number, so the events stay consecutive and
 * every frame read is whole.
 */
static void test_dropped(void)
{
	struct fpgagdr_frame_info a, b;
	struct fpgagdr_wait_frame w;
	__u32 dropped;
	__u64 prev;
	int i, kind;
	struct cap c;

	sensor_defaults();
	sensor("fps", 20);
	cap_open(&c);
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	prev = w.sequence;
	dropped = user_rd(REG_DROPPED);
	CHECK_OK(frame_info(c.fd, &a));
	sensor("drop", 3);
	for (i = 0; i < 8; i++) {
		CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
		CHECK(w.sequence == prev + 1 && w.missed == 0,
		      "frame %llu after %llu (missed %llu): a drop took a sequence number",
		      (unsigned long long)w.sequence, (unsigned long long)prev,
		      (unsigned long long)w.missed);
		kind = cap_check(&c, &w);
		CHECK(kind == FRAME_OK, "frame %llu after drops: %d",
		      (unsigned long long)w.sequence, kind);
		prev = w.sequence;
	}
	CHECK(user_rd(REG_DROPPED) - dropped == 3, "DROPPED grew by %u, 3 dropped",
	      user_rd(REG_DROPPED) - dropped);
	/* and the module hands it out, beside the events */
	CHECK_OK(frame_info(c.fd, &b));
	CHECK(b.dropped - a.dropped == 3 && b.events > a.events,
	      "FRAME_INFO dropped %llu -> %llu, 3 dropped",
	      (unsigned long long)a.dropped, (unsigned long long)b.dropped);
	CHECK(b.missed == a.missed, "drops counted as missed frames");
	cap_close(&c);
}

/*
 * The header is written last: while frame s + N has its payload in slot
 * s mod N and its header not yet written (sensor_tear), a copy of the slot
 * shows frame s's header over another payload (its CRC fails), and the
 * host's torn-frame check sees it: LIVE_SEQ_LO read after the copy is at
 * least s + N - 1, so the frame counts as an overrun, not a checksum
 * error.  Frame s + N is not announced before its header is written.
 */
static void test_torn_frame(void)
{
	struct fpgagdr_frame_info a, b;
	struct fpgagdr_wait_frame w;
	unsigned char *h;
	__u32 live, check;
	double end;
	struct cap c;

	sensor_defaults();
	cap_open(&c);
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	sensor("tear", (long long)(w.sequence + SLOTS + 1));
	end = t_now() + 3;
	while (sensor_stat("tearing") != 1 && t_now() < end)
		usleep(5000);
	CHECK(sensor_stat("tearing") == 1, "frame %llu never held its header back",
	      (unsigned long long)(w.sequence + SLOTS));
	CHECK_OK(frame_info(c.fd, &a));
	CHECK_OK(cap_read_frame(&c, &w, &check));
	live = user_rd(REG_LIVE_SEQ_LO);
	h = c.buf;
	CHECK(le64(h + 32) == w.sequence && le32(h + 60) == crc32(h, 60),
	      "slot %u: header of frame %llu, want the old one (%llu) whole",
	      w.slot, (unsigned long long)le64(h + 32),
	      (unsigned long long)w.sequence);
	CHECK(le32(h + 48) != crc32(h + 64, le32(h + 28)),
	      "the copy is not torn: the payload was not written first");
	CHECK(live == (__u32)(w.sequence + SLOTS - 1),
	      "LIVE_SEQ_LO %u while frame %llu holds its header back", live,
	      (unsigned long long)(w.sequence + SLOTS));
	CHECK(live - (__u32)w.sequence >= SLOTS - 1,
	      "the torn-frame check would pass the copy of frame %llu",
	      (unsigned long long)w.sequence);
	/* the module's check after the DMA says so: an overrun, counted */
	CHECK(check == FPGAGDR_FRAME_CHECK_TORN,
	      "TRANSFER's frame_check %u for the torn copy of frame %llu",
	      check, (unsigned long long)w.sequence);
	CHECK_OK(frame_info(c.fd, &b));
	CHECK(b.torn == a.torn + 1, "FRAME_INFO torn %llu -> %llu",
	      (unsigned long long)a.torn, (unsigned long long)b.torn);
	sensor("tear", 0);
	end = t_now() + 3;
	do {
		CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	} while (w.sequence < live + 1 && t_now() < end);
	CHECK(cap_check(&c, &w) == FRAME_OK, "frame %llu after the tear",
	      (unsigned long long)w.sequence);
	/* a fresh frame copied at once: the check vouches for it */
	CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	CHECK_OK(cap_read_frame(&c, &w, &check));
	CHECK(check == FPGAGDR_FRAME_CHECK_WHOLE,
	      "frame_check %u for frame %llu copied at once", check,
	      (unsigned long long)w.sequence);
	/* the rules of the flag: C2H of the frame's own slot only */
	w.slot = (w.slot + 1) % SLOTS;
	CHECK(cap_read_frame(&c, &w, &check) == -EINVAL,
	      "FPGAGDR_XFER_FRAME over another slot: not EINVAL");
	cap_close(&c);
}

/*
 * The card resets itself (sensor_reset, as axi_aresetn does; the module is
 * not told): EPOCH changes, the sequence restarts at 0, CONTROL is
 * cleared.  The module sees the new EPOCH on the first wait that finds no
 * frame, sets CONTROL again and re-baselines: the new run's frames come
 * as events of the new epoch, none refused for a sequence that went
 * backwards, every one whole after its DMA.
 */
static void test_card_reset_rebaselines(void)
{
	struct fpgagdr_frame_info a, b;
	struct fpgagdr_wait_frame w;
	__u64 before, prev;
	int ret, i, timeouts = 0;
	double end;
	struct cap c;

	sensor_defaults();
	cap_open(&c);
	for (i = 0; i < 5; i++)
		CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
	before = w.sequence;
	CHECK_OK(frame_info(c.fd, &a));
	CHECK(w.epoch && w.epoch == a.epoch && a.epoch == user_rd(REG_EPOCH),
	      "epoch: event %#x, FRAME_INFO %#x, EPOCH %#x", w.epoch, a.epoch,
	      user_rd(REG_EPOCH));
	CHECK_OK(t_dbg_write(DBG_TE "sensor_reset", "1"));
	end = t_now() + 5;
	do {
		ret = wait_frame(c.fd, 300, 0, &w);
		if (ret == -ETIMEDOUT)
			timeouts++;
		else if (!ret && w.epoch == a.epoch)
			ret = -EAGAIN;	/* queued before the reset */
		CHECK(ret != -EBADMSG,
		      "an event after the reset refused (EBADMSG)");
	} while (ret && t_now() < end);
	CHECK_OK(ret);
	printf("    first event after the reset: frame %llu (before %llu), %d timeouts\n",
	       (unsigned long long)w.sequence, (unsigned long long)before,
	       timeouts);
	CHECK(w.epoch != a.epoch && w.epoch == user_rd(REG_EPOCH),
	      "event's epoch %#x, before %#x, EPOCH %#x", w.epoch, a.epoch,
	      user_rd(REG_EPOCH));
	CHECK(w.sequence < before, "frame %llu after the reset, %llu before",
	      (unsigned long long)w.sequence, (unsigned long long)before);
	prev = w.sequence;
	for (i = 0; i < 5; i++) {
		CHECK_OK(wait_frame(c.fd, 2000, 0, &w));
		CHECK(w.sequence > prev && w.epoch != a.epoch,
		      "frame %llu (epoch %#x) after %llu", (unsigned long long)w.sequence,
		      w.epoch, (unsigned long long)prev);
		prev = w.sequence;
	}
	CHECK(cap_check(&c, &w) == FRAME_OK, "frame %llu of the new epoch",
	      (unsigned long long)w.sequence);
	CHECK_OK(frame_info(c.fd, &b));
	CHECK(b.epoch_changes == a.epoch_changes + 1 && b.epoch == w.epoch,
	      "FRAME_INFO: epoch changes %llu -> %llu, epoch %#x",
	      (unsigned long long)a.epoch_changes,
	      (unsigned long long)b.epoch_changes, b.epoch);
	CHECK(b.protocol_errors == a.protocol_errors,
	      "protocol errors %llu -> %llu", (unsigned long long)a.protocol_errors,
	      (unsigned long long)b.protocol_errors);
	CHECK(dmesg_has("card reset seen: EPOCH"), "the reset is not in the log");
	cap_close(&c);
}

int suite_frames(void)
{
	static const struct t_case cases[] = {
		{ "frame_info", test_frame_info },
		{ "link_and_pin_method", test_link_and_pin_method },
		{ "link_path", test_link_path },
		{ "frames_flow", test_frames_flow },
		{ "overrun", test_overrun },
		{ "overrun_fault", test_overrun_fault },
		{ "queue_overflow", test_queue_overflow },
		{ "stall_timeout_abort", test_stall_timeout_abort },
		{ "bad_crc", test_bad_crc },
		{ "bad_events", test_bad_events },
		{ "pushed_frames", test_pushed_frames },
		{ "event_nodes", test_event_nodes },
		{ "user_node", test_user_node },
		{ "kill_with_wait", test_kill_with_wait },
		{ "card_11_registers", test_card_11_registers },
		{ "dropped", test_dropped },
		{ "torn_frame", test_torn_frame },
		{ "card_reset_rebaselines", test_card_reset_rebaselines },
		{ "removal_wakes_waiters", test_removal_wakes_waiters },
	};

	return t_run("frames", cases, ARRAY_SIZE(cases));
}

/*
 * A card whose user register block breaks a rule (module loaded with
 * test_* parameters): FRAME_INFO names the rule, the kernel log says it,
 * WAIT_FRAME answers ENXIO and poll() POLLERR, nothing is left subscribed
 * or pinned, and the DMA channels still work.
 */
int cmd_badcard(int argc, char **argv)
{
	static const char * const logs[] = {
		[FPGAGDR_FRAMES_NO_USER_BAR] = "no frame capture: no user register block",
		[FPGAGDR_FRAMES_BAD_MAGIC] = "no frame capture: MAGIC is not",
		[FPGAGDR_FRAMES_NO_SLOTS] = "no frame capture: SLOT_COUNT is not 2..1024",
		[FPGAGDR_FRAMES_SLOT_TOO_SMALL] =
			"no frame capture: SLOT_SIZE is smaller than the 64-byte",
		[FPGAGDR_FRAMES_SLOTS_PAST_CARD] = "no frame capture: the slots wrap or pass",
	};
	unsigned char *buf = t_alloc(64 * KIB);
	struct fpgagdr_frame_info fi;
	struct fpgagdr_wait_frame w;
	struct pollfd pfd;
	unsigned int want;
	char path[64];
	int fd = t_open();
	__u32 h;

	if (argc != 3)
		return 2;
	want = strtoul(argv[2], NULL, 0);
	CHECK_OK(frame_info(fd, &fi));
	CHECK(fi.state == want, "state %u, want %u", fi.state, want);
	CHECK(want >= ARRAY_SIZE(logs) || !logs[want] || dmesg_has(logs[want]),
	      "kernel log does not name the rule");
	CHECK_ERR(wait_frame(fd, 100, 0, &w), ENXIO);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 100) == 1 && (pfd.revents & POLLERR),
	      "poll() did not say POLLERR");
	CHECK(t_dbg(DBG_FRAMES, "subscribers") == 0, "a file subscribed");
	snprintf(path, sizeof(path), "%s_user", t_dev);
	CHECK((access(path, F_OK) == 0) == (want != FPGAGDR_FRAMES_NO_USER_BAR),
	      "%s exists: %d", path, access(path, F_OK) == 0);
	/* the channels do not care */
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 64 * KIB, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, h, 0, 0, 64 * KIB, 5000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, 64 * KIB, 5000));
	close(fd);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "pins left");
	t_free(buf, 64 * KIB);
	printf("badcard %u: %s\n", want, t_failures ? "FAIL" : "ok");
	return t_failures ? 1 : 0;
}
