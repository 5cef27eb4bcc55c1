/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST DOUBLE: a register-level model of the XDMA (PG195) register file,
 * for running fpgagdr-xdma.c and fpgagdr-pci.c unchanged in user space.
 * ioread32() and iowrite32() of the module's code land here and have the
 * side effects the hardware has: RUN starts an engine (BUSY), clearing it
 * stops one, STATUS_RC clears the status on read, the W1S/W1C registers
 * set and clear, a status bit is logged only when its ie_* bit is set in
 * the channel's control register, a logged event raises the channel's
 * interrupt request when its bit is set in the channel's own interrupt
 * enable mask, and the IRQ block lets a channel or user interrupt request
 * out when its bit is set in the block's enable mask.  xm_reset() is a
 * reset of the function: every register back at its reset value.
 *
 * The register file is typed here from PG195 (AMD/Xilinx "DMA/Bridge
 * Subsystem for PCI Express Product Guide", v4.1/v4.2, "Register Space"
 * and its tables named below), not taken from the module's
 * fpgagdr-xdma-regs.h: a wrong offset or bit there makes the module's code
 * miss the model's register, and the tests fail.
 *
 * An engine executes its chain when the test calls xm_step(), through
 * fpgagdr_walk_chain(), the same walker as the kernel's software card.
 */
#ifndef FPGAGDR_XDMA_MODEL_H
#define FPGAGDR_XDMA_MODEL_H

#include <stdbool.h>

#include "ushim.h"

#define XM_CARD_SIZE	(16u << 20)

/*
 * PG195 "Register Space": bits 15:12 of an offset select the target block,
 * bits 11:8 the channel (a 0x100 stride).
 */
#define PG_H2C_CHAN		0x0000	/* H2C Channel Registers (0x0) */
#define PG_C2H_CHAN		0x1000	/* C2H Channel Registers (0x1) */
#define PG_IRQ			0x2000	/* IRQ Block Registers (0x2) */
#define PG_CONFIG		0x3000	/* Config Block Registers (0x3) */
#define PG_H2C_SGDMA		0x4000	/* H2C SGDMA Registers (0x4) */
#define PG_C2H_SGDMA		0x5000	/* C2H SGDMA Registers (0x5) */
#define PG_CHAN_STRIDE		0x100
#define PG_SPACE		0x10000	/* the DMA BAR's 64 KiB */

/*
 * Identifier registers (offset 0 of every block, e.g. "H2C Channel
 * Identifier (0x00)"): subsystem identifier 0x1fc in 31:20, target 19:16,
 * stream 15, channel ID 11:8, version 7:0.
 */
#define PG_ID(target, stream, ch) \
	(0x1fc00000U | (u32)(target) << 16 | ((stream) ? 1U << 15 : 0) | \
	 (u32)(ch) << 8 | 0x04)
#define PG_TARGET_H2C		0x0
#define PG_TARGET_C2H		0x1
#define PG_TARGET_IRQ		0x2
#define PG_TARGET_CONFIG	0x3
#define PG_TARGET_H2C_SGDMA	0x4
#define PG_TARGET_C2H_SGDMA	0x5

/* "H2C Channel Register Space" (C2H the same). */
#define PG_CH_ID		0x00
#define PG_CH_CONTROL		0x04	/* H2C Channel Control (0x04), RW */
#define PG_CH_CONTROL_W1S	0x08	/* (0x08), W1S */
#define PG_CH_CONTROL_W1C	0x0c	/* (0x0C), W1C */
#define PG_CH_STATUS		0x40	/* H2C Channel Status (0x40), RW1C */
#define PG_CH_STATUS_RC		0x44	/* (0x44): read clears 23:1 */
#define PG_CH_COMPLETED		0x48	/* Completed Descriptor Count (0x48) */
#define PG_CH_ALIGNMENTS	0x4c	/* H2C Channel Alignments (0x4C) */
#define PG_CH_INT_EN		0x90	/* Interrupt Enable Mask (0x90), RW */
#define PG_CH_INT_EN_W1S	0x94	/* (0x94), W1S */
#define PG_CH_INT_EN_W1C	0x98	/* (0x98), W1C */

/*
 * Channel Control (0x04): run (bit 0) and the ie_* bits that log a status
 * bit; Status (0x40) and Interrupt Enable Mask (0x90) share the layout:
 * busy 0 (status only), descriptor_stopped 1, descriptor_completed 2,
 * align_mismatch 3, magic_stopped 4, invalid_length 5, idle_stopped 6,
 * read_error 13:9, write_error 18:14, desc_error 23:19.
 */
#define PG_CTRL_RUN		BIT(0)
#define PG_ST_BUSY		BIT(0)
#define PG_ST_DESC_STOPPED	BIT(1)
#define PG_ST_DESC_COMPLETED	BIT(2)
#define PG_ST_ALIGN_MISMATCH	BIT(3)
#define PG_ST_MAGIC_STOPPED	BIT(4)
#define PG_ST_INVALID_LENGTH	BIT(5)
#define PG_ST_IDLE_STOPPED	BIT(6)
#define PG_ST_READ_ERROR	(0x1fU << 9)
#define PG_ST_WRITE_ERROR	(0x1fU << 14)
#define PG_ST_DESC_ERROR	(0x1fU << 19)
#define PG_ST_LOGGED		0x00fffe7eU	/* bits the ie_* bits log */

/* Alignments (0x4C): addr_alignment 23:16, len_granularity 15:8, address_bits 7:0. */
#define PG_ALIGN(addr, gran, bits) \
	((u32)(addr) << 16 | (u32)(gran) << 8 | (u32)(bits))

/* "IRQ Block Register Space". */
#define PG_IRQ_USER_EN		(PG_IRQ + 0x04)	/* User Interrupt Enable Mask, RW */
#define PG_IRQ_USER_EN_W1S	(PG_IRQ + 0x08)
#define PG_IRQ_USER_EN_W1C	(PG_IRQ + 0x0c)
#define PG_IRQ_CHAN_EN		(PG_IRQ + 0x10)	/* Channel Interrupt Enable Mask, RW */
#define PG_IRQ_CHAN_EN_W1S	(PG_IRQ + 0x14)
#define PG_IRQ_CHAN_EN_W1C	(PG_IRQ + 0x18)
#define PG_IRQ_USER_REQ		(PG_IRQ + 0x40)	/* User Interrupt Request, RO */
#define PG_IRQ_CHAN_REQ		(PG_IRQ + 0x44)	/* Channel Interrupt Request, RO */
#define PG_IRQ_USER_PEND	(PG_IRQ + 0x48)	/* User Interrupt Pending, RO */
#define PG_IRQ_CHAN_PEND	(PG_IRQ + 0x4c)	/* Channel Interrupt Pending, RO */
#define PG_IRQ_USER_VEC(n)	(PG_IRQ + 0x80 + 4 * (n))	/* User Vector Number, 0x80..0x8C */
#define PG_IRQ_CHAN_VEC_H2C	(PG_IRQ + 0xa0)	/* Channel Vector Number (0xA0) */
#define PG_IRQ_CHAN_VEC_C2H	(PG_IRQ + 0xa4)	/* Channel Vector Number (0xA4) */
#define PG_USER_IRQS		16		/* usr_irq_req[15:0] */

/* "H2C SGDMA Registers (0x4)" (C2H the same). */
#define PG_SG_DESC_LO		0x80	/* Descriptor Low Address (0x80) */
#define PG_SG_DESC_HI		0x84	/* Descriptor High Address (0x84) */
#define PG_SG_DESC_ADJ		0x88	/* Descriptor Adjacent (0x88), 5:0 */

/* A channel's register, and its SGDMA register. */
#define PG_CHAN(c2h, ch, reg) \
	(((c2h) ? PG_C2H_CHAN : PG_H2C_CHAN) + (ch) * PG_CHAN_STRIDE + (reg))
#define PG_SGDMA(c2h, ch, reg) \
	(((c2h) ? PG_C2H_SGDMA : PG_H2C_SGDMA) + (ch) * PG_CHAN_STRIDE + (reg))

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
 * @error: PG195 status bits added to the end of a run
 * @all_ones: every register reads 0xffffffff (the card is gone)
 */
struct xm_faults {
	bool hang;
	bool stuck_busy;
	bool short_count;
	u32 error;
	bool all_ones;
};

/**
 * struct xm_bar - another BAR of the function, for ioread32()/iowrite32()
 *	of addresses outside the model's register file
 * @base: where the module's mapping of it starts
 * @len: bytes
 * @read: a read at byte offset @off
 * @write: a write at @off
 */
struct xm_bar {
	void *base;
	u64 len;
	u32 (*read)(u32 off);
	void (*write)(u32 off, u32 val);
};

extern struct xm_faults xm_fault;
extern unsigned long xm_sleeps;

void xm_init(const struct xm_cfg *cfg);
void xm_reset(void);
void *xm_regs(void);
u32 xm_peek(u32 off);
void xm_poke(u32 off, u32 val);
void xm_host_map(u64 bus, void *ptr, u64 len);
unsigned char *xm_card(void);
int xm_step(u32 dir, u32 ch);
void xm_set_irq(int (*fn)(int irq, void *data), void *data);
void xm_user_request(u32 bits, bool on);
void xm_add_bar(const struct xm_bar *bar);

#endif /* FPGAGDR_XDMA_MODEL_H */
