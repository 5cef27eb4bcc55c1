// SPDX-License-Identifier: GPL-2.0
/*
 * A card on a bad day, against the real module and the software card:
 * PCIe errors injected at the card's root port through the kernel's
 * aer_inject (correctable, non-fatal, fatal with its link reset) and a
 * reset of the function through sysfs, all while frames flow: frame
 * capture goes on with exact counts (a reset restarts the card's
 * sequence: the module starts a new baseline, no event is refused), by
 * interrupt again afterwards; an engine that runs on through a non-fatal
 * error is stopped or fenced before its memory is given back (the
 * software card refuses DMA into memory not mapped for it, which fails
 * the run); an interrupt storm (a card that ignores HOST_ACK) is counted
 * and capture goes on by polling with the guest responsive; a card whose
 * user register block reads all ones is named gone, waiters get EIO, and
 * capture comes back with it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tframes.h"

#define DBG_TE_STATS	DBG_TE "stats"

/**
 * struct flow - frames taken while something happens to the card
 * @fd: the control node
 * @events: events taken
 * @restarts: times the sequence started again (a reset of the card)
 * @badmsg: EBADMSG answers (none allowed)
 * @timeouts: waits that saw no frame
 * @other: other errors
 * @first: first sequence of the current run of the card's sequence
 * @prev: the last event's sequence
 * @n: events of the current run
 * @missed: their missed, but the run's first event's
 * @broken: runs whose counts did not add up
 */
struct flow {
	int fd;
	long long events;
	long long restarts;
	long long badmsg;
	long long timeouts;
	long long other;
	__u64 first;
	__u64 prev;
	long long n;
	long long missed;
	long long broken;
};

/* The run of sequences that ended: events + gaps = the sequence span. */
static void flow_close_run(struct flow *f)
{
	if (!f->n)
		return;
	if (f->n + f->missed != (long long)(f->prev - f->first + 1)) {
		f->broken++;
		printf("    run %llu..%llu: %lld events + %lld missed != %llu\n",
		       (unsigned long long)f->first,
		       (unsigned long long)f->prev, f->n, f->missed,
		       (unsigned long long)(f->prev - f->first + 1));
	}
}

static void flow_event(struct flow *f, const struct fpgagdr_wait_frame *w)
{
	f->events++;
	if (f->n && w->sequence > f->prev) {
		if (w->missed != w->sequence - f->prev - 1) {
			f->broken++;
			printf("    sequence %llu after %llu: missed %llu\n",
			       (unsigned long long)w->sequence,
			       (unsigned long long)f->prev,
			       (unsigned long long)w->missed);
		}
		f->missed += w->missed;
		f->n++;
	} else {
		/* the first event, or the card's sequence started again */
		flow_close_run(f);
		f->restarts += f->n != 0;
		f->first = w->sequence;
		f->n = 1;
		f->missed = 0;
	}
	f->prev = w->sequence;
}

/* Take frames for @secs seconds. */
static void flow_for(struct flow *f, double secs)
{
	struct fpgagdr_wait_frame w;
	double end = t_now() + secs;
	int ret;

	while (t_now() < end) {
		ret = wait_frame(f->fd, 3000, 0, &w);
		if (!ret)
			flow_event(f, &w);
		else if (ret == -EBADMSG)
			f->badmsg++;
		else if (ret == -ETIMEDOUT)
			f->timeouts++;
		else
			f->other++;
	}
}

/* Capture by interrupt, as before the error: CONTROL, mask, no polling. */
static void check_capture_by_interrupt(const char *after)
{
	CHECK(sensor_stat("control") == 3, "%s: CONTROL %lld, want 3", after,
	      sensor_stat("control"));
	CHECK(t_dbg(DBG_FRAMES, "user_irq_enabled") & 1,
	      "%s: frame-done interrupt masked", after);
	CHECK(t_dbg(DBG_FRAMES, "storm_polling") == 0 &&
	      t_dbg(DBG_FRAMES, "gone") == 0, "%s: still polling", after);
}

/*
 * Frames flow, a PCIe error of @kind is injected at the root port, frames
 * flow on: every event in order, the counts of each run of the card's
 * sequence exact, none refused; @restart: the error reset the card, its
 * sequence started again once.
 */
static void frames_through_error(int kind, const char *name, bool restart,
				 int link_errors)
{
	long long le = t_dbg(DBG_COUNTERS, "link_errors");
	long long rebases = t_dbg(DBG_FRAMES, "rebases");
	long long perr = t_dbg(DBG_FRAMES, "protocol_errors");
	struct flow f = { 0 };
	int kind_ok;

	if (!t_aer_present()) {
		printf("    no /dev/aer_inject in this pass\n");
		return;
	}
	sensor_defaults();
	f.fd = t_open();
	flow_for(&f, 1);
	CHECK(f.events >= 5, "%s: only %lld events before the error", name,
	      f.events);
	kind_ok = t_aer_inject(kind);
	CHECK(!kind_ok, "%s: aer_inject: %s", name, t_errname(-kind_ok));
	flow_for(&f, 2);
	flow_close_run(&f);
	printf("    %s: %lld events, %lld restarts, %lld timeouts\n", name,
	       f.events, f.restarts, f.timeouts);
	CHECK(f.badmsg == 0, "%s: %lld events refused (EBADMSG)", name,
	      f.badmsg);
	CHECK(f.other == 0, "%s: %lld waits failed", name, f.other);
	CHECK(f.broken == 0, "%s: counts do not add up", name);
	CHECK(f.restarts == (restart ? 1 : 0), "%s: %lld restarts, want %d",
	      name, f.restarts, restart);
	CHECK(f.events >= 15, "%s: only %lld events", name, f.events);
	CHECK(t_dbg(DBG_FRAMES, "protocol_errors") == perr,
	      "%s: protocol errors", name);
	CHECK(t_dbg(DBG_COUNTERS, "link_errors") == le + link_errors,
	      "%s: link_errors %lld -> %lld, want +%d", name, le,
	      t_dbg(DBG_COUNTERS, "link_errors"), link_errors);
	CHECK(t_dbg(DBG_FRAMES, "rebases") == rebases + link_errors,
	      "%s: rebases %lld -> %lld", name, rebases,
	      t_dbg(DBG_FRAMES, "rebases"));
	check_capture_by_interrupt(name);
	close(f.fd);
}

/* A correctable error: the AER core logs it, nothing else happens. */
static void test_correctable_error_frames_go_on(void)
{
	frames_through_error(T_AER_CORRECTABLE, "correctable", false, 0);
}

/*
 * A non-fatal error: no reset; the module holds its engines and resumes,
 * the sequence goes on (a soft rebase counts the gap).
 */
static void test_nonfatal_error_frames_go_on(void)
{
	frames_through_error(T_AER_NONFATAL, "non-fatal", false, 1);
}

/*
 * A fatal error: the link is reset, the card's sequence starts again at
 * 0: a new baseline, not a flood of refused events; capture by interrupt
 * again (CONTROL and the mask set as they were); a frame after the reset
 * DMA'd from its slot is whole.
 */
static void test_fatal_error_frames_start_again(void)
{
	struct fpgagdr_wait_frame w;
	struct cap c;
	int kind, i;

	frames_through_error(T_AER_FATAL, "fatal", true, 1);
	cap_open(&c);
	for (i = 0, kind = -1; i < 3 && kind != FRAME_OK; i++) {
		CHECK_OK(wait_frame(c.fd, 3000, 0, &w));
		kind = cap_check(&c, &w);
	}
	CHECK(kind == FRAME_OK, "no whole frame after the reset (%d)", kind);
	cap_close(&c);
}

/* A reset of the function through sysfs, outside error recovery. */
static void test_function_reset_frames_start_again(void)
{
	char bdf[32], path[96];
	struct flow f = { 0 };
	long long perr = t_dbg(DBG_FRAMES, "protocol_errors");

	if (t_pass_is("arm64")) {
		printf("    (the function reset runs in the x86 passes)\n");
		return;
	}
	CHECK_OK(t_card_bdf(bdf, sizeof(bdf)));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", bdf);
	if (access(path, F_OK)) {
		printf("    %s: no reset method\n", bdf);
		return;
	}
	sensor_defaults();
	f.fd = t_open();
	flow_for(&f, 1);
	CHECK_OK(t_dbg_write(path, "1"));
	flow_for(&f, 1.5);
	flow_close_run(&f);
	printf("    reset: %lld events, %lld restarts\n", f.events, f.restarts);
	CHECK(f.badmsg == 0 && f.other == 0 && f.broken == 0,
	      "reset: %lld refused, %lld failed, %lld runs broken", f.badmsg,
	      f.other, f.broken);
	CHECK(f.restarts == 1, "reset: %lld restarts, want 1", f.restarts);
	CHECK(t_dbg(DBG_FRAMES, "protocol_errors") == perr, "protocol errors");
	check_capture_by_interrupt("reset");
	close(f.fd);
}

/*
 * An engine running through a non-fatal error (nothing resets the
 * function): the transfer ends EIO at once, the module stops the engine
 * through its registers and, the engine not stopping (stuck), fences the
 * card before the transfer lets go; the pin is then released and its
 * pages freed, and the engine, still running for a while, never writes
 * them (the software card refuses DMA without bus mastering, and would
 * log a refused DMA into memory not mapped for it).  AER resume comes a
 * second after the error (resume_ms): nothing the module does then may be
 * what keeps the engine off the freed memory.
 */
static void test_nonfatal_error_fences_a_running_engine(void)
{
	/* channel 0: error recovery holds the engines from C2H 0 up */
	struct t_bg b = { .dir = FPGAGDR_DIR_C2H, .ch = 0, .len = 1 * MIB,
			  .card = 0x20000000, .timeout_ms = 20000 };
	long long runs = t_dbg(DBG_TE_STATS, "runs");
	long long fences = t_dbg(DBG_COUNTERS, "fences");
	long long unmapped = t_dbg(DBG_TE_STATS, "refused_unmapped");
	long long stops = t_dbg(DBG_TE_STATS, "stop_timeouts");
	unsigned char *buf = t_alloc(1 * MIB), *other;
	size_t i, changed;
	double t0;
	int fd, ok = 0;

	if (!t_aer_present()) {
		printf("    no /dev/aer_inject in this pass\n");
		t_free(buf, 1 * MIB);
		return;
	}
	fd = t_open();
	b.fd = fd;
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 1 * MIB,
		       &b.handle));
	CHECK_OK(t_dbg_write(DBG_TE "stuck_ms", "1500"));
	CHECK_OK(t_dbg_write(DBG_TE "resume_ms", "1000"));
	t_fault(FAULT_STUCK, 1);
	t_bg_start(&b);
	CHECK(t_wait_runs(runs, 10), "the stuck run never started");
	usleep(50 * 1000);
	t0 = t_now();
	CHECK_OK(t_aer_inject(T_AER_NONFATAL));
	CHECK_ERR(t_bg_join(&b), EIO);
	/* fenced before the transfer let go of its memory, not later */
	CHECK(t_dbg(DBG_COUNTERS, "fences") > fences,
	      "the transfer ended with its engine running and the card not fenced");
	CHECK(t_now() - t0 < 5, "the transfer ended %.1f s after the error",
	      t_now() - t0);
	/* the memory goes back to the system while the engine is stuck */
	CHECK_OK(t_unpin(fd, b.handle));
	t_free(buf, 1 * MIB);
	/* the freed pages are likely someone else's now: this buffer's */
	other = t_alloc(4 * MIB);
	memset(other, 0x5a, 4 * MIB);
	usleep(2000 * 1000);		/* past stuck_ms */
	for (i = 0, changed = 0; i < 4 * MIB; i++)
		changed += other[i] != 0x5a;
	CHECK(!changed, "%zu bytes of memory allocated after UNPIN were written by the card",
	      changed);
	CHECK(t_dbg(DBG_TE_STATS, "refused_unmapped") == unmapped,
	      "the engine wrote memory given back (refused %lld)",
	      t_dbg(DBG_TE_STATS, "refused_unmapped") - unmapped);
	t_free(other, 4 * MIB);
	/* the card works once the engine stopped */
	buf = t_alloc(64 * KIB);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 64 * KIB,
		       &b.handle));
	for (t0 = t_now(); t_now() - t0 < 10 && !ok; usleep(100 * 1000))
		ok = !t_xfer(fd, FPGAGDR_DIR_C2H, 0, b.handle, 0, 0, 64 * KIB,
			     2000);
	CHECK(ok, "no transfer works after the error");
	t_expected_stop_timeouts += t_dbg(DBG_TE_STATS, "stop_timeouts") -
				    stops;
	CHECK_OK(t_dbg_write(DBG_TE "stuck_ms", "0"));
	CHECK_OK(t_dbg_write(DBG_TE "resume_ms", "0"));
	close(fd);
	t_free(buf, 64 * KIB);
}

/**
 * struct node_read - a pread() of a channel node by another thread
 * @fd: the C2H channel node
 * @buf: the caller's buffer
 * @len: bytes
 * @card: card address
 * @ret: pread()'s result, or -errno
 * @th: the thread
 */
struct node_read {
	int fd;
	unsigned char *buf;
	size_t len;
	__u64 card;
	ssize_t ret;
	pthread_t th;
};

static void *node_read_thread(void *arg)
{
	struct node_read *r = arg;

	r->ret = pread(r->fd, r->buf, r->len, r->card);
	if (r->ret < 0)
		r->ret = -errno;
	return NULL;
}

/*
 * The same through a channel node: its read maps the caller's pages for
 * the step and unmaps them as soon as the engine is let go.  Through the
 * virtual IOMMU that unmap removes the card's translation at once: an
 * engine still running then (not seen stopped, the card not fenced) hits
 * an address not mapped for it, which the software card refuses and logs.
 */
static void test_nonfatal_error_channel_node(void)
{
	struct node_read r = { .len = 1 * MIB, .card = 0x20000000 };
	long long runs = t_dbg(DBG_TE_STATS, "runs");
	long long unmapped = t_dbg(DBG_TE_STATS, "refused_unmapped");
	long long stops = t_dbg(DBG_TE_STATS, "stop_timeouts");
	char node[64];

	if (!t_aer_present()) {
		printf("    no /dev/aer_inject in this pass\n");
		return;
	}
	snprintf(node, sizeof(node), "%s_c2h_0", t_dev);
	r.fd = open(node, O_RDONLY);
	CHECK(r.fd >= 0, "open %s", node);
	r.buf = t_alloc(r.len);
	CHECK_OK(t_dbg_write(DBG_TE "stuck_ms", "1500"));
	t_fault(FAULT_STUCK, 1);
	pthread_create(&r.th, NULL, node_read_thread, &r);
	CHECK(t_wait_runs(runs, 10), "the stuck run never started");
	usleep(50 * 1000);
	CHECK_OK(t_aer_inject(T_AER_NONFATAL));
	pthread_join(r.th, NULL);
	CHECK(r.ret == -EIO, "pread: %zd, want -EIO", r.ret);
	usleep(2000 * 1000);		/* past stuck_ms */
	CHECK(t_dbg(DBG_TE_STATS, "refused_unmapped") == unmapped,
	      "the engine reached memory unmapped after the read (refused %lld)",
	      t_dbg(DBG_TE_STATS, "refused_unmapped") - unmapped);
	/* the card works again once the engine stopped */
	t_fault(FAULT_NONE, 0);
	for (double t0 = t_now(); t_now() - t0 < 10 &&
	     pread(r.fd, r.buf, 4096, 0) != 4096; usleep(100 * 1000))
		;
	CHECK(pread(r.fd, r.buf, 4096, 0) == 4096, "no read works after the error");
	t_expected_stop_timeouts += t_dbg(DBG_TE_STATS, "stop_timeouts") -
				    stops;
	CHECK_OK(t_dbg_write(DBG_TE "stuck_ms", "0"));
	close(r.fd);
	t_free(r.buf, r.len);
}

/*
 * A card that ignores HOST_ACK: FRAME_PENDING stays set and frame-done is
 * raised again after every acknowledge.  The module takes the same record
 * a few times, then masks frame-done, counts a storm, says so once, and
 * captures by polling: new frames still arrive (coalesced ones counted as
 * missed), nothing is refused, and the guest stays responsive (a 10 ms
 * sleep of this thread is not held up).  Once the card behaves and
 * capture restarts, frame-done interrupts again.
 */
static void test_interrupt_storm(void)
{
	long long storms = t_dbg(DBG_FRAMES, "storms");
	long long irqs = t_dbg(DBG_TE_STATS, "irqs");
	struct flow f = { 0 };
	double worst = 0, t0, dt;
	int i;

	sensor_defaults();
	f.fd = t_open();
	flow_for(&f, 0.5);
	CHECK_OK(t_dbg_write(DBG_TE "irq_storm", "1"));
	for (i = 0; i < 20; i++) {
		t0 = t_now();
		usleep(10 * 1000);
		dt = t_now() - t0;
		if (dt > worst)
			worst = dt;
	}
	flow_for(&f, 2);
	flow_close_run(&f);
	printf("    storm: %lld events, %lld interrupts, longest 10 ms sleep %.0f ms\n",
	       f.events, t_dbg(DBG_TE_STATS, "irqs") - irqs, worst * 1000);
	CHECK(t_dbg(DBG_FRAMES, "storms") == storms + 1, "storms %lld -> %lld",
	      storms, t_dbg(DBG_FRAMES, "storms"));
	CHECK(t_dbg(DBG_FRAMES, "storm_polling") == 1, "not polling");
	CHECK(!(t_dbg(DBG_FRAMES, "user_irq_enabled") & 1),
	      "frame-done still unmasked");
	CHECK(dmesg_has("frame-done storm"), "the log does not name the storm");
	CHECK(f.badmsg == 0 && f.other == 0 && f.broken == 0 && !f.restarts,
	      "storm: %lld refused, %lld failed, %lld runs broken",
	      f.badmsg, f.other, f.broken);
	CHECK(f.events >= 40, "storm: only %lld events in 2.5 s by polling",
	      f.events);
	/* masked after a few repeats: not one interrupt per acknowledge */
	CHECK(t_dbg(DBG_TE_STATS, "irqs") - irqs < 100,
	      "%lld interrupts during the storm",
	      t_dbg(DBG_TE_STATS, "irqs") - irqs);
	CHECK(worst < 2.0, "a 10 ms sleep took %.0f ms during the storm",
	      worst * 1000);
	/* the card behaves again; capture restarts with interrupts */
	CHECK_OK(t_dbg_write(DBG_TE "irq_storm", "0"));
	close(f.fd);
	memset(&f, 0, sizeof(f));
	f.fd = t_open();
	flow_for(&f, 0.5);
	CHECK(f.events >= 5 && !f.badmsg, "after the storm: %lld events",
	      f.events);
	check_capture_by_interrupt("after the storm");
	close(f.fd);
}

/*
 * The user register block reads all ones (a card gone from the bus): a
 * waiter is woken with EIO, the log names it, it is counted once; a wait
 * while it is gone ends EIO at its bound; when the card answers again
 * capture comes back by itself: no refused event, counts exact.
 */
static void test_card_gone(void)
{
	long long gone = t_dbg(DBG_FRAMES, "gone_reads");
	long long perr = t_dbg(DBG_FRAMES, "protocol_errors");
	struct fpgagdr_wait_frame w;
	struct flow f = { 0 };
	double t0;
	int ret;

	sensor_defaults();
	f.fd = t_open();
	flow_for(&f, 0.5);
	/* frames still raise the interrupt: the handler finds it gone */
	CHECK_OK(t_dbg_write(DBG_TE "card_gone", "1"));
	t0 = t_now();
	do
		ret = wait_frame(f.fd, 3000, 0, &w);
	while (!ret && t_now() - t0 < 3);
	CHECK(ret == -EIO, "gone: %s, want EIO", t_errname(-ret));
	CHECK(t_now() - t0 < 2, "EIO after %.1f s", t_now() - t0);
	CHECK(t_dbg(DBG_FRAMES, "gone") == 1, "not marked gone");
	/* a wait that starts while it is gone ends at its bound, EIO */
	t0 = t_now();
	CHECK_ERR(wait_frame(f.fd, 300, 0, &w), EIO);
	CHECK(t_now() - t0 >= 0.25, "EIO after %.3f s of a 0.3 s wait",
	      t_now() - t0);
	CHECK(t_dbg(DBG_FRAMES, "gone_reads") == gone + 1, "gone_reads %lld",
	      t_dbg(DBG_FRAMES, "gone_reads"));
	CHECK(dmesg_has("card gone"), "the log does not say the card is gone");
	/* back */
	CHECK_OK(t_dbg_write(DBG_TE "card_gone", "0"));
	flow_for(&f, 1.5);
	flow_close_run(&f);
	CHECK(f.badmsg == 0 && f.other == 0 && f.broken == 0,
	      "after gone: %lld refused, %lld failed, %lld runs broken",
	      f.badmsg, f.other, f.broken);
	CHECK(f.events >= 15, "after gone: only %lld events", f.events);
	CHECK(t_dbg(DBG_FRAMES, "protocol_errors") == perr,
	      "an all-ones record was taken for an event");
	CHECK(dmesg_has("card back"), "the log does not say the card is back");
	check_capture_by_interrupt("after gone");

	/* gone with no frame coming: found by the wait that times out */
	sensor("stall", 1);
	usleep(100 * 1000);
	while (!wait_frame(f.fd, 1, FPGAGDR_WAIT_NOWAIT, &w))
		;
	CHECK_OK(t_dbg_write(DBG_TE "card_gone", "1"));
	CHECK_ERR(wait_frame(f.fd, 300, 0, &w), EIO);
	CHECK_OK(t_dbg_write(DBG_TE "card_gone", "0"));
	sensor("stall", 0);
	CHECK_OK(wait_frame(f.fd, 3000, 0, &w));
	close(f.fd);
	sensor_defaults();
}

int suite_recovery(void)
{
	static const struct t_case cases[] = {
		{ "frames_through_correctable", test_correctable_error_frames_go_on },
		{ "frames_through_nonfatal", test_nonfatal_error_frames_go_on },
		{ "frames_through_fatal", test_fatal_error_frames_start_again },
		{ "frames_through_reset", test_function_reset_frames_start_again },
		{ "engine_through_nonfatal",
		  test_nonfatal_error_fences_a_running_engine },
		{ "channel_node_through_nonfatal",
		  test_nonfatal_error_channel_node },
		{ "interrupt_storm", test_interrupt_storm },
		{ "card_gone", test_card_gone },
	};

	return t_run("recovery", cases, ARRAY_SIZE(cases));
}
