/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Building XDMA descriptor chains from segment lists.  Pure logic, also
 * built in user space.
 */
#ifndef FPGAGDR_DESC_H
#define FPGAGDR_DESC_H

#include "fpgagdr-pure.h"
#include "fpgagdr-sg.h"
#include "fpgagdr-xdma-regs.h"

/* Descriptors in one 4 KiB descriptor page. */
#define FPGAGDR_DESC_PER_PAGE	(XDMA_DESC_BOUNDARY / XDMA_DESC_SIZE)
/*
 * Bytes one descriptor moves at most: the largest multiple of 4 KiB the
 * 28-bit length field holds, so that split points stay page aligned.
 */
#define FPGAGDR_DESC_MAX_LEN	(XDMA_DESC_LEN - (XDMA_DESC_BOUNDARY - 1))

/**
 * struct fpgagdr_desc_ring - descriptor memory preallocated for one user
 * @page: CPU addresses of 4 KiB descriptor pages, each 4 KiB aligned
 * @page_dma: bus addresses of the same pages
 * @npages: entries in @page and @page_dma
 *
 * A chain of k descriptors occupies slots 0..k-1, slot i in page
 * i / FPGAGDR_DESC_PER_PAGE.  The memory is allocated when the owner is
 * created (pin or channel), never on the transfer path.
 */
struct fpgagdr_desc_ring {
	struct xdma_desc **page;
	const u64 *page_dma;
	u32 npages;
};

/**
 * struct fpgagdr_xfer - one transfer, as the chain builder sees it
 * @offset: byte offset into the segment list (the pinned buffer)
 * @card_addr: card address of the first byte
 * @len: bytes
 * @c2h: true for card to host, false for host to card
 */
struct fpgagdr_xfer {
	u64 offset;
	u64 card_addr;
	u64 len;
	bool c2h;
};

/**
 * struct fpgagdr_chain - a built chain, ready to hand to an engine
 * @first: bus address of the first descriptor
 * @first_adj: descriptors adjacent to the first (SGDMA DESC_ADJ register)
 * @ndesc: descriptors in the chain
 * @bytes: bytes the chain moves
 */
struct fpgagdr_chain {
	u64 first;
	u32 first_adj;
	u32 ndesc;
	u64 bytes;
};

u64 fpgagdr_desc_count(const struct fpgagdr_seg *segs, u32 n, u64 offset,
		       u64 len, u32 max_len);
u32 fpgagdr_desc_adj(u64 next_dma, u64 remaining);
int fpgagdr_desc_build(const struct fpgagdr_desc_ring *ring,
		       const struct fpgagdr_seg *segs, u32 n,
		       const struct fpgagdr_xfer *x, u32 max_len,
		       struct fpgagdr_chain *chain);

#endif /* FPGAGDR_DESC_H */
