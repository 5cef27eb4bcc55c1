/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DMA segment lists: merge bus-contiguous segments and clip a list to
 * exactly the bytes of a buffer.  Pure logic, also built in user space.
 */
#ifndef FPGAGDR_SG_H
#define FPGAGDR_SG_H

#include "fpgagdr-pure.h"

/**
 * struct fpgagdr_seg - one bus-contiguous run of a mapped buffer
 * @addr: bus (DMA) address the card uses
 * @len: bytes
 */
struct fpgagdr_seg {
	u64 addr;
	u64 len;
};

u32 fpgagdr_sg_merge(struct fpgagdr_seg *segs, u32 n, u64 max_len);
int fpgagdr_sg_clip(struct fpgagdr_seg *segs, u32 n, u64 head, u64 len,
		    u32 *out_n);
u64 fpgagdr_sg_total(const struct fpgagdr_seg *segs, u32 n);

#endif /* FPGAGDR_SG_H */
