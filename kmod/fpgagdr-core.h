/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fpgagdr internal interfaces: the device, its engines, pinned buffers and
 * memory back-ends.  One concern per file:
 *
 *   fpgagdr-main.c     module init/exit, parameters, device numbers, class
 *   fpgagdr-dev.c      device lifetime, nodes, engine registration
 *   fpgagdr-engine.c   engine claim, run, bounded wait, abort (generic)
 *   fpgagdr-xdma.c     the XDMA engine: registers, interrupts, discovery
 *   fpgagdr-pci.c      the PCI driver
 *   fpgagdr-descmem.c  descriptor memory (dma_pool pages)
 *   fpgagdr-pin.c      pinned buffers, per-file handle table, transfers
 *   fpgagdr-ioctl.c    the control node: ioctl decoding and checks
 *   fpgagdr-rw.c       the channel nodes: read/write to CPU memory
 *   fpgagdr-mem-*.c    memory back-ends (host, nvidia_p2p, dma-buf)
 *   fpgagdr-debugfs.c  counters and engine state in debugfs
 *   fpgagdr-desc.c, fpgagdr-sg.c, fpgagdr-pinmath.c: pure logic
 */
#ifndef FPGAGDR_CORE_H
#define FPGAGDR_CORE_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <uapi/linux/fpgagdr.h>

#include "fpgagdr-desc.h"
#include "fpgagdr-pinmath.h"
#include "fpgagdr-sg.h"

#define FPGAGDR_MAX_DEVS	32
/* Minors per card: control node, 4 H2C and 4 C2H channel nodes. */
#define FPGAGDR_NODES		(1 + 2 * XDMA_MAX_CHANNELS)
#define FPGAGDR_PIN_ALIGN	4096U
/* Upper bound on stopping an engine or retiring a pin, in ms. */
#define FPGAGDR_STOP_WAIT_MS	5000U
/* Pages the channel nodes DMA per step; sizes the per-engine ring. */
#define FPGAGDR_RW_CHUNK_PAGES	1024U

struct dentry;
struct dma_pool;
struct fpgagdr_dev;
struct fpgagdr_engine;
struct fpgagdr_pinned;

extern struct class *fpgagdr_class;
extern dev_t fpgagdr_devt;
extern struct dentry *fpgagdr_debugfs_root;
extern unsigned int fpgagdr_poll_us;
extern unsigned int fpgagdr_rw_timeout_ms;
extern unsigned long long fpgagdr_card_size;

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
 * @stop: stop the engine and clear its status, bounded in time; 0 when it
 *	is idle, -EIO when it would not stop.  Called after every run, and
 *	to abort one.
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
	FPGAGDR_ENG_ABORT,	/* ABORT asked for */
	FPGAGDR_ENG_WEDGED,	/* did not stop; stop again before use */
	FPGAGDR_ENG_DEAD,	/* device removed; claims fail */
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
 * @wq: woken on completion, abort and device removal
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
};

/**
 * struct fpgagdr_dev - one card (or one test-only software card)
 * @ref: references: the driver, open files, pins
 * @dev: the device that does DMA (the PCI function)
 * @id: N in /dev/fpgagdrN
 * @eng: engines by direction and channel, NULL where absent
 * @nch: channels per direction
 * @desc_pool: 4 KiB descriptor pages
 * @card_size: card address space checked by transfers, 0 = unknown
 * @caps: FPGAGDR_CAP_* bits
 * @platform: enum fpgagdr_platform
 * @gone: set once by fpgagdr_dev_unregister(); new work fails -ENODEV
 * @stats: counters
 * @ctl_cdev: the control node
 * @ctl: the control node's device
 * @dbg: debugfs directory
 */
struct fpgagdr_dev {
	struct kref ref;
	struct device *dev;
	int id;
	struct fpgagdr_engine *eng[2][XDMA_MAX_CHANNELS];
	u32 nch[2];
	struct dma_pool *desc_pool;
	u64 card_size;
	u32 caps;
	u32 platform;
	bool gone;
	struct fpgagdr_stats stats;
	struct cdev *ctl_cdev;
	struct device *ctl;
	struct dentry *dbg;
};

struct fpgagdr_dev *fpgagdr_dev_alloc(struct device *dev);
int fpgagdr_dev_add_engine(struct fpgagdr_dev *fdev, u32 dir, u32 index,
			   const struct fpgagdr_engine_ops *ops, void *priv,
			   bool use_irq, u32 addr_align, u32 len_gran);
int fpgagdr_dev_register(struct fpgagdr_dev *fdev);
void fpgagdr_dev_unregister(struct fpgagdr_dev *fdev);
struct fpgagdr_dev *fpgagdr_dev_get_by_minor(unsigned int minor);
void fpgagdr_dev_put(struct fpgagdr_dev *fdev);
void fpgagdr_dev_wake_engines(struct fpgagdr_dev *fdev);
struct fpgagdr_engine *fpgagdr_dev_engine(struct fpgagdr_dev *fdev, u32 dir,
					  u32 channel);

int fpgagdr_engine_claim(struct fpgagdr_engine *eng, unsigned long deadline);
void fpgagdr_engine_release(struct fpgagdr_engine *eng);
int fpgagdr_engine_exec(struct fpgagdr_engine *eng,
			const struct fpgagdr_chain *chain,
			struct fpgagdr_pinned *pin, unsigned long deadline,
			u64 *ns);
void fpgagdr_engine_complete(struct fpgagdr_engine *eng);
int fpgagdr_engine_abort(struct fpgagdr_engine *eng);
int fpgagdr_engine_request_abort(struct fpgagdr_engine *eng);
void fpgagdr_engine_quiesce(struct fpgagdr_engine *eng);

/* Bits of fpgagdr_pinned.flags */
enum {
	FPGAGDR_PIN_BUSY,	/* a transfer owns the pin and its chain */
	FPGAGDR_PIN_DYING,	/* unpinned or revoked: stop, start nothing */
	FPGAGDR_PIN_REVOKED,	/* the NVIDIA free callback took the memory */
};

/**
 * struct fpgagdr_mem_ops - a memory back-end
 * @kind: enum fpgagdr_mem_kind
 * @name: for messages and debugfs
 * @page_size: granule the back-end pins in
 * @pin: pin and map the memory of @args over @span; fill @pin's segs,
 *	nsegs (covering whole pages) and head (offset of the buffer in them)
 * @unpin: undo @pin; safe against the back-end's own revocation path
 */
struct fpgagdr_mem_ops {
	u32 kind;
	const char *name;
	u32 page_size;
	int (*pin)(struct fpgagdr_pinned *pin, const struct fpgagdr_pin *args,
		   const struct fpgagdr_span *span);
	void (*unpin)(struct fpgagdr_pinned *pin);
};

extern const struct fpgagdr_mem_ops fpgagdr_mem_host_ops;
extern const struct fpgagdr_mem_ops fpgagdr_mem_dmabuf_ops;
#ifdef FPGAGDR_WITH_NVP2P
extern const struct fpgagdr_mem_ops fpgagdr_mem_nvp2p_ops;
#define FPGAGDR_NVP2P_OPS	(&fpgagdr_mem_nvp2p_ops)
bool fpgagdr_nvp2p_persistent(void);
#else
#define FPGAGDR_NVP2P_OPS	NULL
static inline bool fpgagdr_nvp2p_persistent(void) { return false; }
#endif

/**
 * struct fpgagdr_pinned - one pinned, mapped buffer and its chain
 * @ref: one reference from the handle table, one per transfer using it
 * @fdev: the card whose device the memory is mapped for
 * @mem: back-end
 * @mem_priv: back-end data
 * @addr: user address or dma-buf offset the user gave
 * @len: bytes in the buffer
 * @head: offset of the buffer in the back-end's first segment
 * @segs: bus segments, clipped to exactly the buffer
 * @nsegs: entries in @segs
 * @desc: descriptor memory sized for the whole buffer
 * @key: the transfer @chain was built for
 * @chain: the last chain built, replayed when @key matches
 * @chain_valid: @chain and @key are meaningful
 * @flags: FPGAGDR_PIN_* bits
 * @wq: woken when FPGAGDR_PIN_BUSY clears
 *
 * @key, @chain and @chain_valid belong to whoever holds FPGAGDR_PIN_BUSY.
 */
struct fpgagdr_pinned {
	struct kref ref;
	struct fpgagdr_dev *fdev;
	const struct fpgagdr_mem_ops *mem;
	void *mem_priv;
	u64 addr;
	u64 len;
	u64 head;
	struct fpgagdr_seg *segs;
	u32 nsegs;
	struct fpgagdr_desc_mem desc;
	struct fpgagdr_xfer key;
	struct fpgagdr_chain chain;
	bool chain_valid;
	unsigned long flags;
	wait_queue_head_t wq;
};

/**
 * struct fpgagdr_file - an open control node
 * @fdev: the card
 * @pins: handle -> struct fpgagdr_pinned, each entry holding a reference;
 *	protected by its own xa_lock
 * @next: next handle to issue, advanced by xa_alloc_cyclic() under xa_lock
 * @wrapped: the handle counter wrapped around
 * @npins: entries in @pins
 */
struct fpgagdr_file {
	struct fpgagdr_dev *fdev;
	struct xarray pins;
	u32 next;
	bool wrapped;
	atomic_t npins;
};

const struct fpgagdr_mem_ops *fpgagdr_mem_ops(u32 kind);
u32 fpgagdr_mem_kinds(void);
void fpgagdr_file_init(struct fpgagdr_file *f, struct fpgagdr_dev *fdev);
void fpgagdr_file_release(struct fpgagdr_file *f);
int fpgagdr_pin(struct fpgagdr_file *f, struct fpgagdr_pin *args);
int fpgagdr_unpin(struct fpgagdr_file *f, u32 handle);
int fpgagdr_transfer(struct fpgagdr_file *f, struct fpgagdr_transfer *t);
void fpgagdr_pinned_revoke(struct fpgagdr_pinned *pin);

int fpgagdr_pci_register(void);
void fpgagdr_pci_unregister(void);

/*
 * A test-only software card (issue 5) plugs in here: built only with
 * FPGAGDR_TEST_ENGINE=y, it registers a card whose engines execute the
 * real descriptor chains in software.
 */
#ifdef FPGAGDR_WITH_TEST_ENGINE
int fpgagdr_testeng_register(void);
void fpgagdr_testeng_unregister(void);
#else
static inline int fpgagdr_testeng_register(void) { return 0; }
static inline void fpgagdr_testeng_unregister(void) { }
#endif

extern const struct file_operations fpgagdr_ctl_fops;
extern const struct file_operations fpgagdr_chan_fops;

void fpgagdr_debugfs_add(struct fpgagdr_dev *fdev);
void fpgagdr_debugfs_remove(struct fpgagdr_dev *fdev);

#endif /* FPGAGDR_CORE_H */
