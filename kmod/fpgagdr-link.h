/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A PCIe function's link as its registers state it: Link Status, Link
 * Capabilities and Device Control decoded into what GET_STATUS reports.
 * Pure logic, also built in user space (tests/test-link.c).
 */
#ifndef FPGAGDR_LINK_H
#define FPGAGDR_LINK_H

#include "fpgagdr-pure.h"

/*
 * Field masks, PCI Express Base Specification r6.0: Link Status 7.5.3.8
 * (Current Link Speed 3:0, Negotiated Link Width 9:4), Link Capabilities
 * 7.5.3.6 (Max Link Speed 3:0, Maximum Link Width 9:4), Device Control
 * 7.5.3.4 (Max_Payload_Size 7:5, Max_Read_Request_Size 14:12).
 */
#define FPGAGDR_LNKSTA_CLS	GENMASK(3, 0)
#define FPGAGDR_LNKSTA_NLW	GENMASK(9, 4)
#define FPGAGDR_LNKCAP_SLS	GENMASK(3, 0)
#define FPGAGDR_LNKCAP_MLW	GENMASK(9, 4)
#define FPGAGDR_DEVCTL_MPS	GENMASK(7, 5)
#define FPGAGDR_DEVCTL_MRRS	GENMASK(14, 12)

/**
 * struct fpgagdr_link - a link as GET_STATUS reports it
 * @gen: Current Link Speed, 1 = 2.5 GT/s (Gen1) ... 6 = 64 GT/s (Gen6)
 * @width: negotiated lanes
 * @cap_gen: Max Link Speed, numbered as @gen
 * @cap_width: most lanes the port supports
 * @max_payload: Max_Payload_Size in force, bytes (128..4096); 0 if reserved
 * @max_read_req: Max_Read_Request_Size in force, bytes (128..4096); 0 if
 *	reserved
 */
struct fpgagdr_link {
	u32 gen;
	u32 width;
	u32 cap_gen;
	u32 cap_width;
	u32 max_payload;
	u32 max_read_req;
};

void fpgagdr_link_decode(u32 lnksta, u32 lnkcap, u32 devctl,
			 struct fpgagdr_link *l);

#endif /* FPGAGDR_LINK_H */
