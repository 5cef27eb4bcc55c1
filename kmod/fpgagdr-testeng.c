// SPDX-License-Identifier: GPL-2.0
/*
 * TEST-ONLY software card (issue 5).  Compiled in only with
 * FPGAGDR_TEST_ENGINE=y, never part of a product build.
 *
 * It stands in for the FPGA card in a QEMU guest: a card with up to 4 C2H
 * and 4 H2C engines behind the same struct fpgagdr_engine_ops as the XDMA
 * engine, and "card memory" of test_card_size bytes (2 GiB by default)
 * held sparsely: a page is allocated on its first write, reads of pages
 * never written return zeros.
 *
 * Each engine executes the descriptor chain the driver really built:
 * fpgagdr_walk_chain() follows it from the bus address the driver gave to
 * start(), checking magic, lengths, the adjacent-descriptor rules and the
 * stop bit as the card does, and the bytes move between card memory and
 * the DMA-mapped pages.  There is no IOMMU in the guest, so a bus address
 * is a physical address (dma_to_phys()).  A run happens in a worker; it
 * ends with fpgagdr_engine_complete(), the interrupt, unless test_poll=1,
 * when only the status the driver polls changes.
 *
 * The card's DMA is mapped for QEMU's PCI test device (1b36:0005) when the
 * guest has one: no driver binds it and no register of it is touched; it
 * is there so that the card is a PCI function, which the nvidia_p2p
 * back-end requires of its peer.  Without it, a platform device is used.
 *
 * Fault injection, debugfs fpgagdr/testeng/: fault_mode (0 none, 1 hang:
 * never complete, 2 late: complete after late_ms, 3 error: report an
 * engine error), fault_runs (how many of the next runs get fault_mode),
 * late_ms; stats has counters the tests read (desc_errors must stay 0).
 */
#include <linux/debugfs.h>
#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/platform_device.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "fpgagdr-core.h"
#include "fpgagdr-testeng-walk.h"

/* QEMU's "pci-testdev" */
#define FPGAGDR_TE_PCI_VENDOR	0x1b36
#define FPGAGDR_TE_PCI_DEVICE	0x0005
/* How long stop() waits for a run in progress to let go. */
#define FPGAGDR_TE_STOP_MS	1000

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

enum {
	FPGAGDR_TE_FAULT_NONE,
	FPGAGDR_TE_FAULT_HANG,
	FPGAGDR_TE_FAULT_LATE,
	FPGAGDR_TE_FAULT_ERROR,
};

/* Bits of fpgagdr_te_chan.flags */
enum {
	FPGAGDR_TE_RUNNING,	/* the worker owns the run */
	FPGAGDR_TE_STOP,	/* RUN cleared: the worker must let go */
};

struct fpgagdr_testcard;

/**
 * struct fpgagdr_te_chan - one software engine
 * @card: the card
 * @eng: the core's engine
 * @dir: FPGAGDR_DIR_C2H or FPGAGDR_DIR_H2C
 * @lock: protects @status, @completed, @ndesc, @first, @first_adj, @fault
 * @status: XDMA_CHAN_* status word, as the driver polls it
 * @completed: descriptors completed by the last run
 * @ndesc: descriptors in the chain given to start()
 * @first: bus address of the first descriptor
 * @first_adj: adjacent count of the first descriptor
 * @fault: FPGAGDR_TE_FAULT_* for the current run
 * @flags: FPGAGDR_TE_* bits
 * @work: the run
 * @wq: woken when a run ends or is told to stop
 */
struct fpgagdr_te_chan {
	struct fpgagdr_testcard *card;
	struct fpgagdr_engine *eng;
	u32 dir;
	spinlock_t lock;	/* status, completed, ndesc, first, first_adj, fault */
	u32 status;
	u32 completed;
	u32 ndesc;
	u64 first;
	u32 first_adj;
	u32 fault;
	unsigned long flags;
	struct work_struct work;
	wait_queue_head_t wq;
};

/**
 * struct fpgagdr_testcard - the software card
 * @fdev: the core's card
 * @dev: the device DMA is mapped for
 * @pdev: the borrowed PCI test device, referenced, or NULL
 * @plat: the platform device used instead, or NULL
 * @mem: card page index -> struct page; its xa_lock protects it
 * @size: bytes of card memory
 * @wq: runs
 * @dbg: debugfs directory
 * @fault_mode: FPGAGDR_TE_FAULT_* for the next @fault_runs runs
 * @fault_runs: runs left that get @fault_mode
 * @late_ms: delay of FPGAGDR_TE_FAULT_LATE
 * @runs: chains started
 * @descs: descriptors completed
 * @bytes: bytes moved
 * @desc_errors: chains that broke a descriptor rule
 * @stop_timeouts: stops that found a run that would not let go
 * @pages: card pages allocated
 * @err_lock: protects @last_err
 * @last_err: the last descriptor rule broken, for debugfs
 * @chan: engines by direction and channel
 */
struct fpgagdr_testcard {
	struct fpgagdr_dev *fdev;
	struct device *dev;
	struct pci_dev *pdev;
	struct platform_device *plat;
	struct xarray mem;
	u64 size;
	struct workqueue_struct *wq;
	struct dentry *dbg;
	u32 fault_mode;
	atomic_t fault_runs;
	u32 late_ms;
	atomic64_t runs;
	atomic64_t descs;
	atomic64_t bytes;
	atomic64_t desc_errors;
	atomic64_t stop_timeouts;
	atomic64_t pages;
	spinlock_t err_lock;	/* last_err */
	char last_err[160];
	struct fpgagdr_te_chan chan[2][XDMA_MAX_CHANNELS];
};

static struct fpgagdr_testcard *fpgagdr_testcard;

static bool fpgagdr_te_stopped(void *ctx)
{
	struct fpgagdr_te_chan *c = ctx;

	return test_bit(FPGAGDR_TE_STOP, &c->flags);
}

/* The RAM page behind a bus address; NULL when it is not RAM. */
static struct page *fpgagdr_te_bus_page(struct fpgagdr_testcard *card,
					u64 bus, u32 *off)
{
	phys_addr_t phys = dma_to_phys(card->dev, bus);

	if (!pfn_valid(PHYS_PFN(phys)))
		return NULL;
	*off = offset_in_page(phys);
	return pfn_to_page(PHYS_PFN(phys));
}

static bool fpgagdr_te_fetch(void *ctx, u64 bus, struct xdma_desc *d)
{
	struct fpgagdr_te_chan *c = ctx;
	struct page *page;
	void *va;
	u32 off;

	page = fpgagdr_te_bus_page(c->card, bus, &off);
	if (!page || off + sizeof(*d) > PAGE_SIZE)
		return false;
	va = kmap_local_page(page);
	memcpy(d, va + off, sizeof(*d));
	kunmap_local(va);
	return true;
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
	atomic64_inc(&card->pages);
	return page;
}

/* Move up to one page between host page @hp and the card. */
static u32 fpgagdr_te_move_page(struct fpgagdr_testcard *card,
				struct page *hp, u32 hoff, u64 card_addr,
				u32 n, bool c2h)
{
	struct page *cp = fpgagdr_te_card_page(card, card_addr, !c2h);
	u32 coff = offset_in_page(card_addr);
	void *hv, *cv;

	if (!cp && !c2h)
		return FPGAGDR_WALK_WRITE_ERROR;
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
	return 0;
}

static u32 fpgagdr_te_move(void *ctx, u64 host, u64 card_addr, u32 len,
			   bool c2h)
{
	struct fpgagdr_te_chan *c = ctx;
	struct fpgagdr_testcard *card = c->card;
	u32 host_err = c2h ? FPGAGDR_WALK_WRITE_ERROR : FPGAGDR_WALK_READ_ERROR;
	u32 card_err = c2h ? FPGAGDR_WALK_READ_ERROR : FPGAGDR_WALK_WRITE_ERROR;
	struct page *hp;
	u32 hoff, n, err;
	u64 end;

	if (check_add_overflow(card_addr, (u64)len, &end) || end > card->size)
		return card_err;
	while (len) {
		if (fpgagdr_te_stopped(c))
			return 0;
		hp = fpgagdr_te_bus_page(card, host, &hoff);
		/* a slab page is kernel memory no buffer may be mapped from */
		if (!hp || PageSlab(hp))
			return host_err;
		n = min3(len, (u32)(PAGE_SIZE - hoff),
			 (u32)(PAGE_SIZE - offset_in_page(card_addr)));
		err = fpgagdr_te_move_page(card, hp, hoff, card_addr, n, c2h);
		if (err)
			return err;
		host += n;
		card_addr += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

static const struct fpgagdr_walk_ops fpgagdr_te_walk_ops = {
	.fetch = fpgagdr_te_fetch,
	.move = fpgagdr_te_move,
	.stopped = fpgagdr_te_stopped,
};

static void fpgagdr_te_note_error(struct fpgagdr_te_chan *c,
				  const struct fpgagdr_walk *w)
{
	struct fpgagdr_testcard *card = c->card;

	atomic64_inc(&card->desc_errors);
	spin_lock(&card->err_lock);
	snprintf(card->last_err, sizeof(card->last_err),
		 "%s %u: %s at descriptor %#llx (status %#x)",
		 c->dir == FPGAGDR_DIR_C2H ? "c2h" : "h2c", c->eng->index,
		 w->why, w->where, w->status);
	spin_unlock(&card->err_lock);
	dev_err(card->dev, "TEST ENGINE: chain rejected: %s\n", card->last_err);
}

static void fpgagdr_te_run(struct work_struct *work)
{
	struct fpgagdr_te_chan *c = container_of(work, struct fpgagdr_te_chan,
						 work);
	struct fpgagdr_testcard *card = c->card;
	struct fpgagdr_walk w = { 0 };
	u32 fault, adj, ndesc;
	u64 first;
	int ret;

	spin_lock(&c->lock);
	fault = c->fault;
	first = c->first;
	adj = c->first_adj;
	ndesc = c->ndesc;
	spin_unlock(&c->lock);

	if (fault == FPGAGDR_TE_FAULT_LATE)
		wait_event_timeout(c->wq, fpgagdr_te_stopped(c),
				   msecs_to_jiffies(READ_ONCE(card->late_ms)));
	if (fault == FPGAGDR_TE_FAULT_ERROR) {
		/* the engine reports a read error and moves nothing */
		w.status = FPGAGDR_WALK_READ_ERROR;
		ret = -EIO;
	} else {
		ret = fpgagdr_walk_chain(&fpgagdr_te_walk_ops, c, first, adj,
					 c->dir == FPGAGDR_DIR_C2H, ndesc + 1,
					 &w);
	}
	if (ret == -EIO && w.why)
		fpgagdr_te_note_error(c, &w);
	atomic64_add(w.completed, &card->descs);
	atomic64_add(w.bytes, &card->bytes);

	if (ret != -ECANCELED) {
		spin_lock(&c->lock);
		c->status = w.status;	/* BUSY clears */
		c->completed = w.completed;
		spin_unlock(&c->lock);
		if (!fpgagdr_te_poll)
			fpgagdr_engine_complete(c->eng);
	}
	clear_bit_unlock(FPGAGDR_TE_RUNNING, &c->flags);
	wake_up_all(&c->wq);
}

static struct fpgagdr_te_chan *fpgagdr_te_chan(struct fpgagdr_engine *eng)
{
	return eng->priv;
}

static int fpgagdr_te_start(struct fpgagdr_engine *eng,
			    const struct fpgagdr_chain *chain)
{
	struct fpgagdr_te_chan *c = fpgagdr_te_chan(eng);
	struct fpgagdr_testcard *card = c->card;
	u32 fault = FPGAGDR_TE_FAULT_NONE;

	if (test_bit(FPGAGDR_TE_RUNNING, &c->flags))
		return -EBUSY;
	if (atomic_add_unless(&card->fault_runs, -1, 0))
		fault = READ_ONCE(card->fault_mode);
	spin_lock(&c->lock);
	c->status = XDMA_STAT_BUSY;
	c->completed = 0;
	c->ndesc = chain->ndesc;
	c->first = chain->first;
	c->first_adj = chain->first_adj;
	c->fault = fault;
	spin_unlock(&c->lock);
	clear_bit(FPGAGDR_TE_STOP, &c->flags);
	atomic64_inc(&card->runs);
	if (fault == FPGAGDR_TE_FAULT_HANG)
		return 0;	/* BUSY until stopped */
	set_bit(FPGAGDR_TE_RUNNING, &c->flags);
	queue_work(card->wq, &c->work);
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

static int fpgagdr_te_stop(struct fpgagdr_engine *eng)
{
	struct fpgagdr_te_chan *c = fpgagdr_te_chan(eng);

	set_bit(FPGAGDR_TE_STOP, &c->flags);
	wake_up_all(&c->wq);
	if (!wait_event_timeout(c->wq, !test_bit(FPGAGDR_TE_RUNNING, &c->flags),
				msecs_to_jiffies(FPGAGDR_TE_STOP_MS))) {
		atomic64_inc(&c->card->stop_timeouts);
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

static int fpgagdr_te_stats_show(struct seq_file *m, void *unused)
{
	struct fpgagdr_testcard *card = m->private;
	u32 dir, ch, busy = 0;

	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < card->fdev->nch[dir]; ch++)
			if (fpgagdr_te_status(card->fdev->eng[dir][ch]) &
			    XDMA_STAT_BUSY)
				busy++;
	seq_printf(m, "runs %lld\n", atomic64_read(&card->runs));
	seq_printf(m, "descs %lld\n", atomic64_read(&card->descs));
	seq_printf(m, "bytes %lld\n", atomic64_read(&card->bytes));
	seq_printf(m, "desc_errors %lld\n", atomic64_read(&card->desc_errors));
	seq_printf(m, "stop_timeouts %lld\n",
		   atomic64_read(&card->stop_timeouts));
	seq_printf(m, "card_pages %lld\n", atomic64_read(&card->pages));
	seq_printf(m, "busy %u\n", busy);
	spin_lock(&card->err_lock);
	seq_printf(m, "last_error %s\n", card->last_err[0] ? card->last_err : "-");
	spin_unlock(&card->err_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fpgagdr_te_stats);

static void fpgagdr_te_debugfs(struct fpgagdr_testcard *card)
{
	card->dbg = debugfs_create_dir("testeng", fpgagdr_debugfs_root);
	debugfs_create_u32("fault_mode", 0600, card->dbg, &card->fault_mode);
	debugfs_create_atomic_t("fault_runs", 0600, card->dbg,
				&card->fault_runs);
	debugfs_create_u32("late_ms", 0600, card->dbg, &card->late_ms);
	debugfs_create_file("stats", 0444, card->dbg, card,
			    &fpgagdr_te_stats_fops);
}

/* Borrow QEMU's PCI test device, else make a platform device. */
static int fpgagdr_te_get_device(struct fpgagdr_testcard *card)
{
	struct platform_device_info info = {
		.name = "fpgagdr-testcard",
		.id = PLATFORM_DEVID_NONE,
		.dma_mask = DMA_BIT_MASK(64),
	};
	int ret;

	card->pdev = pci_get_device(FPGAGDR_TE_PCI_VENDOR,
				    FPGAGDR_TE_PCI_DEVICE, NULL);
	if (card->pdev) {
		card->dev = &card->pdev->dev;
		ret = dma_set_mask_and_coherent(card->dev, DMA_BIT_MASK(64));
		if (ret)
			pci_dev_put(card->pdev);
		return ret;
	}
	card->plat = platform_device_register_full(&info);
	if (IS_ERR(card->plat))
		return PTR_ERR(card->plat);
	card->dev = &card->plat->dev;
	return 0;
}

static void fpgagdr_te_put_device(struct fpgagdr_testcard *card)
{
	if (card->pdev)
		pci_dev_put(card->pdev);
	else
		platform_device_unregister(card->plat);
}

static void fpgagdr_te_free_mem(struct fpgagdr_testcard *card)
{
	struct page *page;
	unsigned long idx;

	xa_for_each(&card->mem, idx, page)
		__free_page(page);
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

static int fpgagdr_te_create(struct fpgagdr_testcard *card)
{
	struct fpgagdr_dev *fdev;
	int ret;

	card->wq = alloc_workqueue("fpgagdr-testeng", WQ_UNBOUND, 0);
	if (!card->wq)
		return -ENOMEM;
	fdev = fpgagdr_dev_alloc(card->dev);
	if (!fdev) {
		ret = -ENOMEM;
		goto destroy_wq;
	}
	card->fdev = fdev;
	if (!fdev->card_size)
		fdev->card_size = card->size;
	fdev->caps |= FPGAGDR_CAP_TEST_ENGINE |
		      (fpgagdr_te_poll ? FPGAGDR_CAP_POLL : FPGAGDR_CAP_IRQ);
	ret = fpgagdr_te_add_engines(card);
	if (ret)
		goto put_fdev;
	ret = fpgagdr_dev_register(fdev);
	if (ret)
		goto put_fdev;
	return 0;

put_fdev:
	fpgagdr_dev_put(fdev);
destroy_wq:
	destroy_workqueue(card->wq);
	return ret;
}

/**
 * fpgagdr_testeng_register() - create the TEST-ONLY software card
 *
 * Context: module init.
 * Return: 0, -EINVAL for bad test_* parameters, -ENOMEM, or a
 * registration error.
 */
int fpgagdr_testeng_register(void)
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
	spin_lock_init(&card->err_lock);
	card->size = fpgagdr_te_card_size;
	ret = fpgagdr_te_get_device(card);
	if (ret)
		goto free_card;
	ret = fpgagdr_te_create(card);
	if (ret)
		goto put_device;
	fpgagdr_te_debugfs(card);
	fpgagdr_testcard = card;
	dev_info(card->dev, "fpgagdr%d: TEST-ONLY software card, %llu bytes, %u+%u engines, %s\n",
		 card->fdev->id, card->fdev->card_size, fpgagdr_te_channels,
		 fpgagdr_te_channels, fpgagdr_te_poll ? "polled" : "interrupts");
	return 0;

put_device:
	fpgagdr_te_put_device(card);
free_card:
	kfree(card);
	return ret;
}

/**
 * fpgagdr_testeng_unregister() - remove the software card
 *
 * Context: module exit; no file of the card is open.
 */
void fpgagdr_testeng_unregister(void)
{
	struct fpgagdr_testcard *card = fpgagdr_testcard;

	if (!card)
		return;
	fpgagdr_testcard = NULL;
	debugfs_remove_recursive(card->dbg);
	/* stops every engine: no run is in progress after this */
	fpgagdr_dev_unregister(card->fdev);
	destroy_workqueue(card->wq);
	fpgagdr_dev_put(card->fdev);
	fpgagdr_te_free_mem(card);
	fpgagdr_te_put_device(card);
	kfree(card);
}
