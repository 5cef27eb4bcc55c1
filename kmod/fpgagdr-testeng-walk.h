/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test-only, never in a product build: the XDMA engine's
 * descriptor fetch, as a function.  It follows a descriptor chain the way
 * PG195 describes the card reading it, checks every rule the card relies
 * on, and has its caller move the bytes.  Two test doubles use it: the
 * software test engine in the kernel (fpgagdr-testeng.c) and the
 * register-level model of the XDMA core in user space
 * (tests/xdma-model.c).  Pure logic, also built in user space.
 */
#ifndef FPGAGDR_TESTENG_WALK_H
#define FPGAGDR_TESTENG_WALK_H

#include "fpgagdr-pure.h"
#include "fpgagdr-xdma-regs.h"

/* Status bits the walker reports for a broken descriptor rule. */
#define FPGAGDR_WALK_DESC_ERROR	FIELD_PREP(XDMA_CHAN_DESC_ERROR, 1)
/* Status bits for a source (read) or destination (write) out of range. */
#define FPGAGDR_WALK_READ_ERROR	FIELD_PREP(XDMA_CHAN_READ_ERROR, 1)
#define FPGAGDR_WALK_WRITE_ERROR FIELD_PREP(XDMA_CHAN_WRITE_ERROR, 1)

/**
 * struct fpgagdr_walk_ops - what the walker needs from its card
 * @fetch: copy the 32 bytes at bus address @bus into @d; false when @bus
 *	is not memory the card may read.  Once the run is stopped it may
 *	return anything: the walker asks @stopped before it judges @d
 * @move: move @len bytes between host bus address @host and card address
 *	@card (@c2h: card to host); 0, or FPGAGDR_WALK_READ_ERROR /
 *	FPGAGDR_WALK_WRITE_ERROR for an address out of range
 * @stopped: true once the run was told to stop (RUN cleared)
 */
struct fpgagdr_walk_ops {
	bool (*fetch)(void *ctx, u64 bus, struct xdma_desc *d);
	u32 (*move)(void *ctx, u64 host, u64 card, u32 len, bool c2h);
	bool (*stopped)(void *ctx);
};

/**
 * struct fpgagdr_walk - the outcome of one run
 * @status: XDMA_CHAN_* status bits at the end of the run
 * @completed: descriptors completed (the COMPLETED register)
 * @bytes: bytes moved
 * @why: NULL, or the rule the chain broke
 * @where: bus address of the descriptor that broke it
 */
struct fpgagdr_walk {
	u32 status;
	u32 completed;
	u64 bytes;
	const char *why;
	u64 where;
};

int fpgagdr_walk_chain(const struct fpgagdr_walk_ops *ops, void *ctx,
		       u64 first, u32 first_adj, bool c2h, u32 max_desc,
		       struct fpgagdr_walk *w);

#endif /* FPGAGDR_TESTENG_WALK_H */
