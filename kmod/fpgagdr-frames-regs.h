/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The card's frame protocol, version 1.1: the user register block at offset
 * 0 of the XDMA user BAR (docs/card-protocol.md, which is the definition;
 * kmod/scripts/check-card-protocol.py compares this file with its table).
 *
 * Registers are 32-bit, little endian, accessed with ioread32()/iowrite32().
 */
#ifndef FPGAGDR_FRAMES_REGS_H
#define FPGAGDR_FRAMES_REGS_H

#include "fpgagdr-pure.h"

/* Bytes of the block; the design may put its own registers above. */
#define FPROTO_BLOCK_LEN		0x1000

/* Register offsets (docs/card-protocol.md, "The user register block"). */
#define FPROTO_REG_MAGIC		0x000
#define FPROTO_REG_VERSION		0x004
#define FPROTO_REG_SLOT_BASE_LO		0x008
#define FPROTO_REG_SLOT_BASE_HI		0x00c
#define FPROTO_REG_SLOT_SIZE		0x010
#define FPROTO_REG_SLOT_COUNT		0x014
#define FPROTO_REG_USER_IRQ		0x018
#define FPROTO_REG_CONTROL		0x020
#define FPROTO_REG_IRQ_STATUS		0x024
#define FPROTO_REG_HOST_ACK		0x028
#define FPROTO_REG_DONE_SEQ_LO		0x030	/* a read latches the record */
#define FPROTO_REG_DONE_SEQ_HI		0x034
#define FPROTO_REG_DONE_SLOT		0x038
#define FPROTO_REG_DONE_LENGTH		0x03c
/* 1.1: a 1.0 card reads 0 at these (reserved) offsets */
#define FPROTO_REG_EPOCH		0x040	/* changes at every card reset, never 0 */
#define FPROTO_REG_DROPPED		0x044	/* frames dropped whole since reset */
#define FPROTO_REG_LIVE_SEQ_LO		0x048	/* live sequence, no latch */

/* Reset values of the fixed registers. */
#define FPROTO_MAGIC_VALUE		0x52444746	/* "FGDR" */
#define FPROTO_VERSION_VALUE		0x00010001	/* 1.1 */

/* VERSION fields. */
#define FPROTO_VERSION_MAJOR		GENMASK(31, 16)
#define FPROTO_VERSION_MINOR		GENMASK(15, 0)
#define FPROTO_VERSION_MAJOR_SUPPORTED	1

/* CONTROL bits. */
#define FPROTO_CONTROL_CAPTURE		BIT(0)
#define FPROTO_CONTROL_IRQ_EN		BIT(1)

/* IRQ_STATUS bits. */
#define FPROTO_IRQ_STATUS_FRAME_PENDING	BIT(0)

/* Geometry rules the module checks when it binds the card. */
#define FPROTO_SLOT_ALIGN		4096
#define FPROTO_SLOT_COUNT_MIN		2
#define FPROTO_SLOT_COUNT_MAX		1024
#define FPROTO_USER_IRQS		16

#endif /* FPGAGDR_FRAMES_REGS_H */
