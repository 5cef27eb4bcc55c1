/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST DOUBLE: a register-level model of the XDMA (PG195) register file,
 * for running fpgagdr-xdma.c unchanged in user space.  ioread32() and
 * iowrite32() of the engine code land here and have the side effects the
 * hardware has: RUN starts an engine (BUSY), clearing it stops one,
 * STATUS_RC clears the status on read, the W1S/W1C registers set and
 * clear, the channel and user interrupt pending registers are request AND
 * enable, and a user interrupt request (xm_user_request()) that meets its
 * enable bit raises the interrupt.
 * An engine executes its chain when the test calls xm_step(), through
 * fpgagdr_walk_chain(), the same walker as the kernel's software card.
 */
#ifndef FPGAGDR_XDMA_MODEL_H
#define FPGAGDR_XDMA_MODEL_H

#include <stdbool.h>

#include "ushim.h"

#define XM_CARD_SIZE	(16u << 20)

/**
 * struct xm_cfg - the core being modelled
 * @nch: channels per direction (index FPGAGDR_DIR_*)
 * @gap: a channel number whose identifier is missing, or -1
 * @gap_dir: the direction of @gap
 * @align: value of every engine's alignments register
 * @stream: engines are AXI-ST
 */
struct xm_cfg {
	u32 nch[2];
	int gap;
	u32 gap_dir;
	u32 align;
	bool stream;
};

/**
 * struct xm_faults - misbehaviour on demand
 * @hang: xm_step() does nothing: the run never ends
 * @stuck_busy: clearing RUN does not clear BUSY
 * @short_count: the completed count is one short of the chain
 * @error: status bits added to the end of a run
 * @pending_all_ones: the pending register reads ~0 (card gone)
 */
struct xm_faults {
	bool hang;
	bool stuck_busy;
	bool short_count;
	u32 error;
	bool pending_all_ones;
};

extern struct xm_faults xm_fault;
extern unsigned long xm_sleeps;

void xm_init(const struct xm_cfg *cfg);
void *xm_regs(void);
u32 xm_peek(u32 off);
void xm_poke(u32 off, u32 val);
void xm_host_map(u64 bus, void *ptr, u64 len);
unsigned char *xm_card(void);
int xm_step(u32 dir, u32 ch);
void xm_set_irq(int (*fn)(int irq, void *data), void *data);
void xm_user_request(u32 bits, bool on);

#endif /* FPGAGDR_XDMA_MODEL_H */
