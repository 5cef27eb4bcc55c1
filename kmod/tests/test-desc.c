// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for fpgagdr-desc.c.  walk_chain() reads a built chain the way
 * the XDMA engine does (first descriptor and adjacency from the registers,
 * then next pointers and next_adj) and checks every rule the hardware
 * enforces, so a descriptor the card would reject fails here.
 */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "../fpgagdr-desc.h"

int test_failures;
int test_checks;

#define SZ_4K	0x1000ULL
#define SZ_64K	0x10000ULL
#define SZ_512M	0x20000000ULL
#define PAGE_BUS(i)	(0x900000000ULL + (u64)(i) * 0x3000)	/* not adjacent */

/**
 * struct test_ring - a descriptor ring in ordinary memory
 * @ring: the view handed to the builder
 * @page: 4 KiB aligned pages
 * @dma: made-up bus addresses, deliberately not contiguous
 */
struct test_ring {
	struct fpgagdr_desc_ring ring;
	struct xdma_desc *page[64];
	u64 dma[64];
};

static void ring_init(struct test_ring *t, u32 npages)
{
	u32 i;

	for (i = 0; i < npages; i++) {
		t->page[i] = aligned_alloc(SZ_4K, SZ_4K);
		memset(t->page[i], 0xa5, SZ_4K);
		t->dma[i] = PAGE_BUS(i);
	}
	t->ring.page = t->page;
	t->ring.page_dma = t->dma;
	t->ring.npages = npages;
}

static void ring_free(struct test_ring *t)
{
	u32 i;

	for (i = 0; i < t->ring.npages; i++)
		free(t->page[i]);
}

/* Bus address -> descriptor, as the card would fetch it; NULL if none. */
static struct xdma_desc *ring_fetch(struct test_ring *t, u64 bus)
{
	u32 i;

	for (i = 0; i < t->ring.npages; i++)
		if (bus >= t->dma[i] && bus < t->dma[i] + SZ_4K &&
		    !(bus % XDMA_DESC_SIZE))
			return t->page[i] + (bus - t->dma[i]) / XDMA_DESC_SIZE;
	return NULL;
}

/**
 * struct walked - what the card would do with a chain
 * @ndesc: descriptors executed
 * @bytes: bytes moved
 * @host_lo: lowest host bus address touched
 * @host_hi: one past the highest host bus address touched
 * @card_next: card address following the last byte moved
 * @max_len: longest descriptor
 */
struct walked {
	u32 ndesc;
	u64 bytes;
	u64 host_lo;
	u64 host_hi;
	u64 card_next;
	u64 max_len;
};

static u64 desc_addr(__le32 lo, __le32 hi)
{
	return (u64)le32_to_cpu(hi) << 32 | le32_to_cpu(lo);
}

static void walk_desc(const struct xdma_desc *d, bool c2h, struct walked *w)
{
	u32 len = le32_to_cpu(d->len);
	u64 src = desc_addr(d->src_lo, d->src_hi);
	u64 dst = desc_addr(d->dst_lo, d->dst_hi);
	u64 host = c2h ? dst : src, card = c2h ? src : dst;

	CHECK_EQ(FIELD_GET(XDMA_DESC_MAGIC, le32_to_cpu(d->control)),
		 XDMA_DESC_MAGIC_VALUE);
	CHECK(len && len <= XDMA_DESC_LEN);
	if (!w->ndesc) {
		w->host_lo = host;
		w->card_next = card;
	}
	CHECK_EQ(card, w->card_next);	/* card addresses are contiguous */
	if (host < w->host_lo)
		w->host_lo = host;
	if (host + len > w->host_hi)
		w->host_hi = host + len;
	w->card_next = card + len;
	w->bytes += len;
	w->max_len = len > w->max_len ? len : w->max_len;
	w->ndesc++;
}

/* Follow the chain as the engine does; check the burst (adjacency) rules. */
static void walk_chain(struct test_ring *t, const struct fpgagdr_chain *c,
		       bool c2h, struct walked *w)
{
	u64 bus = c->first;
	u32 adj = c->first_adj, guard = 0;

	memset(w, 0, sizeof(*w));
	for (;;) {
		struct xdma_desc *d = ring_fetch(t, bus);
		u32 control;

		if (!d || guard++ > 100000) {
			CHECK(!"chain points outside the ring or loops");
			return;
		}
		/* a burst of 1 + adj descriptors may not cross 4 KiB */
		CHECK_EQ(bus / SZ_4K, (bus + adj * XDMA_DESC_SIZE) / SZ_4K);
		walk_desc(d, c2h, w);
		control = le32_to_cpu(d->control);
		if (control & XDMA_DESC_STOP) {
			CHECK_EQ(adj, 0);	/* nothing prefetched past the end */
			CHECK(control & XDMA_DESC_COMPLETED);
			CHECK_EQ(desc_addr(d->next_lo, d->next_hi), 0);
			break;
		}
		CHECK(!(control & XDMA_DESC_COMPLETED));
		/* the adjacent count the engine holds shrinks by one per step */
		if (adj) {
			CHECK_EQ(desc_addr(d->next_lo, d->next_hi),
				 bus + XDMA_DESC_SIZE);
			CHECK_EQ(FIELD_GET(XDMA_DESC_NEXT_ADJ, control),
				 adj - 1);
		}
		bus = desc_addr(d->next_lo, d->next_hi);
		adj = FIELD_GET(XDMA_DESC_NEXT_ADJ, control);
	}
	CHECK_EQ(w->ndesc, c->ndesc);
	CHECK_EQ(w->bytes, c->bytes);
}

/*
 * 512 MiB in one merged segment, at the length field's limit: three
 * descriptors, split points 4 KiB aligned.
 */
static void test_512m_one_segment_split(void)
{
	struct fpgagdr_seg seg = { 0x180000000ULL, SZ_512M };
	struct fpgagdr_xfer x = { 0, 0x40000000, SZ_512M, true };
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;

	ring_init(&t, 1);
	CHECK_EQ(fpgagdr_desc_count(&seg, 1, 0, SZ_512M, FPGAGDR_DESC_FIELD_MAX),
		 3);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &x,
				    FPGAGDR_DESC_FIELD_MAX, &c), 0);
	CHECK_EQ(c.ndesc, 3);
	CHECK_EQ(c.first, PAGE_BUS(0));
	CHECK_EQ(c.first_adj, 2);
	CHECK_EQ(le32_to_cpu(t.page[0][0].len), FPGAGDR_DESC_FIELD_MAX);
	CHECK_EQ(le32_to_cpu(t.page[0][1].len), FPGAGDR_DESC_FIELD_MAX);
	CHECK_EQ(le32_to_cpu(t.page[0][2].len),
		 SZ_512M - 2ULL * FPGAGDR_DESC_FIELD_MAX);
	CHECK_EQ(FPGAGDR_DESC_FIELD_MAX % SZ_4K, 0);
	CHECK_EQ(FPGAGDR_DESC_FIELD_MAX, 0x0ffff000);
	walk_chain(&t, &c, true, &w);
	CHECK_EQ(w.host_lo, 0x180000000ULL);
	CHECK_EQ(w.host_hi, 0x180000000ULL + SZ_512M);
	CHECK_EQ(w.card_next, 0x40000000 + SZ_512M);
	CHECK(w.max_len <= FPGAGDR_DESC_FIELD_MAX);
	ring_free(&t);
}

/*
 * The module's own limit: 1 MiB per descriptor, so 512 MiB is 512
 * descriptors, and the stop budget covers draining one at Gen1 x1.
 */
static void test_desc_limit_and_stop_budget(void)
{
	struct fpgagdr_seg seg = { 0x180000000ULL, SZ_512M };
	struct fpgagdr_xfer x = { 0, 0x40000000, SZ_512M, false };
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;

	CHECK_EQ(FPGAGDR_DESC_MAX_LEN, 0x100000);
	CHECK_EQ(FPGAGDR_DESC_MAX_LEN % SZ_4K, 0);
	/* 1 MiB at 250 MB/s: 4194.304 us, rounded up */
	CHECK_EQ(FPGAGDR_DESC_DRAIN_US, 4195);
	CHECK(FPGAGDR_STOP_BUDGET_US >= 2 * FPGAGDR_DESC_DRAIN_US);
	CHECK(FPGAGDR_STOP_BUDGET_US <= 20000);
	ring_init(&t, 8);
	CHECK_EQ(fpgagdr_desc_count(&seg, 1, 0, SZ_512M, FPGAGDR_DESC_MAX_LEN),
		 512);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &x, FPGAGDR_DESC_MAX_LEN,
				    &c), 0);
	CHECK_EQ(c.ndesc, 512);
	walk_chain(&t, &c, false, &w);
	CHECK_EQ(w.max_len, FPGAGDR_DESC_MAX_LEN);
	CHECK_EQ(w.card_next, 0x40000000 + SZ_512M);
	ring_free(&t);
}

/* Card addresses above 4 GiB are carried in the high words. */
static void test_card_above_4g(void)
{
	struct fpgagdr_seg seg = { 0x7654321000ULL, SZ_64K };
	struct fpgagdr_xfer h2c = { 0, 0x180001000ULL, SZ_64K, false };
	struct fpgagdr_xfer c2h = { 0x1000, 0x2fffff000ULL, 0x2000, true };
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;

	ring_init(&t, 1);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &h2c,
				    FPGAGDR_DESC_MAX_LEN, &c), 0);
	CHECK_EQ(le32_to_cpu(t.page[0][0].dst_lo), 0x80001000);
	CHECK_EQ(le32_to_cpu(t.page[0][0].dst_hi), 1);
	CHECK_EQ(le32_to_cpu(t.page[0][0].src_lo), 0x54321000);
	CHECK_EQ(le32_to_cpu(t.page[0][0].src_hi), 0x76);
	walk_chain(&t, &c, false, &w);

	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &c2h,
				    FPGAGDR_DESC_MAX_LEN, &c), 0);
	CHECK_EQ(le32_to_cpu(t.page[0][0].src_lo), 0xfffff000);
	CHECK_EQ(le32_to_cpu(t.page[0][0].src_hi), 2);
	CHECK_EQ(le32_to_cpu(t.page[0][0].dst_lo), 0x54322000);
	walk_chain(&t, &c, true, &w);
	CHECK_EQ(w.card_next, 0x300001000ULL);
	ring_free(&t);
}

/*
 * Two 4 KiB buffers in one 64 KiB GPU page: the chain for the second
 * touches exactly its 4 KiB; a range past its end is refused.
 */
static void test_shared_gpu_page(void)
{
	struct fpgagdr_seg b = { 0x2000001000ULL, SZ_4K }; /* clipped */
	struct fpgagdr_xfer x = { 0, 0, SZ_4K, true };
	struct fpgagdr_xfer past = { 0, 0, 2 * SZ_4K, true };
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;

	ring_init(&t, 1);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &b, 1, &x, FPGAGDR_DESC_MAX_LEN,
				    &c), 0);
	walk_chain(&t, &c, true, &w);
	CHECK_EQ(w.host_lo, 0x2000001000ULL);
	CHECK_EQ(w.host_hi, 0x2000002000ULL);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &b, 1, &past,
				    FPGAGDR_DESC_MAX_LEN, &c), -EOVERFLOW);
	ring_free(&t);
}

/* 100 KiB over two scattered GPU pages: 64 KiB + 36 KiB descriptors. */
static void test_not_multiple_of_64k(void)
{
	struct fpgagdr_seg segs[] = {
		{ 0x300000000ULL, SZ_64K }, { 0x100000000ULL, 36 * 1024 },
	};
	struct fpgagdr_xfer x = { 0, 0x1000, 100 * 1024, true };
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;

	ring_init(&t, 1);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, segs, 2, &x, FPGAGDR_DESC_MAX_LEN,
				    &c), 0);
	CHECK_EQ(c.ndesc, 2);
	CHECK_EQ(le32_to_cpu(t.page[0][0].len), SZ_64K);
	CHECK_EQ(le32_to_cpu(t.page[0][1].len), 36 * 1024);
	CHECK_EQ(le32_to_cpu(t.page[0][1].dst_hi), 1);
	CHECK_EQ(le32_to_cpu(t.page[0][1].src_lo), 0x11000);
	walk_chain(&t, &c, true, &w);
	ring_free(&t);
}

static void test_adj_values(void)
{
	CHECK_EQ(fpgagdr_desc_adj(0x1000, 1000), 63);
	CHECK_EQ(fpgagdr_desc_adj(0x1000, 5), 5);
	CHECK_EQ(fpgagdr_desc_adj(0x1000 + 100 * 32, 1000), 27);
	CHECK_EQ(fpgagdr_desc_adj(0x1000 + 127 * 32, 1000), 0);
	/* a burst stays in its aligned 64-descriptor block */
	CHECK_EQ(fpgagdr_desc_adj(0x1000 + 10 * 32, 1000), 53);
	CHECK_EQ(fpgagdr_desc_adj(0x1000 + 64 * 32, 1000), 63);
	CHECK_EQ(fpgagdr_desc_adj(0x1fe0, 0), 0);
}

/* 300 scattered pages: a chain over three descriptor pages. */
static void test_adjacency_across_pages(void)
{
	struct fpgagdr_seg segs[300];
	struct fpgagdr_xfer x = { 0, 0, 300 * SZ_4K, false };
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;
	u32 i;

	for (i = 0; i < 300; i++) {
		segs[i].addr = 0x40000000ULL + i * 2 * SZ_4K;
		segs[i].len = SZ_4K;
	}
	ring_init(&t, 3);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, segs, 300, &x,
				    FPGAGDR_DESC_MAX_LEN, &c), 0);
	CHECK_EQ(c.ndesc, 300);
	CHECK_EQ(c.first_adj, 63);
	/* slot 127 is the last of page 0; its next is slot 0 of page 1 */
	CHECK_EQ(desc_addr(t.page[0][127].next_lo, t.page[0][127].next_hi),
		 PAGE_BUS(1));
	CHECK_EQ(FIELD_GET(XDMA_DESC_NEXT_ADJ,
			   le32_to_cpu(t.page[0][127].control)), 63);
	/* slot 126: next is slot 127, alone at the end of its 4 KiB */
	CHECK_EQ(FIELD_GET(XDMA_DESC_NEXT_ADJ,
			   le32_to_cpu(t.page[0][126].control)), 0);
	/* second to last: the last is adjacent, nothing after it */
	CHECK_EQ(FIELD_GET(XDMA_DESC_NEXT_ADJ,
			   le32_to_cpu(t.page[2][42].control)), 0);
	walk_chain(&t, &c, false, &w);
	CHECK_EQ(w.bytes, 300 * SZ_4K);

	/* the same chain does not fit in two pages */
	t.ring.npages = 2;
	CHECK_EQ(fpgagdr_desc_build(&t.ring, segs, 300, &x,
				    FPGAGDR_DESC_MAX_LEN, &c), -E2BIG);
	t.ring.npages = 3;
	ring_free(&t);
}

static void test_rejects(void)
{
	struct fpgagdr_seg seg = { 0x1000, SZ_64K };
	struct fpgagdr_xfer wrap = { 0, ~0ULL - 0xfff, 0x2000, true };
	struct fpgagdr_xfer zero = { 0, 0, 0, true };
	struct fpgagdr_xfer ok = { 0, 0, SZ_4K, true };
	struct test_ring t;
	struct fpgagdr_chain c;

	ring_init(&t, 1);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &wrap,
				    FPGAGDR_DESC_MAX_LEN, &c), -EOVERFLOW);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &zero,
				    FPGAGDR_DESC_MAX_LEN, &c), -EOVERFLOW);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &ok, 0, &c), -EINVAL);
	CHECK_EQ(fpgagdr_desc_build(&t.ring, &seg, 1, &ok,
				    FPGAGDR_DESC_FIELD_MAX + 1, &c), -EINVAL);
	ring_free(&t);
}

/*
 * Random lists and sub-ranges: every chain covers exactly the requested
 * bytes of the list, and the whole-list count bounds every sub-range.
 */
static void test_random_subranges(void)
{
	struct fpgagdr_seg segs[40];
	struct test_ring t;
	struct fpgagdr_chain c;
	struct walked w;
	u64 total, full, off, len;
	u32 round, i, n, max_len;

	srand(1234);
	ring_init(&t, 4);
	for (round = 0; round < 2000; round++) {
		n = 1 + rand() % 40;
		total = 0;
		for (i = 0; i < n; i++) {
			segs[i].addr = (u64)(rand() % 4096) << 24;
			segs[i].len = (u64)(1 + rand() % 64) * SZ_4K;
			total += segs[i].len;
		}
		max_len = (1 + rand() % 16) * SZ_4K;
		full = fpgagdr_desc_count(segs, n, 0, total, max_len);
		off = (u64)(rand() % (total / SZ_4K)) * SZ_4K;
		len = (u64)(1 + rand() % ((total - off) / SZ_4K)) * SZ_4K;
		CHECK(fpgagdr_desc_count(segs, n, off, len, max_len) <= full);
		if (fpgagdr_desc_build(&t.ring, segs, n,
				       &(struct fpgagdr_xfer){ off, 0, len,
							       true },
				       max_len, &c) == -E2BIG)
			continue;
		walk_chain(&t, &c, true, &w);
		CHECK_EQ(w.bytes, len);
		CHECK(w.max_len <= max_len);
	}
	ring_free(&t);
}

int main(void)
{
	RUN(test_512m_one_segment_split);
	RUN(test_desc_limit_and_stop_budget);
	RUN(test_card_above_4g);
	RUN(test_shared_gpu_page);
	RUN(test_not_multiple_of_64k);
	RUN(test_adj_values);
	RUN(test_adjacency_across_pages);
	RUN(test_rejects);
	RUN(test_random_subranges);
	return test_summary();
}
