/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-in for <linux/scatterlist.h>: a table is an array of
 * entries (no chaining).  Each entry has its CPU side (@phys, @length: a
 * physically contiguous run of pages) and, in the first @nents entries,
 * the DMA side as the DMA API filled it (@dma_address, @dma_length).
 */
#ifndef FPGAGDR_KSHIM_LINUX_SCATTERLIST_H
#define FPGAGDR_KSHIM_LINUX_SCATTERLIST_H

#include "../kshim.h"

struct scatterlist {
	u64 phys;
	unsigned int offset;
	unsigned int length;
	dma_addr_t dma_address;
	unsigned int dma_length;
};

struct sg_table {
	struct scatterlist *sgl;
	unsigned int nents;
	unsigned int orig_nents;
};

static inline struct scatterlist *sg_next(struct scatterlist *sg)
{
	return sg + 1;
}

#define sg_dma_address(sg)	((sg)->dma_address)
#define sg_dma_len(sg)		((sg)->dma_length)

#endif
