// SPDX-License-Identifier: GPL-2.0
/*
 * The PCI driver for XDMA cards (fpgagdr-pci.c) and the XDMA engine code
 * (fpgagdr-xdma.c), unchanged, against a PCI function (pci-model.c) whose
 * DMA BAR is the register-level model of PG195's register file
 * (xdma-model.c, offsets typed from PG195): what QEMU's software card
 * cannot reach.  BAR discovery in PG195's BAR layouts, with nothing read
 * of a user BAR past the frame protocol's block; probe's order (leftover
 * engines stopped before bus mastering); interrupt setup (routing,
 * masks, each channel's enable mask); the interrupt handler; AER
 * (error_detected, slot_reset, resume) and a reset asked for outside it
 * (reset_prepare, reset_done), after which every channel interrupts
 * again; a card gone from the bus; removal.  The rest of the module (the
 * card's life, frame capture, the engines' claim and wait) is stood in
 * for by recording stubs below.  fpgagdr-pci.c is included, not linked,
 * so that its module parameter is the test's to set.
 */
#include <string.h>

#include "check.h"
#include "pci-model.h"
#include "xdma-model.h"
/* the driver's own source: its statics (poll_mode) are the test's */
#include "../fpgagdr-pci.c"

int test_failures;
int test_checks;

#define C2H	FPGAGDR_DIR_C2H
#define H2C	FPGAGDR_DIR_H2C
#define HOST_BUS	0x200000000ULL
#define DESC_BUS	0x100000000ULL
/* PG195's status bits that end a run (all logged ones but idle_stopped) */
#define PG_RUN_ENDS	(PG_ST_LOGGED & ~PG_ST_IDLE_STOPPED)

/* ---- the rest of the module, as fpgagdr-pci.c calls it: recorded ---- */

static struct fpgagdr_dev fdev;
static struct fpgagdr_engine engs[2][XDMA_MAX_CHANNELS];
static int completes[2][XDMA_MAX_CHANNELS];
static char calls[512];
static irq_handler_t handler;
static void *handler_data;
static int gone_calls, frames_irqs;
static const struct fpgagdr_user_ops *user_ops;
static void *user_ctx;
static u32 user_len;
static bool master_at_engines;

static void called(const char *what)
{
	strncat(calls, what, sizeof(calls) - strlen(calls) - 2);
	strcat(calls, " ");
}

struct fpgagdr_dev *fpgagdr_dev_alloc(struct pci_dev *pdev)
{
	memset(&fdev, 0, sizeof(fdev));
	memset(engs, 0, sizeof(engs));
	fdev.pdev = pdev;
	fdev.dev = &pdev->dev;
	strcpy(fdev.name, "fpgagdr0");
	called("alloc");
	return &fdev;
}

void fpgagdr_dev_put(struct fpgagdr_dev *d)
{
	called("put");
}

int fpgagdr_dev_add_engine(struct fpgagdr_dev *d, u32 dir, u32 index,
			   const struct fpgagdr_engine_ops *ops, void *priv,
			   bool use_irq, u32 addr_align, u32 len_gran)
{
	struct fpgagdr_engine *e = &engs[dir][index];

	if (index != d->nch[dir])
		return -EINVAL;
	master_at_engines = pm.master;
	e->fdev = d;
	e->ops = ops;
	e->priv = priv;
	e->dir = dir;
	e->index = index;
	e->use_irq = use_irq;
	d->eng[dir][index] = e;
	d->nch[dir]++;
	return 0;
}

void fpgagdr_engine_complete(struct fpgagdr_engine *eng)
{
	completes[eng->dir][eng->index]++;
}

irqreturn_t fpgagdr_frames_irq(struct fpgagdr_dev *d, u32 pending)
{
	frames_irqs++;
	return pending ? IRQ_HANDLED : IRQ_NONE;
}

void fpgagdr_frames_card_gone(struct fpgagdr_dev *d)
{
	gone_calls++;
}

void fpgagdr_frames_attach(struct fpgagdr_dev *d,
			   const struct fpgagdr_user_ops *ops, void *ctx,
			   u32 len, bool polled)
{
	user_ops = ops;
	user_ctx = ctx;
	user_len = len;
	called("attach");
}

void fpgagdr_frames_detach(struct fpgagdr_dev *d)
{
	called("detach");
}

int fpgagdr_card_request_irq(struct fpgagdr_dev *d, unsigned int irq,
			     irq_handler_t h, void *data)
{
	CHECK_EQ(irq, 42);
	handler = h;
	handler_data = data;
	xm_set_irq(h, data);
	called("request_irq");
	return 0;
}

void free_irq(unsigned int irq, void *data)
{
	CHECK(data == handler_data);
	handler = NULL;
	xm_set_irq(NULL, NULL);
	called("free_irq");
}

int fpgagdr_card_register(struct fpgagdr_dev *d)
{
	called("register");
	return 0;
}

void fpgagdr_card_unregister(struct fpgagdr_dev *d)
{
	called("unregister");
}

void fpgagdr_card_shutdown(struct fpgagdr_dev *d)
{
	called("shutdown");
}

pci_ers_result_t fpgagdr_card_error_detected(struct fpgagdr_dev *d,
					     pci_channel_state_t state)
{
	called(state == pci_channel_io_frozen ? "error_detected(frozen)" :
	       "error_detected(normal)");
	return state == pci_channel_io_frozen ? PCI_ERS_RESULT_NEED_RESET :
						PCI_ERS_RESULT_CAN_RECOVER;
}

void fpgagdr_card_reset_prepare(struct fpgagdr_dev *d)
{
	called("reset_prepare");
}

void fpgagdr_card_reset_done(struct fpgagdr_dev *d)
{
	called("reset_done");
}

void fpgagdr_card_resume(struct fpgagdr_dev *d)
{
	called("resume");
}

/* ---- helpers ---- */

static const struct xm_cfg core = {
	.nch = { [C2H] = 2, [H2C] = 2 }, .gap = -1,
	.align = PG_ALIGN(64, 4, 64),
};

/*
 * A protocol block in the user BAR; with @lookalike, a design's own
 * registers above it whose values look like the XDMA's IRQ and config
 * block identifiers at 0x2000 and 0x3000.
 */
static void user_bar_fill(u32 len, bool lookalike)
{
	u32 off;

	memset(pm_user_regs, 0, len);
	pm_user_regs[0] = 0x52444746;		/* MAGIC */
	pm_user_regs[1] = 0x00010000;		/* VERSION */
	for (off = 0x1000; off < len && lookalike; off += 0x1000)
		pm_user_regs[off / 4] = 0x1fc00004 | (off & 0x3000) << 4;
}

/* Probe a function of @bars; the driver registered first. */
static int probe(const struct pm_bar *bars, u32 n)
{
	static const struct pci_device_id id = { 0x10ee, 0x9038 };
	struct pci_driver *drv;

	pm_init(bars, n);
	xm_init(&core);
	calls[0] = 0;
	handler = NULL;
	user_ops = NULL;
	user_len = ~0U;
	gone_calls = 0;
	frames_irqs = 0;
	memset(completes, 0, sizeof(completes));
	CHECK_EQ(fpgagdr_pci_register(), 0);
	drv = pm_driver();
	CHECK(drv && drv->probe && drv->err_handler);
	return drv->probe(&pm_dev, &id);
}

static void removal(void)
{
	CHECK(pm_dev.drvdata);
	if (!pm_dev.drvdata) {
		fpgagdr_pci_unregister();
		return;	/* probe failed: nothing to remove */
	}
	pm_driver()->remove(&pm_dev);
	CHECK_EQ(pm.regions, 0);
	CHECK_EQ(pm.maps, 0);
	CHECK_EQ(pm.vectors, 0);
	CHECK(!pm.enabled);
	CHECK(!handler);
	fpgagdr_pci_unregister();
}

/**
 * struct run - one chain in host memory
 * @page: the buffer's pages
 * @segs: their bus segments
 * @desc: descriptor page
 * @desc_dma: its bus address
 * @ring: the chain builder's view
 * @chain: the chain built
 */
struct run {
	unsigned char *page[4];
	struct fpgagdr_seg segs[4];
	struct xdma_desc *desc[1];
	u64 desc_dma[1];
	struct fpgagdr_desc_ring ring;
	struct fpgagdr_chain chain;
};

static void run_build(struct run *r, bool c2h)
{
	struct fpgagdr_xfer x = { 0, 0x1000, 4 * 4096, c2h };
	u32 i;

	for (i = 0; i < 4; i++) {
		r->page[i] = aligned_alloc(4096, 4096);
		memset(r->page[i], (int)i, 4096);
		r->segs[i].addr = HOST_BUS + i * 0x3000ULL;
		r->segs[i].len = 4096;
		xm_host_map(r->segs[i].addr, r->page[i], 4096);
	}
	r->desc[0] = aligned_alloc(4096, 4096);
	memset(r->desc[0], 0, 4096);
	r->desc_dma[0] = DESC_BUS;
	xm_host_map(DESC_BUS, r->desc[0], 4096);
	r->ring.page = r->desc;
	r->ring.page_dma = r->desc_dma;
	r->ring.npages = 1;
	CHECK_EQ(fpgagdr_desc_build(&r->ring, r->segs, 4, &x,
				    FPGAGDR_DESC_MAX_LEN, &r->chain), 0);
}

static void run_free(struct run *r)
{
	u32 i;

	for (i = 0; i < 4; i++)
		free(r->page[i]);
	free(r->desc[0]);
}

/* Run a chain on an engine; true when its completion interrupt came. */
static bool run_interrupts(u32 dir, u32 ch)
{
	struct fpgagdr_engine *e = fdev.eng[dir][ch];
	struct run r;
	bool came;

	CHECK(e);
	if (!e)
		return false;
	run_build(&r, dir == C2H);
	completes[dir][ch] = 0;
	CHECK_EQ(e->ops->start(e, &r.chain), 0);
	CHECK_EQ(xm_step(dir, ch), 0);
	came = completes[dir][ch] == 1;
	CHECK_EQ(e->ops->poll(e), 0);
	CHECK_EQ(e->ops->stop(e), 0);
	run_free(&r);
	return came;
}

/* The core's interrupt setup, as after probe. */
static void check_irq_setup(void)
{
	u32 dir, ch, i;

	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < 2; ch++)
			CHECK_EQ(xm_peek(PG_CHAN(dir == C2H, ch, PG_CH_INT_EN)),
				 PG_RUN_ENDS);
	for (i = 0; i < 4; i++)
		CHECK_EQ(xm_peek(PG_IRQ_USER_VEC(i)), 0);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_VEC_H2C), 0);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_VEC_C2H), 0);
	CHECK_EQ(xm_peek(PG_IRQ_USER_EN), 0);
	CHECK_EQ(xm_peek(PG_IRQ_CHAN_EN), 0);
}

/* Leave registers as a reset would not: so a restore is visible. */
static void scribble(void)
{
	u32 i;

	for (i = 0; i < 4; i++)
		xm_poke(PG_IRQ_USER_VEC(i), 0x1f1f1f1f);
	xm_poke(PG_IRQ_CHAN_VEC_C2H, 0x0f0f0f0f);
}

/* ---- tests ---- */

/*
 * PG195 "Target Bridge": DMA alone (BAR0); the AXI4-Lite master's BAR
 * first (BAR0) and the DMA BAR after it; with 64-bit BARs (BAR0, BAR2,
 * BAR4, each taking two); with the DMA bypass BAR after the DMA BAR.
 * The config BAR is found, the user BAR is the memory BAR before it, and
 * nothing of a user BAR past its first 4 KiB is read, however large it
 * is and whatever its design's registers look like.
 */
static void test_bar_layouts(void)
{
	const struct pm_bar dma_only[] = { { PM_DMA, PG_SPACE } };
	const struct pm_bar lite[] = { { PM_USER, 1 << 20 },
				       { PM_DMA, PG_SPACE } };
	const struct pm_bar lite64[] = { { PM_USER, 64 << 10 }, { PM_UPPER, 0 },
					 { PM_DMA, PG_SPACE }, { PM_UPPER, 0 },
					 { PM_BYPASS, 1 << 20 },
					 { PM_UPPER, 0 } };
	const struct pm_bar lite_bypass[] = { { PM_USER, 64 << 10 },
					      { PM_DMA, PG_SPACE },
					      { PM_BYPASS, 4096 } };
	const struct pm_bar none[] = { { PM_USER, 64 << 10 },
				       { PM_BYPASS, 4096 } };

	CHECK_EQ(probe(dma_only, 1), 0);
	CHECK_EQ(user_len, 0);
	CHECK_EQ(pm.regions, 1U << 0);
	removal();

	user_bar_fill(1 << 20, true);
	CHECK_EQ(probe(lite, 2), 0);
	CHECK_EQ(user_len, 1 << 20);
	CHECK_EQ(pm.regions, (1U << 0) | (1U << 1));
	CHECK_EQ(pm.user_far, 0);
	/* the frame code's accessors reach the user BAR */
	CHECK(user_ops);
	if (user_ops)
		CHECK_EQ(user_ops->read(user_ctx, 0), 0x52444746);
	removal();

	user_bar_fill(64 << 10, true);
	CHECK_EQ(probe(lite64, 6), 0);
	CHECK_EQ(user_len, 64 << 10);
	CHECK_EQ(pm.regions, (1U << 0) | (1U << 2));
	CHECK_EQ(pm.user_far, 0);
	removal();

	user_bar_fill(64 << 10, true);
	CHECK_EQ(probe(lite_bypass, 3), 0);
	CHECK_EQ(pm.regions, (1U << 0) | (1U << 1));
	CHECK_EQ(pm.user_far, 0);
	removal();

	/* no DMA BAR at all: refused, nothing left held */
	user_bar_fill(64 << 10, true);
	CHECK_EQ(probe(none, 2), -ENODEV);
	CHECK_EQ(pm.user_far, 0);
	CHECK_EQ(pm.regions, 0);
	CHECK_EQ(pm.maps, 0);
	CHECK(!pm.enabled);
	fpgagdr_pci_unregister();
	if (pm.user_far)
		fprintf(stderr, "    user BAR read at %#x\n", pm.user_far_off);
}

/*
 * Probe's order: an engine left running (kexec, an old driver) is stopped
 * before bus mastering goes on; interrupts are set up; frame capture gets
 * the user BAR; then the card is published.
 */
static void test_probe_order_and_irq_setup(void)
{
	const struct pm_bar lite[] = { { PM_USER, 64 << 10 },
				       { PM_DMA, PG_SPACE } };
	u32 dir, ch;

	user_bar_fill(64 << 10, false);
	pm_init(lite, 2);
	xm_init(&core);
	scribble();
	xm_poke(PG_CHAN(true, 1, PG_CH_CONTROL), PG_CTRL_RUN);
	fpgagdr_poll_mode = false;
	calls[0] = 0;
	CHECK_EQ(fpgagdr_pci_register(), 0);
	{
		static const struct pci_device_id id = { 0x10ee, 0x9038 };

		CHECK_EQ(pm_driver()->probe(&pm_dev, &id), 0);
	}
	CHECK_EQ(xm_peek(PG_CHAN(true, 1, PG_CH_CONTROL)) & PG_CTRL_RUN, 0);
	CHECK(pm.master);
	CHECK(master_at_engines);
	CHECK(!strcmp(calls, "alloc request_irq attach register "));
	check_irq_setup();
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < 2; ch++)
			CHECK(run_interrupts(dir, ch));
	/* the handler hands user interrupt requests to frame capture */
	iowrite32(1U << 3, (char *)xm_regs() + PG_IRQ_USER_EN_W1S);
	frames_irqs = 0;
	xm_user_request(1U << 3, true);
	CHECK_EQ(frames_irqs, 1);
	xm_user_request(1U << 3, false);
	removal();
	CHECK(!strcmp(calls, "alloc request_irq attach register unregister free_irq put "));
}

/*
 * AER with a frozen link: the card is told, the function is reset (every
 * register of the core back at its reset value), slot_reset restores the
 * config space and the core's setup: each channel's interrupt enable
 * mask, the routing of user and channel interrupts; then every channel's
 * completion interrupts again.
 */
static void test_aer_slot_reset_restores_interrupts(void)
{
	const struct pm_bar lite[] = { { PM_USER, 64 << 10 },
				       { PM_DMA, PG_SPACE } };
	const struct pci_error_handlers *eh;
	u32 dir, ch, restores;

	user_bar_fill(64 << 10, false);
	CHECK_EQ(probe(lite, 2), 0);
	eh = pm_driver()->err_handler;
	CHECK(run_interrupts(C2H, 0));
	calls[0] = 0;
	CHECK_EQ(eh->error_detected(&pm_dev, pci_channel_io_frozen),
		 PCI_ERS_RESULT_NEED_RESET);
	xm_reset();
	scribble();
	restores = pm.restores;
	CHECK_EQ(eh->slot_reset(&pm_dev), PCI_ERS_RESULT_RECOVERED);
	CHECK_EQ(pm.restores, restores + 1);
	CHECK(pm.master);
	eh->resume(&pm_dev);
	CHECK(!strcmp(calls, "error_detected(frozen) reset_done resume "));
	check_irq_setup();
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < 2; ch++)
			CHECK(run_interrupts(dir, ch));
	removal();
}

/*
 * A reset of the function asked for outside error recovery (sysfs reset,
 * a bus reset): the card is told before, the core's setup restored after,
 * and the card resumes.
 */
static void test_function_reset(void)
{
	const struct pm_bar lite[] = { { PM_USER, 64 << 10 },
				       { PM_DMA, PG_SPACE } };
	const struct pci_error_handlers *eh;
	u32 dir, ch;

	user_bar_fill(64 << 10, false);
	CHECK_EQ(probe(lite, 2), 0);
	eh = pm_driver()->err_handler;
	CHECK(eh->reset_prepare && eh->reset_done);
	if (!eh->reset_prepare || !eh->reset_done) {
		removal();
		return;
	}
	calls[0] = 0;
	eh->reset_prepare(&pm_dev);
	xm_reset();
	scribble();
	eh->reset_done(&pm_dev);
	CHECK(!strcmp(calls, "reset_prepare reset_done resume "));
	check_irq_setup();
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < 2; ch++)
			CHECK(run_interrupts(dir, ch));
	removal();
}

/* A card gone from the bus: not our interrupt, frame capture is told. */
static void test_card_gone(void)
{
	const struct pm_bar lite[] = { { PM_USER, 64 << 10 },
				       { PM_DMA, PG_SPACE } };

	user_bar_fill(64 << 10, false);
	CHECK_EQ(probe(lite, 2), 0);
	CHECK(handler);
	xm_fault.all_ones = true;
	if (handler)
		CHECK_EQ(handler(42, handler_data), IRQ_NONE);
	CHECK_EQ(gone_calls, 1);
	CHECK_EQ(frames_irqs, 0);
	xm_fault.all_ones = false;
	removal();
}

/* Shutdown stops the card; poll mode requests no interrupt. */
static void test_shutdown_and_poll_mode(void)
{
	const struct pm_bar lite[] = { { PM_USER, 64 << 10 },
				       { PM_DMA, PG_SPACE } };

	user_bar_fill(64 << 10, false);
	CHECK_EQ(probe(lite, 2), 0);
	calls[0] = 0;
	pm_driver()->shutdown(&pm_dev);
	CHECK(!strcmp(calls, "shutdown "));
	removal();

	fpgagdr_poll_mode = true;
	CHECK_EQ(probe(lite, 2), 0);
	CHECK(!strcmp(calls, "alloc attach register "));
	CHECK_EQ(pm.vectors, 0);
	CHECK(!fdev.eng[C2H][0]->use_irq);
	/* a reset restores the channels' masks in poll mode too */
	xm_reset();
	pm_driver()->err_handler->slot_reset(&pm_dev);
	CHECK_EQ(xm_peek(PG_CHAN(true, 0, PG_CH_INT_EN)), PG_RUN_ENDS);
	removal();
	fpgagdr_poll_mode = false;
}

int main(void)
{
	RUN(test_bar_layouts);
	RUN(test_probe_order_and_irq_setup);
	RUN(test_aer_slot_reset_restores_interrupts);
	RUN(test_function_reset);
	RUN(test_card_gone);
	RUN(test_shutdown_and_poll_mode);
	return test_summary();
}
