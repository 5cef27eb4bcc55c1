/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Xilinx XDMA (PG195) register file and SG descriptor, described once.
 *
 * All registers live in the config BAR, 64 KiB, grouped by block.  Each
 * block starts with an identifier register whose upper 12 bits are 0x1fc
 * and whose target field names the block.  Registers are 32-bit, little
 * endian, accessed with ioread32()/iowrite32().
 */
#ifndef FPGAGDR_XDMA_REGS_H
#define FPGAGDR_XDMA_REGS_H

#include "fpgagdr-pure.h"

/* Size of the config BAR's register space. */
#define XDMA_REG_SPACE_LEN		0x10000
/* Engines per direction the register map has room for. */
#define XDMA_MAX_CHANNELS		4

/* Identifier register, at offset 0 of every block. */
#define XDMA_ID_SUBSYSTEM		GENMASK(31, 20)	/* always 0x1fc */
#define XDMA_ID_SUBSYSTEM_MAGIC		0x1fc
#define XDMA_ID_TARGET			GENMASK(19, 16)
#define XDMA_ID_STREAM			BIT(15)		/* AXI-ST engine */
#define XDMA_ID_CHANNEL			GENMASK(11, 8)
#define XDMA_ID_VERSION			GENMASK(7, 0)

/* Values of XDMA_ID_TARGET. */
#define XDMA_TARGET_H2C			0x0
#define XDMA_TARGET_C2H			0x1
#define XDMA_TARGET_IRQ			0x2
#define XDMA_TARGET_CONFIG		0x3
#define XDMA_TARGET_H2C_SGDMA		0x4
#define XDMA_TARGET_C2H_SGDMA		0x5

/*
 * Channel (engine) block: H2C at 0x0000, C2H at 0x1000, one 0x100 stride
 * per channel.
 */
#define XDMA_CHAN_H2C_BASE		0x0000
#define XDMA_CHAN_C2H_BASE		0x1000
#define XDMA_CHAN_STRIDE		0x100

#define XDMA_CHAN_ID			0x00
#define XDMA_CHAN_CONTROL		0x04
#define XDMA_CHAN_CONTROL_W1S		0x08
#define XDMA_CHAN_CONTROL_W1C		0x0c
#define XDMA_CHAN_STATUS		0x40
#define XDMA_CHAN_STATUS_RC		0x44	/* read clears the status */
#define XDMA_CHAN_COMPLETED		0x48	/* completed descriptor count */
#define XDMA_CHAN_ALIGNMENTS		0x4c
#define XDMA_CHAN_INT_ENABLE		0x90

/* Channel control, status and interrupt enable share one bit layout. */
#define XDMA_CTRL_RUN			BIT(0)	/* control only */
#define XDMA_STAT_BUSY			BIT(0)	/* status only */
#define XDMA_CHAN_DESC_STOPPED		BIT(1)
#define XDMA_CHAN_DESC_COMPLETED	BIT(2)
#define XDMA_CHAN_ALIGN_MISMATCH	BIT(3)
#define XDMA_CHAN_MAGIC_STOPPED		BIT(4)
#define XDMA_CHAN_INVALID_LENGTH	BIT(5)
#define XDMA_CHAN_IDLE_STOPPED		BIT(6)
#define XDMA_CHAN_READ_ERROR		GENMASK(13, 9)
#define XDMA_CHAN_WRITE_ERROR		GENMASK(18, 14)
#define XDMA_CHAN_DESC_ERROR		GENMASK(23, 19)

#define XDMA_CHAN_ERRORS	(XDMA_CHAN_ALIGN_MISMATCH |		\
				 XDMA_CHAN_MAGIC_STOPPED |		\
				 XDMA_CHAN_INVALID_LENGTH |		\
				 XDMA_CHAN_READ_ERROR |			\
				 XDMA_CHAN_WRITE_ERROR |		\
				 XDMA_CHAN_DESC_ERROR)
/* Events that end a run: the stop bit reached, or any error. */
#define XDMA_CHAN_EVENTS	(XDMA_CHAN_DESC_STOPPED |		\
				 XDMA_CHAN_DESC_COMPLETED |		\
				 XDMA_CHAN_ERRORS)

/* Alignments register: what the engine requires of addresses, lengths. */
#define XDMA_ALIGN_ADDR			GENMASK(23, 16)	/* bytes */
#define XDMA_ALIGN_LEN_GRANULARITY	GENMASK(15, 8)	/* bytes */
#define XDMA_ALIGN_ADDR_BITS		GENMASK(7, 0)	/* card address width */

/* IRQ block. */
#define XDMA_IRQ_BASE			0x2000
#define XDMA_IRQ_ID			0x2000
/* user interrupt enable mask, bit K: usr_irq_req[K] (16 user interrupts) */
#define XDMA_IRQ_USER_INT_EN		0x2004
#define XDMA_IRQ_USER_INT_EN_W1S	0x2008
#define XDMA_IRQ_USER_INT_EN_W1C	0x200c
#define XDMA_IRQ_CHAN_INT_EN		0x2010
#define XDMA_IRQ_CHAN_INT_EN_W1S	0x2014
#define XDMA_IRQ_CHAN_INT_EN_W1C	0x2018
#define XDMA_IRQ_USER_INT_REQ		0x2040	/* usr_irq_req AND the enable mask */
#define XDMA_IRQ_USER_INT_PENDING	0x2048	/* requested and enabled */
#define XDMA_IRQ_CHAN_INT_PENDING	0x204c
/* user vector numbers: 4 registers, 5-bit vector per byte, K at byte K % 4 */
#define XDMA_IRQ_USER_VEC(n)		(0x2080 + 4 * (n))
#define XDMA_IRQ_USER_VEC_REGS		4
#define XDMA_USER_IRQS			16
#define XDMA_IRQ_CHAN_VEC_H2C		0x20a0	/* 5-bit vector per byte */
#define XDMA_IRQ_CHAN_VEC_C2H		0x20a4

/* Config block. */
#define XDMA_CONFIG_ID			0x3000

/*
 * SGDMA block: H2C at 0x4000, C2H at 0x5000, 0x100 stride per channel.
 * The engine fetches the first descriptor from DESC_LO/HI, and the
 * DESC_ADJ further descriptors that follow it in memory in the same burst.
 */
#define XDMA_SGDMA_H2C_BASE		0x4000
#define XDMA_SGDMA_C2H_BASE		0x5000
#define XDMA_SGDMA_DESC_LO		0x80
#define XDMA_SGDMA_DESC_HI		0x84
#define XDMA_SGDMA_DESC_ADJ		0x88

/*
 * SG descriptor, 32 bytes, read by the card from host memory; every word is
 * little endian.  Descriptors are chained by next_lo/hi; the card fetches a
 * descriptor and the next_adj descriptors that follow it in memory as one
 * block, and such a block may not cross a 4 KiB boundary.
 */
#define XDMA_DESC_MAGIC			GENMASK(31, 16)
#define XDMA_DESC_MAGIC_VALUE		0xad4b
#define XDMA_DESC_NEXT_ADJ		GENMASK(13, 8)
#define XDMA_DESC_NEXT_ADJ_MAX		63
#define XDMA_DESC_STOP			BIT(0)	/* last descriptor: stop */
#define XDMA_DESC_COMPLETED		BIT(1)	/* report completion */
#define XDMA_DESC_EOP			BIT(4)	/* end of packet (AXI-ST) */
#define XDMA_DESC_LEN			GENMASK(27, 0)
#define XDMA_DESC_SIZE			32
#define XDMA_DESC_BOUNDARY		4096

/**
 * struct xdma_desc - one XDMA scatter-gather descriptor, as the card reads it
 * @control: magic, next_adj and XDMA_DESC_* flags
 * @len: bytes to move, at most XDMA_DESC_LEN
 * @src_lo: source address, low 32 bits (card address for C2H)
 * @src_hi: source address, high 32 bits
 * @dst_lo: destination address, low 32 bits (card address for H2C)
 * @dst_hi: destination address, high 32 bits
 * @next_lo: bus address of the next descriptor, low 32 bits; 0 when last
 * @next_hi: bus address of the next descriptor, high 32 bits
 */
struct xdma_desc {
	__le32 control;
	__le32 len;
	__le32 src_lo;
	__le32 src_hi;
	__le32 dst_lo;
	__le32 dst_hi;
	__le32 next_lo;
	__le32 next_hi;
};

#endif /* FPGAGDR_XDMA_REGS_H */
