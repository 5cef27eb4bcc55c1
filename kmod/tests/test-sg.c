// SPDX-License-Identifier: GPL-2.0
/* Unit tests for fpgagdr-sg.c: merging and clipping segment lists. */
#include <string.h>

#include "check.h"
#include "../fpgagdr-sg.h"

int test_failures;
int test_checks;

#define SZ_4K	0x1000ULL
#define SZ_64K	0x10000ULL
#define SZ_1M	0x100000ULL
#define SZ_512M	0x20000000ULL

/* 512 MiB of bus-contiguous 4 KiB pages above 4 GiB merge into one entry. */
static void test_merge_512m_contiguous(void)
{
	u32 n = SZ_512M / SZ_4K, i, out;
	struct fpgagdr_seg *segs = calloc(n, sizeof(*segs));

	for (i = 0; i < n; i++) {
		segs[i].addr = 0x123450000ULL + i * SZ_4K;
		segs[i].len = SZ_4K;
	}
	out = fpgagdr_sg_merge(segs, n, ~0ULL);
	CHECK_EQ(out, 1);
	CHECK_EQ(segs[0].addr, 0x123450000ULL);
	CHECK_EQ(segs[0].len, SZ_512M);
	free(segs);
}

/*
 * The same run with the device's maximum segment size of 1 MiB: 512
 * segments of exactly 1 MiB, in order; a longer input segment is kept.
 */
static void test_merge_respects_max_segment(void)
{
	u32 n = SZ_512M / SZ_4K, i, out, bad = 0;
	struct fpgagdr_seg *segs = calloc(n + 1, sizeof(*segs));

	for (i = 0; i < n; i++) {
		segs[i].addr = 0x123450000ULL + i * SZ_4K;
		segs[i].len = SZ_4K;
	}
	segs[n].addr = 0x123450000ULL + SZ_512M;
	segs[n].len = 4 * SZ_1M;
	out = fpgagdr_sg_merge(segs, n + 1, SZ_1M);
	CHECK_EQ(out, 513);
	for (i = 0; i < 512; i++)
		if (segs[i].addr != 0x123450000ULL + i * SZ_1M ||
		    segs[i].len != SZ_1M)
			bad++;
	CHECK_EQ(bad, 0);
	CHECK_EQ(segs[512].len, 4 * SZ_1M);
	free(segs);
}

/* A gap, a backwards step and an empty entry all keep segments apart. */
static void test_merge_keeps_gaps(void)
{
	struct fpgagdr_seg segs[] = {
		{ 0x10000, SZ_4K }, { 0x11000, SZ_4K },	/* merge */
		{ 0x13000, SZ_4K },			/* gap */
		{ 0x14000, 0 },				/* empty */
		{ 0x14000, SZ_4K },			/* merge */
		{ 0x12000, SZ_4K },			/* backwards */
	};
	u32 out = fpgagdr_sg_merge(segs, 6, ~0ULL);

	CHECK_EQ(out, 3);
	CHECK_EQ(segs[0].addr, 0x10000);
	CHECK_EQ(segs[0].len, 2 * SZ_4K);
	CHECK_EQ(segs[1].addr, 0x13000);
	CHECK_EQ(segs[1].len, 2 * SZ_4K);
	CHECK_EQ(segs[2].addr, 0x12000);
	CHECK_EQ(segs[2].len, SZ_4K);
}

/*
 * Two 4 KiB buffers in one 64 KiB GPU page: clipping gives each buffer
 * exactly its own 4 KiB, never the neighbour's.
 */
static void test_clip_two_buffers_one_gpu_page(void)
{
	const struct fpgagdr_seg page = { 0x2000000000ULL, SZ_64K };
	struct fpgagdr_seg a = page, b = page;
	u32 na = 0, nb = 0;

	CHECK_EQ(fpgagdr_sg_clip(&a, 1, 0, SZ_4K, &na), 0);
	CHECK_EQ(fpgagdr_sg_clip(&b, 1, SZ_4K, SZ_4K, &nb), 0);
	CHECK_EQ(na, 1);
	CHECK_EQ(a.addr, 0x2000000000ULL);
	CHECK_EQ(a.len, SZ_4K);
	CHECK_EQ(nb, 1);
	CHECK_EQ(b.addr, 0x2000001000ULL);
	CHECK_EQ(b.len, SZ_4K);
	/* the ranges touch but do not overlap */
	CHECK_EQ(a.addr + a.len, b.addr);
}

/* A 100 KiB buffer starting 12 KiB into non-contiguous 64 KiB pages. */
static void test_clip_not_multiple_of_64k(void)
{
	struct fpgagdr_seg segs[] = {
		{ 0x300000000ULL, SZ_64K },
		{ 0x100000000ULL, SZ_64K },
		{ 0x500000000ULL, SZ_64K },
	};
	u32 n = 0;

	CHECK_EQ(fpgagdr_sg_clip(segs, 3, 0x3000, 100 * 1024, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(segs[0].addr, 0x300003000ULL);
	CHECK_EQ(segs[0].len, SZ_64K - 0x3000);
	CHECK_EQ(segs[1].addr, 0x100000000ULL);
	CHECK_EQ(segs[1].len, 100 * 1024 - (SZ_64K - 0x3000));
	CHECK_EQ(fpgagdr_sg_total(segs, n), 100 * 1024);
}

static void test_clip_rejects(void)
{
	struct fpgagdr_seg segs[] = { { 0x1000, SZ_64K } };
	u32 n = 0;

	CHECK_EQ(fpgagdr_sg_clip(segs, 1, 0, 0, &n), -EINVAL);
	CHECK_EQ(fpgagdr_sg_clip(segs, 1, 0x1000, SZ_64K, &n), -EOVERFLOW);
	CHECK_EQ(fpgagdr_sg_clip(segs, 1, ~0ULL, 2, &n), -EOVERFLOW);
	CHECK_EQ(fpgagdr_sg_clip(segs, 1, SZ_64K, 1, &n), -EOVERFLOW);
	/* rejected calls leave the list alone */
	CHECK_EQ(segs[0].addr, 0x1000);
}

int main(void)
{
	RUN(test_merge_512m_contiguous);
	RUN(test_merge_respects_max_segment);
	RUN(test_merge_keeps_gaps);
	RUN(test_clip_two_buffers_one_gpu_page);
	RUN(test_clip_not_multiple_of_64k);
	RUN(test_clip_rejects);
	return test_summary();
}
