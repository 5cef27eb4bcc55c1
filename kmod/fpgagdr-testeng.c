// SPDX-License-Identifier: GPL-2.0
/*
 * TEST-ONLY software card (issues 5 and 13).  Compiled in only with
 * FPGAGDR_TEST_ENGINE=y, never part of a product build.
 *
 * It stands in for the FPGA card in a QEMU guest.  It is a PCI driver for
 * QEMU's "edu" device (1234:11e8), so that the card is a real PCI function
 * that sysfs remove/rescan, QEMU's device_del/device_add and AER recovery
 * reach through the driver core, exactly as they reach the XDMA driver;
 * edu's interrupt (MSI, else INTx) carries the completion interrupt, raised
 * through edu's register 0x60 and acknowledged through 0x64.  Only those
 * registers are touched.
 *
 * Behind the same struct fpgagdr_engine_ops as the XDMA engine: up to 4
 * C2H and 4 H2C engines and "card memory" of test_card_size bytes (2 GiB
 * by default) held sparsely: a page is allocated on its first write, reads
 * of pages never written return zeros.
 *
 * Each engine executes the descriptor chain the driver really built:
 * fpgagdr_walk_chain() follows it from the bus address the driver gave to
 * start(), checking magic, lengths, the adjacent-descriptor rules and the
 * stop bit as the card does.  It behaves like the hardware where the
 * driver's correctness depends on it:
 *  - every descriptor and data address is translated as the card's DMA
 *    sees it: through the device's IOMMU domain when the guest has a
 *    virtual IOMMU (iommu_iova_to_phys()), else dma-direct; an address
 *    that is not mapped for the device (no IOMMU entry, a free page, a
 *    slab page) is refused, counted and logged ("TEST ENGINE: refused"),
 *    which fails a QEMU run;
 *  - no memory access while the function's Bus Master Enable bit is clear
 *    (read from its command register, as the hardware obeys it);
 *  - bytes move at the modelled link rate (test_link_mbps, default Gen1
 *    x1, the slowest link), and clearing RUN stops the engine only after
 *    the descriptor in flight has finished, as XDMA does; stop() then
 *    polls BUSY for the driver's stop budget, as the XDMA engine's does.
 * A run happens in a worker; it ends with the interrupt unless
 * test_poll=1, when only the status the driver polls changes.
 *
 * Its PCI driver calls the card's life in fpgagdr-card.c in the order the
 * XDMA driver does (probe, remove, shutdown, AER error_detected /
 * slot_reset / resume).  After its .shutdown it reports how many engines
 * it still finds running ("TEST ENGINE: shutdown: N engines busy"); a
 * link reset stops its engines as it stops the hardware's.
 *
 * The card's user register block and its TEST-ONLY frame sensor (issue 15)
 * are fpgagdr-testeng-sensor.c; user interrupt K arrives as edu's
 * interrupt with status bit 16 + K.  The user BAR the module sees is two
 * pages: the sensor's protocol block, then one page of the design's own
 * registers (scratch memory, mappable).  Between the module and the
 * sensor sit the faults of a card on a bad day (debugfs, below) and a
 * count of the module's register reads made with interrupts off outside
 * the interrupt handler (user_irqsoff_reads in stats).  A reset of the
 * function (AER slot reset, sysfs reset) resets the sensor's block as it
 * resets the hardware's: its sequence starts again at 0.
 *
 * Fault injection, debugfs fpgagdr/testeng/: fault_mode (0 none, 1 hang:
 * never complete, stop at once; 2 late: complete after late_ms; 3 error:
 * report an engine error; 4 stuck: keep rewriting the first descriptor's
 * bytes, and keep doing so for stuck_ms after RUN is cleared), fault_runs
 * (how many of the next runs get fault_mode), late_ms, stuck_ms, pickup_ms
 * (the worker sleeps this long before it looks at the run, as a guest
 * thread the scheduler is slow to run; 0 by default); card_gone (1: every
 * read of the user BAR returns all ones and writes are lost, as from a
 * card gone from the bus), irq_storm (1: HOST_ACK never reaches the
 * sensor, which keeps FRAME_PENDING set, and each one raises frame-done
 * again, as a card that ignores the acknowledge), resume_ms (AER resume
 * reaches the module this long after the error was handled, as when other
 * drivers under the same port take their time); stats has counters the
 * tests read (desc_errors and refused_unmapped must stay 0).
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/interrupt.h>
#include <linux/iommu.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "compat.h"
#include "fpgagdr-card.h"
#include "fpgagdr-testeng-sensor.h"
#include "fpgagdr-testeng-walk.h"

/* QEMU's "edu" device: the registers used */
#define FPGAGDR_TE_PCI_VENDOR	0x1234
#define FPGAGDR_TE_PCI_DEVICE	0x11e8
#define FPGAGDR_TE_EDU_ID	0x00
#define FPGAGDR_TE_EDU_IRQ_STATUS	0x24
#define FPGAGDR_TE_EDU_IRQ_RAISE	0x60
#define FPGAGDR_TE_EDU_IRQ_ACK	0x64
/* edu interrupt status bits: engines 0..7, user interrupt K at 16 + K */
#define FPGAGDR_TE_USER_IRQ_SHIFT	16
/* How long stop() polls BUSY: the driver's stop budget, as XDMA's */
#define FPGAGDR_TE_STOP_US	FPGAGDR_STOP_BUDGET_US
/* Bytes moved between two looks at the link-rate clock */
#define FPGAGDR_TE_PACE_BYTES	SZ_64K

static bool fpgagdr_te_poll;
module_param_named(test_poll, fpgagdr_te_poll, bool, 0444);
MODULE_PARM_DESC(test_poll, "TEST ONLY: software card completes without interrupts, the driver polls (default off)");

static unsigned long long fpgagdr_te_card_size = 2ULL << 30;
module_param_named(test_card_size, fpgagdr_te_card_size, ullong, 0444);
MODULE_PARM_DESC(test_card_size, "TEST ONLY: software card memory in bytes (default 2 GiB)");

static unsigned int fpgagdr_te_channels = XDMA_MAX_CHANNELS;
module_param_named(test_channels, fpgagdr_te_channels, uint, 0444);
MODULE_PARM_DESC(test_channels, "TEST ONLY: software card engines per direction, 1..4 (default 4)");

static unsigned int fpgagdr_te_addr_align = 1;
module_param_named(test_addr_align, fpgagdr_te_addr_align, uint, 0444);
MODULE_PARM_DESC(test_addr_align, "TEST ONLY: address alignment the software engines require (default 1)");

static unsigned int fpgagdr_te_len_gran = 1;
module_param_named(test_len_gran, fpgagdr_te_len_gran, uint, 0444);
MODULE_PARM_DESC(test_len_gran, "TEST ONLY: length granularity the software engines require (default 1)");

static unsigned int fpgagdr_te_link_mbps = 250;
module_param_named(test_link_mbps, fpgagdr_te_link_mbps, uint, 0444);
MODULE_PARM_DESC(test_link_mbps, "TEST ONLY: modelled link rate in MB/s per engine (default 250: PCIe Gen1 x1)");

enum {
	FPGAGDR_TE_FAULT_NONE,
	FPGAGDR_TE_FAULT_HANG,
	FPGAGDR_TE_FAULT_LATE,
	FPGAGDR_TE_FAULT_ERROR,
	FPGAGDR_TE_FAULT_STUCK,
};

/* Bits of fpgagdr_te_chan.flags */
enum {
	FPGAGDR_TE_STOP,	/* RUN cleared: finish the descriptor, stop */
};

/* Why the card refused an access, fpgagdr_te_chan.refused */
enum {
	FPGAGDR_TE_OK,
	FPGAGDR_TE_UNMAPPED,
	FPGAGDR_TE_MASTER_OFF,
};

struct fpgagdr_testcard;

/**
 * struct fpgagdr_te_chan - one software engine
 * @card: the card
 * @eng: the core's engine
 * @dir: FPGAGDR_DIR_C2H or FPGAGDR_DIR_H2C
 * @bit: the engine's bit in edu's interrupt status
 * @lock: protects the fields below up to @desc_done, and is held by the
 *	worker around each access to memory, so that a stop() that finds
 *	the descriptor in flight drained (by the modelled clock) can halt the
 *	run between two accesses
 * @status: XDMA_CHAN_* status word, as the driver polls it
 * @completed: descriptors completed by the last run
 * @ndesc: descriptors in the chain given to start()
 * @first: bus address of the first descriptor
 * @first_adj: adjacent count of the first descriptor
 * @fault: FPGAGDR_TE_FAULT_* for the current run
 * @gen: the run start() began last
 * @halted: the run stop() halted (no memory access for it any more)
 * @desc_len: bytes of the descriptor in flight
 * @desc_done: bytes of it moved so far
 * @wgen: the run the worker executes (the worker's own)
 * @flags: FPGAGDR_TE_* bits
 * @stop_at: when RUN was cleared
 * @refused: FPGAGDR_TE_* reason the run's last access was refused
 * @refused_at: the bus address refused
 * @work: the run
 * @wq: woken when a run ends or is told to stop
 */
struct fpgagdr_te_chan {
	struct fpgagdr_testcard *card;
	struct fpgagdr_engine *eng;
	u32 dir;
	u32 bit;
	spinlock_t lock;	/* the run's state, and each memory access */
	u32 status;
	u32 completed;
	u32 ndesc;
	u64 first;
	u32 first_adj;
	u32 fault;
	u32 gen;
	u32 halted;
	u32 desc_len;
	u32 desc_done;
	u32 wgen;
	unsigned long flags;
	ktime_t stop_at;
	u32 refused;
	u64 refused_at;
	struct work_struct work;
	wait_queue_head_t wq;
};

/**
 * struct fpgagdr_testcard - one software card, bound to an edu function
 * @fdev: the core's card
 * @pdev: the PCI function
 * @regs: edu's BAR 0
 * @irq: the interrupt was requested
 * @mem: card page index -> struct page; its xa_lock protects it
 * @size: bytes of card memory
 * @wq: runs
 * @node: in fpgagdr_te_cards
 * @chan: engines by direction and channel
 * @sensor: the user register block and frame sensor (issue 15)
 * @design: the page of the design's own registers above the block
 * @user_mask: the user interrupt enable mask as the module set it
 */
struct fpgagdr_testcard {
	struct fpgagdr_dev *fdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	bool irq;
	struct xarray mem;
	u64 size;
	struct workqueue_struct *wq;
	struct list_head node;
	struct fpgagdr_te_chan chan[2][XDMA_MAX_CHANNELS];
	struct fpgagdr_te_sensor *sensor;
	struct page *design;
	u32 user_mask;
};

/**
 * struct fpgagdr_te_global - fault knobs and counters of all cards
 * @dbg: debugfs directory fpgagdr/testeng
 * @fault_mode: FPGAGDR_TE_FAULT_* for the next @fault_runs runs
 * @fault_runs: runs left that get @fault_mode
 * @late_ms: delay of FPGAGDR_TE_FAULT_LATE
 * @stuck_ms: how long FPGAGDR_TE_FAULT_STUCK ignores a cleared RUN
 * @pickup_ms: how long the worker sleeps before it looks at the run
 * @resume_ms: how long AER resume waits before the module's
 * @runs: chains started
 * @walks: chains the worker began to walk (at most @runs: each run once)
 * @descs: descriptors completed
 * @bytes: bytes moved
 * @max_desc: the longest descriptor run, bytes
 * @desc_errors: chains that broke a descriptor rule
 * @stop_timeouts: stops that found the engine still busy after the budget
 * @refused_unmapped: accesses to bus addresses not mapped for the card
 * @refused_master_off: accesses refused because Bus Master Enable was clear
 * @irqs: completion interrupts taken
 * @pages: card pages allocated
 * @card_gone: the user BAR reads all ones, writes are lost
 * @irq_storm: HOST_ACK is lost and raises frame-done again
 * @user_irqsoff_reads: user BAR reads made with interrupts off outside
 *	the interrupt handler
 * @err_lock: protects @last_err
 * @last_err: the last descriptor rule broken or access refused
 */
struct fpgagdr_te_global {
	struct dentry *dbg;
	u32 fault_mode;
	atomic_t fault_runs;
	u32 late_ms;
	u32 stuck_ms;
	u32 pickup_ms;
	u32 resume_ms;
	atomic64_t runs;
	atomic64_t walks;
	atomic64_t descs;
	atomic64_t bytes;
	atomic64_t max_desc;
	atomic64_t desc_errors;
	atomic64_t stop_timeouts;
	atomic64_t refused_unmapped;
	atomic64_t refused_master_off;
	atomic64_t irqs;
	atomic64_t pages;
	u32 card_gone;
	u32 irq_storm;
	atomic64_t user_irqsoff_reads;
	spinlock_t err_lock;	/* last_err */
	char last_err[160];
};

static struct fpgagdr_te_global fpgagdr_te;
/* the cards bound, for debugfs; protected by fpgagdr_te_lock */
static LIST_HEAD(fpgagdr_te_cards);
static DEFINE_MUTEX(fpgagdr_te_lock);

/* The worker's run was halted by stop(), or a newer start() replaced it. */
static bool fpgagdr_te_halted(struct fpgagdr_te_chan *c)
{
	return READ_ONCE(c->halted) == c->wgen || READ_ONCE(c->gen) != c->wgen;
}

static bool fpgagdr_te_stopped(void *ctx)
{
	struct fpgagdr_te_chan *c = ctx;

	return test_bit(FPGAGDR_TE_STOP, &c->flags) || fpgagdr_te_halted(c);
}

/* The card's own view of Bus Master Enable, read from the function. */
static bool fpgagdr_te_master_on(struct fpgagdr_testcard *card)
{
	u16 cmd;

	if (pci_read_config_word(card->pdev, PCI_COMMAND, &cmd) ||
	    cmd == 0xffff)
		return false;
	return cmd & PCI_COMMAND_MASTER;
}

static void fpgagdr_te_refuse(struct fpgagdr_te_chan *c, u32 why, u64 bus)
{
	if (c->refused)
		return;		/* the first refusal of a run says it */
	c->refused = why;
	c->refused_at = bus;
	atomic64_inc(why == FPGAGDR_TE_MASTER_OFF ?
		     &fpgagdr_te.refused_master_off :
		     &fpgagdr_te.refused_unmapped);
}

/*
 * The RAM page behind a host bus address, as the card's DMA reaches it:
 * through the device's IOMMU domain when there is one, else dma-direct.
 * NULL (and the access refused) when nothing is mapped there for the card.
 */
static struct page *fpgagdr_te_bus_page(struct fpgagdr_te_chan *c, u64 bus,
					u32 *off)
{
	struct fpgagdr_testcard *card = c->card;
	struct device *dev = &card->pdev->dev;
	struct iommu_domain *dom;
	phys_addr_t phys;
	struct page *page;

	if (!fpgagdr_te_master_on(card)) {
		fpgagdr_te_refuse(c, FPGAGDR_TE_MASTER_OFF, bus);
		return NULL;
	}
	dom = iommu_get_domain_for_dev(dev);
	if (dom && dom->type != IOMMU_DOMAIN_IDENTITY) {
		phys = iommu_iova_to_phys(dom, bus);
		if (!phys)
			goto unmapped;
	} else {
		phys = dma_to_phys(dev, bus);
	}
	if (!pfn_valid(PHYS_PFN(phys)))
		goto unmapped;
	page = pfn_to_page(PHYS_PFN(phys));
	/* a free page or a slab page is memory no buffer may be mapped from */
	if (!page_count(compound_head(page)) || PageSlab(page))
		goto unmapped;
	*off = offset_in_page(phys);
	return page;

unmapped:
	fpgagdr_te_refuse(c, FPGAGDR_TE_UNMAPPED, bus);
	return NULL;
}

static bool fpgagdr_te_fetch(void *ctx, u64 bus, struct xdma_desc *d)
{
	struct fpgagdr_te_chan *c = ctx;
	struct page *page;
	bool ok = false;
	void *va;
	u32 off;

	spin_lock(&c->lock);
	if (fpgagdr_te_halted(c)) {
		/* nothing fetched; the walker stops at its next look */
		memset(d, 0, sizeof(*d));
		spin_unlock(&c->lock);
		return true;
	}
	page = fpgagdr_te_bus_page(c, bus, &off);
	if (page && off + sizeof(*d) <= PAGE_SIZE) {
		va = kmap_local_page(page);
		memcpy(d, va + off, sizeof(*d));
		kunmap_local(va);
		ok = true;
	}
	spin_unlock(&c->lock);
	return ok;
}

/* The card page holding @card_addr; allocated when @alloc, else NULL. */
static struct page *fpgagdr_te_card_page(struct fpgagdr_testcard *card,
					 u64 card_addr, bool alloc)
{
	unsigned long idx = card_addr >> PAGE_SHIFT;
	struct page *page, *old;

	page = xa_load(&card->mem, idx);
	if (page || !alloc)
		return page;
	page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!page)
		return NULL;
	old = xa_cmpxchg(&card->mem, idx, NULL, page, GFP_KERNEL);
	if (old) {
		__free_page(page);
		return xa_is_err(old) ? NULL : old;
	}
	atomic64_inc(&fpgagdr_te.pages);
	return page;
}

/* Move up to one page between host page @hp and card page @cp. */
static void fpgagdr_te_move_page(struct page *cp, struct page *hp, u32 hoff,
				 u64 card_addr, u32 n, bool c2h)
{
	u32 coff = offset_in_page(card_addr);
	void *hv, *cv;

	hv = kmap_local_page(hp);
	if (!cp) {
		memset(hv + hoff, 0, n);
	} else {
		cv = kmap_local_page(cp);
		if (c2h)
			memcpy(hv + hoff, cv + coff, n);
		else
			memcpy(cv + coff, hv + hoff, n);
		kunmap_local(cv);
	}
	kunmap_local(hv);
}

/* Hold the run back to the link rate: @done bytes take done/rate from @t0. */
static void fpgagdr_te_pace(ktime_t t0, u64 done)
{
	u64 rate = (u64)max(fpgagdr_te_link_mbps, 1U) * 1000000;
	s64 ahead = (s64)div64_u64(done * NSEC_PER_SEC, rate) -
		    ktime_to_ns(ktime_sub(ktime_get(), t0));

	if (ahead > 20 * NSEC_PER_USEC)
		usleep_range(ahead / NSEC_PER_USEC, ahead / NSEC_PER_USEC + 20);
}

/* One pass over a descriptor's bytes, at the link rate. */
static u32 fpgagdr_te_move_once(struct fpgagdr_te_chan *c, u64 host,
				u64 card_addr, u32 len, bool c2h)
{
	u32 host_err = c2h ? FPGAGDR_WALK_WRITE_ERROR : FPGAGDR_WALK_READ_ERROR;
	ktime_t t0 = ktime_get();
	u64 done = 0, next = 0;
	struct page *hp, *cp;
	u32 hoff, n;

	while (len) {
		if (done >= next) {
			fpgagdr_te_pace(t0, done);
			next += FPGAGDR_TE_PACE_BYTES;
		}
		cp = fpgagdr_te_card_page(c->card, card_addr, !c2h);
		if (!cp && !c2h)
			return FPGAGDR_WALK_WRITE_ERROR;
		spin_lock(&c->lock);
		if (fpgagdr_te_halted(c)) {
			spin_unlock(&c->lock);
			return 0;	/* stopped: nothing more reaches memory */
		}
		hp = fpgagdr_te_bus_page(c, host, &hoff);
		if (!hp) {
			spin_unlock(&c->lock);
			return host_err;
		}
		n = min3(len, (u32)(PAGE_SIZE - hoff),
			 (u32)(PAGE_SIZE - offset_in_page(card_addr)));
		fpgagdr_te_move_page(cp, hp, hoff, card_addr, n, c2h);
		c->desc_done += n;
		spin_unlock(&c->lock);
		host += n;
		card_addr += n;
		len -= n;
		done += n;
		cond_resched();
	}
	fpgagdr_te_pace(t0, done);
	return 0;
}

/*
 * A stuck engine rewrites its first descriptor's bytes over and over; a
 * cleared RUN stops it only after stuck_ms.
 */
static bool fpgagdr_te_stuck_over(struct fpgagdr_te_chan *c)
{
	return fpgagdr_te_stopped(c) &&
	       ktime_ms_delta(ktime_get(), c->stop_at) >=
	       READ_ONCE(fpgagdr_te.stuck_ms);
}

/*
 * Move one descriptor's bytes.  A cleared RUN does not cut a descriptor
 * short: the walker stops after it, as the XDMA engine does.
 */
static u32 fpgagdr_te_move(void *ctx, u64 host, u64 card_addr, u32 len,
			   bool c2h)
{
	struct fpgagdr_te_chan *c = ctx;
	u32 card_err = c2h ? FPGAGDR_WALK_READ_ERROR : FPGAGDR_WALK_WRITE_ERROR;
	u32 err;
	u64 end;

	if (check_add_overflow(card_addr, (u64)len, &end) ||
	    end > c->card->size)
		return card_err;
	if (len > atomic64_read(&fpgagdr_te.max_desc))
		atomic64_set(&fpgagdr_te.max_desc, len);
	do {
		spin_lock(&c->lock);
		c->desc_len = len;
		c->desc_done = 0;
		spin_unlock(&c->lock);
		err = fpgagdr_te_move_once(c, host, card_addr, len, c2h);
		if (err)
			return err;
	} while (c->fault == FPGAGDR_TE_FAULT_STUCK && !fpgagdr_te_halted(c) &&
		 !fpgagdr_te_stuck_over(c));
	return 0;
}

static const struct fpgagdr_walk_ops fpgagdr_te_walk_ops = {
	.fetch = fpgagdr_te_fetch,
	.move = fpgagdr_te_move,
	.stopped = fpgagdr_te_stopped,
};

static __printf(1, 2) void fpgagdr_te_note(const char *fmt, ...)
{
	va_list ap;

	spin_lock(&fpgagdr_te.err_lock);
	va_start(ap, fmt);
	vsnprintf(fpgagdr_te.last_err, sizeof(fpgagdr_te.last_err), fmt, ap);
	va_end(ap);
	spin_unlock(&fpgagdr_te.err_lock);
}

static void fpgagdr_te_note_error(struct fpgagdr_te_chan *c,
				  const struct fpgagdr_walk *w)
{
	const char *dir = c->dir == FPGAGDR_DIR_C2H ? "c2h" : "h2c";
	struct device *dev = &c->card->pdev->dev;

	if (c->refused == FPGAGDR_TE_MASTER_OFF) {
		/* the function may not master the bus: nothing reached memory */
		dev_dbg(dev, "TEST ENGINE: %s %u: bus mastering off at %#llx\n",
			dir, c->eng->index, c->refused_at);
		return;
	}
	if (c->refused == FPGAGDR_TE_UNMAPPED) {
		fpgagdr_te_note("%s %u: bus address %#llx is not mapped for the card",
				dir, c->eng->index, c->refused_at);
		dev_err(dev, "TEST ENGINE: refused DMA: %s %u: bus address %#llx is not mapped for the card\n",
			dir, c->eng->index, c->refused_at);
		return;
	}
	atomic64_inc(&fpgagdr_te.desc_errors);
	fpgagdr_te_note("%s %u: %s at descriptor %#llx (status %#x)", dir,
			c->eng->index, w->why, w->where, w->status);
	dev_err(dev, "TEST ENGINE: chain rejected: %s %u: %s at descriptor %#llx (status %#x)\n",
		dir, c->eng->index, w->why, w->where, w->status);
}

/* Tell the driver: edu's interrupt, which the driver's handler acks. */
static void fpgagdr_te_raise(struct fpgagdr_te_chan *c)
{
	if (c->card->irq)
		iowrite32(BIT(c->bit), c->card->regs + FPGAGDR_TE_EDU_IRQ_RAISE);
}

static void fpgagdr_te_run(struct work_struct *work)
{
	struct fpgagdr_te_chan *c = container_of(work, struct fpgagdr_te_chan,
						 work);
	struct fpgagdr_walk w = { 0 };
	u32 fault, adj, ndesc;
	u64 first;
	int ret;

	bool live;

	if (READ_ONCE(fpgagdr_te.pickup_ms))
		msleep(READ_ONCE(fpgagdr_te.pickup_ms));
	spin_lock(&c->lock);
	if (c->wgen == c->gen) {
		/*
		 * Walked already: start() queued the work again while this
		 * worker was on its way, and the worker found the new run.
		 */
		spin_unlock(&c->lock);
		return;
	}
	c->wgen = c->gen;
	fault = c->fault;
	first = c->first;
	adj = c->first_adj;
	ndesc = c->ndesc;
	spin_unlock(&c->lock);
	c->refused = FPGAGDR_TE_OK;
	if (fault == FPGAGDR_TE_FAULT_HANG || fpgagdr_te_halted(c))
		return;		/* a hung run does nothing; a stopped one is over */

	if (fault == FPGAGDR_TE_FAULT_LATE)
		wait_event_timeout(c->wq, fpgagdr_te_stopped(c),
				   msecs_to_jiffies(READ_ONCE(fpgagdr_te.late_ms)));
	if (fault == FPGAGDR_TE_FAULT_ERROR) {
		/* the engine reports a read error and moves nothing */
		w.status = FPGAGDR_WALK_READ_ERROR;
		ret = -EIO;
	} else {
		atomic64_inc(&fpgagdr_te.walks);
		ret = fpgagdr_walk_chain(&fpgagdr_te_walk_ops, c, first, adj,
					 c->dir == FPGAGDR_DIR_C2H, ndesc + 1,
					 &w);
	}
	if (ret == -EIO && (w.why || c->refused))
		fpgagdr_te_note_error(c, &w);
	atomic64_add(w.completed, &fpgagdr_te.descs);
	atomic64_add(w.bytes, &fpgagdr_te.bytes);

	spin_lock(&c->lock);
	/* a halted or replaced run says nothing any more */
	live = !fpgagdr_te_halted(c);
	if (live) {
		/* BUSY clears; a stopped run keeps no status */
		c->status = ret == -ECANCELED ? 0 : w.status;
		c->completed = w.completed;
	}
	spin_unlock(&c->lock);
	wake_up_all(&c->wq);
	if (live && ret != -ECANCELED && !fpgagdr_te_poll)
		fpgagdr_te_raise(c);
}

static bool fpgagdr_te_busy(struct fpgagdr_te_chan *c)
{
	bool busy;

	spin_lock(&c->lock);
	busy = c->status & XDMA_STAT_BUSY;
	spin_unlock(&c->lock);
	return busy;
}

static struct fpgagdr_te_chan *fpgagdr_te_chan(struct fpgagdr_engine *eng)
{
	return eng->priv;
}

static int fpgagdr_te_start(struct fpgagdr_engine *eng,
			    const struct fpgagdr_chain *chain)
{
	struct fpgagdr_te_chan *c = fpgagdr_te_chan(eng);
	u32 fault = FPGAGDR_TE_FAULT_NONE;

	if (fpgagdr_te_busy(c))
		return -EBUSY;	/* the driver starts only a stopped engine */
	if (atomic_add_unless(&fpgagdr_te.fault_runs, -1, 0))
		fault = READ_ONCE(fpgagdr_te.fault_mode);
	spin_lock(&c->lock);
	c->gen++;
	c->status = XDMA_STAT_BUSY;
	c->completed = 0;
	c->ndesc = chain->ndesc;
	c->first = chain->first;
	c->first_adj = chain->first_adj;
	c->fault = fault;
	c->desc_len = 0;
	c->desc_done = 0;
	clear_bit(FPGAGDR_TE_STOP, &c->flags);
	spin_unlock(&c->lock);
	atomic64_inc(&fpgagdr_te.runs);
	if (fault == FPGAGDR_TE_FAULT_HANG)
		return 0;	/* BUSY until stopped */
	queue_work(c->card->wq, &c->work);
	return 0;
}

static int fpgagdr_te_poll_status(struct fpgagdr_engine *eng)
{
	struct fpgagdr_te_chan *c = fpgagdr_te_chan(eng);
	u32 status, completed, ndesc;

	spin_lock(&c->lock);
	status = c->status;
	completed = c->completed;
	ndesc = c->ndesc;
	spin_unlock(&c->lock);
	if (status & XDMA_CHAN_ERRORS)
		return -EIO;
	if (!(status & XDMA_CHAN_DESC_STOPPED))
		return -EINPROGRESS;
	return completed == ndesc ? 0 : -EIO;
}

/* Engines still running (BUSY) on the card. */
static u32 fpgagdr_te_busy_engines(struct fpgagdr_testcard *card)
{
	u32 dir, ch, busy = 0;

	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < card->fdev->nch[dir]; ch++)
			busy += fpgagdr_te_busy(&card->chan[dir][ch]);
	return busy;
}

/* Halt the current run: from here on it accesses no memory. */
static void fpgagdr_te_halt(struct fpgagdr_te_chan *c)
{
	spin_lock(&c->lock);
	c->halted = c->gen;
	c->status &= ~XDMA_STAT_BUSY;
	spin_unlock(&c->lock);
	wake_up_all(&c->wq);
}

/*
 * As the XDMA engine's stop: clear RUN, then poll BUSY for the stop budget
 * (by the clock).  The card finishes the descriptor in flight first: by
 * the modelled link rate its remaining bytes take (remaining / rate), and
 * then the engine is idle, whether or not the worker, a guest thread, got
 * to run meanwhile (it is halted between two memory accesses).  A stuck
 * engine ignores the cleared RUN for stuck_ms more.
 */
static int fpgagdr_te_stop(struct fpgagdr_engine *eng)
{
	struct fpgagdr_te_chan *c = fpgagdr_te_chan(eng);
	u64 rate = (u64)max(fpgagdr_te_link_mbps, 1U) * 1000000, left;
	ktime_t end, drained;

	spin_lock(&c->lock);
	c->stop_at = ktime_get();
	set_bit(FPGAGDR_TE_STOP, &c->flags);
	left = c->desc_len - min(c->desc_done, c->desc_len);
	drained = ktime_add_ns(c->stop_at, div64_u64(left * NSEC_PER_SEC, rate));
	if (c->fault == FPGAGDR_TE_FAULT_STUCK)
		drained = ktime_add_ms(drained, READ_ONCE(fpgagdr_te.stuck_ms));
	spin_unlock(&c->lock);
	wake_up_all(&c->wq);
	end = ktime_add_us(c->stop_at, FPGAGDR_TE_STOP_US);
	while (fpgagdr_te_busy(c)) {
		if (!ktime_before(ktime_get(), drained)) {
			fpgagdr_te_halt(c);
			break;
		}
		if (!ktime_before(ktime_get(), end))
			break;
		usleep_range(10, 20);
	}
	if (fpgagdr_te_busy(c)) {
		atomic64_inc(&fpgagdr_te.stop_timeouts);
		return -EIO;
	}
	/* as the XDMA driver's read of STATUS_RC: the status clears */
	spin_lock(&c->lock);
	c->status = 0;
	c->completed = 0;
	spin_unlock(&c->lock);
	return 0;
}

static u32 fpgagdr_te_status(struct fpgagdr_engine *eng)
{
	struct fpgagdr_te_chan *c = fpgagdr_te_chan(eng);
	u32 status;

	spin_lock(&c->lock);
	status = c->status;
	spin_unlock(&c->lock);
	return status;
}

static const struct fpgagdr_engine_ops fpgagdr_te_ops = {
	.start = fpgagdr_te_start,
	.poll = fpgagdr_te_poll_status,
	.stop = fpgagdr_te_stop,
	.status = fpgagdr_te_status,
};

static irqreturn_t fpgagdr_te_irq(int irq, void *data)
{
	struct fpgagdr_testcard *card = data;
	u32 pending = ioread32(card->regs + FPGAGDR_TE_EDU_IRQ_STATUS);
	u32 dir, ch;

	if (!pending || pending == ~0U)
		return IRQ_NONE;
	iowrite32(pending, card->regs + FPGAGDR_TE_EDU_IRQ_ACK);
	atomic64_inc(&fpgagdr_te.irqs);
	/* the user interrupts, as the XDMA's user interrupt request register */
	fpgagdr_frames_irq(card->fdev, pending >> FPGAGDR_TE_USER_IRQ_SHIFT);
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < card->fdev->nch[dir]; ch++)
			if (pending & BIT(card->chan[dir][ch].bit))
				fpgagdr_engine_complete(card->chan[dir][ch].eng);
	return IRQ_HANDLED;
}

static int fpgagdr_te_stats_show(struct seq_file *m, void *unused)
{
	struct fpgagdr_te_global *g = &fpgagdr_te;
	struct fpgagdr_testcard *card;
	u32 busy = 0;

	mutex_lock(&fpgagdr_te_lock);
	list_for_each_entry(card, &fpgagdr_te_cards, node)
		busy += fpgagdr_te_busy_engines(card);
	mutex_unlock(&fpgagdr_te_lock);
	seq_printf(m, "runs %lld\n", atomic64_read(&g->runs));
	seq_printf(m, "walks %lld\n", atomic64_read(&g->walks));
	seq_printf(m, "descs %lld\n", atomic64_read(&g->descs));
	seq_printf(m, "bytes %lld\n", atomic64_read(&g->bytes));
	seq_printf(m, "max_desc %lld\n", atomic64_read(&g->max_desc));
	seq_printf(m, "desc_errors %lld\n", atomic64_read(&g->desc_errors));
	seq_printf(m, "stop_timeouts %lld\n", atomic64_read(&g->stop_timeouts));
	seq_printf(m, "refused_unmapped %lld\n",
		   atomic64_read(&g->refused_unmapped));
	seq_printf(m, "refused_master_off %lld\n",
		   atomic64_read(&g->refused_master_off));
	seq_printf(m, "irqs %lld\n", atomic64_read(&g->irqs));
	seq_printf(m, "user_irqsoff_reads %lld\n",
		   atomic64_read(&g->user_irqsoff_reads));
	seq_printf(m, "card_pages %lld\n", atomic64_read(&g->pages));
	seq_printf(m, "busy %u\n", busy);
	seq_printf(m, "link_mbps %u\n", fpgagdr_te_link_mbps);
	spin_lock(&g->err_lock);
	seq_printf(m, "last_error %s\n", g->last_err[0] ? g->last_err : "-");
	spin_unlock(&g->err_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fpgagdr_te_stats);

static void fpgagdr_te_free_mem(struct fpgagdr_testcard *card)
{
	struct page *page;
	unsigned long idx;

	xa_for_each(&card->mem, idx, page) {
		__free_page(page);
		atomic64_dec(&fpgagdr_te.pages);
	}
	xa_destroy(&card->mem);
}

static int fpgagdr_te_add_engines(struct fpgagdr_testcard *card)
{
	struct fpgagdr_te_chan *c;
	u32 dir, ch;
	int ret;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fpgagdr_te_channels; ch++) {
			c = &card->chan[dir][ch];
			c->card = card;
			c->dir = dir;
			c->bit = dir * XDMA_MAX_CHANNELS + ch;
			spin_lock_init(&c->lock);
			INIT_WORK(&c->work, fpgagdr_te_run);
			init_waitqueue_head(&c->wq);
			ret = fpgagdr_dev_add_engine(card->fdev, dir, ch,
						     &fpgagdr_te_ops, c,
						     !fpgagdr_te_poll,
						     fpgagdr_te_addr_align,
						     fpgagdr_te_len_gran);
			if (ret)
				return ret;
			c->eng = card->fdev->eng[dir][ch];
		}
	}
	return 0;
}

/* The sensor writes its frames into card memory as the DMA sees it. */
static int fpgagdr_te_write_card(void *data, u64 addr, const void *buf,
				 size_t len)
{
	struct fpgagdr_testcard *card = data;
	struct page *page;
	u64 end;
	u32 n;
	void *va;

	if (check_add_overflow(addr, (u64)len, &end) || end > card->size)
		return -ERANGE;
	while (len) {
		page = fpgagdr_te_card_page(card, addr, true);
		if (!page)
			return -ENOMEM;
		n = min_t(size_t, len, PAGE_SIZE - offset_in_page(addr));
		va = kmap_local_page(page);
		memcpy(va + offset_in_page(addr), buf, n);
		kunmap_local(va);
		addr += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* The sensor's user interrupt K: edu's interrupt with bit 16 + K. */
static void fpgagdr_te_raise_user(void *data, u32 irq)
{
	struct fpgagdr_testcard *card = data;

	if (card->irq && irq < FPROTO_USER_IRQS)
		iowrite32(BIT(FPGAGDR_TE_USER_IRQ_SHIFT + irq),
			  card->regs + FPGAGDR_TE_EDU_IRQ_RAISE);
}

static const struct fpgagdr_te_card_ops fpgagdr_te_card_ops = {
	.write_card = fpgagdr_te_write_card,
	.raise = fpgagdr_te_raise_user,
};

/*
 * The user BAR as the module reaches it: the sensor's block below
 * FPROTO_BLOCK_LEN, the design's page above, and the faults.
 */
static u32 fpgagdr_te_user_read(void *ctx, u32 off)
{
	struct fpgagdr_testcard *card = ctx;
	u32 *design;

	if (irqs_disabled() && !in_hardirq())
		atomic64_inc(&fpgagdr_te.user_irqsoff_reads);
	if (READ_ONCE(fpgagdr_te.card_gone))
		return ~0U;
	if (off < PAGE_SIZE)
		return fpgagdr_te_sensor_user_ops.read(card->sensor, off);
	design = page_address(card->design);
	return READ_ONCE(design[(off - PAGE_SIZE) / 4]);
}

static void fpgagdr_te_user_write(void *ctx, u32 off, u32 val)
{
	struct fpgagdr_testcard *card = ctx;
	u32 *design, irq;

	if (READ_ONCE(fpgagdr_te.card_gone))
		return;
	if (off >= PAGE_SIZE) {
		design = page_address(card->design);
		WRITE_ONCE(design[(off - PAGE_SIZE) / 4], val);
		return;
	}
	if (off == FPROTO_REG_HOST_ACK && READ_ONCE(fpgagdr_te.irq_storm)) {
		/* lost: FRAME_PENDING stays, frame-done comes again */
		irq = fpgagdr_te_sensor_user_ops.read(card->sensor,
						      FPROTO_REG_USER_IRQ);
		if (irq < FPROTO_USER_IRQS &&
		    (READ_ONCE(card->user_mask) & BIT(irq)))
			fpgagdr_te_raise_user(card, irq);
		return;
	}
	fpgagdr_te_sensor_user_ops.write(card->sensor, off, val);
}

static void fpgagdr_te_user_irq_enable(void *ctx, u32 mask, bool on)
{
	struct fpgagdr_testcard *card = ctx;

	WRITE_ONCE(card->user_mask, on ? card->user_mask | mask :
			    card->user_mask & ~mask);
	fpgagdr_te_sensor_user_ops.irq_enable(card->sensor, mask, on);
}

static int fpgagdr_te_user_pfn(void *ctx, unsigned long pgoff,
			       unsigned long *pfn, bool *io)
{
	struct fpgagdr_testcard *card = ctx;

	if (pgoff == 1) {
		*pfn = page_to_pfn(card->design);
		*io = false;
		return 0;
	}
	return fpgagdr_te_sensor_user_ops.pfn(card->sensor, pgoff, pfn, io);
}

static const struct fpgagdr_user_ops fpgagdr_te_user_ops = {
	.read = fpgagdr_te_user_read,
	.write = fpgagdr_te_user_write,
	.irq_enable = fpgagdr_te_user_irq_enable,
	.pfn = fpgagdr_te_user_pfn,
};

/* Bytes of the user BAR: the block's page and the design's, or none. */
static u32 fpgagdr_te_user_len(struct fpgagdr_testcard *card)
{
	return fpgagdr_te_sensor_len(card->sensor) ? 2 * PAGE_SIZE : 0;
}

/* The completion interrupt: edu's one vector, MSI or INTx. */
static int fpgagdr_te_irq_init(struct fpgagdr_testcard *card)
{
	struct pci_dev *pdev = card->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | FPGAGDR_PCI_IRQ_INTX);
	if (ret < 0)
		return ret;
	iowrite32(~0U, card->regs + FPGAGDR_TE_EDU_IRQ_ACK);
	ret = fpgagdr_card_request_irq(card->fdev, pci_irq_vector(pdev, 0),
				       fpgagdr_te_irq, card);
	if (ret) {
		pci_free_irq_vectors(pdev);
		return ret;
	}
	card->irq = true;
	return 0;
}

static void fpgagdr_te_irq_exit(struct fpgagdr_testcard *card)
{
	if (!card->irq)
		return;
	free_irq(pci_irq_vector(card->pdev, 0), card);
	pci_free_irq_vectors(card->pdev);
	card->irq = false;
}

static int fpgagdr_te_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct fpgagdr_testcard *card;
	int ret;

	if (!fpgagdr_te_channels || fpgagdr_te_channels > XDMA_MAX_CHANNELS ||
	    !fpgagdr_te_card_size)
		return -EINVAL;
	card = kzalloc(sizeof(*card), GFP_KERNEL);
	if (!card)
		return -ENOMEM;
	xa_init(&card->mem);
	card->size = fpgagdr_te_card_size;
	card->pdev = pdev;
	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto free_card;
	/* no engine of a software card survives a reload: nothing to stop */
	pci_set_master(pdev);
	pci_save_state(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto disable;
	ret = pci_request_region(pdev, 0, "fpgagdr-testcard");
	if (ret)
		goto disable;
	card->regs = pci_iomap(pdev, 0, 0);
	if (!card->regs) {
		ret = -ENOMEM;
		goto release_region;
	}
	card->wq = alloc_workqueue("fpgagdr-testeng", WQ_UNBOUND, 0);
	if (!card->wq) {
		ret = -ENOMEM;
		goto unmap;
	}
	card->fdev = fpgagdr_dev_alloc(pdev);
	if (IS_ERR(card->fdev)) {
		ret = PTR_ERR(card->fdev);
		goto destroy_wq;
	}
	if (!card->fdev->card_size)
		card->fdev->card_size = card->size;
	card->fdev->caps |= FPGAGDR_CAP_TEST_ENGINE |
			    (fpgagdr_te_poll ? FPGAGDR_CAP_POLL : FPGAGDR_CAP_IRQ);
	ret = fpgagdr_te_add_engines(card);
	if (ret)
		goto put_fdev;
	if (!fpgagdr_te_poll) {
		ret = fpgagdr_te_irq_init(card);
		if (ret)
			goto put_fdev;
	}
	card->sensor = fpgagdr_te_sensor_new(&fpgagdr_te_card_ops, card,
					     card->fdev->name);
	card->design = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!card->sensor || !card->design) {
		ret = -ENOMEM;
		goto irq_exit;
	}
	fpgagdr_frames_attach(card->fdev, &fpgagdr_te_user_ops, card,
			      fpgagdr_te_user_len(card), fpgagdr_te_poll);
	ret = fpgagdr_card_register(card->fdev);
	if (ret)
		goto irq_exit;
	fpgagdr_te_sensor_start(card->sensor);
	pci_set_drvdata(pdev, card);
	mutex_lock(&fpgagdr_te_lock);
	list_add_tail(&card->node, &fpgagdr_te_cards);
	mutex_unlock(&fpgagdr_te_lock);
	dev_info(&pdev->dev, "fpgagdr%d: TEST-ONLY software card, %llu bytes, %u+%u engines, %s, link %u MB/s\n",
		 card->fdev->id, card->fdev->card_size, fpgagdr_te_channels,
		 fpgagdr_te_channels, fpgagdr_te_poll ? "polled" :
		 pdev->msi_enabled ? "MSI" : "INTx", fpgagdr_te_link_mbps);
	return 0;

irq_exit:
	fpgagdr_frames_detach(card->fdev);
	fpgagdr_te_irq_exit(card);
	fpgagdr_te_sensor_free(card->sensor);
	if (card->design)
		__free_page(card->design);
put_fdev:
	fpgagdr_dev_put(card->fdev);
destroy_wq:
	destroy_workqueue(card->wq);
unmap:
	pci_iounmap(pdev, card->regs);
release_region:
	pci_release_region(pdev, 0);
disable:
	pci_disable_device(pdev);
free_card:
	kfree(card);
	return ret;
}

static void fpgagdr_te_remove(struct pci_dev *pdev)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	mutex_lock(&fpgagdr_te_lock);
	list_del(&card->node);
	mutex_unlock(&fpgagdr_te_lock);
	/* after this no engine op runs */
	fpgagdr_card_unregister(card->fdev);
	fpgagdr_te_irq_exit(card);
	/* the sensor writes card memory: stopped before it is freed */
	fpgagdr_te_sensor_free(card->sensor);
	__free_page(card->design);
	/* a run still finishing its descriptor ends here */
	destroy_workqueue(card->wq);
	fpgagdr_dev_put(card->fdev);
	fpgagdr_te_free_mem(card);
	pci_iounmap(pdev, card->regs);
	pci_release_region(pdev, 0);
	pci_disable_device(pdev);
	dev_info(&pdev->dev, "TEST ENGINE: software card removed\n");
	kfree(card);
}

static void fpgagdr_te_shutdown(struct pci_dev *pdev)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	if (!card)
		return;
	fpgagdr_card_shutdown(card->fdev);
	/* what the next kernel would find running */
	dev_warn(&pdev->dev, "TEST ENGINE: shutdown: %u engines busy\n",
		 fpgagdr_te_busy_engines(card));
}

/*
 * A reset of the function stops every engine and resets the user register
 * block, as it resets the hardware's.
 */
static void fpgagdr_te_reset(struct fpgagdr_testcard *card)
{
	struct fpgagdr_te_chan *c;
	u32 dir, ch;

	WRITE_ONCE(card->user_mask, 0);
	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < card->fdev->nch[dir]; ch++) {
			c = &card->chan[dir][ch];
			set_bit(FPGAGDR_TE_STOP, &c->flags);
			fpgagdr_te_halt(c);
			flush_work(&c->work);
			spin_lock(&c->lock);
			c->status = 0;
			c->completed = 0;
			spin_unlock(&c->lock);
		}
	}
	/* the user register block is reset with the link (axi_aresetn) */
	if (card->sensor)
		fpgagdr_te_sensor_reset(card->sensor);
}

static pci_ers_result_t fpgagdr_te_error_detected(struct pci_dev *pdev,
						  pci_channel_state_t state)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	return fpgagdr_card_error_detected(card->fdev, state);
}

static pci_ers_result_t fpgagdr_te_slot_reset(struct pci_dev *pdev)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	fpgagdr_te_reset(card);
	pci_restore_state(pdev);
	pci_save_state(pdev);
	fpgagdr_card_reset_done(card->fdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void fpgagdr_te_resume(struct pci_dev *pdev)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	if (READ_ONCE(fpgagdr_te.resume_ms))
		msleep(READ_ONCE(fpgagdr_te.resume_ms));
	fpgagdr_card_resume(card->fdev);
}

static void fpgagdr_te_reset_prepare(struct pci_dev *pdev)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	fpgagdr_card_reset_prepare(card->fdev);
}

/* The function was reset (a bus reset: edu has no FLR). */
static void fpgagdr_te_reset_done(struct pci_dev *pdev)
{
	struct fpgagdr_testcard *card = pci_get_drvdata(pdev);

	fpgagdr_te_reset(card);
	fpgagdr_card_reset_done(card->fdev);
	fpgagdr_card_resume(card->fdev);
}

static const struct pci_error_handlers fpgagdr_te_err = {
	.error_detected = fpgagdr_te_error_detected,
	.slot_reset = fpgagdr_te_slot_reset,
	.resume = fpgagdr_te_resume,
	.reset_prepare = fpgagdr_te_reset_prepare,
	.reset_done = fpgagdr_te_reset_done,
};

static const struct pci_device_id fpgagdr_te_ids[] = {
	{ PCI_DEVICE(FPGAGDR_TE_PCI_VENDOR, FPGAGDR_TE_PCI_DEVICE) },
	{ }
};

static struct pci_driver fpgagdr_te_driver = {
	.name = "fpgagdr-testcard",
	.id_table = fpgagdr_te_ids,
	.probe = fpgagdr_te_probe,
	.remove = fpgagdr_te_remove,
	.shutdown = fpgagdr_te_shutdown,
	.err_handler = &fpgagdr_te_err,
};

static void fpgagdr_te_debugfs(void)
{
	struct fpgagdr_te_global *g = &fpgagdr_te;

	g->dbg = debugfs_create_dir("testeng", fpgagdr_debugfs_dir());
	debugfs_create_u32("fault_mode", 0600, g->dbg, &g->fault_mode);
	debugfs_create_atomic_t("fault_runs", 0600, g->dbg, &g->fault_runs);
	debugfs_create_u32("late_ms", 0600, g->dbg, &g->late_ms);
	debugfs_create_u32("stuck_ms", 0600, g->dbg, &g->stuck_ms);
	debugfs_create_u32("pickup_ms", 0600, g->dbg, &g->pickup_ms);
	debugfs_create_u32("resume_ms", 0600, g->dbg, &g->resume_ms);
	debugfs_create_u32("card_gone", 0600, g->dbg, &g->card_gone);
	debugfs_create_u32("irq_storm", 0600, g->dbg, &g->irq_storm);
	debugfs_create_file("stats", 0444, g->dbg, NULL,
			    &fpgagdr_te_stats_fops);
	fpgagdr_te_sensor_debugfs(g->dbg);
}

/**
 * fpgagdr_testeng_register() - register the TEST-ONLY software card driver
 *
 * Every edu function in the guest becomes a card.
 *
 * Context: module init.
 * Return: 0 or the driver core's error.
 */
int fpgagdr_testeng_register(void)
{
	int ret;

	spin_lock_init(&fpgagdr_te.err_lock);
	fpgagdr_te_debugfs();
	ret = pci_register_driver(&fpgagdr_te_driver);
	if (ret) {
		debugfs_remove_recursive(fpgagdr_te.dbg);
		fpgagdr_te_sensor_exit();
	}
	return ret;
}

/**
 * fpgagdr_testeng_unregister() - unbind every software card
 *
 * Context: module exit; no file of a card is open.
 */
void fpgagdr_testeng_unregister(void)
{
	pci_unregister_driver(&fpgagdr_te_driver);
	debugfs_remove_recursive(fpgagdr_te.dbg);
	fpgagdr_te_sensor_exit();
}
