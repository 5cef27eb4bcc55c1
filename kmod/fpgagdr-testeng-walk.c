// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only: run a descriptor chain as the XDMA card would.
 *
 * The card is given the first descriptor's bus address and an adjacent
 * count (DESC_LO/HI, DESC_ADJ).  It fetches that descriptor and the count
 * that follow it in memory as one burst, which may not cross a 4 KiB
 * boundary; inside a burst each descriptor's next must be the one after
 * it and its next_adj one less than the one before.  The last descriptor
 * of a burst starts the next burst at its next pointer, next_adj more.
 * Every descriptor carries the magic 0xad4b and a nonzero length that
 * fits the 28-bit field; the last has the stop bit, and no burst reaches
 * past it.  Pure logic, also built in user space.
 */
#include "fpgagdr-testeng-walk.h"

/* Control bits a descriptor may carry; the rest are reserved. */
#define FPGAGDR_WALK_CONTROL_KNOWN	(XDMA_DESC_MAGIC | XDMA_DESC_NEXT_ADJ | \
					 XDMA_DESC_STOP | XDMA_DESC_COMPLETED | \
					 XDMA_DESC_EOP)

static u64 fpgagdr_walk_addr(__le32 lo, __le32 hi)
{
	return (u64)le32_to_cpu(hi) << 32 | le32_to_cpu(lo);
}

static int fpgagdr_walk_fail(struct fpgagdr_walk *w, u32 bits,
			     const char *why, u64 where)
{
	w->status |= bits;
	w->why = why;
	w->where = where;
	return -EIO;
}

/* Check a descriptor on its own: magic, reserved bits, length. */
static int fpgagdr_walk_check_desc(struct fpgagdr_walk *w, u64 bus,
				   u32 control, u32 len)
{
	if (FIELD_GET(XDMA_DESC_MAGIC, control) != XDMA_DESC_MAGIC_VALUE)
		return fpgagdr_walk_fail(w, XDMA_CHAN_MAGIC_STOPPED,
					 "descriptor magic is not 0xad4b", bus);
	if (control & ~FPGAGDR_WALK_CONTROL_KNOWN)
		return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
					 "reserved control bits set", bus);
	if (!len || len > XDMA_DESC_LEN)
		return fpgagdr_walk_fail(w, XDMA_CHAN_INVALID_LENGTH,
					 "length 0 or wider than 28 bits", bus);
	return 0;
}

/* Start a burst at @bus of 1 + @adj descriptors. */
static int fpgagdr_walk_burst(struct fpgagdr_walk *w, u64 bus, u32 adj,
			      u32 *left)
{
	if (bus % XDMA_DESC_SIZE)
		return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
					 "descriptor not 32-byte aligned", bus);
	if (bus % XDMA_DESC_BOUNDARY + (u64)(adj + 1) * XDMA_DESC_SIZE >
	    XDMA_DESC_BOUNDARY)
		return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
					 "adjacent descriptors cross 4 KiB", bus);
	*left = adj + 1;
	return 0;
}

/**
 * fpgagdr_walk_chain() - execute a descriptor chain
 * @ops: how to read descriptors and move bytes
 * @ctx: passed to @ops
 * @first: bus address of the first descriptor (DESC_LO/HI)
 * @first_adj: descriptors adjacent to the first (DESC_ADJ)
 * @c2h: the engine's direction: card to host when true
 * @max_desc: descriptors after which the chain counts as a loop
 * @w: the outcome; on success status has DESC_STOPPED, and
 *	DESC_COMPLETED when the last descriptor asked for it
 *
 * Context: whatever @ops allow; does not allocate.
 * Return: 0 when the stop descriptor completed, -EIO when the chain broke
 * a rule or an address was out of range (@w says which and where),
 * -ECANCELED when @ops->stopped() said so.
 */
int fpgagdr_walk_chain(const struct fpgagdr_walk_ops *ops, void *ctx,
		       u64 first, u32 first_adj, bool c2h, u32 max_desc,
		       struct fpgagdr_walk *w)
{
	u32 left = 0, adj = first_adj, control, len, err;
	u64 bus = first, next, src, dst;
	struct xdma_desc d;
	int ret;

	*w = (struct fpgagdr_walk){ 0 };
	for (;;) {
		if (ops->stopped(ctx))
			return -ECANCELED;
		if (w->completed >= max_desc)
			return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
						 "chain does not end (a loop?)",
						 bus);
		if (!left) {
			ret = fpgagdr_walk_burst(w, bus, adj, &left);
			if (ret)
				return ret;
		}
		if (!ops->fetch(ctx, bus, &d))
			return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
						 "descriptor is not in memory",
						 bus);
		/*
		 * Stopped while fetching: what the fetch returned is not the
		 * chain's (the driver may be freeing it), so judge nothing.
		 */
		if (ops->stopped(ctx))
			return -ECANCELED;
		control = le32_to_cpu(d.control);
		len = le32_to_cpu(d.len);
		ret = fpgagdr_walk_check_desc(w, bus, control, len);
		if (ret)
			return ret;
		src = fpgagdr_walk_addr(d.src_lo, d.src_hi);
		dst = fpgagdr_walk_addr(d.dst_lo, d.dst_hi);
		err = ops->move(ctx, c2h ? dst : src, c2h ? src : dst, len, c2h);
		if (err)
			return fpgagdr_walk_fail(w, err,
						 "address out of range", bus);
		if (ops->stopped(ctx))
			return -ECANCELED;
		w->bytes += len;
		w->completed++;
		left--;
		next = fpgagdr_walk_addr(d.next_lo, d.next_hi);
		if (control & XDMA_DESC_STOP) {
			if (left)
				return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
							 "burst reaches past the stop bit",
							 bus);
			w->status |= XDMA_CHAN_DESC_STOPPED;
			if (control & XDMA_DESC_COMPLETED)
				w->status |= XDMA_CHAN_DESC_COMPLETED;
			return 0;
		}
		if (!next)
			return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
						 "no stop bit and no next", bus);
		if (left && next != bus + XDMA_DESC_SIZE)
			return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
						 "next is not the adjacent descriptor",
						 bus);
		if (left && FIELD_GET(XDMA_DESC_NEXT_ADJ, control) != left - 1)
			return fpgagdr_walk_fail(w, FPGAGDR_WALK_DESC_ERROR,
						 "next_adj does not count down",
						 bus);
		if (!left)
			adj = FIELD_GET(XDMA_DESC_NEXT_ADJ, control);
		bus = next;
	}
}
