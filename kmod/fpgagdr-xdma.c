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
 * The IRQ and config blocks carry fixed identifiers.
 *
 * Context: process context.
 * Return: true when both identifiers match.
 */
bool fpgagdr_xdma_is_config_bar(void __iomem *regs)
{
	return fpgagdr_xdma_id_ok(ioread32(regs + XDMA_IRQ_ID),
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
			iowrite32(XDMA_CHAN_EVENTS, xe->chan + XDMA_CHAN_INT_ENABLE);
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
 * fpgagdr_xdma_irq_setup() - route every channel to vector 0, mask all
 * @x: the core
 *
 * Channel interrupts are unmasked one at a time by start.  User
 * interrupts are not used and stay masked.
 *
 * Context: process context, before the interrupt is requested.
 */
void fpgagdr_xdma_irq_setup(struct fpgagdr_xdma *x)
{
	iowrite32(~0U, x->regs + XDMA_IRQ_USER_INT_EN_W1C);
	iowrite32(~0U, x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
	iowrite32(0, x->regs + XDMA_IRQ_CHAN_VEC_H2C);
	iowrite32(0, x->regs + XDMA_IRQ_CHAN_VEC_C2H);
}

/**
 * fpgagdr_xdma_irq_teardown() - mask every channel interrupt
 * @x: the core
 *
 * Context: process context.
 */
void fpgagdr_xdma_irq_teardown(struct fpgagdr_xdma *x)
{
	iowrite32(~0U, x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
}

/**
 * fpgagdr_xdma_irq() - the channel interrupt, shared by all channels
 * @irq: the Linux interrupt number
 * @data: the core
 *
 * Masks each channel that raised it (start unmasks it again) and tells
 * its waiter, which reads the status.
 *
 * Context: hard interrupt.
 * Return: IRQ_NONE when no channel of ours is pending (shared INTx).
 */
irqreturn_t fpgagdr_xdma_irq(int irq, void *data)
{
	struct fpgagdr_xdma *x = data;
	u32 pending = ioread32(x->regs + XDMA_IRQ_CHAN_INT_PENDING);
	u32 dir, ch;

	if (!pending || pending == ~0U)
		return IRQ_NONE;
	iowrite32(pending, x->regs + XDMA_IRQ_CHAN_INT_EN_W1C);
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++)
			if (x->eng[dir][ch] &&
			    (pending & BIT(x->xe[dir][ch].irq_bit)))
				fpgagdr_engine_complete(x->eng[dir][ch]);
	return IRQ_HANDLED;
}
