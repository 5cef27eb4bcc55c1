/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fpgagdr internal interfaces: the card and its engines.  One concern per
 * file; each file uses only the files below it (scripts/check.sh fails on
 * a circle between them):
 *
 *   fpgagdr-main.c     module init/exit
 *   fpgagdr-pci.c      the PCI driver for XDMA cards
 *   fpgagdr-testeng*.c the TEST-ONLY software card (test builds only)
 *   fpgagdr-card.c     publish a card (nodes, debugfs), its removal,
 *                      shutdown and PCIe error recovery
 *   fpgagdr-ioctl.c    the control node: ioctl decoding and checks
 *   fpgagdr-rw.c       the channel nodes: read/write to CPU memory
 *   fpgagdr-pin.c      per-file handle table: PIN, UNPIN, TRANSFER
 *   fpgagdr-mem.c      the table of memory back-ends
 *   fpgagdr-mem-*.c    memory back-ends (host, nvidia_p2p, dma-buf)
 *   fpgagdr-pinned.c   a pinned buffer: lifetime, revocation, DMA sync
 *   fpgagdr-dmasync.c  a run's range of a mapping synced, piece by piece
 *   fpgagdr-xdma.c     the XDMA engine: registers, interrupts, discovery
 *   fpgagdr-engine.c   engine claim, run, bounded wait, stop, abort, and
 *                      the card's bus mastering when an engine will not
 *                      stop
 *   fpgagdr-frames.c   frame capture: user register block, frame-done
 *                      events, WAIT_FRAME, event nodes
 *   fpgagdr-usernode.c the user register node (pread, pwrite, mmap)
 *   fpgagdr-debugfs.c  counters and engine state in debugfs
 *   fpgagdr-dev.c      the card object: ids, references, engines, device
 *                      numbers, DMA resources
 *   fpgagdr-descmem.c  descriptor memory (dma_pool pages)
 *   fpgagdr-desc.c, fpgagdr-sg.c, fpgagdr-pinmath.c, fpgagdr-link.c,
 *   fpgagdr-fdone.c: pure logic
 */
#ifndef FPGAGDR_CORE_H
#define FPGAGDR_CORE_H

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <uapi/linux/fpgagdr.h>

#include "fpgagdr-desc.h"
#include "fpgagdr-frames.h"
#include "fpgagdr-pinmath.h"
#include "fpgagdr-sg.h"

#define FPGAGDR_MAX_DEVS	32
/*
 * Minors per card: control node, 4 C2H and 4 H2C channel nodes, the user
 * register node, one event node per XDMA user interrupt.
 */
#define FPGAGDR_NODE_USER	(1 + 2 * XDMA_MAX_CHANNELS)
#define FPGAGDR_NODE_EVENTS	(FPGAGDR_NODE_USER + 1)
#define FPGAGDR_NODES		(FPGAGDR_NODE_EVENTS + FPROTO_USER_IRQS)
#define FPGAGDR_PIN_ALIGN	4096U
/* Pages the channel nodes DMA per step; sizes the per-engine ring. */
#define FPGAGDR_RW_CHUNK_PAGES	1024U

struct cdev;
struct dentry;
struct dma_pool;
struct pci_dev;
struct fpgagdr_dev;
struct fpgagdr_engine;
struct fpgagdr_pinned;

/**
 * struct fpgagdr_desc_mem - descriptor pages owned by a pin or an engine
 * @ring: the view the chain builder writes through
 * @page: CPU addresses of the pages
 * @dma: bus addresses of the pages
 * @pool: the pool the pages came from
 */
struct fpgagdr_desc_mem {
	struct fpgagdr_desc_ring ring;
	struct xdma_desc **page;
	u64 *dma;
	struct dma_pool *pool;
};

int fpgagdr_descmem_alloc(struct fpgagdr_desc_mem *dm, struct dma_pool *pool,
			  u64 ndesc);
void fpgagdr_descmem_free(struct fpgagdr_desc_mem *dm);

/**
 * struct fpgagdr_engine_ops - one kind of DMA engine
 * @start: program @chain and start the engine; must not sleep.  Called
 *	with the engine claimed and idle.
 * @poll: 0 when the chain completed, -EINPROGRESS while it runs, -EIO when
 *	the engine reported an error; must not sleep
 * @stop: clear RUN and wait, at most FPGAGDR_STOP_BUDGET_US, until the
 *	engine is idle (it finishes the descriptor in flight first); clear
 *	its status.  0 when it was seen idle, -EIO when it was not.  Called
 *	after every run, and to abort one.
 * @status: raw status word, for debugfs and dev_dbg()
 *
 * The XDMA engine (fpgagdr-xdma.c) is one implementation; a test-only
 * software engine executing the same descriptor chains is another.
 * Completion is signalled by fpgagdr_engine_complete() (from an interrupt
 * handler or a worker) or found by @poll in poll mode.
 */
struct fpgagdr_engine_ops {
	int (*start)(struct fpgagdr_engine *eng,
		     const struct fpgagdr_chain *chain);
	int (*poll)(struct fpgagdr_engine *eng);
	int (*stop)(struct fpgagdr_engine *eng);
	u32 (*status)(struct fpgagdr_engine *eng);
};

/* Bits of fpgagdr_engine.flags */
enum {
	FPGAGDR_ENG_BUSY,	/* claimed by a transfer */
	FPGAGDR_ENG_DONE,	/* completion signalled */
	FPGAGDR_ENG_ABORT,	/* ABORT asked for by the claimer's file */
	FPGAGDR_ENG_WEDGED,	/* not seen stopped; stop again before use */
	FPGAGDR_ENG_DEAD,	/* card removed; claims fail */
};

/**
 * struct fpgagdr_engine - one H2C or C2H channel
 * @fdev: the card
 * @ops: implementation
 * @priv: implementation data
 * @dir: FPGAGDR_DIR_C2H or FPGAGDR_DIR_H2C
 * @index: channel number within @dir
 * @use_irq: completion arrives by fpgagdr_engine_complete(); else polled
 * @addr_align: address alignment the engine needs, a power of 2
 * @len_gran: length granularity the engine needs, a power of 2
 * @flags: FPGAGDR_ENG_* bits, atomic bitops
 * @lock: orders @owner against FPGAGDR_ENG_ABORT
 * @owner: the open file whose transfer holds the engine, or NULL
 * @wq: woken on completion, abort, revocation and device removal
 * @rw: descriptor memory for the channel node's read/write, used only
 *	while the engine is claimed
 * @cdev: the channel node
 * @node: the channel node's device
 */
struct fpgagdr_engine {
	struct fpgagdr_dev *fdev;
	const struct fpgagdr_engine_ops *ops;
	void *priv;
	u32 dir;
	u32 index;
	bool use_irq;
	u32 addr_align;
	u32 len_gran;
	unsigned long flags;
	spinlock_t lock;	/* owner vs ABORT */
	const void *owner;
	wait_queue_head_t wq;
	struct fpgagdr_desc_mem rw;
	struct cdev *cdev;
	struct device *node;
};

/**
 * struct fpgagdr_stats - counters reported by GET_STATUS and debugfs
 * @pins: pins live
 * @pins_total: pins made
 * @cache_hits: transfers that replayed a built chain
 * @cache_misses: transfers that built their chain
 * @transfers: transfers completed
 * @transfer_bytes: bytes those moved
 * @timeouts: transfers timed out
 * @aborts: engine stops after a failed or cancelled run
 * @errors: runs the engine reported an error for
 * @stop_failures: engines not seen stopped within the stop budget
 * @fences: times bus mastering was turned off because an engine, or a
 *	transfer holding a revoked pin, did not stop in time (debugfs only)
 * @link_errors: PCIe errors reported by AER (debugfs only)
 */
struct fpgagdr_stats {
	atomic64_t pins;
	atomic64_t pins_total;
	atomic64_t cache_hits;
	atomic64_t cache_misses;
	atomic64_t transfers;
	atomic64_t transfer_bytes;
	atomic64_t timeouts;
	atomic64_t aborts;
	atomic64_t errors;
	atomic64_t stop_failures;
	atomic64_t fences;
	atomic64_t link_errors;
};

/**
 * struct fpgagdr_dev - one card (or one test-only software card)
 * @ref: references: the driver, open files, pins
 * @pdev: the PCI function that does the DMA
 * @dev: its struct device
 * @id: N in /dev/fpgagdrN, reserved from fpgagdr_dev_alloc() until the
 *	card is unpublished or freed
 * @id_held: @id is still the card's in the registry
 * @name: "fpgagdrN": nodes, debugfs, the interrupt, messages
 * @eng: engines by direction and channel, NULL where absent
 * @nch: channels per direction
 * @desc_pool: 4 KiB descriptor pages
 * @card_size: card address space checked by transfers, 0 = unknown
 * @caps: FPGAGDR_CAP_* bits
 * @platform: enum fpgagdr_platform
 * @gone: set once when the card is removed or shut down; new work and
 *	work in flight end -ENODEV
 * @link_down: a PCIe error is being recovered; work ends -EIO
 * @link_frozen: that error froze the link (or failed it for good): the
 *	card's registers are not to be touched until the reset
 * @fence_lock: serialises bus mastering changes
 * @fenced: bus mastering is off because an engine was not seen stopped
 * @dma_lock: held for reading while DMA mappings or descriptor memory of
 *	the card are made or released, for writing when removal releases
 *	them all
 * @dma_gone: under @dma_lock: the card's DMA resources are released
 * @pins_lock: protects @pins
 * @pins: every struct fpgagdr_pinned of the card
 * @stats: counters
 * @ctl_cdev: the control node
 * @ctl: the control node's device
 * @dbg: debugfs directory
 * @frames: frame capture (fpgagdr-frames.c)
 */
struct fpgagdr_dev {
	struct kref ref;
	struct pci_dev *pdev;
	struct device *dev;
	int id;
	bool id_held;
	char name[16];
	struct fpgagdr_engine *eng[2][XDMA_MAX_CHANNELS];
	u32 nch[2];
	struct dma_pool *desc_pool;
	u64 card_size;
	u32 caps;
	u32 platform;
	bool gone;
	bool link_down;
	bool link_frozen;
	struct mutex fence_lock;	/* bus mastering */
	bool fenced;
	struct rw_semaphore dma_lock;
	bool dma_gone;
	struct mutex pins_lock;		/* pins */
	struct list_head pins;
	struct fpgagdr_stats stats;
	struct cdev *ctl_cdev;
	struct device *ctl;
	struct dentry *dbg;
	struct fpgagdr_frames frames;
};

int fpgagdr_dev_init(void);
void fpgagdr_dev_exit(void);
extern struct class *fpgagdr_class;
dev_t fpgagdr_dev_devt(const struct fpgagdr_dev *fdev, u32 node);
struct fpgagdr_dev *fpgagdr_dev_alloc(struct pci_dev *pdev);
int fpgagdr_dev_add_engine(struct fpgagdr_dev *fdev, u32 dir, u32 index,
			   const struct fpgagdr_engine_ops *ops, void *priv,
			   bool use_irq, u32 addr_align, u32 len_gran);
void fpgagdr_dev_publish(struct fpgagdr_dev *fdev);
void fpgagdr_dev_unpublish(struct fpgagdr_dev *fdev);
void fpgagdr_dev_free_dma(struct fpgagdr_dev *fdev);
struct fpgagdr_dev *fpgagdr_dev_get_by_minor(unsigned int minor, u32 *node);
void fpgagdr_dev_get(struct fpgagdr_dev *fdev);
void fpgagdr_dev_put(struct fpgagdr_dev *fdev);
void fpgagdr_dev_wake_engines(struct fpgagdr_dev *fdev);
struct fpgagdr_engine *fpgagdr_dev_engine(struct fpgagdr_dev *fdev, u32 dir,
					  u32 channel);
u32 fpgagdr_dev_node(const struct fpgagdr_engine *eng);

int fpgagdr_engine_claim(struct fpgagdr_engine *eng, const void *owner,
			 struct fpgagdr_pinned *pin, ktime_t deadline);
void fpgagdr_engine_release(struct fpgagdr_engine *eng);
int fpgagdr_engine_exec(struct fpgagdr_engine *eng,
			const struct fpgagdr_chain *chain,
			struct fpgagdr_pinned *pin, ktime_t deadline, u64 *ns);
void fpgagdr_engine_complete(struct fpgagdr_engine *eng);
int fpgagdr_engine_request_abort(struct fpgagdr_engine *eng,
				 const void *owner);
bool fpgagdr_engine_hold(struct fpgagdr_engine *eng, unsigned int wait_ms);
bool fpgagdr_engine_stop_held(struct fpgagdr_engine *eng);
void fpgagdr_engine_fence(struct fpgagdr_dev *fdev, const char *why);
void fpgagdr_engine_unfence_reset(struct fpgagdr_dev *fdev);

void fpgagdr_debugfs_init(void);
void fpgagdr_debugfs_exit(void);
struct dentry *fpgagdr_debugfs_dir(void);
void fpgagdr_debugfs_add(struct fpgagdr_dev *fdev);
void fpgagdr_debugfs_remove(struct fpgagdr_dev *fdev);

#endif /* FPGAGDR_CORE_H */
