// SPDX-License-Identifier: GPL-2.0
/*
 * The functional suite against the real module (the same checks as the
 * library's functional suite on the simulated card): status, pin, C2H,
 * H2C, unpin, data integrity, a batch of 10 reads, the 2 GiB card-address
 * sweep, offsets near the end of card memory; plus the chain cache, the
 * channel nodes, many-segment chains and concurrent channels.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tlib.h"

static struct fpgagdr_status st;

static void test_status(void)
{
	int fd = t_open();
	struct fpgagdr_status s;

	CHECK_OK(t_status(fd, &s));
	CHECK(s.abi_version == FPGAGDR_ABI_VERSION, "abi %u", s.abi_version);
	CHECK(s.caps & FPGAGDR_CAP_TEST_ENGINE, "caps %#x", s.caps);
	CHECK(!!(s.caps & FPGAGDR_CAP_IRQ) != !!(s.caps & FPGAGDR_CAP_POLL),
	      "caps %#x: exactly one of IRQ and POLL", s.caps);
	CHECK(s.card_size == 2 * GIB, "card_size %#llx",
	      (unsigned long long)s.card_size);
	CHECK(s.h2c_channels == 4 && s.c2h_channels == 4, "channels %u/%u",
	      s.h2c_channels, s.c2h_channels);
	CHECK(s.pin_align == 4096, "pin_align %u", s.pin_align);
	/*
	 * 1 MiB: what the slowest link drains within the stop budget
	 * (docs/kernel-module.md), not the 28-bit field's 256 MiB
	 */
	CHECK(s.desc_max_bytes == 0x100000, "desc_max %#x", s.desc_max_bytes);
	CHECK(s.mem_kinds & (1U << FPGAGDR_MEM_HOST), "kinds %#x", s.mem_kinds);
	CHECK(s.mem_kinds & (1U << FPGAGDR_MEM_DMABUF), "kinds %#x",
	      s.mem_kinds);
	CHECK(s.pins == 0, "pins %llu at start", (unsigned long long)s.pins);
	if (s.platform == FPGAGDR_PLATFORM_X86_DGPU) {
		CHECK(s.mem_kinds & (1U << FPGAGDR_MEM_NV_P2P), "no nv_p2p");
		CHECK(s.default_kind == FPGAGDR_MEM_NV_P2P, "default %u",
		      s.default_kind);
		CHECK(s.gpu_page_size == 65536, "gpu page %u",
		      s.gpu_page_size);
	} else {
		CHECK(s.platform == FPGAGDR_PLATFORM_NONE, "platform %u",
		      s.platform);
		CHECK(!(s.mem_kinds & (1U << FPGAGDR_MEM_NV_P2P)), "nv_p2p");
		CHECK(s.default_kind == FPGAGDR_MEM_HOST, "default %u",
		      s.default_kind);
		CHECK(s.gpu_page_size == 4096, "gpu page %u", s.gpu_page_size);
	}
	CHECK(!s.flags, "flags not zero");
	/* link_path_* (were pad0, reserved[0]): checked by frames' link test */
	close(fd);
}

static void test_pin_unpin(void)
{
	struct fpgagdr_pin p = {
		.abi_version = FPGAGDR_ABI_VERSION,
		.kind = FPGAGDR_MEM_HOST,
		.length = MIB,
		.dmabuf_fd = -1,
	};
	struct fpgagdr_status s0, s1;
	void *buf = t_alloc(MIB);
	int fd = t_open();

	p.addr = (unsigned long)buf;
	CHECK_OK(t_status(fd, &s0));
	CHECK(ioctl(fd, FPGAGDR_IOC_PIN, &p) == 0, "pin: %s", strerror(errno));
	CHECK(p.handle != 0, "handle 0");
	CHECK(p.page_size == 4096, "page_size %u", p.page_size);
	CHECK(p.segments >= 1 && p.segments <= 256, "segments %u",
	      p.segments);
	CHECK_OK(t_status(fd, &s1));
	CHECK(s1.pins == s0.pins + 1, "pins %llu", (unsigned long long)s1.pins);
	CHECK(s1.pins_total == s0.pins_total + 1, "pins_total");
	CHECK(t_dbg(DBG_COUNTERS, "pins") == (long long)s1.pins,
	      "debugfs pins differs from status");
	CHECK_OK(t_unpin(fd, p.handle));
	CHECK_OK(t_status(fd, &s1));
	CHECK(s1.pins == s0.pins, "pins %llu after unpin",
	      (unsigned long long)s1.pins);
	close(fd);
	t_free(buf, MIB);
}

static void test_round_trip(void)
{
	const __u64 len = MIB, card = 0x01230000;
	unsigned char *src = t_alloc(len), *dst = t_alloc(len);
	unsigned char *want = malloc(len);
	struct fpgagdr_transfer t = {
		.direction = FPGAGDR_DIR_H2C, .length = len,
		.card_addr = card, .timeout_ms = 10000,
	};
	__u32 hs, hd;
	int fd = t_open();

	t_pattern(want, len, 1);
	memcpy(src, want, len);
	memset(dst, 0x5a, len);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)src, len, &hs));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)dst, len, &hd));
	t.handle = hs;
	CHECK_OK(t_xfer_full(fd, &t));
	CHECK(t.bytes == len, "H2C bytes %llu", (unsigned long long)t.bytes);
	CHECK(t.duration_ns > 0, "H2C duration 0");
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, hd, 0, card, len, 10000));
	t_same(dst, want, len, "1 MiB round trip");
	t_same(src, want, len, "H2C source untouched");
	CHECK_OK(t_unpin(fd, hs));
	CHECK_OK(t_unpin(fd, hd));
	close(fd);
	free(want);
	t_free(src, len);
	t_free(dst, len);
}

static void test_batch_of_10_reads(void)
{
	const __u64 n = 10, base = 256 * MIB;
	unsigned char *src = t_alloc(n * MIB), *dst = t_alloc(n * MIB);
	unsigned char *want = malloc(n * MIB);
	__u32 hs, hd, i;
	int fd = t_open();

	t_pattern(want, n * MIB, 10);
	memcpy(src, want, n * MIB);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)src, n * MIB, &hs));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)dst, n * MIB, &hd));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, hs, 0, base, n * MIB, 10000));
	for (i = 0; i < n; i++)
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, i % 4, hd, i * MIB,
				base + i * MIB, MIB, 10000));
	t_same(dst, want, n * MIB, "10 x 1 MiB batch");
	close(fd);
	free(want);
	t_free(src, n * MIB);
	t_free(dst, n * MIB);
}

static __u64 sweep_len(__u64 end, __u64 p)
{
	return end - p < MIB ? end - p : MIB;
}

static void test_card_address_sweep(void)
{
	const __u64 end = st.card_size;
	const __u64 points[] = {
		0, 256 * MIB, 512 * MIB, GIB, GIB + 512 * MIB,
		end - 8 * MIB, end - 4 * KIB,
	};
	const size_t np = ARRAY_SIZE(points);
	unsigned char *src = t_alloc(np * MIB), *dst = t_alloc(np * MIB);
	unsigned char *want = malloc(np * MIB);
	char what[64];
	__u32 hs, hd;
	size_t i;
	int fd = t_open();

	/* all written before any is read: an address that aliased shows */
	t_pattern(want, np * MIB, 2);
	memcpy(src, want, np * MIB);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)src, np * MIB, &hs));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)dst, np * MIB, &hd));
	for (i = 0; i < np; i++)
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 1, hs, i * MIB, points[i],
				sweep_len(end, points[i]), 10000));
	for (i = 0; i < np; i++) {
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 2, hd, i * MIB, points[i],
				sweep_len(end, points[i]), 10000));
		snprintf(what, sizeof(what), "card address %#llx",
			 (unsigned long long)points[i]);
		t_same(dst + i * MIB, want + i * MIB,
		       sweep_len(end, points[i]), what);
	}
	close(fd);
	free(want);
	t_free(src, np * MIB);
	t_free(dst, np * MIB);
}

static bool fits_rules(__u64 off, __u64 addr, __u64 len)
{
	return !(off % st.xfer_align) && !(addr % st.xfer_align) &&
	       !(len % st.len_granularity);
}

/* Write host memory to the card through the channel node (pwrite). */
static int node_write(__u32 ch, const void *buf, size_t len, __u64 addr)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s_h2c_%u", t_dev, ch);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)addr);
	close(fd);
	return n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
}

static int node_read(__u32 ch, void *buf, size_t len, __u64 addr)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s_c2h_%u", t_dev, ch);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
}

static void test_offsets_near_the_end(void)
{
	const __u64 end = st.card_size, blen = 9 * MIB;
	const struct { __u64 addr, len; } cases[] = {
		{ end - 1, 1 }, { end - 3, 3 }, { end - 4 * KIB, 4 * KIB },
		{ end - 64 * KIB - 7, 64 * KIB + 7 }, { end - 4095, 4095 },
		{ end - 8 * MIB, 8 * MIB }, { end - 64 * KIB, 64 * KIB },
	};
	unsigned char *buf = t_alloc(blen), *data = t_alloc(8 * MIB);
	__u64 off, len, addr;
	char what[64];
	int fd = t_open(), ran = 0;
	__u32 h;
	size_t i;

	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, blen, &h));
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		addr = cases[i].addr;
		len = cases[i].len;
		/* into the pinned buffer at an offset ending at its end */
		off = blen - len;
		if (!fits_rules(off, addr, len))
			continue;	/* the engine's alignment forbids it */
		ran++;
		t_pattern(data, len, 100 + i);
		CHECK_OK(node_write(i % 4, data, len, addr));
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 3, h, off, addr, len,
				10000));
		snprintf(what, sizeof(what), "%llu bytes at %#llx",
			 (unsigned long long)len, (unsigned long long)addr);
		t_same(buf + off, data, len, what);
		/* one alignment step further passes the end */
		CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 3, h, off,
				 addr + st.xfer_align, len, 10000), ERANGE);
		CHECK_ERR(node_read(0, data, len, addr + st.xfer_align),
			  ERANGE);
	}
	CHECK(ran >= 2, "only %d cases fit the engine's alignment", ran);
	close(fd);
	t_free(data, 8 * MIB);
	t_free(buf, blen);
}

static void test_unwritten_card_memory_reads_zeros(void)
{
	const __u64 len = 256 * KIB, card = 0x76540000;
	unsigned char *buf = t_alloc(len), *zero = calloc(1, len);
	long long pages = t_dbg(DBG_TE "stats", "card_pages");
	int fd = t_open();
	__u32 h;

	memset(buf, 0xa5, len);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, card, len, 10000));
	t_same(buf, zero, len, "never written card memory");
	CHECK(t_dbg(DBG_TE "stats", "card_pages") == pages,
	      "a read allocated card pages");
	close(fd);
	free(zero);
	t_free(buf, len);
}

static void test_chain_cache(void)
{
	const __u64 len = 128 * KIB;
	void *buf = t_alloc(len);
	struct fpgagdr_status a, b;
	int fd = t_open();
	__u32 h;

	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h));
	CHECK_OK(t_status(fd, &a));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0x100000, len, 5000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 1, h, 0, 0x100000, len, 5000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 1, h, 4096, 0x100000,
			len - 4096, 5000));
	CHECK_OK(t_status(fd, &b));
	CHECK(b.cache_misses - a.cache_misses == 2, "misses %llu",
	      (unsigned long long)(b.cache_misses - a.cache_misses));
	CHECK(b.cache_hits - a.cache_hits == 1, "hits %llu",
	      (unsigned long long)(b.cache_hits - a.cache_hits));
	CHECK(b.transfers - a.transfers == 3, "transfers");
	CHECK(b.transfer_bytes - a.transfer_bytes == 3 * len - 4096, "bytes");
	close(fd);
	t_free(buf, len);
}

static void test_channel_nodes(void)
{
	const __u64 card = 0x12345000;
	__u64 len = 256 * KIB + 64;
	/* the node DMAs the caller's buffer: aligned as the engine needs */
	unsigned char *data = t_alloc(len), *back = t_alloc(len);
	unsigned char *pinned = t_alloc(512 * KIB);
	int fd = t_open();
	__u32 h;

	if (!fits_rules(0, card, len))
		len = 256 * KIB;
	t_pattern(data, len, 7);
	CHECK_OK(node_write(2, data, len, card));
	CHECK_OK(node_read(3, back, len, card));
	t_same(back, data, len, "pwrite h2c_2, pread c2h_3");
	/* the ioctl path sees what the node wrote */
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)pinned,
		       512 * KIB, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, card, len, 5000));
	t_same(pinned, data, len, "ioctl C2H after node write");
	/* and a read of the wrong direction is refused */
	{
		char path[64];
		int nfd;

		snprintf(path, sizeof(path), "%s_h2c_0", t_dev);
		nfd = open(path, O_RDONLY | O_CLOEXEC);
		CHECK(nfd >= 0, "open %s", path);
		CHECK(pread(nfd, back, 4096, 0) < 0 && errno == EBADF,
		      "read of an H2C node: %s", strerror(errno));
		close(nfd);
	}
	close(fd);
	t_free(data, 256 * KIB + 64);
	t_free(back, 256 * KIB + 64);
	t_free(pinned, 512 * KIB);
}

/*
 * Segments a pin of @len bytes may have in this pass: with no IOMMU and no
 * bounce buffers, scattered pages are many short segments.  Through the
 * virtual IOMMU the buffer is one run of bus addresses, cut into segments
 * of at most the device's maximum segment size (the descriptor length,
 * 1 MiB): the module merges physically adjacent pages into pieces of up
 * to that size, and the DMA API appends each piece to the segment before
 * it only while it fits (next fit).  So any two neighbouring segments
 * together are longer than the maximum, which bounds the count at
 * 2 * ceil(len / max) - 1, one more for a crossing of the 4 GiB segment
 * boundary.  Where it lands depends on how the guest's allocator laid the
 * pages out in that boot (the same 8 MiB: 8 segments in one boot, 11 in
 * another).  Under swiotlb=force each mapped piece is a bounce
 * buffer of at most 256 KiB (a pin of larger pieces is refused by the DMA
 * API), and consecutive ones may be adjacent, so segments are again at
 * most 1 MiB.
 */
static void check_segments(__u64 len, __u32 segs, bool scattered,
			   const char *what)
{
	const __u64 maxseg = st.desc_max_bytes;
	const __u64 least = (len + maxseg - 1) / maxseg;

	if (t_pass_is("iommu"))
		CHECK(segs >= least && segs <= 2 * least,
		      "%s: %u segments through the IOMMU, want %llu..%llu",
		      what, segs, least, 2 * least);
	else if (t_pass_is("swiotlb"))
		/* bounce buffers taken one after the other are adjacent */
		CHECK(segs >= len / maxseg,
		      "%s: %u segments under swiotlb, want >= %llu", what,
		      segs, len / maxseg);
	else if (scattered)
		CHECK(segs >= len / (64 * KIB), "%s: only %u segments", what,
		      segs);
	else
		CHECK(segs >= len / maxseg, "%s: %u segments, want >= %llu",
		      what, segs, len / maxseg);
}

static void round_trip_buffer(unsigned char *buf, __u64 len, __u64 card,
			      bool scattered, const char *what)
{
	unsigned char *want = malloc(len);
	struct fpgagdr_pin p = {
		.abi_version = FPGAGDR_ABI_VERSION, .kind = FPGAGDR_MEM_HOST,
		.addr = (unsigned long)buf, .length = len, .dmabuf_fd = -1,
	};
	long long d0 = t_dbg(DBG_TE "stats", "descs");
	int fd = t_open();

	t_pattern(want, len, 33);
	memcpy(buf, want, len);
	CHECK(ioctl(fd, FPGAGDR_IOC_PIN, &p) == 0, "pin %s", what);
	printf("    %s: %llu bytes in %u segments\n", what,
	       (unsigned long long)len, p.segments);
	check_segments(len, p.segments, scattered, what);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, p.handle, 0, card, len, 10000));
	memset(buf, 0, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 0, card, len, 10000));
	t_same(buf, want, len, what);
	CHECK(t_dbg(DBG_TE "stats", "descs") - d0 >= 2LL * p.segments,
	      "%s: %lld descriptors run for %u segments", what,
	      t_dbg(DBG_TE "stats", "descs") - d0, p.segments);
	close(fd);
	free(want);
}

/* Scattered pages: chains of hundreds of descriptors over many pages. */
static void test_many_segments(void)
{
	const __u64 len = 8 * MIB;
	unsigned char *buf = t_alloc(len);

	round_trip_buffer(buf, len, 0x20000000, true, "scattered 8 MiB");
	t_free(buf, len);
}

/* Transparent huge pages: few, long segments. */
static void test_huge_pages(void)
{
	const __u64 len = 8 * MIB;
	unsigned char *raw = mmap(NULL, len + 2 * MIB, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *buf;

	CHECK(raw != MAP_FAILED, "mmap");
	if (raw == MAP_FAILED)
		return;
	buf = (unsigned char *)(((unsigned long)raw + 2 * MIB - 1) &
				~(2 * MIB - 1));
	madvise(buf, len, MADV_HUGEPAGE);
	memset(buf, 1, len);
	round_trip_buffer(buf, len, 0x30000000, false, "huge-page 8 MiB");
	/* no descriptor the card ran was longer than the module's limit */
	CHECK(t_dbg(DBG_TE "stats", "max_desc") <= st.desc_max_bytes,
	      "a descriptor of %lld bytes ran, the limit is %u",
	      t_dbg(DBG_TE "stats", "max_desc"), st.desc_max_bytes);
	munmap(raw, len + 2 * MIB);
}

/**
 * struct par_arg - one thread of test_concurrent_channels
 * @fd: the shared control node
 * @ch: its channel, both directions
 */
struct par_arg {
	int fd;
	__u32 ch;
};

static void *par_thread(void *arg)
{
	const struct par_arg *a = arg;
	const __u64 len = 512 * KIB, card = 0x40000000 + a->ch * 16 * MIB;
	unsigned char *buf = t_alloc(len), *want = malloc(len);
	char what[64];
	__u32 h;
	int i;

	CHECK_OK(t_pin(a->fd, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h));
	for (i = 0; i < 10; i++) {
		t_pattern(want, len, a->ch * 100 + i);
		memcpy(buf, want, len);
		CHECK_OK(t_xfer(a->fd, FPGAGDR_DIR_H2C, a->ch, h, 0, card, len,
				10000));
		memset(buf, 0, len);
		CHECK_OK(t_xfer(a->fd, FPGAGDR_DIR_C2H, a->ch, h, 0, card, len,
				10000));
		snprintf(what, sizeof(what), "channel %u round %d", a->ch, i);
		t_same(buf, want, len, what);
	}
	CHECK_OK(t_unpin(a->fd, h));
	free(want);
	t_free(buf, len);
	return NULL;
}

static void test_concurrent_channels(void)
{
	struct par_arg args[4];
	pthread_t th[4];
	int fd = t_open(), i;

	for (i = 0; i < 4; i++) {
		args[i].fd = fd;
		args[i].ch = i;
		pthread_create(&th[i], NULL, par_thread, &args[i]);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	close(fd);
}

/*
 * The card's interrupt is named after the card (/proc/interrupts), so
 * that two cards' interrupts can be told apart.
 */
static void test_interrupt_named_after_card(void)
{
	const char *name = strrchr(t_dev, '/') + 1;
	char line[512], tail[64];
	bool found = false, bare = false;
	FILE *f;

	if (!(st.caps & FPGAGDR_CAP_IRQ))
		return;		/* polled: no interrupt */
	f = fopen("/proc/interrupts", "r");
	CHECK(f, "open /proc/interrupts");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		snprintf(tail, sizeof(tail), " %s", name);
		if (strlen(line) >= strlen(tail) &&
		    !strcmp(line + strlen(line) - strlen(tail), tail))
			found = true;
		if (strlen(line) >= 8 &&
		    !strcmp(line + strlen(line) - 8, " fpgagdr"))
			bare = true;
	}
	fclose(f);
	CHECK(found, "no interrupt named %s in /proc/interrupts%s", name,
	      bare ? " (one is named just \"fpgagdr\")" : "");
}

int suite_functional(void)
{
	static const struct t_case cases[] = {
		{ "status", test_status },
		{ "interrupt_named_after_card",
		  test_interrupt_named_after_card },
		{ "pin_unpin", test_pin_unpin },
		{ "h2c_c2h_round_trip_every_byte", test_round_trip },
		{ "batch_of_10_reads", test_batch_of_10_reads },
		{ "card_address_sweep_7_points", test_card_address_sweep },
		{ "offsets_near_the_end", test_offsets_near_the_end },
		{ "unwritten_card_memory_reads_zeros",
		  test_unwritten_card_memory_reads_zeros },
		{ "chain_cache", test_chain_cache },
		{ "channel_nodes", test_channel_nodes },
		{ "many_segments", test_many_segments },
		{ "huge_pages", test_huge_pages },
		{ "concurrent_channels", test_concurrent_channels },
	};
	int fd = t_open();

	CHECK_OK(t_status(fd, &st));
	close(fd);
	return t_run("functional", cases, ARRAY_SIZE(cases));
}
