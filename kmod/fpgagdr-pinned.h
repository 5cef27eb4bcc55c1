/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pinned buffers and the memory back-ends behind them (fpgagdr-pinned.c,
 * fpgagdr-mem*.c), and the per-file handle table of the control node
 * (fpgagdr-pin.c).
 */
#ifndef FPGAGDR_PINNED_H
#define FPGAGDR_PINNED_H

#include <linux/xarray.h>

#include "fpgagdr-core.h"

struct sg_table;

/* Bits of fpgagdr_pinned.flags */
enum {
	FPGAGDR_PIN_BUSY,	/* a transfer owns the pin and its chain */
	FPGAGDR_PIN_DYING,	/* unpinned, revoked or card removed: start nothing */
	FPGAGDR_PIN_REVOKED,	/* the NVIDIA free callback took the memory */
	FPGAGDR_PIN_RELEASED,	/* the memory and its mappings are given back */
};

/**
 * struct fpgagdr_mem_ops - a memory back-end
 * @kind: enum fpgagdr_mem_kind
 * @name: for messages and debugfs
 * @page_size: granule the back-end pins in
 * @prepare: optional: the part of pinning that may wait on user space
 *	(faulting user pages in, userfaultfd); no device access.  Called
 *	without the card's @dma_lock.  On success mem_priv is set; on
 *	failure it cleans up after itself and leaves mem_priv NULL.
 * @pin: map the memory of @args over @span for the card (after @prepare);
 *	fill @pin's segs, nsegs (covering whole pages) and head (offset of
 *	the buffer in them), and sgt where the DMA API mapped it and
 *	transfers must sync it.  Called with the card's @dma_lock held for
 *	reading and the card present; bounded in time.  On failure the
 *	mapping part is undone; whatever mem_priv holds, @unpin frees.
 * @unpin: give back everything mem_priv holds (called only when it is
 *	set); safe against the back-end's own revocation path
 */
struct fpgagdr_mem_ops {
	u32 kind;
	const char *name;
	u32 page_size;
	int (*prepare)(struct fpgagdr_pinned *pin,
		       const struct fpgagdr_pin *args,
		       const struct fpgagdr_span *span);
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

const struct fpgagdr_mem_ops *fpgagdr_mem_ops(u32 kind);
u32 fpgagdr_mem_kinds(void);
u32 fpgagdr_mem_platform(void);

/**
 * struct fpgagdr_pinned - one pinned, mapped buffer and its chain
 * @ref: one reference from the handle table, one per transfer using it
 * @fdev: the card whose device the memory is mapped for, referenced
 * @node: in the card's @pins
 * @mem: back-end
 * @mem_priv: back-end data
 * @addr: user address or dma-buf offset the user gave
 * @len: bytes in the buffer
 * @head: offset of the buffer in the back-end's first segment
 * @segs: bus segments, clipped to exactly the buffer
 * @nsegs: entries in @segs
 * @sgt: the DMA API's mapping of the back-end's pages, which transfers
 *	sync around each run; NULL where there is nothing to sync
 * @eng: the engine a transfer on the pin holds, or NULL (a revocation
 *	that times out marks it wedged)
 * @desc: descriptor memory sized for the whole buffer
 * @key: the transfer @chain was built for
 * @chain: the last chain built, replayed when @key matches
 * @chain_valid: @chain and @key are meaningful
 * @flags: FPGAGDR_PIN_* bits
 * @wq: woken when FPGAGDR_PIN_BUSY clears
 *
 * @key, @chain and @chain_valid belong to whoever holds FPGAGDR_PIN_BUSY.
 * The memory (@mem_priv, the mappings, @desc) is released once, by the
 * last reference or by the card's removal, whichever comes first
 * (FPGAGDR_PIN_RELEASED); the struct lives until the last reference.
 */
struct fpgagdr_pinned {
	struct kref ref;
	struct fpgagdr_dev *fdev;
	struct list_head node;
	const struct fpgagdr_mem_ops *mem;
	void *mem_priv;
	u64 addr;
	u64 len;
	u64 head;
	struct fpgagdr_seg *segs;
	u32 nsegs;
	struct sg_table *sgt;
	struct fpgagdr_engine *eng;
	struct fpgagdr_desc_mem desc;
	struct fpgagdr_xfer key;
	struct fpgagdr_chain chain;
	bool chain_valid;
	unsigned long flags;
	wait_queue_head_t wq;
};

struct fpgagdr_pinned *fpgagdr_pinned_new(struct fpgagdr_dev *fdev,
					  const struct fpgagdr_mem_ops *mem,
					  u64 addr, u64 len);
int fpgagdr_pinned_map(struct fpgagdr_pinned *pin,
		       const struct fpgagdr_pin *args);
void fpgagdr_pinned_get(struct fpgagdr_pinned *pin);
void fpgagdr_pinned_put(struct fpgagdr_pinned *pin);
void fpgagdr_pinned_revoke(struct fpgagdr_pinned *pin);
void fpgagdr_pinned_sync(struct fpgagdr_pinned *pin,
			 const struct fpgagdr_xfer *x, bool for_device);
void fpgagdr_pinned_release_all(struct fpgagdr_dev *fdev);

/**
 * struct fpgagdr_file - an open control node
 * @fdev: the card
 * @owner: the open file, which owns the engines its transfers claim
 * @pins: handle -> struct fpgagdr_pinned, each entry holding a reference;
 *	protected by its own xa_lock
 * @next: next handle to issue, advanced by xa_alloc_cyclic() under xa_lock
 * @wrapped: the handle counter wrapped around
 * @npins: entries in @pins
 */
struct fpgagdr_file {
	struct fpgagdr_dev *fdev;
	const void *owner;
	struct xarray pins;
	u32 next;
	bool wrapped;
	atomic_t npins;
};

void fpgagdr_file_init(struct fpgagdr_file *f, struct fpgagdr_dev *fdev,
		       const void *owner);
void fpgagdr_file_release(struct fpgagdr_file *f);
int fpgagdr_pin(struct fpgagdr_file *f, struct fpgagdr_pin *args);
int fpgagdr_unpin(struct fpgagdr_file *f, u32 handle);
int fpgagdr_transfer(struct fpgagdr_file *f, struct fpgagdr_transfer *t);

#endif /* FPGAGDR_PINNED_H */
