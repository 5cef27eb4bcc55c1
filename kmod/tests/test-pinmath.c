// SPDX-License-Identifier: GPL-2.0
/* Unit tests for fpgagdr-pinmath.c: alignment, overflow and range rules. */
#include "check.h"
#include "../fpgagdr-pinmath.h"

int test_failures;
int test_checks;

#define SZ_4K	0x1000ULL
#define SZ_64K	0x10000ULL
#define MAX_PIN	(64ULL << 30)

static void test_span_4k_pages(void)
{
	struct fpgagdr_span s;

	CHECK_EQ(fpgagdr_pin_span(0x7f0000003000ULL, 3 * SZ_4K, SZ_4K, SZ_4K,
				  MAX_PIN, &s), 0);
	CHECK_EQ(s.start, 0x7f0000003000ULL);
	CHECK_EQ(s.end, 0x7f0000006000ULL);
	CHECK_EQ(s.head, 0);
	CHECK_EQ(s.npages, 3);
}

/* Two 4 KiB buffers in one 64 KiB GPU page: same span, their own heads. */
static void test_span_64k_gpu_page_shared(void)
{
	struct fpgagdr_span a, b;

	CHECK_EQ(fpgagdr_pin_span(0x7f0000010000ULL, SZ_4K, SZ_4K, SZ_64K,
				  MAX_PIN, &a), 0);
	CHECK_EQ(fpgagdr_pin_span(0x7f0000011000ULL, SZ_4K, SZ_4K, SZ_64K,
				  MAX_PIN, &b), 0);
	CHECK_EQ(a.start, b.start);
	CHECK_EQ(a.end, b.end);
	CHECK_EQ(a.npages, 1);
	CHECK_EQ(a.head, 0);
	CHECK_EQ(b.head, SZ_4K);
}

/* 100 KiB starting 60 KiB into a GPU page spans three 64 KiB pages. */
static void test_span_not_multiple_of_64k(void)
{
	struct fpgagdr_span s;

	CHECK_EQ(fpgagdr_pin_span(0x10000f000ULL, 100 * 1024, SZ_4K, SZ_64K,
				  MAX_PIN, &s), 0);
	CHECK_EQ(s.start, 0x100000000ULL);
	CHECK_EQ(s.end, 0x100030000ULL);
	CHECK_EQ(s.head, 0xf000);
	CHECK_EQ(s.npages, 3);
}

static void test_span_alignment(void)
{
	struct fpgagdr_span s;

	CHECK_EQ(fpgagdr_pin_span(0x1800, SZ_4K, SZ_4K, SZ_4K, MAX_PIN, &s),
		 -EINVAL);
	CHECK_EQ(fpgagdr_pin_span(0x1000, 0x800, SZ_4K, SZ_4K, MAX_PIN, &s),
		 -EINVAL);
	CHECK_EQ(fpgagdr_pin_span(0x1000, 0, SZ_4K, SZ_4K, MAX_PIN, &s),
		 -EINVAL);
	/* a 64 KiB alignment rule rejects a 4 KiB aligned address */
	CHECK_EQ(fpgagdr_pin_span(0x11000, SZ_64K, SZ_64K, SZ_64K, MAX_PIN, &s),
		 -EINVAL);
	CHECK_EQ(fpgagdr_pin_span(0x20000, SZ_64K, SZ_64K, SZ_64K, MAX_PIN, &s),
		 0);
	CHECK_EQ(fpgagdr_pin_span(0x1000, SZ_4K, 3000, SZ_4K, MAX_PIN, &s),
		 -EINVAL);
	CHECK_EQ(fpgagdr_pin_span(0x1000, SZ_4K, SZ_4K, 0, MAX_PIN, &s),
		 -EINVAL);
}

static void test_span_overflow_and_limit(void)
{
	struct fpgagdr_span s;

	CHECK_EQ(fpgagdr_pin_span(~0ULL - 0xfff, 2 * SZ_4K, SZ_4K, SZ_4K,
				  MAX_PIN, &s), -EOVERFLOW);
	/* the buffer fits but rounding its end up to 64 KiB wraps */
	CHECK_EQ(fpgagdr_pin_span(~0ULL - 0x1fff, SZ_4K, SZ_4K, SZ_64K,
				  MAX_PIN, &s), -EOVERFLOW);
	CHECK_EQ(fpgagdr_pin_span(0, MAX_PIN + SZ_4K, SZ_4K, SZ_4K, MAX_PIN,
				  &s), -E2BIG);
	CHECK_EQ(fpgagdr_pin_span(0, MAX_PIN, SZ_4K, SZ_4K, MAX_PIN, &s), 0);
	CHECK_EQ(s.npages, MAX_PIN / SZ_4K);
}

static const struct fpgagdr_xfer_rules rules = {
	.buf_len = 0x100000,
	.card_size = 0x80000000,
	.addr_align = 64,
	.len_gran = 4,
};

static void test_xfer_ok(void)
{
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0, 0, 0x100000), 0);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0xff000, 0x7ffff000, 0x1000), 0);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 64, 128, 4), 0);
}

static void test_xfer_offset_length_overflow(void)
{
	CHECK_EQ(fpgagdr_xfer_check(&rules, ~0ULL - 63, 0, 128), -EOVERFLOW);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0xff000, 0, 0x2000), -EOVERFLOW);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0x100000, 0, 4), -EOVERFLOW);
}

static void test_xfer_card_range(void)
{
	struct fpgagdr_xfer_rules big = rules;

	CHECK_EQ(fpgagdr_xfer_check(&rules, 0, 0x7ffff000, 0x2000), -ERANGE);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0, 0x80000000, 4), -ERANGE);
	/* unknown card size: only wrap-around is an error */
	big.card_size = 0;
	CHECK_EQ(fpgagdr_xfer_check(&big, 0, 0x180000000ULL, 0x1000), 0);
	CHECK_EQ(fpgagdr_xfer_check(&big, 0, ~0ULL - 63, 128), -ERANGE);
	/* card addresses above 4 GiB are fine when the card is that big */
	big.card_size = 0x400000000ULL;
	CHECK_EQ(fpgagdr_xfer_check(&big, 0, 0x3fff00000ULL, 0x100000), 0);
	CHECK_EQ(fpgagdr_xfer_check(&big, 0, 0x3fff00000ULL, 0x100004),
		 -EOVERFLOW);
}

static void test_xfer_alignment(void)
{
	CHECK_EQ(fpgagdr_xfer_check(&rules, 32, 0, 64), -EINVAL);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0, 32, 64), -EINVAL);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0, 0, 66), -EINVAL);
	CHECK_EQ(fpgagdr_xfer_check(&rules, 0, 0, 0), -EINVAL);
}

static void test_timeout(void)
{
	CHECK_EQ(fpgagdr_timeout_check(0, 60000), -EINVAL);
	CHECK_EQ(fpgagdr_timeout_check(1, 60000), 0);
	CHECK_EQ(fpgagdr_timeout_check(60000, 60000), 0);
	CHECK_EQ(fpgagdr_timeout_check(60001, 60000), -EINVAL);
}

static void test_handle_missing(void)
{
	CHECK_EQ(fpgagdr_handle_missing(3, 5, false), -EALREADY);
	CHECK_EQ(fpgagdr_handle_missing(5, 5, false), -ENOENT);
	CHECK_EQ(fpgagdr_handle_missing(0, 5, false), -ENOENT);
	CHECK_EQ(fpgagdr_handle_missing(3, 5, true), -ENOENT);
}

int main(void)
{
	RUN(test_span_4k_pages);
	RUN(test_span_64k_gpu_page_shared);
	RUN(test_span_not_multiple_of_64k);
	RUN(test_span_alignment);
	RUN(test_span_overflow_and_limit);
	RUN(test_xfer_ok);
	RUN(test_xfer_offset_length_overflow);
	RUN(test_xfer_card_range);
	RUN(test_xfer_alignment);
	RUN(test_timeout);
	RUN(test_handle_missing);
	return test_summary();
}
