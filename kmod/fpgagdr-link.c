// SPDX-License-Identifier: GPL-2.0
/*
 * Decoding a PCIe function's link registers (pure logic, see
 * fpgagdr-link.h).
 */
#include "fpgagdr-link.h"

/*
 * A Device Control size field: 000b = 128 bytes ... 101b = 4096 bytes;
 * 110b and 111b are reserved (PCIe r6.0 7.5.3.4), reported as 0.
 */
static u32 fpgagdr_devctl_bytes(u32 code)
{
	return code <= 5 ? 128U << code : 0;
}

/**
 * fpgagdr_link_decode() - a link from its registers
 * @lnksta: Link Status (16 bits)
 * @lnkcap: Link Capabilities (32 bits)
 * @devctl: Device Control (16 bits)
 * @l: the decoded link
 *
 * Speeds keep the registers' numbering (a speed a later revision adds
 * stays a number, not an error); sizes are bytes.
 */
void fpgagdr_link_decode(u32 lnksta, u32 lnkcap, u32 devctl,
			 struct fpgagdr_link *l)
{
	l->gen = FIELD_GET(FPGAGDR_LNKSTA_CLS, lnksta);
	l->width = FIELD_GET(FPGAGDR_LNKSTA_NLW, lnksta);
	l->cap_gen = FIELD_GET(FPGAGDR_LNKCAP_SLS, lnkcap);
	l->cap_width = FIELD_GET(FPGAGDR_LNKCAP_MLW, lnkcap);
	l->max_payload = fpgagdr_devctl_bytes(FIELD_GET(FPGAGDR_DEVCTL_MPS,
							devctl));
	l->max_read_req = fpgagdr_devctl_bytes(FIELD_GET(FPGAGDR_DEVCTL_MRRS,
							 devctl));
}
