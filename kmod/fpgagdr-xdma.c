// SPDX-License-Identifier: GPL-2.0
/*
 * The XDMA (PG195) engine behind struct fpgagdr_engine_ops: start a chain,
 * read completion, stop, and the shared channel interrupt.
 */
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/ktime.h>

#include "fpgagdr-xdma.h"
#include "fpgagdr-xdma-regs.h"

/*
 * Clearing RUN stops an engine after the descriptor in flight; the stop
 * budget is that descriptor's drain at the slowest link (fpgagdr-desc.h).
 */
#define FPGAGDR_XDMA_STOP_US	FPGAGDR_STOP_BUDGET_US

static struct fpgagdr_xdma_engine *fpgagdr_xe(struct fpgagdr_engine *eng)
{
	return eng->priv;
}

static bool fpgagdr_xdma_id_ok(u32 id, u32 target)
{
	return FIELD_GET(XDMA_ID_SUBSYSTEM, id) == XDMA_ID_SUBSYSTEM_MAGIC &&
	       FIELD_GET(XDMA_ID_TARGET, id) == target;
}

/**
 * fpgagdr_xdma_is_config_bar() - is this BAR the XDMA register space?
 * @regs: the first XDMA_REG_SPACE_LEN bytes of a memory BAR
 *
 * Offset 0 of the register space is the first H2C channel's identifier
 * (every core has one); only when it reads as one are the IRQ and config
 * blocks' identifiers at 0x2000 and 0x3000 read too.  So a BAR that is not
 * the config BAR, a user BAR of 64 KiB or more in front of it, is read at
 * offset 0 alone: inside the frame protocol's block (its MAGIC register),
 * never where a design may have registers of its own.
 *
 * Context: process context.
 * Return: true when all three identifiers match.
 */
bool fpgagdr_xdma_is_config_bar(void __iomem *regs)
{
	u32 id = ioread32(regs + XDMA_CHAN_H2C_BASE + XDMA_CHAN_ID);

	return fpgagdr_xdma_id_ok(id, XDMA_TARGET_H2C) &&
	       !FIELD_GET(XDMA_ID_CHANNEL, id) &&
	       fpgagdr_xdma_id_ok(ioread32(regs + XDMA_IRQ_ID),
				  XDMA_TARGET_IRQ) &&
	       fpgagdr_xdma_id_ok(ioread32(regs + XDMA_CONFIG_ID),
				  XDMA_TARGET_CONFIG);
}

static int fpgagdr_xdma_start(struct fpgagdr_engine *eng,
			      const struct fpgagdr_chain *chain)
{
	struct fpgagdr_xdma_engine *xe = fpgagdr_xe(eng);

	xe->ndesc = chain->ndesc;
	iowrite32(lower_32_bits(chain->first), xe->sgdma + XDMA_SGDMA_DESC_LO);
	iowrite32(upper_32_bits(chain->first), xe->sgdma + XDMA_SGDMA_DESC_HI);
	iowrite32(chain->first_adj, xe->sgdma + XDMA_SGDMA_DESC_ADJ);
	ioread32(xe->chan + XDMA_CHAN_STATUS_RC);
	if (xe->x->use_irq)
		iowrite32(BIT(xe->irq_bit),
			  xe->x->regs + XDMA_IRQ_CHAN_INT_EN_W1S);
	/* iowrite32 orders the descriptor writes before the doorbell */
	iowrite32(XDMA_CTRL_RUN | XDMA_CHAN_EVENTS, xe->chan + XDMA_CHAN_CONTROL);
	return 0;
}

static int fpgagdr_xdma_poll(struct fpgagdr_engine *eng)
{
	struct fpgagdr_xdma_engine *xe = fpgagdr_xe(eng);
	u32 status = ioread32(xe->chan + XDMA_CHAN_STATUS);

	if (status & XDMA_CHAN_ERRORS)
		return -EIO;
	if (!(status & XDMA_CHAN_DESC_STOPPED))
		return -EINPROGRESS;
	if (ioread32(xe->chan + XDMA_CHAN_COMPLETED) != xe->ndesc)
		return -EIO;
	return 0;
}

/*
 * Clear RUN and wait, at most the stop budget by the clock (sleeps under
 * load take longer than asked), for BUSY to clear.
 */
static bool fpgagdr_xdma_halt(void __iomem *chan)
{
	ktime_t end;

	iowrite32(0, chan + XDMA_CHAN_CONTROL);
	end = ktime_add_us(ktime_get(), FPGAGDR_XDMA_STOP_US);
	for (;;) {
		if (!(ioread32(chan + XDMA_CHAN_STATUS) & XDMA_STAT_BUSY))
			return true;
		if (!ktime_before(ktime_get(), end))
			return false;
		usleep_range(10, 20);
	}
}

static int fpgagdr_xdma_stop(struct fpgagdr_engine *eng)
{
	struct fpgagdr_xdma_engine *xe = fpgagdr_xe(eng);
	bool idle = fpgagdr_xdma_halt(xe->chan);

	ioread32(xe->chan + XDMA_CHAN_STATUS_RC);
	if (xe->x->use_irq)
		iowrite32(BIT(xe->irq_bit),
			  xe->x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
	return idle ? 0 : -EIO;
}

static u32 fpgagdr_xdma_status(struct fpgagdr_engine *eng)
{
	return ioread32(fpgagdr_xe(eng)->chan + XDMA_CHAN_STATUS);
}

static const struct fpgagdr_engine_ops fpgagdr_xdma_ops = {
	.start = fpgagdr_xdma_start,
	.poll = fpgagdr_xdma_poll,
	.stop = fpgagdr_xdma_stop,
	.status = fpgagdr_xdma_status,
};

/*
 * A channel's own interrupt enable mask: every event that ends a run
 * raises the channel's interrupt (which the IRQ block's channel enable
 * mask then lets through, one channel at a time).  Its reset value is 0.
 */
static void fpgagdr_xdma_chan_setup(struct fpgagdr_xdma_engine *xe)
{
	iowrite32(XDMA_CHAN_EVENTS, xe->chan + XDMA_CHAN_INT_ENABLE);
}

/* Alignment fields of 0 mean "no requirement"; keep powers of 2 only. */
static u32 fpgagdr_xdma_align(u32 v)
{
	return v && is_power_of_2(v) ? v : (v ? roundup_pow_of_two(v) : 1);
}

static bool fpgagdr_xdma_probe_engine(struct fpgagdr_xdma *x, u32 dir, u32 ch,
				      u32 *caps)
{
	u32 chan_base = dir == FPGAGDR_DIR_H2C ? XDMA_CHAN_H2C_BASE :
						 XDMA_CHAN_C2H_BASE;
	u32 sg_base = dir == FPGAGDR_DIR_H2C ? XDMA_SGDMA_H2C_BASE :
					       XDMA_SGDMA_C2H_BASE;
	u32 target = dir == FPGAGDR_DIR_H2C ? XDMA_TARGET_H2C : XDMA_TARGET_C2H;
	struct fpgagdr_xdma_engine *xe = &x->xe[dir][ch];
	u32 id;

	xe->chan = x->regs + chan_base + ch * XDMA_CHAN_STRIDE;
	xe->sgdma = x->regs + sg_base + ch * XDMA_CHAN_STRIDE;
	xe->x = x;
	id = ioread32(xe->chan + XDMA_CHAN_ID);
	if (!fpgagdr_xdma_id_ok(id, target) ||
	    FIELD_GET(XDMA_ID_CHANNEL, id) != ch ||
	    !fpgagdr_xdma_id_ok(ioread32(xe->sgdma + XDMA_CHAN_ID),
				target + XDMA_TARGET_H2C_SGDMA))
		return false;
	if (id & XDMA_ID_STREAM)
		*caps |= FPGAGDR_CAP_STREAM;
	return true;
}

/**
 * fpgagdr_xdma_stop_leftovers() - stop engines a previous driver left running
 * @regs: the config BAR, XDMA_REG_SPACE_LEN bytes
 *
 * A kexec'd kernel, or a driver that was unloaded without stopping the
 * card, may leave an engine running a chain into memory that now belongs
 * to someone else.  The PCI driver calls this before it enables bus
 * mastering, so such an engine never gets to the memory.
 *
 * Context: process context; sleeps up to the stop budget per engine.
 * Return: the number of engines that did not stop.
 */
u32 fpgagdr_xdma_stop_leftovers(void __iomem *regs)
{
	static const u32 base[] = {
		[FPGAGDR_DIR_C2H] = XDMA_CHAN_C2H_BASE,
		[FPGAGDR_DIR_H2C] = XDMA_CHAN_H2C_BASE,
	};
	static const u32 target[] = {
		[FPGAGDR_DIR_C2H] = XDMA_TARGET_C2H,
		[FPGAGDR_DIR_H2C] = XDMA_TARGET_H2C,
	};
	void __iomem *chan;
	u32 dir, ch, stuck = 0;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++) {
			chan = regs + base[dir] + ch * XDMA_CHAN_STRIDE;
			if (!fpgagdr_xdma_id_ok(ioread32(chan + XDMA_CHAN_ID),
						target[dir]))
				break;
			if (!fpgagdr_xdma_halt(chan))
				stuck++;
			ioread32(chan + XDMA_CHAN_STATUS_RC);
		}
	}
	return stuck;
}

/**
 * fpgagdr_xdma_add_engines() - find the core's engines, add them to the card
 * @x: the core, with @regs and @fdev set
 * @use_irq: completion by interrupt rather than polling
 *
 * Channels of a direction are numbered from 0 without gaps; discovery
 * stops at the first missing one.  H2C interrupt bits come first, then C2H.
 *
 * Context: process context.
 * Return: 0, -ENODEV when there is no engine at all, or -ENOMEM.
 */
int fpgagdr_xdma_add_engines(struct fpgagdr_xdma *x, bool use_irq)
{
	static const u32 order[] = { FPGAGDR_DIR_H2C, FPGAGDR_DIR_C2H };
	struct fpgagdr_dev *fdev = x->fdev;
	struct fpgagdr_xdma_engine *xe;
	u32 i, ch, dir, align, addr_align, len_gran, irq_bit = 0;
	int ret;

	x->use_irq = use_irq;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		dir = order[i];
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++) {
			if (!fpgagdr_xdma_probe_engine(x, dir, ch, &fdev->caps))
				break;
			xe = &x->xe[dir][ch];
			xe->irq_bit = irq_bit++;
			align = ioread32(xe->chan + XDMA_CHAN_ALIGNMENTS);
			addr_align = FIELD_GET(XDMA_ALIGN_ADDR, align);
			len_gran = FIELD_GET(XDMA_ALIGN_LEN_GRANULARITY, align);
			fpgagdr_xdma_chan_setup(xe);
			ret = fpgagdr_dev_add_engine(fdev, dir, ch,
						     &fpgagdr_xdma_ops, xe,
						     use_irq,
						     fpgagdr_xdma_align(addr_align),
						     fpgagdr_xdma_align(len_gran));
			if (ret)
				return ret;
			x->eng[dir][ch] = fdev->eng[dir][ch];
		}
	}
	if (!irq_bit)
		return -ENODEV;
	fdev->caps |= use_irq ? FPGAGDR_CAP_IRQ : FPGAGDR_CAP_POLL;
	return 0;
}

/**
 * fpgagdr_xdma_irq_setup() - route every interrupt to vector 0, mask all
 * @x: the core
 *
 * Channel interrupts are unmasked one at a time by start; user interrupts
 * by fpgagdr-frames.c while someone listens.
 *
 * Context: process context, before the interrupt is requested.
 */
void fpgagdr_xdma_irq_setup(struct fpgagdr_xdma *x)
{
	u32 i;

	iowrite32(~0U, x->regs + XDMA_IRQ_USER_INT_EN_W1C);
	for (i = 0; i < XDMA_IRQ_USER_VEC_REGS; i++)
		iowrite32(0, x->regs + XDMA_IRQ_USER_VEC(i));
	iowrite32(~0U, x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
	iowrite32(0, x->regs + XDMA_IRQ_CHAN_VEC_H2C);
	iowrite32(0, x->regs + XDMA_IRQ_CHAN_VEC_C2H);
}

/**
 * fpgagdr_xdma_restore() - after a reset of the function: the core's setup
 * @x: the core, its engines added
 *
 * A reset (AER slot reset, hot reset, FLR) returns the core's registers
 * to their reset values: every channel's interrupt enable mask is 0, so no
 * channel would interrupt again and every transfer would wait out its
 * timeout.  Each channel's mask is written again and, with interrupts,
 * the IRQ block's routing (fpgagdr_xdma_irq_setup()); the user interrupt
 * mask is fpgagdr-frames.c's to set again, on resume.
 *
 * Context: process context (the driver's slot_reset or reset_done).
 */
void fpgagdr_xdma_restore(struct fpgagdr_xdma *x)
{
	u32 dir, ch;

	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++)
			if (x->eng[dir][ch])
				fpgagdr_xdma_chan_setup(&x->xe[dir][ch]);
	if (x->use_irq)
		fpgagdr_xdma_irq_setup(x);
}

/**
 * fpgagdr_xdma_irq_teardown() - mask every channel and user interrupt
 * @x: the core
 *
 * Context: process context.
 */
void fpgagdr_xdma_irq_teardown(struct fpgagdr_xdma *x)
{
	iowrite32(~0U, x->regs + XDMA_IRQ_USER_INT_EN_W1C);
	iowrite32(~0U, x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
}

/**
 * fpgagdr_xdma_user_irq_enable() - set or clear user interrupt enable bits
 * @x: the core
 * @mask: bit K: user interrupt K
 * @on: unmask (W1S) or mask (W1C)
 *
 * Context: any; with fpgagdr-frames.c's lock held.
 */
void fpgagdr_xdma_user_irq_enable(struct fpgagdr_xdma *x, u32 mask, bool on)
{
	iowrite32(mask & GENMASK(XDMA_USER_IRQS - 1, 0),
		  x->regs + (on ? XDMA_IRQ_USER_INT_EN_W1S :
			     XDMA_IRQ_USER_INT_EN_W1C));
}

/**
 * fpgagdr_xdma_irq() - the card's interrupt: channels and user interrupts
 * @irq: the Linux interrupt number
 * @data: the core
 *
 * Masks each channel that raised it (start unmasks it again) and tells
 * its waiter, which reads the status; hands the user interrupt requests
 * to fpgagdr-frames.c.
 *
 * Context: hard interrupt.
 * Return: IRQ_NONE when nothing of ours is pending (shared INTx).
 */
irqreturn_t fpgagdr_xdma_irq(int irq, void *data)
{
	struct fpgagdr_xdma *x = data;
	u32 pending = ioread32(x->regs + XDMA_IRQ_CHAN_INT_PENDING);
	u32 user = ioread32(x->regs + XDMA_IRQ_USER_INT_REQ);
	irqreturn_t ret;
	u32 dir, ch;

	if (pending == ~0U || user == ~0U) {
		/* the card is gone: frame waits end, not ours */
		fpgagdr_frames_card_gone(x->fdev);
		return IRQ_NONE;
	}
	ret = fpgagdr_frames_irq(x->fdev, user & GENMASK(XDMA_USER_IRQS - 1, 0));
	if (!pending)
		return ret;
	iowrite32(pending, x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++)
			if (x->eng[dir][ch] &&
			    (pending & BIT(x->xe[dir][ch].irq_bit)))
				fpgagdr_engine_complete(x->eng[dir][ch]);
	return IRQ_HANDLED;
}
