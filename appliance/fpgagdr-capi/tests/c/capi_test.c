/*
 * capi_test.c: libfpgagdr's C API driven from C, as a C program links it.
 *
 * Against the simulated card (no argument, or FPGAGDR_DEVICE=sim) and against the
 * kernel module's card (FPGAGDR_DEVICE=/dev/fpgagdr0, in the QEMU guest:
 * kmod/qemu/run.sh); "capi_test bad-card" against a module card whose registers break
 * the frame protocol, on the module without nvidia_p2p (the guest's pass D): rules
 * card-protocol and capability. Checks:
 *   - every rule of the library's own rule list (fpgagdr_get_rule, generated from the
 *     Rust rule list) returns its errno and names itself in fpgagdr_last_error; a rule
 *     with no trigger below and no stated reason fails the run, so none is skipped
 *     silently;
 *   - bad, released and NULL handles, NULL pointers, wrong struct sizes: a clear errno;
 *   - the explicit calls move the right bytes (H2C then C2H, compared);
 *   - on the module's card, frames through the card's frame trigger (WAIT_FRAME), each
 *     read from its slot and checked, and the frame rules its sensor breaks on demand;
 *   - the legacy calls route into several registered buffers by address, refuse an
 *     address outside them, and move host memory in CPU mode;
 *   - nothing half-applied: a failed pin leaves no pin, a failed register none;
 *   - threads: transfers on every channel at once, each thread's own last error, and
 *     a close while another thread waits for a frame.
 * Prints "ok"/"FAIL" lines, "SKIP" lines with the reason, and exits 1 on any failure.
 */
#include <errno.h>
#include <fpgagdr.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MS (1000ull * 1000)
#define TMO (1000 * MS)

static int failures;
static int checks;
static struct fpgagdr_card *card;
static struct fpgagdr_card_status st = { .struct_size_bytes = sizeof(st) };
static int sim;

static int check(int ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	printf(ok ? "ok   " : "FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
	return ok;
}

static const char *last(void)
{
	static char msg[1024];

	fpgagdr_last_error(msg, sizeof(msg));
	return msg;
}

/* rc must be -errno and the last error must name `rule` ("rule <name>: ..."; the
 * frame rules name their part: "rule frame-geometry: ..."). */
static int expect(int rc, int err, const char *rule, const char *what)
{
	char prefix[64];
	const char *msg = last();
	size_t n;
	int ok;

	n = (size_t)snprintf(prefix, sizeof(prefix), "rule %s", rule);
	ok = rc == -err && strncmp(msg, prefix, n) == 0 && (msg[n] == ':' || msg[n] == '-');
	check(ok, "%s: %d (want %d), \"%s\"", what, rc, -err, msg);
	return ok;
}

static int must(int rc, const char *what)
{
	if (rc)
		check(0, "%s: %d: %s", what, rc, last());
	return rc;
}

static void *aligned(uint64_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, st.alignment_bytes, bytes))
		abort();
	memset(p, 0, bytes);
	return p;
}

static struct fpgagdr_memory host_mem(void *p, uint64_t bytes)
{
	struct fpgagdr_memory m = { .struct_size_bytes = sizeof(m) };

	m.kind = FPGAGDR_MEMORY_HOST;
	m.addr = (uintptr_t)p;
	m.length_bytes = bytes;
	return m;
}

/* A pinned host buffer of `bytes` for the rule triggers. */
static uint64_t buf_bytes;
static uint8_t *buf_mem;
static struct fpgagdr_buffer buf;

static int read_c2h(uint32_t ch, struct fpgagdr_buffer b, uint64_t off, uint64_t card_addr,
		    uint64_t len, uint64_t tmo)
{
	return fpgagdr_read_c2h(card, ch, b, off, card_addr, len, tmo, 0, NULL);
}

/* ---- one trigger per rule; each returns the errno check's result ------------ */

static int errno_of(const char *rule);

#define EXPECT(rc, rule, what) expect((rc), errno_of(rule), (rule), (what))

static int t_alignment(const char *r)
{
	struct fpgagdr_memory m = host_mem(buf_mem + 64, st.alignment_bytes);
	struct fpgagdr_buffer b = { 0 };

	return EXPECT(fpgagdr_pin_buffer(card, &m, 0, &b), r, "pin at a misaligned address") &
	       check(b.id == 0, "failed pin wrote no handle");
}

static int t_card_bounds(const char *r)
{
	uint64_t at = st.card_memory_bytes == UINT64_MAX ? UINT64_MAX - 4095 :
							     st.card_memory_bytes - 4096;
	return EXPECT(read_c2h(0, buf, 0, at, 8192, TMO), r, "C2H past the card's memory");
}

static int t_buffer_bounds(const char *r)
{
	return EXPECT(read_c2h(0, buf, buf_bytes - 4096, 0, 8192, TMO), r,
		      "C2H past the pinned buffer");
}

static int t_length_nonzero(const char *r)
{
	return EXPECT(read_c2h(0, buf, 0, 0, 0, TMO), r, "C2H of 0 bytes");
}

static int t_handle_valid(const char *r)
{
	struct fpgagdr_buffer never = { 987654321 };

	return EXPECT(read_c2h(0, never, 0, 0, 4096, TMO), r, "C2H with a never-issued handle");
}

static int t_channel_range(const char *r)
{
	return EXPECT(read_c2h(st.c2h_channels, buf, 0, 0, 4096, TMO), r,
		      "C2H on a channel past the count");
}

static int t_timeout(const char *r)
{
	/* The simulated card's Orin link model: 1 MiB takes ~0.5 ms, far over 1 us. */
	return EXPECT(read_c2h(0, buf, 0, 0, buf_bytes, 1000), r, "C2H with a 1 us timeout");
}

static int t_timeout_nonzero(const char *r)
{
	return EXPECT(read_c2h(0, buf, 0, 0, 4096, 0), r, "C2H with a zero timeout");
}

static int t_no_overlap(const char *r)
{
	void *p = aligned(st.alignment_bytes * 2);
	struct fpgagdr_memory m = host_mem(p, st.alignment_bytes * 2);
	struct fpgagdr_memory half = host_mem((uint8_t *)p + st.alignment_bytes,
					      st.alignment_bytes);
	int ok;

	if (must(fpgagdr_register_buffer(card, &m, 0), "register"))
		return 0;
	ok = EXPECT(fpgagdr_register_buffer(card, &half, 0), r,
		    "register a buffer overlapping a registered one");
	must(fpgagdr_release_buffer(card, p, 0), "release");
	/* Nothing of the refused one stayed registered. */
	ok &= expect(fpgagdr_release_buffer(card, (void *)(uintptr_t)half.addr, 0),
		     errno_of("registered-buffer"), "registered-buffer",
		     "the refused buffer is not registered");
	free(p);
	return ok;
}

static int t_registered_buffer(const char *r)
{
	uint8_t *p = aligned(4096);
	int ok;

	must(fpgagdr_set_transfer_mode(card, FPGAGDR_TRANSFER_MODE_GPU_PINNED, 0), "mode");
	ok = EXPECT(fpgagdr_mm_read_c2h(card, 0, p, 0, 4096, TMO, 0, NULL), r,
		    "GPU-pinned legacy read at an unregistered address");
	must(fpgagdr_set_transfer_mode(card, FPGAGDR_TRANSFER_MODE_CPU, 0), "mode");
	free(p);
	return ok;
}

/* Bad-card mode (capi_test bad-card, the QEMU guest's pass D): the Orin-style module
 * (no nvidia_p2p back-end) has no way to pin CUDA device memory. */
static int t_capability(const char *r)
{
	struct fpgagdr_memory m = { .struct_size_bytes = sizeof(m) };
	struct fpgagdr_buffer b = { 0 };

	m.kind = FPGAGDR_MEMORY_CUDA_DEVICE;
	m.addr = 0x7f0000000000ull;
	m.length_bytes = st.alignment_bytes;
	return check(!(st.capabilities & FPGAGDR_CAP_GPU_DIRECT),
		     "status: no GPU Direct capability (capabilities %#x)", st.capabilities) &
	       EXPECT(fpgagdr_pin_buffer(card, &m, 0, &b), r,
		      "pin CUDA device memory on a module without nvidia_p2p") &
	       check(b.id == 0, "refused pin wrote no handle");
}

/* Bad-card mode: the card's user register block breaks docs/card-protocol.md (the
 * module loaded with test_user_magic, test_user_bar=0, ...). The card opens, its
 * status has no frame trigger, the frame calls name rule card-protocol, and the
 * channels still move bytes. */
static int t_card_protocol(const char *r)
{
	struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };
	uint64_t max = 0;
	uint64_t i, bad = 0;
	int ok;

	ok = check(!(st.capabilities & FPGAGDR_CAP_FRAME_TRIGGER),
		   "status: no frame trigger (capabilities %#x)", st.capabilities);
	ok &= EXPECT(fpgagdr_wait_frame(card, 100 * MS, 0, &f), r,
		     "frame wait on a card without the frame protocol");
	ok &= check(f.sequence == 0 && f.length_bytes == 0, "refused wait wrote no frame");
	ok &= EXPECT(fpgagdr_get_max_frame_bytes(card, &max), r,
		     "largest frame of a card without the frame protocol");
	for (i = 0; i < buf_bytes; i++)
		buf_mem[i] = (uint8_t)(i * 13 + 1);
	ok &= must(fpgagdr_write_h2c(card, 0, buf, 0, 0, buf_bytes, TMO, 0, NULL), "H2C") == 0;
	memset(buf_mem, 0, buf_bytes);
	ok &= must(fpgagdr_read_c2h(card, 0, buf, 0, 0, buf_bytes, TMO, 0, NULL), "C2H") == 0;
	for (i = 0; i < buf_bytes; i++)
		bad += buf_mem[i] != (uint8_t)(i * 13 + 1);
	ok &= check(bad == 0, "the channels still work: H2C then C2H, %" PRIu64 " bytes wrong",
		    bad);
	return ok;
}

/* ---- frames from the module's software card (its TEST-ONLY sensor) ---------- */

#define SENSOR "/sys/kernel/debug/fpgagdr/testeng/sensor_"

static int sensor(const char *knob, const char *value)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), SENSOR "%s", knob);
	f = fopen(path, "w");
	if (!f)
		return check(0, "%s: %s (the module's software card's sensor knob)", path,
			     strerror(errno));
	ok = fputs(value, f) >= 0;
	ok &= fclose(f) == 0;
	return check(ok, "sensor knob %s = %s", knob, value);
}

static uint64_t le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

static uint64_t last_sequence;
static int have_last;

/* Waits for one frame, DMAs its slot into buf and checks the frame header
 * (docs/frames.md: magic, header length, payload length, sequence). */
static int good_frame(const char *what)
{
	struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };
	int rc = fpgagdr_wait_frame(card, 2000 * MS, 0, &f);
	uint64_t seq;

	if (!check(rc == 0, "%s: frame wait: %d%s%s", what, rc, rc ? ": " : "", rc ? last() : ""))
		return 0;
	if (!check(f.length_bytes >= 64 && f.length_bytes <= buf_bytes &&
			   f.card_addr % st.alignment_bytes == 0,
		   "%s: frame %" PRIu64 " at %#" PRIx64 ", %" PRIu64 " bytes", what, f.sequence,
		   f.card_addr, f.length_bytes))
		return 0;
	memset(buf_mem, 0xee, f.length_bytes);
	if (must(read_c2h(0, buf, 0, f.card_addr, f.length_bytes, TMO), "C2H of the frame's slot"))
		return 0;
	seq = le(buf_mem + 32, 8);
	/* A later sequence in the slot is an overrun (the card rewrote it first): whole. */
	return check(!memcmp(buf_mem, "FGDRFRM1", 8) && le(buf_mem + 10, 2) == 64 &&
			     64 + le(buf_mem + 28, 4) == f.length_bytes &&
			     seq >= f.sequence && (!have_last || f.sequence > last_sequence),
		     "%s: frame %" PRIu64 " (after %" PRIu64 "): header of sequence %" PRIu64
		     ", %" PRIu64 " bytes, read from its slot",
		     what, f.sequence, last_sequence, seq, f.length_bytes) &&
	       (last_sequence = f.sequence, have_last = 1);
}

static int sensor_ready(void)
{
	return sensor("frames_clear", "1") & sensor("stall", "0") & sensor("bad_event", "0") &
	       sensor("bad_crc", "0") &
	       sensor("width", "64") & sensor("height", "48") & sensor("format", "1") &
	       sensor("fps", "50");
}

/* A frame-done record that breaks one rule of the protocol (the sensor's bad_event
 * fault: 1 sequence back at 0, 2 a wrong slot, 3 a length past the slot) comes back as
 * that rule's errno, named; the frames after it flow. */
static int bad_event(const char *r, const char *fault)
{
	struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };
	int rc = 0, k, ok;

	if (!sensor_ready() || !good_frame("before the fault"))
		return 0;
	if (!sensor("bad_event", fault))
		return 0;
	/* Frames latched before the fault may still be queued. */
	for (k = 0; k < 16 && rc == 0; k++)
		rc = fpgagdr_wait_frame(card, 2000 * MS, 0, &f);
	ok = EXPECT(rc, r, "the sensor's bad frame-done record");
	ok &= good_frame("after the bad record");
	return ok;
}

static int t_frame_sequence(const char *r)
{
	return bad_event(r, "1");
}

static int t_frame_slot(const char *r)
{
	return bad_event(r, "2");
}

static int t_frame_length(const char *r)
{
	return bad_event(r, "3");
}

static int t_card_present(const char *r)
{
	struct fpgagdr_card *c = NULL;

	return EXPECT(fpgagdr_open("/dev/fpgagdr-no-such-node", 0, &c), r,
		      "open a node that does not exist") &
	       check(c == NULL, "failed open wrote no handle") &
	       /* A node that does not answer fpgagdr's GET_STATUS is no fpgagdr card. */
	       EXPECT(fpgagdr_open("/dev/null", 0, &c), r, "open a node that is not fpgagdr's");
}

static int t_cuda(const char *r)
{
	/* CUDA device memory on a machine without CUDA: the simulated card's copy into it
	 * needs a CUDA context. The address is never dereferenced. */
	struct fpgagdr_memory m = { .struct_size_bytes = sizeof(m) };
	struct fpgagdr_buffer b;
	int ok;

	m.kind = FPGAGDR_MEMORY_CUDA_DEVICE;
	m.addr = 0x7f0000000000ull;
	m.length_bytes = st.alignment_bytes;
	if (must(fpgagdr_pin_buffer(card, &m, 0, &b), "pin CUDA device memory"))
		return 0;
	ok = EXPECT(read_c2h(0, b, 0, 0, 4096, TMO), r, "C2H into CUDA memory without CUDA");
	must(fpgagdr_unpin_buffer(card, b), "unpin");
	return ok;
}

static int t_frame(const char *r)
{
	struct fpgagdr_sim_config c = { .struct_size_bytes = sizeof(c) };
	struct fpgagdr_card *s = NULL;

	c.frame_width_px = 2;
	c.frame_height_px = 2;
	return EXPECT(fpgagdr_open_sim(&c, 0, &s), r, "simulated card with 2x2 frames");
}

static int t_user_memory(const char *r)
{
	/* Host memory that is not mapped: map, unmap, pin. */
	uint64_t n = st.alignment_bytes;
	void *p = mmap(NULL, n * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a = ((uintptr_t)p + n - 1) / n * n;
	struct fpgagdr_memory m = host_mem((void *)a, n);
	struct fpgagdr_buffer b;

	munmap(p, n * 2);
	return EXPECT(fpgagdr_pin_buffer(card, &m, 0, &b), r, "pin unmapped host memory");
}

static int t_argument_valid(const char *r)
{
	return EXPECT(fpgagdr_set_transfer_mode(card, 7, 0), r, "transfer mode 7");
}

static int t_pin_size(const char *r)
{
	struct fpgagdr_memory m = host_mem(buf_mem, 128ull << 30);
	struct fpgagdr_buffer b;

	return EXPECT(fpgagdr_pin_buffer(card, &m, 0, &b), r, "pin of 128 GiB");
}

static int t_pin_limit(const char *r)
{
	/* 4096 pins live on one open file, the 4097th refused. */
	static struct fpgagdr_buffer b[4097];
	struct fpgagdr_memory m = host_mem(buf_mem, st.alignment_bytes);
	int i, n = 0, rc = 0, ok;

	for (i = 0; i < 4097; i++) {
		rc = fpgagdr_pin_buffer(card, &m, 0, &b[i]);
		if (rc)
			break;
		n++;
	}
	/* The buffer the other checks use is one of the live pins. */
	ok = check(n == 4095, "%d pins before the limit (the first is live)", n);
	ok &= EXPECT(rc, r, "pin number 4097 on one file");
	for (i = 0; i < n; i++)
		must(fpgagdr_unpin_buffer(card, b[i]), "unpin");
	return ok;
}

static int t_timeout_range(const char *r)
{
	return EXPECT(read_c2h(0, buf, 0, 0, 4096, 61000 * MS), r, "C2H with a 61 s timeout");
}

static int t_card_handle(const char *r)
{
	struct fpgagdr_card_status s = { .struct_size_bytes = sizeof(s) };
	struct fpgagdr_card *c;
	int ok;

	ok = EXPECT(fpgagdr_get_status((struct fpgagdr_card *)(uintptr_t)0x1234560, &s), r,
		    "status of a never-opened card handle");
	if (must(fpgagdr_open_sim(NULL, 0, &c), "open sim"))
		return 0;
	must(fpgagdr_close(c), "close");
	ok &= EXPECT(fpgagdr_get_status(c, &s), r, "status of a closed card");
	ok &= EXPECT(fpgagdr_close(c), r, "second close");
	return ok;
}

static int t_null_pointer(const char *r)
{
	int ok = EXPECT(fpgagdr_get_status(card, NULL), r, "status into NULL");
	struct fpgagdr_buffer b;
	struct fpgagdr_card *c = NULL;

	ok &= EXPECT(fpgagdr_pin_buffer(card, NULL, 0, &b), r, "pin of NULL memory");
	ok &= EXPECT(fpgagdr_get_status(NULL, &st), r, "status of a NULL card");
	ok &= EXPECT(fpgagdr_open(NULL, 0, &c), r, "open of a NULL path");
	must(fpgagdr_set_transfer_mode(card, FPGAGDR_TRANSFER_MODE_CPU, 0), "mode");
	ok &= EXPECT(fpgagdr_mm_read_c2h(card, 0, NULL, 0, 4096, TMO, 0, NULL), r,
		     "CPU-mode legacy read into NULL");
	return ok;
}

static int t_struct_size(const char *r)
{
	struct fpgagdr_card_status s = { .struct_size_bytes = sizeof(s) - 8 };
	struct fpgagdr_memory m = host_mem(buf_mem, st.alignment_bytes);
	struct fpgagdr_transfer_result t = { .struct_size_bytes = 8 };
	struct fpgagdr_buffer b = { 0 };
	int ok;

	ok = EXPECT(fpgagdr_get_status(card, &s), r, "status with an older struct size");
	m.struct_size_bytes += 8;
	ok &= EXPECT(fpgagdr_pin_buffer(card, &m, 0, &b), r, "pin with a newer struct size");
	ok &= check(b.id == 0, "refused pin wrote no handle");
	ok &= EXPECT(fpgagdr_read_c2h(card, 0, buf, 0, 0, 4096, TMO, 0, &t),
		     r, "transfer result of size 8");
	return ok;
}

static int t_flags(const char *r)
{
	return EXPECT(fpgagdr_read_c2h(card, 0, buf, 0, 0, 4096, TMO, 1, NULL), r,
		      "C2H with flags 1");
}

/* Where a trigger can show its rule. */
enum where {
	ANY,	  /* every back-end */
	SIM,	  /* only the simulated card */
	KERNEL,	  /* only the kernel module's card (with its software card's sensor) */
	BAD_CARD, /* only "capi_test bad-card": a card without the frame protocol on the
		   * module without nvidia_p2p (the QEMU guest's pass D) */
};

struct trigger {
	const char *rule;
	int (*run)(const char *rule);
	enum where where;
	const char *why; /* why the other back-ends cannot */
};

static const struct trigger triggers[] = {
	{ "alignment", t_alignment, ANY, NULL },
	{ "card-bounds", t_card_bounds, ANY, NULL },
	{ "buffer-bounds", t_buffer_bounds, ANY, NULL },
	{ "length-nonzero", t_length_nonzero, ANY, NULL },
	{ "handle-valid", t_handle_valid, ANY, NULL },
	{ "channel-range", t_channel_range, ANY, NULL },
	{ "timeout", t_timeout, SIM,
	  "the module's software card completes 1 MiB within any timeout the module accepts" },
	{ "timeout-nonzero", t_timeout_nonzero, ANY, NULL },
	{ "no-overlap", t_no_overlap, ANY, NULL },
	{ "registered-buffer", t_registered_buffer, ANY, NULL },
	{ "capability", t_capability, BAD_CARD,
	  "the simulated card and the module with nvidia_p2p offer every operation; "
	  "capi_test bad-card checks it on the module without (QEMU pass D)" },
	{ "card-present", t_card_present, ANY, NULL },
	{ "cuda", t_cuda, SIM, "the module pins CUDA memory through nvidia_p2p, not copies" },
	{ "frame", t_frame, ANY, NULL },
	{ "user-memory", t_user_memory, KERNEL,
	  "the simulated card does not pin pages; it copies to the address it is given" },
	{ "argument-valid", t_argument_valid, ANY, NULL },
	{ "pin-size", t_pin_size, KERNEL, "the simulated card has no pin size limit" },
	{ "pin-limit", t_pin_limit, KERNEL, "the simulated card has no pin count limit" },
	{ "timeout-range", t_timeout_range, KERNEL,
	  "the 60 s limit is the module's (FPGAGDR_TIMEOUT_MAX_MS)" },
	{ "card-protocol", t_card_protocol, BAD_CARD,
	  "needs a card whose registers break the protocol: capi_test bad-card (QEMU pass D)" },
	{ "frame-sequence", t_frame_sequence, KERNEL,
	  "the simulated sensor never breaks the protocol; the module's software card does "
	  "on demand (its sensor_bad_event knob)" },
	{ "frame-slot", t_frame_slot, KERNEL,
	  "the simulated sensor never breaks the protocol; the module's software card does "
	  "on demand (its sensor_bad_event knob)" },
	{ "frame-length", t_frame_length, KERNEL,
	  "the simulated sensor never breaks the protocol; the module's software card does "
	  "on demand (its sensor_bad_event knob)" },
	{ "card-handle", t_card_handle, ANY, NULL },
	{ "null-pointer", t_null_pointer, ANY, NULL },
	{ "struct-size", t_struct_size, ANY, NULL },
	{ "flags", t_flags, ANY, NULL },
};

/* Rules no C program can provoke on demand, with the reason; the Rust and kernel
 * suites that do are named. */
static const struct {
	const char *rule, *why;
} unreachable[] = {
	{ "memory", "needs the allocator or RLIMIT_MEMLOCK to refuse; kernel_functional.rs" },
	{ "abi", "open reports a node that does not answer GET_STATUS as card-present (tested "
		 "there); abi is a later request the module lacks: fpgagdr kernel::convert tests" },
	{ "abi-version", "needs a module of another ABI version; fpgagdr kernel::convert tests" },
	{ "file-descriptor", "dma-buf pins are not in this API version" },
	{ "handle-busy", "needs two transfers on one buffer at the same instant; kmod stress suite" },
	{ "engine-busy", "ABORT is not in this API version" },
	{ "gpu-memory-freed", "needs nvidia_p2p's free callback; kmod nvp2p suite" },
	{ "interrupted", "needs a signal during the wait; kmod faults suite" },
	{ "aborted", "needs ABORT or UNPIN during a transfer; kmod faults suite" },
	{ "engine", "needs an engine error; kmod faults suite injects one" },
	{ "dma-mapping", "needs the DMA API to fail; kmod faults suite" },
	{ "no-frame-queued", "EAGAIN answers only a non-waiting WAIT_FRAME; the library's "
			     "frame trigger always waits (up to the timeout): kmod frames suite" },
	{ "frame-event", "the library's trigger names the broken rule of every refused event "
			 "(frame-sequence, -slot, -length, checked here); frame-event is an "
			 "EBADMSG from any other request: fpgagdr kernel::convert tests" },
	{ "card-gone", "needs a card whose registers read all ones; kmod recovery suite "
		       "(the software card's card_gone knob)" },
	{ "kernel", "an errno outside the module's table: none can be provoked" },
	{ "internal", "a panic in libfpgagdr: a bug, not an input" },
};

static struct fpgagdr_rule *rules;
static uint32_t n_rules;

static int errno_of(const char *rule)
{
	uint32_t i;

	for (i = 0; i < n_rules; i++)
		if (!strcmp(rules[i].name, rule))
			return rules[i].errno_value;
	check(0, "rule %s is not in the library's rule list", rule);
	return -1;
}

static void all_rules(enum where here)
{
	uint32_t i;
	size_t k;

	for (i = 0; i < n_rules; i++) {
		const char *name = rules[i].name;
		const struct trigger *t = NULL;
		const char *why = NULL;

		for (k = 0; k < sizeof(triggers) / sizeof(triggers[0]); k++)
			if (!strcmp(triggers[k].rule, name))
				t = &triggers[k];
		for (k = 0; k < sizeof(unreachable) / sizeof(unreachable[0]); k++)
			if (!strcmp(unreachable[k].rule, name))
				why = unreachable[k].why;
		if (here == BAD_CARD) {
			/* Only what needs the bad card; the normal run checks the rest. */
			if (t && t->where == BAD_CARD) {
				printf("--   rule %s (errno %d)\n", name, rules[i].errno_value);
				t->run(name);
			}
		} else if (t && t->where != ANY && t->where != here) {
			printf("SKIP rule %s (errno %d) on this back-end: %s\n", name,
			       rules[i].errno_value, t->why);
		} else if (t) {
			printf("--   rule %s (errno %d)\n", name, rules[i].errno_value);
			t->run(name);
		} else if (why) {
			printf("SKIP rule %s (errno %d): %s\n", name, rules[i].errno_value, why);
		} else {
			check(0, "rule %s has neither a trigger nor a reason in capi_test.c", name);
		}
	}
}

/* The kernel module's frames through the C API: the card's frame trigger (the
 * module's WAIT_FRAME) reports the software card's frames, each one read from its slot
 * by C2H is whole and in sequence. */
static void kernel_frames(void)
{
	uint64_t max = 0;
	int i;

	check(st.capabilities & FPGAGDR_CAP_FRAME_TRIGGER,
	      "status: the module's card has a frame trigger (capabilities %#x)", st.capabilities);
	if (!must(fpgagdr_get_max_frame_bytes(card, &max), "largest frame"))
		check(max >= 64 + 64 * 48 && max <= st.card_memory_bytes,
		      "largest frame %" PRIu64 " bytes (a slot)", max);
	if (!sensor_ready())
		return;
	for (i = 0; i < 8; i++)
		good_frame("kernel frames");
}

/* The frame read: a frame the trigger reported, read from its slot with the
 * torn-frame check.  The simulated card's copies are whole (its sensor writes a slot
 * only while no C2H reads it; its torn-frame fault is tested in Rust); the module's
 * software card may tear one (then it is an overrun), but not four in a row at 50 fps.
 * The frame's epoch: 0 on the simulated card, the card's EPOCH on the module's. */
static void frame_reads(void)
{
	struct fpgagdr_transfer_result t = { .struct_size_bytes = sizeof(t) };
	struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };
	uint32_t verdict = 0;
	int i, whole = 0;

	for (i = 0; i < 4; i++) {
		if (must(fpgagdr_wait_frame(card, 2000 * MS, 0, &f), "frame wait"))
			return;
		check(sim ? f.epoch == 0 : f.epoch != 0, "frame %" PRIu64 ": epoch %u", f.sequence,
		      f.epoch);
		memset(buf_mem, 0xee, f.length_bytes);
		verdict = 0;
		if (must(fpgagdr_read_frame(card, 0, buf, &f, f.length_bytes, TMO, 0, &verdict, &t),
			 "frame read"))
			return;
		check(t.bytes == f.length_bytes && (verdict == FPGAGDR_FRAME_CHECK_WHOLE ||
						   (!sim && verdict == FPGAGDR_FRAME_CHECK_TORN)),
		      "frame %" PRIu64 ": %" PRIu64 " bytes, verdict %u", f.sequence, t.bytes,
		      verdict);
		if (verdict == FPGAGDR_FRAME_CHECK_WHOLE) {
			whole++;
			check(!memcmp(buf_mem, "FGDRFRM1", 8) && le(buf_mem + 32, 8) == f.sequence,
			      "frame %" PRIu64 " read whole: header of sequence %" PRIu64, f.sequence,
			      le(buf_mem + 32, 8));
		}
	}
	check(whole > 0, "%d of 4 frame reads whole", whole);
	expect(fpgagdr_read_frame(card, 0, buf, &f, f.length_bytes, TMO, 0, NULL, NULL),
	       errno_of("null-pointer"), "null-pointer", "frame read without a verdict");
	expect(fpgagdr_read_frame(card, 0, buf, NULL, f.length_bytes, TMO, 0, &verdict, NULL),
	       errno_of("null-pointer"), "null-pointer", "frame read of no frame");
}

/* The explicit calls move the right bytes: H2C a pattern, C2H it back elsewhere. */
static void explicit_roundtrip(void)
{
	uint8_t *out = aligned(buf_bytes), *in;
	struct fpgagdr_memory m = host_mem(out, buf_bytes);
	struct fpgagdr_buffer b;
	struct fpgagdr_transfer_result t = { .struct_size_bytes = sizeof(t) };
	uint64_t i;

	for (i = 0; i < buf_bytes; i++)
		out[i] = (uint8_t)(i * 7 + 3);
	if (must(fpgagdr_pin_buffer(card, &m, 0, &b), "pin"))
		return;
	must(fpgagdr_write_h2c(card, 0, b, 0, 0x100000, buf_bytes, TMO, 0, &t), "H2C");
	check(t.bytes == buf_bytes, "H2C moved %" PRIu64 " bytes", t.bytes);
	in = buf_mem;
	memset(in, 0, buf_bytes);
	must(fpgagdr_read_c2h(card, st.c2h_channels - 1, buf, 4096, 0x100000 + 4096,
			      buf_bytes - 4096, TMO, 0, &t),
	     "C2H at an offset, last channel");
	check(memcmp(in + 4096, out + 4096, buf_bytes - 4096) == 0 && in[0] == 0,
	      "C2H brought back what H2C wrote, at the offset asked");
	must(fpgagdr_unpin_buffer(card, b), "unpin");
	expect(fpgagdr_unpin_buffer(card, b), errno_of("handle-valid"), "handle-valid",
	       "unpin of a released buffer handle");
	expect(fpgagdr_write_h2c(card, 0, b, 0, 0, 4096, TMO, 0, NULL),
	       errno_of("handle-valid"), "handle-valid", "H2C from a released buffer handle");
	free(out);
}

static uint8_t *legacy_leftover;

/* Legacy routing: three registered buffers, the reference report's two added
 * calls (docs/library.md), reads into each by address, one straddling two
 * (refused), CPU mode into plain memory. */
static void legacy_routing(void)
{
	enum { N = 3 };
	uint64_t n = st.alignment_bytes * 4;
	uint8_t *reg[N], *src = aligned(n), *plain = aligned(n);
	struct fpgagdr_transfer_result t = { .struct_size_bytes = sizeof(t) };
	uint32_t mode = 99;
	int i;

	for (i = 0; i < N; i++) {
		struct fpgagdr_memory m;

		reg[i] = aligned(n);
		m = host_mem(reg[i], n);
		must(fpgagdr_register_buffer(card, &m, 0), "register");
	}
	/* The card gets one pattern per buffer at 0x200000 + i * n, from host memory
	 * (CPU mode: the legacy call with the caller's own memory). */
	for (i = 0; i < N; i++) {
		memset(src, 0xa0 + i, n);
		must(fpgagdr_mm_write_h2c(card, 0, src, 0x200000 + i * n, n, TMO, 0, NULL),
		     "CPU-mode legacy write");
	}
	/* The reference report's two added lines are SetGPUBuffer (above) and
	 * SetTransferMode. */
	must(fpgagdr_set_transfer_mode(card, FPGAGDR_TRANSFER_MODE_GPU_PINNED, 0), "mode");
	must(fpgagdr_get_transfer_mode(card, &mode), "get mode");
	check(mode == FPGAGDR_TRANSFER_MODE_GPU_PINNED, "mode reads back GPU_PINNED");
	/* Unchanged calls, now routed: into each buffer, at an offset inside it. */
	for (i = N - 1; i >= 0; i--) {
		uint64_t off = st.alignment_bytes * (uint64_t)(i + 1);
		uint64_t len = n - off;
		uint64_t k, bad = 0;

		must(fpgagdr_mm_read_c2h(card, 1 % st.c2h_channels, reg[i] + off,
					 0x200000 + i * n, len, TMO, 0, &t),
		     "routed legacy read");
		for (k = 0; k < n; k++)
			bad += reg[i][k] != (k < off ? 0 : 0xa0 + i);
		check(bad == 0 && t.bytes == len,
		      "legacy read at buffer %d + %" PRIu64 " landed there only (%" PRIu64
		      " bytes wrong)", i, off, bad);
	}
	/* A range that ends past its buffer is refused, never half-moved. */
	expect(fpgagdr_mm_read_c2h(card, 0, reg[0] + n - 4096, 0, 8192, TMO, 0, NULL),
	       errno_of("registered-buffer"), "registered-buffer",
	       "legacy read running past its registered buffer");
	/* Release one: its address is no longer routed; the others still are. */
	must(fpgagdr_release_buffer(card, reg[1], 0), "release");
	expect(fpgagdr_mm_read_c2h(card, 0, reg[1], 0, 4096, TMO, 0, NULL),
	       errno_of("registered-buffer"), "registered-buffer",
	       "legacy read into a released buffer");
	check(fpgagdr_mm_read_c2h(card, 0, reg[2], 0x200000, 4096, TMO, 0, NULL) == 0 &&
		      reg[2][0] == 0xa0,
	      "legacy read into a buffer still registered");
	expect(fpgagdr_release_buffer(card, reg[1], 0), errno_of("registered-buffer"),
	       "registered-buffer", "second release");
	/* Back to CPU mode: the same call fills plain host memory. */
	must(fpgagdr_set_transfer_mode(card, FPGAGDR_TRANSFER_MODE_CPU, 0), "mode");
	must(fpgagdr_mm_read_c2h(card, 0, plain, 0x200000 + 2 * n, n, TMO, 0, NULL),
	     "CPU-mode legacy read");
	check(plain[0] == 0xa2 && plain[n - 1] == 0xa2, "CPU-mode legacy read filled host memory");
	must(fpgagdr_release_buffer(card, reg[0], 0), "release");
	/* reg[2] stays registered: fpgagdr_close releases it (valgrind sees no leak). */
	for (i = 0; i < N; i++)
		if (i != 2)
			free(reg[i]);
	free(src);
	free(plain);
	/* reg[2] is freed after close, in main. */
	legacy_leftover = reg[2];
}

/* Threads: one per C2H channel, each with its own pinned buffer, H2C then C2H of its
 * own pattern, 20 times, all at once; each also breaks a different rule and must read
 * its own message back (the last error is per thread). */
struct worker {
	uint32_t channel;
	int ok;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t n = st.alignment_bytes * 4, k;
	uint8_t *p = aligned(n);
	struct fpgagdr_memory m = host_mem(p, n);
	struct fpgagdr_buffer b;
	char msg[256], want[64];
	int i, rc;

	w->ok = 0;
	if (fpgagdr_pin_buffer(card, &m, 0, &b))
		return NULL;
	w->ok = 1;
	for (i = 0; i < 20 && w->ok; i++) {
		uint64_t at = 0x4000000 + (uint64_t)w->channel * n;

		memset(p, (int)(w->channel * 16 + i), n);
		rc = fpgagdr_write_h2c(card, w->channel % st.h2c_channels, b, 0, at, n, TMO, 0,
				       NULL);
		memset(p, 0xff, n);
		rc |= fpgagdr_read_c2h(card, w->channel, b, 0, at, n, TMO, 0, NULL);
		for (k = 0; k < n; k++)
			if (p[k] != (uint8_t)(w->channel * 16 + i))
				rc = -1;
		w->ok = rc == 0;
	}
	/* A rule of its own: channel past the count, with this thread's channel in it. */
	fpgagdr_read_c2h(card, st.c2h_channels + w->channel, b, 0, 0, 4096, TMO, 0, NULL);
	fpgagdr_last_error(msg, sizeof(msg));
	snprintf(want, sizeof(want), "C2H channel %u does not exist", st.c2h_channels + w->channel);
	w->ok &= strstr(msg, want) != NULL;
	w->ok &= fpgagdr_unpin_buffer(card, b) == 0;
	free(p);
	return NULL;
}

static void threads(void)
{
	pthread_t t[4];
	struct worker w[4];
	uint32_t i, n = st.c2h_channels < 4 ? st.c2h_channels : 4;

	for (i = 0; i < n; i++) {
		w[i].channel = i;
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		check(w[i].ok, "thread on channel %u: 20 round trips intact, its own last error",
		      i);
	}
}

/* Close while another thread waits for a frame: the wait ends normally, and the card
 * is gone for calls that start afterwards. */
static void *wait_one(void *arg)
{
	struct fpgagdr_card *c = arg;
	struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };

	/* The sensor's second frame is 300 ms after its first. */
	fpgagdr_wait_frame(c, 5 * MS, 0, &f);
	return (void *)(intptr_t)fpgagdr_wait_frame(c, 2000 * MS, 0, &f);
}

static void close_while_waiting(void)
{
	struct fpgagdr_sim_config c = { .struct_size_bytes = sizeof(c) };
	struct fpgagdr_card *s;
	struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };
	pthread_t t;
	void *rc;

	c.link_preset = FPGAGDR_SIM_LINK_OFF;
	c.frame_width_px = 16;
	c.frame_height_px = 16;
	c.frame_period_ns = 300 * MS;
	if (must(fpgagdr_open_sim(&c, 0, &s), "open sim"))
		return;
	pthread_create(&t, NULL, wait_one, s);
	must(fpgagdr_close(s), "close while a wait runs");
	pthread_join(t, &rc);
	check((intptr_t)rc == 0 || (intptr_t)rc == -EBADF,
	      "the wait on the closing card ended with %d (a frame, or the card already gone)",
	      (int)(intptr_t)rc);
	expect(fpgagdr_wait_frame(s, 5 * MS, 0, &f), EBADF, "card-handle",
	       "wait on the closed card");
}

int main(int argc, char **argv)
{
	const char *dev = getenv("FPGAGDR_DEVICE");
	int bad_card = argc > 1 && !strcmp(argv[1], "bad-card");
	struct fpgagdr_version v = { .struct_size_bytes = sizeof(v) };
	struct fpgagdr_memory m;
	uint32_t i;
	int rc;

	sim = !dev || !strcmp(dev, "sim");
	if (argc > 2 || (argc == 2 && (!bad_card || sim))) {
		fprintf(stderr, "usage: capi_test [bad-card]  (bad-card: FPGAGDR_DEVICE=/dev/fpgagdrN "
				"of a card without the frame protocol, module without nvidia_p2p)\n");
		return 2;
	}
	must(fpgagdr_get_version(&v), "version");
	check(v.lib_major == FPGAGDR_LIB_VERSION_MAJOR && v.lib_minor == FPGAGDR_LIB_VERSION_MINOR &&
		      v.module_abi_version == FPGAGDR_MODULE_ABI_VERSION,
	      "library %u.%u.%u, module ABI %u, as the header says", v.lib_major, v.lib_minor,
	      v.lib_patch, v.module_abi_version);

	if (sim) {
		struct fpgagdr_sim_config c = { .struct_size_bytes = sizeof(c) };

		c.link_preset = FPGAGDR_SIM_LINK_ORIN_GEN3X4;
		c.frame_width_px = 64;
		c.frame_height_px = 48;
		rc = fpgagdr_open_sim(&c, 0, &card);
	} else {
		rc = fpgagdr_open(dev, 0, &card);
	}
	if (must(rc, "open"))
		return 1;
	if (must(fpgagdr_get_status(card, &st), "status"))
		return 1;
	printf("card: %s; simulated %u, alignment %" PRIu64 ", %u C2H, %u H2C, memory %" PRIu64
	       " bytes, module ABI %u\n",
	       st.name, st.simulated, st.alignment_bytes, st.c2h_channels, st.h2c_channels,
	       st.card_memory_bytes, st.module_abi_version);
	/* The module's test engine says simulated too; the platform tells the back-ends
	 * apart, and only the module's card has a module ABI. */
	check((st.platform == FPGAGDR_PLATFORM_SIM) == sim && (!sim || st.simulated) &&
		      st.module_abi_version == (sim ? 0 : FPGAGDR_MODULE_ABI_VERSION),
	      "status: platform %u, simulated %u, module ABI %u", st.platform, st.simulated,
	      st.module_abi_version);

	buf_bytes = st.alignment_bytes * 16 < (1u << 20) ? (1u << 20) : st.alignment_bytes * 16;
	buf_mem = aligned(buf_bytes);
	m = host_mem(buf_mem, buf_bytes);
	if (must(fpgagdr_pin_buffer(card, &m, 0, &buf), "pin"))
		return 1;

	if (must(fpgagdr_get_rule_count(&n_rules), "rule count"))
		return 1;
	rules = calloc(n_rules, sizeof(*rules));
	for (i = 0; i < n_rules; i++) {
		rules[i].struct_size_bytes = sizeof(rules[i]);
		must(fpgagdr_get_rule(i, &rules[i]), "rule");
	}
	check(n_rules > 30, "%u rules in the library's list", n_rules);
	expect(fpgagdr_get_rule(n_rules, &rules[0]), EINVAL, "argument-valid",
	       "rule index past the list");

	if (bad_card) {
		all_rules(BAD_CARD);
	} else {
		all_rules(sim ? SIM : KERNEL);
		if (!sim)
			kernel_frames();
		frame_reads();
		explicit_roundtrip();
		legacy_routing();
		threads();
		close_while_waiting();
	}

	must(fpgagdr_unpin_buffer(card, buf), "unpin");
	must(fpgagdr_close(card), "close");
	free(legacy_leftover);
	free(buf_mem);
	free(rules);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
