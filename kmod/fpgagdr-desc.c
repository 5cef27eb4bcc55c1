// SPDX-License-Identifier: GPL-2.0
/*
 * XDMA descriptor chain building.  Pure logic: it writes descriptors into
 * memory its caller allocated; tests/ builds this file unchanged.
 */
#include "fpgagdr-desc.h"

/* Find the segment holding byte @offset, and the offset inside it. */
static bool fpgagdr_desc_seek(const struct fpgagdr_seg *segs, u32 n,
			      u64 offset, u32 *idx, u64 *skip)
{
	u32 i = 0;

	while (i < n && offset >= segs[i].len) {
		offset -= segs[i].len;
		i++;
	}
	*idx = i;
	*skip = offset;
	return i < n;
}

/**
 * fpgagdr_desc_count() - descriptors needed to move a range of a buffer
 * @segs: the buffer's segment list
 * @n: entries in @segs
 * @offset: first byte of the range
 * @len: bytes in the range
 * @max_len: most bytes one descriptor may move
 *
 * Each segment piece in the range needs DIV_ROUND_UP(piece, @max_len)
 * descriptors.  For the whole buffer this is an upper bound for any range
 * of it, which is what the descriptor memory is sized for.
 *
 * Context: any.
 * Return: the count, or 0 if the range is empty, does not lie inside the
 * list, or @max_len is 0.
 */
u64 fpgagdr_desc_count(const struct fpgagdr_seg *segs, u32 n, u64 offset,
		       u64 len, u32 max_len)
{
	u64 count = 0, skip, piece;
	u32 i;

	if (!len || !max_len || !fpgagdr_desc_seek(segs, n, offset, &i, &skip))
		return 0;
	for (; i < n && len; i++) {
		piece = min(segs[i].len - skip, len);
		count += (piece + max_len - 1) / max_len;
		len -= piece;
		skip = 0;
	}
	return len ? 0 : count;
}

/**
 * fpgagdr_desc_adj() - next_adj value for a descriptor
 * @next_dma: bus address of the next descriptor
 * @remaining: descriptors in the chain after the next one
 *
 * The card fetches the next descriptor and next_adj more that follow it in
 * memory in one burst.  The burst may not cross a 4 KiB boundary, may not
 * run past the end of the chain, and the 6-bit field holds at most 63.
 * Bursts are kept inside aligned blocks of 64 descriptors (2 KiB), which
 * keeps them inside 4 KiB and makes the value drop by one from each
 * descriptor to the next inside a block, as the engine expects.
 *
 * Context: any.
 * Return: the value for the XDMA_DESC_NEXT_ADJ field.
 */
u32 fpgagdr_desc_adj(u64 next_dma, u64 remaining)
{
	u32 slot = (u32)(next_dma & (XDMA_DESC_BOUNDARY - 1)) / XDMA_DESC_SIZE;
	u64 after = XDMA_DESC_NEXT_ADJ_MAX - slot % (XDMA_DESC_NEXT_ADJ_MAX + 1);

	return (u32)min(after, remaining);
}

static struct xdma_desc *fpgagdr_desc_slot(const struct fpgagdr_desc_ring *ring,
					   u32 i, u64 *dma)
{
	u32 page = i / FPGAGDR_DESC_PER_PAGE;
	u32 slot = i % FPGAGDR_DESC_PER_PAGE;

	*dma = ring->page_dma[page] + (u64)slot * XDMA_DESC_SIZE;
	return ring->page[page] + slot;
}

static void fpgagdr_desc_fill(struct xdma_desc *d, u64 src, u64 dst, u64 len,
			      u64 next, u32 adj, bool last)
{
	u32 control = FIELD_PREP(XDMA_DESC_MAGIC, XDMA_DESC_MAGIC_VALUE) |
		      FIELD_PREP(XDMA_DESC_NEXT_ADJ, adj);

	if (last)
		control |= XDMA_DESC_STOP | XDMA_DESC_COMPLETED | XDMA_DESC_EOP;
	d->control = cpu_to_le32(control);
	d->len = cpu_to_le32((u32)len);
	d->src_lo = cpu_to_le32(lower_32_bits(src));
	d->src_hi = cpu_to_le32(upper_32_bits(src));
	d->dst_lo = cpu_to_le32(lower_32_bits(dst));
	d->dst_hi = cpu_to_le32(upper_32_bits(dst));
	d->next_lo = cpu_to_le32(lower_32_bits(next));
	d->next_hi = cpu_to_le32(upper_32_bits(next));
}

/**
 * fpgagdr_desc_build() - write the descriptor chain for one transfer
 * @ring: preallocated descriptor memory
 * @segs: the buffer's segment list (clipped to the buffer)
 * @n: entries in @segs
 * @x: the transfer
 * @max_len: most bytes per descriptor, 1..FPGAGDR_DESC_FIELD_MAX
 * @chain: where the chain's start, adjacency and size are written
 *
 * Descriptors are written in slot order.  Host-side bytes come only from
 * @segs, so the card is never pointed outside the buffer; the card address
 * advances by each descriptor's length.  The last descriptor has the stop
 * and completed bits (and EOP, used by AXI-ST engines) and no next.
 *
 * Context: any; does not sleep or allocate.
 * Return: 0, -EINVAL for a bad @max_len, -EOVERFLOW if the range does not
 * lie inside @segs or the card address wraps, -E2BIG if @ring is too small.
 */
int fpgagdr_desc_build(const struct fpgagdr_desc_ring *ring,
		       const struct fpgagdr_seg *segs, u32 n,
		       const struct fpgagdr_xfer *x, u32 max_len,
		       struct fpgagdr_chain *chain)
{
	u64 count, skip, left, piece, host, next_dma, dma, end;
	u64 card = x->card_addr;
	struct xdma_desc *d;
	u32 i, k = 0;

	if (!max_len || max_len > FPGAGDR_DESC_FIELD_MAX)
		return -EINVAL;
	if (check_add_overflow(x->card_addr, x->len, &end))
		return -EOVERFLOW;
	count = fpgagdr_desc_count(segs, n, x->offset, x->len, max_len);
	if (!count)
		return -EOVERFLOW;
	if (count > (u64)ring->npages * FPGAGDR_DESC_PER_PAGE)
		return -E2BIG;

	fpgagdr_desc_seek(segs, n, x->offset, &i, &skip);
	left = x->len;
	for (; left; i++, skip = 0) {
		host = segs[i].addr + skip;
		piece = min(segs[i].len - skip, left);
		left -= piece;
		while (piece) {
			u64 len = min_t(u64, piece, max_len);
			bool last = k + 1 == count;
			u32 adj = 0;

			d = fpgagdr_desc_slot(ring, k, &dma);
			if (k == 0)
				chain->first = dma;
			next_dma = 0;
			if (!last) {
				fpgagdr_desc_slot(ring, k + 1, &next_dma);
				adj = fpgagdr_desc_adj(next_dma, count - k - 2);
			}
			fpgagdr_desc_fill(d, x->c2h ? card : host,
					  x->c2h ? host : card, len, next_dma,
					  adj, last);
			host += len;
			card += len;
			piece -= len;
			k++;
		}
	}
	chain->first_adj = fpgagdr_desc_adj(chain->first, count - 1);
	chain->ndesc = k;
	chain->bytes = x->len;
	return 0;
}
