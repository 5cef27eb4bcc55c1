// SPDX-License-Identifier: GPL-2.0
/*
 * TEST DOUBLE: register-level model of the XDMA (PG195) register file.
 * See xdma-model.h: every offset and bit here is PG195's, typed in
 * xdma-model.h from the product guide.  The module's fpgagdr-xdma-regs.h
 * is used for one thing only: to read the outcome of the descriptor walker
 * (fpgagdr-testeng-walk.c, whose result is in the module's names), which
 * xm_pg_status() turns into PG195's status bits.
 */
#include <stdlib.h>
#include <string.h>

#include "kshim/kshim.h"
#include "xdma-model.h"
#include "../fpgagdr-testeng-walk.h"

#define XM_REGS		(PG_SPACE / 4)
#define XM_MAX_HOST	256
#define XM_MAX_BARS	8
#define XM_MAX_CH	4
#define XM_DIR_C2H	0	/* FPGAGDR_DIR_C2H */
#define XM_DIR_H2C	1	/* FPGAGDR_DIR_H2C */

/**
 * struct xm_chan - one modelled engine
 * @present: its identifiers are there
 * @running: RUN set and the chain not finished
 * @ctrl: Channel Control (0x04)
 * @status: Channel Status (0x40)
 * @completed: Completed Descriptor Count (0x48)
 * @int_en: Channel Interrupt Enable Mask (0x90)
 * @bit: its bit in the IRQ block's channel registers (H2C first)
 */
struct xm_chan {
	bool present;
	bool running;
	u32 ctrl;
	u32 status;
	u32 completed;
	u32 int_en;
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
static struct xm_chan xm_chan[2][XM_MAX_CH];
static struct xm_host xm_host[XM_MAX_HOST];
static u32 xm_nhost;
static struct xm_bar xm_bars[XM_MAX_BARS];
static u32 xm_nbars;
static unsigned char *xm_card_mem;
static u32 xm_chan_en, xm_chan_req, xm_user_en, xm_user_req;
static int (*xm_irq_fn)(int irq, void *data);
static void *xm_irq_data;

/* Every register the module may write, back at its reset value. */
void xm_reset(void)
{
	u32 dir, ch;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < XM_MAX_CH; ch++) {
			struct xm_chan *c = &xm_chan[dir][ch];

			c->running = false;
			c->ctrl = 0;
			c->status = 0;
			c->completed = 0;
			c->int_en = 0;
			xm_reg[PG_SGDMA(dir == XM_DIR_C2H, ch, PG_SG_DESC_LO) / 4] = 0;
			xm_reg[PG_SGDMA(dir == XM_DIR_C2H, ch, PG_SG_DESC_HI) / 4] = 0;
			xm_reg[PG_SGDMA(dir == XM_DIR_C2H, ch, PG_SG_DESC_ADJ) / 4] = 0;
		}
	}
	xm_chan_en = 0;
	xm_chan_req = 0;
	xm_user_en = 0;
	for (ch = 0; ch < 4; ch++)
		xm_reg[PG_IRQ_USER_VEC(ch) / 4] = 0;
	xm_reg[PG_IRQ_CHAN_VEC_H2C / 4] = 0;
	xm_reg[PG_IRQ_CHAN_VEC_C2H / 4] = 0;
}

void xm_init(const struct xm_cfg *cfg)
{
	static const u32 order[] = { XM_DIR_H2C, XM_DIR_C2H };
	u32 dir, ch, i, bit = 0;
	bool c2h;

	memset(xm_reg, 0, sizeof(xm_reg));
	memset(xm_chan, 0, sizeof(xm_chan));
	memset(&xm_fault, 0, sizeof(xm_fault));
	xm_nhost = 0;
	xm_nbars = 0;
	xm_sleeps = 0;
	xm_irq_fn = NULL;
	xm_user_req = 0;
	xm_reset();
	if (!xm_card_mem)
		xm_card_mem = malloc(XM_CARD_SIZE);
	memset(xm_card_mem, 0, XM_CARD_SIZE);
	xm_reg[PG_IRQ / 4] = PG_ID(PG_TARGET_IRQ, false, 0);
	xm_reg[PG_CONFIG / 4] = PG_ID(PG_TARGET_CONFIG, false, 0);
	for (i = 0; i < 2; i++) {
		dir = order[i];
		c2h = dir == XM_DIR_C2H;
		for (ch = 0; ch < cfg->nch[dir] && ch < XM_MAX_CH; ch++) {
			if (cfg->gap == (int)ch && cfg->gap_dir == dir)
				continue;
			xm_reg[PG_CHAN(c2h, ch, PG_CH_ID) / 4] =
				PG_ID(c2h ? PG_TARGET_C2H : PG_TARGET_H2C,
				      cfg->stream, ch);
			xm_reg[PG_SGDMA(c2h, ch, PG_CH_ID) / 4] =
				PG_ID(c2h ? PG_TARGET_C2H_SGDMA :
				      PG_TARGET_H2C_SGDMA, false, 0);
			xm_reg[PG_CHAN(c2h, ch, PG_CH_ALIGNMENTS) / 4] = cfg->align;
			xm_chan[dir][ch].present = true;
			xm_chan[dir][ch].bit = bit++;
		}
	}
}

void *xm_regs(void)
{
	return xm_reg;
}

void xm_add_bar(const struct xm_bar *bar)
{
	if (xm_nbars < XM_MAX_BARS)
		xm_bars[xm_nbars++] = *bar;
}

/* Which engine a channel-block offset belongs to, and its register. */
static struct xm_chan *xm_chan_of(u32 off, u32 *reg)
{
	if (off >= PG_IRQ)
		return NULL;
	*reg = off % PG_CHAN_STRIDE;
	return &xm_chan[off >= PG_C2H_CHAN ? XM_DIR_C2H : XM_DIR_H2C]
		       [(off % PG_C2H_CHAN) / PG_CHAN_STRIDE % XM_MAX_CH];
}

/* A register's value, without a read's side effects. */
u32 xm_peek(u32 off)
{
	u32 reg;
	struct xm_chan *c = xm_chan_of(off, &reg);

	if (c && reg == PG_CH_CONTROL)
		return c->ctrl;
	if (c && reg == PG_CH_STATUS)
		return c->status;
	if (c && reg == PG_CH_COMPLETED)
		return c->completed;
	if (c && reg == PG_CH_INT_EN)
		return c->int_en;
	if (off == PG_IRQ_CHAN_EN)
		return xm_chan_en;
	if (off == PG_IRQ_CHAN_REQ)
		return xm_chan_req;
	if (off == PG_IRQ_CHAN_PEND)
		return xm_chan_req & xm_chan_en;
	if (off == PG_IRQ_USER_EN)
		return xm_user_en;
	if (off == PG_IRQ_USER_REQ || off == PG_IRQ_USER_PEND)
		return xm_user_req & xm_user_en;
	return xm_reg[off / 4];
}

/* Set a register as if the card had it so: no edge, no side effect. */
void xm_poke(u32 off, u32 val)
{
	u32 reg;
	struct xm_chan *c = xm_chan_of(off, &reg);

	if (c && reg == PG_CH_CONTROL) {
		c->ctrl = val;
		c->running = val & PG_CTRL_RUN;
		c->status = c->running ? PG_ST_BUSY : 0;
		return;
	}
	if (c && reg == PG_CH_STATUS) {
		c->status = val;
		return;
	}
	if (c && reg == PG_CH_INT_EN) {
		c->int_en = val;
		return;
	}
	if (off == PG_IRQ_USER_EN)
		xm_user_en = val;
	else if (off == PG_IRQ_CHAN_EN)
		xm_chan_en = val;
	else
		xm_reg[off / 4] = val;
}

/* Host memory at @bus for the card; a later map of @bus replaces it. */
void xm_host_map(u64 bus, void *ptr, u64 len)
{
	u32 i;

	for (i = 0; i < xm_nhost; i++) {
		if (xm_host[i].bus == bus) {
			xm_host[i] = (struct xm_host){ bus, ptr, len };
			return;
		}
	}
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

/* The interrupt goes out when a request meets its enable bit. */
static void xm_fire(void)
{
	if (((xm_chan_req & xm_chan_en) || (xm_user_req & xm_user_en)) &&
	    xm_irq_fn)
		xm_irq_fn(0, xm_irq_data);
}

static void xm_control(struct xm_chan *c, u32 val)
{
	bool was = c->ctrl & PG_CTRL_RUN, run = val & PG_CTRL_RUN;

	c->ctrl = val;
	if (!c->present)
		return;
	if (!was && run) {
		/* the completed count resets on RUN's rising edge */
		c->running = true;
		c->status = PG_ST_BUSY;
		c->completed = 0;
	} else if (!run) {
		c->running = false;
		if (!xm_fault.stuck_busy)
			c->status &= ~PG_ST_BUSY;
	}
}

static u32 xm_read_chan(struct xm_chan *c, u32 off, u32 reg)
{
	u32 v;

	switch (reg) {
	case PG_CH_CONTROL:
		return c->ctrl;
	case PG_CH_STATUS:
		return c->status;
	case PG_CH_STATUS_RC:
		/* bits 23:1 clear on read; busy (bit 0) cannot */
		v = c->status;
		c->status &= PG_ST_BUSY;
		xm_chan_req &= ~(1U << c->bit);
		return v;
	case PG_CH_COMPLETED:
		return c->completed;
	case PG_CH_INT_EN:
		return c->int_en;
	default:
		return xm_reg[off / 4];
	}
}

static void xm_write_chan(struct xm_chan *c, u32 off, u32 reg, u32 val)
{
	switch (reg) {
	case PG_CH_CONTROL:
		xm_control(c, val);
		break;
	case PG_CH_CONTROL_W1S:
		xm_control(c, c->ctrl | val);
		break;
	case PG_CH_CONTROL_W1C:
		xm_control(c, c->ctrl & ~val);
		break;
	case PG_CH_STATUS:
		c->status &= ~(val & PG_ST_LOGGED);	/* RW1C */
		break;
	case PG_CH_INT_EN:
		c->int_en = val & PG_ST_LOGGED;
		break;
	case PG_CH_INT_EN_W1S:
		c->int_en |= val & PG_ST_LOGGED;
		break;
	case PG_CH_INT_EN_W1C:
		c->int_en &= ~val;
		break;
	default:
		if (reg != PG_CH_ID && reg != PG_CH_ALIGNMENTS)
			xm_reg[off / 4] = val;
		break;
	}
}

/* An access outside the register file: another BAR's, or nobody's. */
static struct xm_bar *xm_bar_of(const void *addr, u32 *off)
{
	u32 i;

	for (i = 0; i < xm_nbars; i++) {
		if ((const char *)addr >= (const char *)xm_bars[i].base &&
		    (const char *)addr < (const char *)xm_bars[i].base +
		    xm_bars[i].len) {
			*off = (u32)((const char *)addr -
				     (const char *)xm_bars[i].base);
			return &xm_bars[i];
		}
	}
	abort();	/* the module read memory it never mapped */
}

static bool xm_mine(const void *addr)
{
	return (const char *)addr >= (const char *)xm_reg &&
	       (const char *)addr < (const char *)xm_reg + sizeof(xm_reg);
}

u32 ioread32(const void __iomem *addr)
{
	u32 off, reg;
	struct xm_chan *c;
	struct xm_bar *bar;

	if (!xm_mine(addr)) {
		bar = xm_bar_of(addr, &off);
		return bar->read(off);
	}
	if (xm_fault.all_ones)
		return ~0U;
	off = (u32)((const u32 *)addr - xm_reg) * 4;
	c = xm_chan_of(off, &reg);
	if (c)
		return xm_read_chan(c, off, reg);
	switch (off) {
	case PG_IRQ_CHAN_EN:
		return xm_chan_en;
	case PG_IRQ_CHAN_REQ:
		return xm_chan_req;
	case PG_IRQ_CHAN_PEND:
		return xm_chan_req & xm_chan_en;
	case PG_IRQ_USER_EN:
		return xm_user_en;
	case PG_IRQ_USER_REQ:
		/* "the interrupt source AND'd with the enable mask register" */
		return xm_user_req & xm_user_en;
	case PG_IRQ_USER_PEND:
		return xm_user_req & xm_user_en;
	default:
		return xm_reg[off / 4];
	}
}

static void xm_user_set_en(u32 val)
{
	u32 before = xm_user_req & xm_user_en;

	/* 16 user interrupts: the other bits do not exist */
	xm_user_en = val & ((1U << PG_USER_IRQS) - 1);
	if (xm_user_req & xm_user_en & ~before)
		xm_fire();
}

static void xm_chan_set_en(u32 val)
{
	u32 before = xm_chan_req & xm_chan_en;

	xm_chan_en = val;
	if (xm_chan_req & xm_chan_en & ~before)
		xm_fire();
}

void iowrite32(u32 val, void __iomem *addr)
{
	u32 off, reg;
	struct xm_chan *c;
	struct xm_bar *bar;

	if (!xm_mine(addr)) {
		bar = xm_bar_of(addr, &off);
		bar->write(off, val);
		return;
	}
	if (xm_fault.all_ones)
		return;
	off = (u32)((u32 *)addr - xm_reg) * 4;
	c = xm_chan_of(off, &reg);
	if (c) {
		xm_write_chan(c, off, reg, val);
		return;
	}
	switch (off) {
	case PG_IRQ_CHAN_EN:
		xm_chan_set_en(val);
		break;
	case PG_IRQ_CHAN_EN_W1S:
		xm_chan_set_en(xm_chan_en | val);
		break;
	case PG_IRQ_CHAN_EN_W1C:
		xm_chan_set_en(xm_chan_en & ~val);
		break;
	case PG_IRQ_USER_EN:
		xm_user_set_en(val);
		break;
	case PG_IRQ_USER_EN_W1S:
		xm_user_set_en(xm_user_en | val);
		break;
	case PG_IRQ_USER_EN_W1C:
		xm_user_set_en(xm_user_en & ~val);
		break;
	case PG_IRQ_USER_VEC(0):
	case PG_IRQ_USER_VEC(1):
	case PG_IRQ_USER_VEC(2):
	case PG_IRQ_USER_VEC(3):
	case PG_IRQ_CHAN_VEC_H2C:
	case PG_IRQ_CHAN_VEC_C2H:
		xm_reg[off / 4] = val & 0x1f1f1f1f;	/* 5 bits per byte */
		break;
	default:
		if (off >= PG_H2C_SGDMA)
			xm_reg[off / 4] = val;
		/* identifiers and the rest of the IRQ block are read-only */
		break;
	}
}

void xm_user_request(u32 bits, bool on)
{
	u32 before = xm_user_req & xm_user_en;

	if (on)
		xm_user_req |= bits & ((1U << PG_USER_IRQS) - 1);
	else
		xm_user_req &= ~bits;
	if (xm_user_req & xm_user_en & ~before)
		xm_fire();
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

	return !(c->ctrl & PG_CTRL_RUN);
}

static const struct fpgagdr_walk_ops xm_walk_ops = {
	.fetch = xm_fetch,
	.move = xm_move,
	.stopped = xm_stopped,
};

/* The walker's outcome (in the module's names) as PG195's status bits. */
static u32 xm_pg_status(u32 walk)
{
	static const struct {
		u32 walk;
		u32 pg;
	} map[] = {
		{ XDMA_CHAN_DESC_STOPPED, PG_ST_DESC_STOPPED },
		{ XDMA_CHAN_DESC_COMPLETED, PG_ST_DESC_COMPLETED },
		{ XDMA_CHAN_ALIGN_MISMATCH, PG_ST_ALIGN_MISMATCH },
		{ XDMA_CHAN_MAGIC_STOPPED, PG_ST_MAGIC_STOPPED },
		{ XDMA_CHAN_INVALID_LENGTH, PG_ST_INVALID_LENGTH },
		/* the first bit of each 5-bit error field */
		{ XDMA_CHAN_READ_ERROR, 1U << 9 },
		{ XDMA_CHAN_WRITE_ERROR, 1U << 14 },
		{ XDMA_CHAN_DESC_ERROR, 1U << 19 },
	};
	u32 i, pg = 0;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (walk & map[i].walk)
			pg |= map[i].pg;
	return pg;
}

/**
 * xm_step() - let an engine run its chain to the end
 * @dir: FPGAGDR_DIR_*
 * @ch: channel
 *
 * The status bits the run ends with are logged as far as the control
 * register's ie_* bits allow; a logged bit that is set in the channel's
 * interrupt enable mask raises the channel's request.
 *
 * Return: the walker's result, or -EAGAIN when the engine is not running
 * (or hangs).
 */
int xm_step(u32 dir, u32 ch)
{
	struct xm_chan *c = &xm_chan[dir][ch];
	bool c2h = dir == XM_DIR_C2H;
	struct fpgagdr_walk w;
	u64 first;
	u32 ended;
	int ret;

	if (!c->running || xm_fault.hang)
		return -EAGAIN;
	first = (u64)xm_reg[PG_SGDMA(c2h, ch, PG_SG_DESC_HI) / 4] << 32 |
		xm_reg[PG_SGDMA(c2h, ch, PG_SG_DESC_LO) / 4];
	ret = fpgagdr_walk_chain(&xm_walk_ops, c, first,
				 xm_reg[PG_SGDMA(c2h, ch, PG_SG_DESC_ADJ) / 4] & 0x3f,
				 c2h, 1u << 20, &w);
	c->running = false;
	ended = xm_pg_status(w.status) | xm_fault.error;
	c->status = ended & c->ctrl & PG_ST_LOGGED;
	c->completed = w.completed - (xm_fault.short_count ? 1 : 0);
	if (c->status & c->int_en) {
		xm_chan_req |= 1U << c->bit;
		if (xm_chan_en & (1U << c->bit))
			xm_fire();
	}
	return ret;
}
