// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for fpgagdr-link.c: link registers with known values, as
 * lspci -vv shows them, decoded into what GET_STATUS reports.
 */
#include "check.h"
#include "../fpgagdr-link.h"

int test_failures;
int test_checks;

/* LnkSta 0x1043 (lspci: "Speed 8GT/s, Width x4", slot clock set): Gen3 x4 */
static void test_known_registers(void)
{
	struct fpgagdr_link l;

	/* LnkCap 0x0047f443: port 0, ASPM L0s L1, exit latencies, Gen3 x4 */
	fpgagdr_link_decode(0x1043, 0x0047f443, 0x2810, &l);
	CHECK_EQ(l.gen, 3);
	CHECK_EQ(l.width, 4);
	CHECK_EQ(l.cap_gen, 3);
	CHECK_EQ(l.cap_width, 4);
	/* DevCtl 0x2810: MaxPayload 128 bytes, MaxReadReq 512 bytes */
	CHECK_EQ(l.max_payload, 128);
	CHECK_EQ(l.max_read_req, 512);

	/* trained down: a Gen3 x8 card running at Gen1 x1 */
	fpgagdr_link_decode(0x0011, 0x00000483, 0x5030, &l);
	CHECK_EQ(l.gen, 1);
	CHECK_EQ(l.width, 1);
	CHECK_EQ(l.cap_gen, 3);
	CHECK_EQ(l.cap_width, 8);
	CHECK_EQ(l.max_payload, 256);
	CHECK_EQ(l.max_read_req, 4096);
}

/* Every speed 1..6 with every width the specification names. */
static void test_every_generation_and_width(void)
{
	static const u32 widths[] = { 1, 2, 4, 8, 12, 16, 32 };
	struct fpgagdr_link l;
	unsigned int i;
	u32 gen;

	for (gen = 1; gen <= 6; gen++) {
		for (i = 0; i < ARRAY_SIZE(widths); i++) {
			u32 w = widths[i];

			/* the other bits set, to show they are masked off */
			fpgagdr_link_decode(0xfc00 | w << 4 | gen,
					    0xfffffc00 | w << 4 | gen, 0, &l);
			CHECK_EQ(l.gen, gen);
			CHECK_EQ(l.width, w);
			CHECK_EQ(l.cap_gen, gen);
			CHECK_EQ(l.cap_width, w);
		}
	}
}

/* Max_Payload_Size and Max_Read_Request_Size: 128..4096, reserved codes 0. */
static void test_every_size_code(void)
{
	struct fpgagdr_link l;
	u32 code;

	for (code = 0; code <= 7; code++) {
		u32 want = code <= 5 ? 128U << code : 0;

		fpgagdr_link_decode(0, 0, code << 5, &l);
		CHECK_EQ(l.max_payload, want);
		CHECK_EQ(l.max_read_req, 128);
		fpgagdr_link_decode(0, 0, code << 12, &l);
		CHECK_EQ(l.max_read_req, want);
		CHECK_EQ(l.max_payload, 128);
	}
	/* a conventional PCI function's zeros: no link */
	fpgagdr_link_decode(0, 0, 0, &l);
	CHECK_EQ(l.gen, 0);
	CHECK_EQ(l.width, 0);
}

int main(void)
{
	RUN(test_known_registers);
	RUN(test_every_generation_and_width);
	RUN(test_every_size_code);
	return test_summary();
}
