// SPDX-License-Identifier: GPL-2.0
/*
 * TEST DOUBLE: register-level model of the XDMA (PG195) register file.
 * See xdma-model.h.  Offsets and bits come from fpgagdr-xdma-regs.h; the
 * model knows the register file, not the driver.
 */
#include <stdlib.h>
#include <string.h>

#include "kshim/kshim.h"
#include "xdma-model.h"
#include "../fpgagdr-testeng-walk.h"

#define XM_REGS		(XDMA_REG_SPACE_LEN / 4)
/* PG195 IRQ block registers the driver does not use */
#define XM_USER_INT_EN_W1S	0x2008
#define XM_CHAN_INT_REQUEST	0x2044
#define XM_MAX_HOST	256
#define XM_DIR_C2H	0
#define XM_DIR_H2C	1

/**
 * struct xm_chan - one modelled engine
 * @present: its identifiers are there
 * @running: RUN set and the chain not finished
 * @ctrl: control register
 * @status: status register
 * @completed: completed descriptor count
 * @bit: its bit in the IRQ block's channel registers
 */
struct xm_chan {
	bool present;
	bool running;
	u32 ctrl;
	u32 status;
	u32 completed;
	u32 bit;
};

/**
 * struct xm_host - host memory the card may reach
 * @bus: bus address
 * @ptr: where it is
 * @len: bytes
 */
struct xm_host {
	u64 bus;
	unsigned char *ptr;
	u64 len;
};

struct xm_faults xm_fault;
unsigned long xm_sleeps;

static u32 xm_reg[XM_REGS];
static struct xm_chan xm_chan[2][XDMA_MAX_CHANNELS];
static struct xm_host xm_host[XM_MAX_HOST];
static u32 xm_nhost;
static unsigned char *xm_card_mem;
static u32 xm_chan_en, xm_chan_req, xm_user_en;
static int (*xm_irq_fn)(int irq, void *data);
static void *xm_irq_data;

static u32 xm_id(u32 target, u32 extra)
{
	return FIELD_PREP(XDMA_ID_SUBSYSTEM, XDMA_ID_SUBSYSTEM_MAGIC) |
	       FIELD_PREP(XDMA_ID_TARGET, target) | extra | 0x04;
}

void xm_init(const struct xm_cfg *cfg)
{
	u32 dir, ch, base, sg, target, bit = 0;
	static const u32 order[] = { XM_DIR_H2C, XM_DIR_C2H };
	u32 i;

	memset(xm_reg, 0, sizeof(xm_reg));
	memset(xm_chan, 0, sizeof(xm_chan));
	memset(&xm_fault, 0, sizeof(xm_fault));
	xm_nhost = 0;
	xm_chan_en = 0;
	xm_chan_req = 0;
	xm_user_en = 0;
	xm_sleeps = 0;
	xm_irq_fn = NULL;
	if (!xm_card_mem)
		xm_card_mem = malloc(XM_CARD_SIZE);
	memset(xm_card_mem, 0, XM_CARD_SIZE);
	xm_reg[XDMA_IRQ_ID / 4] = xm_id(XDMA_TARGET_IRQ, 0);
	xm_reg[XDMA_CONFIG_ID / 4] = xm_id(XDMA_TARGET_CONFIG, 0);
	for (i = 0; i < 2; i++) {
		dir = order[i];
		for (ch = 0; ch < cfg->nch[dir]; ch++) {
			if (cfg->gap == (int)ch && cfg->gap_dir == dir)
				continue;
			base = (dir == XM_DIR_H2C ? XDMA_CHAN_H2C_BASE :
				XDMA_CHAN_C2H_BASE) + ch * XDMA_CHAN_STRIDE;
			sg = (dir == XM_DIR_H2C ? XDMA_SGDMA_H2C_BASE :
			      XDMA_SGDMA_C2H_BASE) + ch * XDMA_CHAN_STRIDE;
			target = dir == XM_DIR_H2C ? XDMA_TARGET_H2C :
						     XDMA_TARGET_C2H;
			xm_reg[base / 4] = xm_id(target,
						 FIELD_PREP(XDMA_ID_CHANNEL, ch) |
						 (cfg->stream ? XDMA_ID_STREAM : 0));
			xm_reg[sg / 4] = xm_id(target + XDMA_TARGET_H2C_SGDMA, 0);
			xm_reg[(base + XDMA_CHAN_ALIGNMENTS) / 4] = cfg->align;
			xm_chan[dir][ch].present = true;
			xm_chan[dir][ch].bit = bit++;
		}
	}
}

void *xm_regs(void)
{
	return xm_reg;
}

static struct xm_chan *xm_chan_of(u32 off, u32 *reg);

/* A register's value, without a read's side effects. */
u32 xm_peek(u32 off)
{
	u32 reg;
	struct xm_chan *c = xm_chan_of(off, &reg);

	if (c && reg == XDMA_CHAN_CONTROL)
		return c->ctrl;
	if (c && reg == XDMA_CHAN_STATUS)
		return c->status;
	if (c && reg == XDMA_CHAN_COMPLETED)
		return c->completed;
	if (off == XDMA_IRQ_CHAN_INT_EN)
		return xm_chan_en;
	return xm_reg[off / 4];
}

/* Set a register as if the card had it so: no edge, no side effect. */
void xm_poke(u32 off, u32 val)
{
	u32 reg;
	struct xm_chan *c = xm_chan_of(off, &reg);

	if (c && reg == XDMA_CHAN_CONTROL) {
		c->ctrl = val;
		c->running = val & XDMA_CTRL_RUN;
		c->status = c->running ? XDMA_STAT_BUSY : 0;
		return;
	}
	if (c && reg == XDMA_CHAN_STATUS) {
		c->status = val;
		return;
	}
	xm_reg[off / 4] = val;
}

void xm_host_map(u64 bus, void *ptr, u64 len)
{
	if (xm_nhost < XM_MAX_HOST)
		xm_host[xm_nhost++] = (struct xm_host){ bus, ptr, len };
}

unsigned char *xm_card(void)
{
	return xm_card_mem;
}

void xm_set_irq(int (*fn)(int irq, void *data), void *data)
{
	xm_irq_fn = fn;
	xm_irq_data = data;
}

/* Which engine a channel-block offset belongs to; NULL if none. */
static struct xm_chan *xm_chan_of(u32 off, u32 *reg)
{
	if (off >= XDMA_IRQ_BASE)
		return NULL;
	*reg = off % XDMA_CHAN_STRIDE;
	return &xm_chan[off >= XDMA_CHAN_C2H_BASE ? XM_DIR_C2H : XM_DIR_H2C]
		       [(off % XDMA_CHAN_C2H_BASE) / XDMA_CHAN_STRIDE];
}

static void xm_control(struct xm_chan *c, u32 val)
{
	bool was = c->ctrl & XDMA_CTRL_RUN, run = val & XDMA_CTRL_RUN;

	c->ctrl = val;
	if (!c->present)
		return;
	if (!was && run) {
		c->running = true;
		c->status = XDMA_STAT_BUSY;
		c->completed = 0;
	} else if (!run) {
		c->running = false;
		if (!xm_fault.stuck_busy)
			c->status &= ~XDMA_STAT_BUSY;
	}
}

static u32 xm_read_chan(struct xm_chan *c, u32 off, u32 reg)
{
	u32 v;

	switch (reg) {
	case XDMA_CHAN_CONTROL:
		return c->ctrl;
	case XDMA_CHAN_STATUS:
		return c->status;
	case XDMA_CHAN_STATUS_RC:
		v = c->status;
		c->status &= XDMA_STAT_BUSY;
		xm_chan_req &= ~BIT(c->bit);
		return v;
	case XDMA_CHAN_COMPLETED:
		return c->completed;
	default:
		return xm_reg[off / 4];
	}
}

u32 ioread32(const void __iomem *addr)
{
	u32 off = (u32)((const u32 *)addr - xm_reg) * 4, reg;
	struct xm_chan *c = xm_chan_of(off, &reg);

	if (c)
		return xm_read_chan(c, off, reg);
	switch (off) {
	case XDMA_IRQ_CHAN_INT_EN:
		return xm_chan_en;
	case XM_CHAN_INT_REQUEST:
		return xm_chan_req;
	case XDMA_IRQ_CHAN_INT_PENDING:
		return xm_fault.pending_all_ones ? ~0U : xm_chan_req & xm_chan_en;
	default:
		return xm_reg[off / 4];
	}
}

void iowrite32(u32 val, void __iomem *addr)
{
	u32 off = (u32)((u32 *)addr - xm_reg) * 4, reg;
	struct xm_chan *c = xm_chan_of(off, &reg);

	if (c && reg == XDMA_CHAN_CONTROL)
		xm_control(c, val);
	else if (c && reg == XDMA_CHAN_CONTROL_W1S)
		xm_control(c, c->ctrl | val);
	else if (c && reg == XDMA_CHAN_CONTROL_W1C)
		xm_control(c, c->ctrl & ~val);
	else if (off == XDMA_IRQ_CHAN_INT_EN)
		xm_chan_en = val;
	else if (off == XDMA_IRQ_CHAN_INT_EN_W1S)
		xm_chan_en |= val;
	else if (off == XDMA_IRQ_CHAN_INT_EN_W1C)
		xm_chan_en &= ~val;
	else if (off == XDMA_IRQ_USER_INT_EN_W1C)
		xm_user_en &= ~val;
	else if (off == XM_USER_INT_EN_W1S)
		xm_user_en |= val;
	else
		xm_reg[off / 4] = val;
}

/* The model's clock: it moves only when the driver sleeps. */
static s64 xm_now_ns;

void usleep_range(unsigned long min, unsigned long max)
{
	xm_sleeps++;
	xm_now_ns += (s64)min * 1000;
}

ktime_t ktime_get(void)
{
	return xm_now_ns;
}

static unsigned char *xm_host_ptr(u64 bus, u64 len)
{
	u32 i;

	for (i = 0; i < xm_nhost; i++)
		if (bus >= xm_host[i].bus &&
		    bus + len <= xm_host[i].bus + xm_host[i].len)
			return xm_host[i].ptr + (bus - xm_host[i].bus);
	return NULL;
}

static bool xm_fetch(void *ctx, u64 bus, struct xdma_desc *d)
{
	unsigned char *p = xm_host_ptr(bus, sizeof(*d));

	if (p)
		memcpy(d, p, sizeof(*d));
	return p;
}

static u32 xm_move(void *ctx, u64 host, u64 card, u32 len, bool c2h)
{
	unsigned char *h = xm_host_ptr(host, len);

	if (card + len > XM_CARD_SIZE)
		return c2h ? FPGAGDR_WALK_READ_ERROR : FPGAGDR_WALK_WRITE_ERROR;
	if (!h)
		return c2h ? FPGAGDR_WALK_WRITE_ERROR : FPGAGDR_WALK_READ_ERROR;
	if (c2h)
		memcpy(h, xm_card_mem + card, len);
	else
		memcpy(xm_card_mem + card, h, len);
	return 0;
}

static bool xm_stopped(void *ctx)
{
	const struct xm_chan *c = ctx;

	return !(c->ctrl & XDMA_CTRL_RUN);
}

static const struct fpgagdr_walk_ops xm_walk_ops = {
	.fetch = xm_fetch,
	.move = xm_move,
	.stopped = xm_stopped,
};

/**
 * xm_step() - let an engine run its chain to the end
 * @dir: FPGAGDR_DIR_*
 * @ch: channel
 *
 * Return: the walker's result, or -EAGAIN when the engine is not running
 * (or hangs).
 */
int xm_step(u32 dir, u32 ch)
{
	struct xm_chan *c = &xm_chan[dir][ch];
	u32 sg = (dir == XM_DIR_H2C ? XDMA_SGDMA_H2C_BASE :
		  XDMA_SGDMA_C2H_BASE) + ch * XDMA_CHAN_STRIDE;
	u32 base = (dir == XM_DIR_H2C ? XDMA_CHAN_H2C_BASE :
		    XDMA_CHAN_C2H_BASE) + ch * XDMA_CHAN_STRIDE;
	struct fpgagdr_walk w;
	u64 first;
	int ret;

	if (!c->running || xm_fault.hang)
		return -EAGAIN;
	first = (u64)xm_reg[(sg + XDMA_SGDMA_DESC_HI) / 4] << 32 |
		xm_reg[(sg + XDMA_SGDMA_DESC_LO) / 4];
	ret = fpgagdr_walk_chain(&xm_walk_ops, c, first,
				 xm_reg[(sg + XDMA_SGDMA_DESC_ADJ) / 4],
				 dir == XM_DIR_C2H, 1u << 20, &w);
	c->running = false;
	c->status = w.status | xm_fault.error;
	c->completed = w.completed - (xm_fault.short_count ? 1 : 0);
	if (c->status & xm_reg[(base + XDMA_CHAN_INT_ENABLE) / 4])
		xm_chan_req |= BIT(c->bit);
	if ((xm_chan_req & xm_chan_en) && xm_irq_fn)
		xm_irq_fn(0, xm_irq_data);
	return ret;
}
