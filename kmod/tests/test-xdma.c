// SPDX-License-Identifier: GPL-2.0
/*
 * The XDMA engine code (fpgagdr-xdma.c, unchanged) against a
 * register-level model of the PG195 register file (xdma-model.c):
 * discovery, start, poll, stop, abort, interrupts, and the chains built
 * by fpgagdr-desc.c executed by the model as the card would.
 */
#include <string.h>

#include "check.h"
#include "xdma-model.h"
#include "../fpgagdr-xdma.h"

int test_failures;
int test_checks;

#define C2H	FPGAGDR_DIR_C2H
#define H2C	FPGAGDR_DIR_H2C
#define NSEG	70			/* more than one 64-descriptor burst */
#define DESC_BUS	0x100000000ULL	/* descriptor pages */
/* PG195's status bits that end a run (all logged ones but idle_stopped) */
#define PG_RUN_ENDS	(PG_ST_LOGGED & ~PG_ST_IDLE_STOPPED)
#define HOST_BUS	0x200000000ULL	/* buffer pages, not contiguous */

/* The core, as far as the XDMA engine code sees it. */
static struct fpgagdr_dev fdev;
static struct fpgagdr_engine engs[2][XDMA_MAX_CHANNELS];
static struct fpgagdr_xdma xd;
static int completes[2][XDMA_MAX_CHANNELS];

int fpgagdr_dev_add_engine(struct fpgagdr_dev *d, u32 dir, u32 index,
			   const struct fpgagdr_engine_ops *ops, void *priv,
			   bool use_irq, u32 addr_align, u32 len_gran)
{
	struct fpgagdr_engine *e = &engs[dir][index];

	if (index != d->nch[dir])
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->fdev = d;
	e->ops = ops;
	e->priv = priv;
	e->dir = dir;
	e->index = index;
	e->use_irq = use_irq;
	e->addr_align = addr_align;
	e->len_gran = len_gran;
	d->eng[dir][index] = e;
	d->nch[dir]++;
	return 0;
}

void fpgagdr_engine_complete(struct fpgagdr_engine *eng)
{
	completes[eng->dir][eng->index]++;
}

/* fpgagdr-frames.c as the XDMA interrupt handler sees it: what it was given */
static int frames_calls;
static u32 frames_pending;

irqreturn_t fpgagdr_frames_irq(struct fpgagdr_dev *d, u32 pending)
{
	CHECK(d == &fdev);
	frames_calls++;
	frames_pending = pending;
	return pending ? IRQ_HANDLED : IRQ_NONE;
}

static int gone_calls;

void fpgagdr_frames_card_gone(struct fpgagdr_dev *d)
{
	CHECK(d == &fdev);
	gone_calls++;
}

static int irq(int n, void *data)
{
	return fpgagdr_xdma_irq(n, data);
}

static const struct xm_cfg cfg_default = {
	.nch = { [C2H] = 3, [H2C] = 2 }, .gap = -1,
	.align = PG_ALIGN(64, 4, 64),
};

static int setup(const struct xm_cfg *cfg, bool use_irq)
{
	xm_init(cfg);
	memset(&fdev, 0, sizeof(fdev));
	memset(&xd, 0, sizeof(xd));
	memset(completes, 0, sizeof(completes));
	xd.regs = xm_regs();
	xd.fdev = &fdev;
	xm_set_irq(irq, &xd);
	return fpgagdr_xdma_add_engines(&xd, use_irq);
}

/* PG195's offsets (xdma-model.h), not the module's */
static u32 chan_reg(u32 dir, u32 ch, u32 reg)
{
	return PG_CHAN(dir == C2H, ch, reg);
}

static u32 sgdma_reg(u32 dir, u32 ch, u32 reg)
{
	return PG_SGDMA(dir == C2H, ch, reg);
}

/**
 * struct buf - a host buffer of NSEG scattered pages and its chain memory
 * @page: the pages
 * @segs: their bus segments
 * @desc: descriptor pages
 * @desc_dma: their bus addresses
 * @ring: the view the chain builder writes through
 */
struct buf {
	unsigned char *page[NSEG];
	struct fpgagdr_seg segs[NSEG];
	struct xdma_desc *desc[4];
	u64 desc_dma[4];
	struct fpgagdr_desc_ring ring;
};

static void buf_init(struct buf *b)
{
	u32 i;

	for (i = 0; i < NSEG; i++) {
		b->page[i] = aligned_alloc(4096, 4096);
		memset(b->page[i], 0, 4096);
		b->segs[i].addr = HOST_BUS + i * 0x3000ULL;
		b->segs[i].len = 4096;
		xm_host_map(b->segs[i].addr, b->page[i], 4096);
	}
	for (i = 0; i < 4; i++) {
		b->desc[i] = aligned_alloc(4096, 4096);
		memset(b->desc[i], 0, 4096);
		b->desc_dma[i] = DESC_BUS + i * 0x5000ULL;
		xm_host_map(b->desc_dma[i], b->desc[i], 4096);
	}
	b->ring.page = b->desc;
	b->ring.page_dma = b->desc_dma;
	b->ring.npages = 4;
}

static void buf_free(struct buf *b)
{
	u32 i;

	for (i = 0; i < NSEG; i++)
		free(b->page[i]);
	for (i = 0; i < 4; i++)
		free(b->desc[i]);
}

static void build(struct buf *b, bool c2h, u64 card, u64 len,
		  struct fpgagdr_chain *c)
{
	struct fpgagdr_xfer x = { 0, card, len, c2h };

	CHECK_EQ(fpgagdr_desc_build(&b->ring, b->segs, NSEG, &x,
				    FPGAGDR_DESC_MAX_LEN, c), 0);
}

static void test_config_bar_identified(void)
{
	xm_init(&cfg_default);
	CHECK(fpgagdr_xdma_is_config_bar(xm_regs()));
	xm_poke(PG_IRQ, xm_peek(PG_IRQ) ^ (1U << 16));	/* another target */
	CHECK(!fpgagdr_xdma_is_config_bar(xm_regs()));
	xm_init(&cfg_default);
	xm_poke(PG_CONFIG, 0);
	CHECK(!fpgagdr_xdma_is_config_bar(xm_regs()));
}

static void test_discovery(void)
{
	struct xm_cfg gap = cfg_default;
	struct xm_cfg none = { .gap = -1 };
	struct xm_cfg odd = cfg_default;

	CHECK_EQ(setup(&cfg_default, true), 0);
	CHECK_EQ(fdev.nch[H2C], 2);
	CHECK_EQ(fdev.nch[C2H], 3);
	CHECK_EQ(engs[C2H][2].addr_align, 64);
	CHECK_EQ(engs[C2H][2].len_gran, 4);
	CHECK(engs[H2C][0].use_irq);
	CHECK_EQ(fdev.caps, FPGAGDR_CAP_IRQ);
	/* interrupt bits: H2C channels first, then C2H */
	CHECK_EQ(xd.xe[H2C][0].irq_bit, 0);
	CHECK_EQ(xd.xe[H2C][1].irq_bit, 1);
	CHECK_EQ(xd.xe[C2H][0].irq_bit, 2);
	CHECK_EQ(xd.xe[C2H][2].irq_bit, 4);
	CHECK_EQ(xm_peek(chan_reg(C2H, 1, PG_CH_INT_EN)), PG_RUN_ENDS);
	CHECK_EQ(xm_peek(chan_reg(H2C, 1, PG_CH_CONTROL)), 0);

	/* discovery stops at the first missing channel */
	gap.gap = 1;
	gap.gap_dir = C2H;
	CHECK_EQ(setup(&gap, false), 0);
	CHECK_EQ(fdev.nch[C2H], 1);
	CHECK_EQ(fdev.caps, FPGAGDR_CAP_POLL);

	CHECK_EQ(setup(&none, false), -ENODEV);

	/* alignment 0 means none; 3 rounds up to 4; streams are noted */
	odd.align = PG_ALIGN(3, 0, 0);
	odd.stream = true;
	CHECK_EQ(setup(&odd, false), 0);
	CHECK_EQ(engs[H2C][0].addr_align, 4);
	CHECK_EQ(engs[H2C][0].len_gran, 1);
	CHECK(fdev.caps & FPGAGDR_CAP_STREAM);
}

/*
 * An engine a previous kernel or driver left running is stopped by
 * fpgagdr_xdma_stop_leftovers(), which the PCI driver calls before it
 * turns bus mastering on; one that will not stop is reported.
 */
static void test_stale_run_stopped_at_probe(void)
{
	xm_init(&cfg_default);
	xm_poke(chan_reg(H2C, 1, PG_CH_CONTROL), PG_CTRL_RUN);
	xm_poke(chan_reg(C2H, 2, PG_CH_CONTROL), PG_CTRL_RUN);
	CHECK_EQ(fpgagdr_xdma_stop_leftovers(xm_regs()), 0);
	CHECK_EQ(xm_peek(chan_reg(H2C, 1, PG_CH_CONTROL)), 0);
	CHECK_EQ(xm_peek(chan_reg(C2H, 2, PG_CH_CONTROL)), 0);
	CHECK_EQ(xm_peek(chan_reg(C2H, 2, PG_CH_STATUS)) & PG_ST_BUSY,
		 0);
	/* one that stays busy past the stop budget is counted */
	xm_init(&cfg_default);
	xm_poke(chan_reg(C2H, 0, PG_CH_CONTROL), PG_CTRL_RUN);
	xm_fault.stuck_busy = true;
	CHECK_EQ(fpgagdr_xdma_stop_leftovers(xm_regs()), 1);
	xm_fault.stuck_busy = false;
}

/* H2C then C2H through the model, polled; every byte compared. */
static void test_poll_mode_round_trip(void)
{
	struct fpgagdr_engine *h2c, *c2h;
	struct fpgagdr_chain c;
	struct buf b;
	u32 i, bad = 0;

	CHECK_EQ(setup(&cfg_default, false), 0);
	buf_init(&b);
	h2c = &engs[H2C][1];
	c2h = &engs[C2H][2];
	for (i = 0; i < NSEG; i++)
		memset(b.page[i], (int)(i + 1), 4096);

	build(&b, false, 0x10000, NSEG * 4096, &c);
	CHECK_EQ(c.ndesc, NSEG);
	CHECK_EQ(h2c->ops->start(h2c, &c), 0);
	CHECK_EQ(xm_peek(sgdma_reg(H2C, 1, PG_SG_DESC_LO)),
		 lower_32_bits(c.first));
	CHECK_EQ(xm_peek(sgdma_reg(H2C, 1, PG_SG_DESC_HI)),
		 upper_32_bits(c.first));
	CHECK_EQ(xm_peek(sgdma_reg(H2C, 1, PG_SG_DESC_ADJ)), c.first_adj);
	CHECK_EQ(xm_peek(chan_reg(H2C, 1, PG_CH_CONTROL)),
		 PG_CTRL_RUN | PG_RUN_ENDS);
	CHECK_EQ(h2c->ops->poll(h2c), -EINPROGRESS);
	CHECK_EQ(xm_step(H2C, 1), 0);
	CHECK_EQ(h2c->ops->poll(h2c), 0);
	CHECK_EQ(h2c->ops->stop(h2c), 0);
	CHECK_EQ(xm_peek(chan_reg(H2C, 1, PG_CH_CONTROL)), 0);
	CHECK_EQ(h2c->ops->status(h2c), 0);	/* read-cleared by stop */
	for (i = 0; i < NSEG * 4096; i++)
		bad += xm_card()[0x10000 + i] != (unsigned char)(i / 4096 + 1);
	CHECK_EQ(bad, 0);

	for (i = 0; i < NSEG; i++)
		memset(b.page[i], 0, 4096);
	build(&b, true, 0x10000 + 4096, (NSEG - 1) * 4096, &c);
	CHECK_EQ(c2h->ops->start(c2h, &c), 0);
	CHECK_EQ(xm_step(C2H, 2), 0);
	CHECK_EQ(c2h->ops->poll(c2h), 0);
	CHECK_EQ(c2h->ops->stop(c2h), 0);
	for (i = 0, bad = 0; i < (NSEG - 1) * 4096; i++)
		bad += b.page[i / 4096][i % 4096] !=
		       (unsigned char)(i / 4096 + 2);
	CHECK_EQ(bad, 0);
	CHECK_EQ(completes[C2H][2] + completes[H2C][1], 0);
	buf_free(&b);
}

static void test_interrupts(void)
{
	struct fpgagdr_engine *e;
	struct fpgagdr_chain c;
	u32 bit;
	struct buf b;

	CHECK_EQ(setup(&cfg_default, true), 0);
	xm_poke(PG_IRQ_CHAN_VEC_C2H, 0x01010101);
	fpgagdr_xdma_irq_setup(&xd);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_EN), 0);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_VEC_C2H), 0);
	buf_init(&b);
	e = &engs[C2H][1];
	bit = BIT(xd.xe[C2H][1].irq_bit);
	build(&b, true, 0, 8 * 4096, &c);
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_EN), bit);
	/* nothing pending: not ours */
	CHECK_EQ(fpgagdr_xdma_irq(0, &xd), IRQ_NONE);
	CHECK_EQ(xm_step(C2H, 1), 0);
	CHECK_EQ(completes[C2H][1], 1);		/* the interrupt came */
	CHECK_EQ(completes[C2H][0] + completes[H2C][0], 0);
	/* the handler masked the channel until the next start */
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_EN), 0);
	CHECK_EQ(e->ops->poll(e), 0);
	CHECK_EQ(e->ops->stop(e), 0);
	/* a card that fell off the bus reads all ones */
	xm_fault.all_ones = true;
	CHECK_EQ(fpgagdr_xdma_irq(0, &xd), IRQ_NONE);
	CHECK_EQ(completes[C2H][1], 1);
	xm_fault.all_ones = false;
	CHECK_EQ(e->ops->start(e, &c), 0);
	fpgagdr_xdma_irq_teardown(&xd);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_EN), 0);
	CHECK_EQ(e->ops->stop(e), 0);
	buf_free(&b);
}

/*
 * User interrupts (PG195 IRQ block): setup routes all 16 to vector 0 and
 * masks them; W1S/W1C set and clear only the named bits; a request that
 * meets its enable bit interrupts and reaches fpgagdr-frames.c with the
 * request bits; a masked request does not interrupt; a card that reads
 * all ones is not ours; teardown masks them again.
 */
static void test_user_interrupts(void)
{
	u32 i;

	CHECK_EQ(setup(&cfg_default, true), 0);
	for (i = 0; i < 4; i++)
		xm_poke(PG_IRQ_USER_VEC(i), 0x1f1f1f1f);
	xm_poke(PG_IRQ_USER_EN, 0xffff);
	fpgagdr_xdma_irq_setup(&xd);
	CHECK_EQ(xm_peek(PG_IRQ_USER_EN), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(xm_peek(PG_IRQ_USER_VEC(i)), 0);
	frames_calls = 0;
	xm_set_irq(irq, &xd);

	fpgagdr_xdma_user_irq_enable(&xd, BIT(3) | BIT(5), true);
	CHECK_EQ(xm_peek(PG_IRQ_USER_EN), BIT(3) | BIT(5));
	fpgagdr_xdma_user_irq_enable(&xd, BIT(3), false);
	CHECK_EQ(xm_peek(PG_IRQ_USER_EN), BIT(5));
	/* only the 16 user interrupts exist */
	fpgagdr_xdma_user_irq_enable(&xd, BIT(20), true);
	CHECK_EQ(xm_peek(PG_IRQ_USER_EN), BIT(5));
	CHECK_EQ(frames_calls, 0);

	/* usr_irq_req[5], enabled: the interrupt, handed on */
	xm_user_request(BIT(5), true);
	CHECK_EQ(frames_calls, 1);
	CHECK_EQ(frames_pending, BIT(5));
	CHECK_EQ(xm_peek(PG_IRQ_USER_PEND), BIT(5));
	/* a masked request interrupts nobody ... */
	xm_user_request(BIT(3), true);
	CHECK_EQ(frames_calls, 1);
	CHECK_EQ(xm_peek(PG_IRQ_USER_PEND), BIT(5));
	/* ... until it is unmasked, and the handler sees both requests */
	fpgagdr_xdma_user_irq_enable(&xd, BIT(3), true);
	CHECK_EQ(frames_calls, 2);
	CHECK_EQ(frames_pending, BIT(3) | BIT(5));
	/* no channel was completed by a user interrupt */
	for (i = 0; i < XDMA_MAX_CHANNELS; i++)
		CHECK_EQ(completes[C2H][i] + completes[H2C][i], 0);
	xm_user_request(BIT(3) | BIT(5), false);
	/* nothing requested, nothing pending: not ours (shared INTx) */
	CHECK_EQ(fpgagdr_xdma_irq(0, &xd), IRQ_NONE);
	/*
	 * a card gone from the bus reads all ones: not ours, not handed on
	 * as user interrupts, but frame capture is told the card is gone
	 */
	xm_fault.all_ones = true;
	i = frames_calls;
	gone_calls = 0;
	CHECK_EQ(fpgagdr_xdma_irq(0, &xd), IRQ_NONE);
	CHECK_EQ(frames_calls, i);
	CHECK_EQ(gone_calls, 1);
	xm_fault.all_ones = false;
	fpgagdr_xdma_irq_teardown(&xd);
	CHECK_EQ(xm_peek(PG_IRQ_USER_EN), 0);
	xm_set_irq(NULL, NULL);
}

/* A run stopped half-way leaves nothing that the next run could misread. */
static void test_abort_then_next_run(void)
{
	struct fpgagdr_engine *e;
	struct fpgagdr_chain c;
	struct buf b;

	CHECK_EQ(setup(&cfg_default, false), 0);
	buf_init(&b);
	e = &engs[H2C][0];
	build(&b, false, 0, NSEG * 4096, &c);
	xm_fault.hang = true;
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_step(H2C, 0), -EAGAIN);
	CHECK_EQ(e->ops->poll(e), -EINPROGRESS);
	CHECK_EQ(e->ops->stop(e), 0);		/* the abort */
	CHECK_EQ(xm_peek(chan_reg(H2C, 0, PG_CH_CONTROL)), 0);
	CHECK_EQ(e->ops->status(e) & PG_ST_BUSY, 0);
	xm_fault.hang = false;

	/* a completed run, then a shorter one: no stale status or count */
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_step(H2C, 0), 0);
	CHECK_EQ(e->ops->poll(e), 0);
	CHECK_EQ(e->ops->stop(e), 0);
	/* an event left over in the status must not complete the next run */
	xm_poke(chan_reg(H2C, 0, PG_CH_STATUS),
		PG_ST_DESC_STOPPED | PG_ST_DESC_COMPLETED);
	build(&b, false, 0, 3 * 4096, &c);
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(e->ops->poll(e), -EINPROGRESS);
	CHECK_EQ(xm_step(H2C, 0), 0);
	CHECK_EQ(e->ops->poll(e), 0);
	CHECK_EQ(xm_peek(chan_reg(H2C, 0, PG_CH_COMPLETED)), 3);
	CHECK_EQ(e->ops->stop(e), 0);
	buf_free(&b);
}

static void test_stop_is_bounded(void)
{
	struct fpgagdr_engine *e;
	struct fpgagdr_chain c;
	struct buf b;

	CHECK_EQ(setup(&cfg_default, false), 0);
	buf_init(&b);
	e = &engs[C2H][0];
	build(&b, true, 0, 4096, &c);
	xm_fault.hang = true;
	xm_fault.stuck_busy = true;
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(e->ops->stop(e), -EIO);
	/* polled every 10 us for the whole stop budget, no longer */
	CHECK_EQ(xm_sleeps, DIV_ROUND_UP(FPGAGDR_STOP_BUDGET_US, 10));
	xm_fault.stuck_busy = false;
	CHECK_EQ(e->ops->stop(e), 0);
	buf_free(&b);
}

static void test_errors_reported(void)
{
	struct fpgagdr_engine *e;
	struct fpgagdr_chain c;
	struct buf b;

	CHECK_EQ(setup(&cfg_default, false), 0);
	buf_init(&b);
	e = &engs[C2H][0];
	build(&b, true, 0, 4 * 4096, &c);

	xm_fault.error = 1U << 14;	/* write_error */
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_step(C2H, 0), 0);
	CHECK_EQ(e->ops->poll(e), -EIO);
	CHECK_EQ(e->ops->stop(e), 0);
	xm_fault.error = 0;

	xm_fault.short_count = true;
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_step(C2H, 0), 0);
	CHECK_EQ(e->ops->poll(e), -EIO);
	CHECK_EQ(e->ops->stop(e), 0);
	xm_fault.short_count = false;

	/* a descriptor the card rejects */
	b.desc[0][1].control ^= cpu_to_le32(FIELD_PREP(XDMA_DESC_MAGIC, 1));
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_step(C2H, 0), -EIO);
	CHECK(e->ops->status(e) & PG_ST_MAGIC_STOPPED);
	CHECK_EQ(e->ops->poll(e), -EIO);
	CHECK_EQ(e->ops->stop(e), 0);

	/* a card address past the card's memory */
	build(&b, true, XM_CARD_SIZE - 4096, 2 * 4096, &c);
	CHECK_EQ(e->ops->start(e, &c), 0);
	CHECK_EQ(xm_step(C2H, 0), -EIO);
	CHECK_EQ(e->ops->poll(e), -EIO);
	CHECK_EQ(e->ops->stop(e), 0);
	buf_free(&b);
}

int main(void)
{
	RUN(test_config_bar_identified);
	RUN(test_discovery);
	RUN(test_stale_run_stopped_at_probe);
	RUN(test_poll_mode_round_trip);
	RUN(test_interrupts);
	RUN(test_user_interrupts);
	RUN(test_abort_then_next_run);
	RUN(test_stop_is_bounded);
	RUN(test_errors_reported);
	return test_summary();
}
