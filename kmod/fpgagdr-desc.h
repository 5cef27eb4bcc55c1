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
 * The largest multiple of 4 KiB the descriptor's 28-bit length field
 * holds (256 MiB - 4 KiB): what the chain builder can express.
 */
#define FPGAGDR_DESC_FIELD_MAX	(XDMA_DESC_LEN - (XDMA_DESC_BOUNDARY - 1))
/*
 * Bytes one descriptor moves at most, 1 MiB.  An XDMA engine told to stop
 * (RUN cleared) finishes the descriptor in flight first, so this bounds
 * how long a stop takes: see FPGAGDR_STOP_BUDGET_US.
 */
#define FPGAGDR_DESC_MAX_LEN	0x100000U
/*
 * Payload bytes per second of the slowest link the module accepts: PCIe
 * Gen1 x1 (2.5 GT/s, 8b/10b coding: 250 MB/s before TLP overhead).
 */
#define FPGAGDR_LINK_MIN_BYTES_PER_S	250000000ULL
/* Microseconds the slowest link takes to move one longest descriptor. */
#define FPGAGDR_DESC_DRAIN_US \
	((u32)DIV_ROUND_UP(FPGAGDR_DESC_MAX_LEN * 1000000ULL, \
			   FPGAGDR_LINK_MIN_BYTES_PER_S))
/*
 * How long an engine may take to stop before it counts as not stopped:
 * four times the drain of the descriptor in flight at Gen1 x1 (4.2 ms),
 * which covers TLP headers at a 128-byte max payload (~16%), the
 * descriptor fetch and completion write-back, and the poll loop's sleeps:
 * 16.8 ms.  docs/kernel-module.md has the arithmetic.
 */
#define FPGAGDR_STOP_BUDGET_US	(4 * FPGAGDR_DESC_DRAIN_US)

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
