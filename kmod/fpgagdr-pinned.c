// SPDX-License-Identifier: GPL-2.0
/*
 * A pinned buffer: its lifetime, its revocation, and the DMA API's rules
 * for a mapping that lives across many runs.
 *
 * Lifetime.  A struct fpgagdr_pinned is reference counted: the handle
 * table holds one reference, each transfer using it holds one.  The memory
 * is released by whoever drops the last reference, in process context, or
 * earlier by the card's removal (the device's DMA state, an IOMMU domain
 * among it, does not outlive remove()).  A transfer owns the pin's chain
 * while it holds FPGAGDR_PIN_BUSY; UNPIN, release(), the NVIDIA free
 * callback and removal set FPGAGDR_PIN_DYING, which cancels that transfer
 * (also while it waits for its engine), and wait for BUSY to clear before
 * the memory goes, so the card never writes memory that was given back.
 *
 * That wait is bounded (FPGAGDR_REVOKE_WAIT_MS): the transfer only has to
 * notice, stop its engine (at most FPGAGDR_STOP_BUDGET_US) and let go.  A
 * transfer that does not within it (its thread not scheduled, an engine
 * that would not stop) gets the card fenced: bus mastering off, so nothing
 * the card does can reach the memory.
 *
 * DMA sync.  Mappings made once and used for many runs belong to the
 * device only during a run: each run is bracketed by syncs for the device
 * and for the CPU over exactly the bytes it moves, in its direction
 * (fpgagdr-dmasync.c).  That is what makes bounce buffers (swiotlb),
 * non-coherent arm64 and encrypted-memory guests see the right bytes.  A
 * C2H run that failed is not synced back: the card may have written none
 * of its bytes, and a bounce buffer's stale bytes must not overwrite what
 * the CPU wrote.
 */
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "fpgagdr-dmasync.h"
#include "fpgagdr-pinned.h"

/*
 * How long a revocation waits for the transfer on the pin to let go: the
 * stop budget plus time for the woken thread to run.  The NVIDIA free
 * callback holds NVIDIA's lock for at most this long (docs).
 */
#define FPGAGDR_REVOKE_WAIT_MS	(FPGAGDR_STOP_BUDGET_US / 1000 + 250)

/**
 * fpgagdr_pinned_new() - a pin object, not yet mapped
 * @fdev: the card, referenced for the pin
 * @mem: the back-end
 * @addr: the user's address or dma-buf offset
 * @len: bytes
 *
 * Charged to the caller's memory cgroup.
 *
 * Context: process context.
 * Return: the pin with one reference, or NULL.
 */
struct fpgagdr_pinned *fpgagdr_pinned_new(struct fpgagdr_dev *fdev,
					  const struct fpgagdr_mem_ops *mem,
					  u64 addr, u64 len)
{
	struct fpgagdr_pinned *pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);

	if (!pin)
		return NULL;
	kref_init(&pin->ref);
	init_waitqueue_head(&pin->wq);
	INIT_LIST_HEAD(&pin->node);
	fpgagdr_dev_get(fdev);
	pin->fdev = fdev;
	pin->mem = mem;
	pin->addr = addr;
	pin->len = len;
	atomic64_inc(&fdev->stats.pins);
	return pin;
}

/* Give the memory back, once; the card's @dma_lock is held. */
static void fpgagdr_pinned_release(struct fpgagdr_pinned *pin)
{
	if (test_and_set_bit(FPGAGDR_PIN_RELEASED, &pin->flags))
		return;
	if (pin->mem_priv)
		pin->mem->unpin(pin);
	pin->sgt = NULL;
	fpgagdr_descmem_free(&pin->desc);
}

/**
 * fpgagdr_pinned_map() - pin and map the memory, keep exactly the buffer
 * @pin: from fpgagdr_pinned_new()
 * @args: the PIN request
 *
 * The back-end's @prepare (waiting on user space, if it must) runs first
 * and alone; its mapping for the device runs with the card's @dma_lock
 * held and the card present, so that removal either waits for it or finds
 * it on the card's list and releases it.
 *
 * Context: process context; sleeps.
 * Return: 0 or the back-end's errno; -ENODEV when the card was removed.
 */
int fpgagdr_pinned_map(struct fpgagdr_pinned *pin,
		       const struct fpgagdr_pin *args)
{
	struct fpgagdr_dev *fdev = pin->fdev;
	struct fpgagdr_span span;
	u64 ndesc;
	int ret;

	ret = fpgagdr_pin_span(args->addr, args->length, FPGAGDR_PIN_ALIGN,
			       pin->mem->page_size, FPGAGDR_PIN_MAX_BYTES,
			       &span);
	if (ret)
		return ret;
	if (pin->mem->prepare) {
		ret = pin->mem->prepare(pin, args, &span);
		if (ret)
			return ret;
	}
	down_read(&fdev->dma_lock);
	if (fdev->dma_gone || READ_ONCE(fdev->gone)) {
		ret = -ENODEV;
		goto unlock;
	}
	ret = pin->mem->pin(pin, args, &span);
	if (ret)
		goto unlock;
	pin->nsegs = fpgagdr_sg_merge(pin->segs, pin->nsegs,
				      dma_get_max_seg_size(fdev->dev));
	ret = fpgagdr_sg_clip(pin->segs, pin->nsegs, pin->head, pin->len,
			      &pin->nsegs);
	if (ret)
		goto unlock;
	ndesc = fpgagdr_desc_count(pin->segs, pin->nsegs, 0, pin->len,
				   FPGAGDR_DESC_MAX_LEN);
	ret = fpgagdr_descmem_alloc(&pin->desc, fdev->desc_pool, ndesc);
	if (ret)
		goto unlock;
	mutex_lock(&fdev->pins_lock);
	list_add_tail(&pin->node, &fdev->pins);
	mutex_unlock(&fdev->pins_lock);
unlock:
	if (ret)
		fpgagdr_pinned_release(pin);
	up_read(&fdev->dma_lock);
	return ret;
}

static void fpgagdr_pinned_free(struct kref *ref)
{
	struct fpgagdr_pinned *pin = container_of(ref, struct fpgagdr_pinned,
						  ref);
	struct fpgagdr_dev *fdev = pin->fdev;

	WARN_ON_ONCE(test_bit(FPGAGDR_PIN_BUSY, &pin->flags));
	down_read(&fdev->dma_lock);
	fpgagdr_pinned_release(pin);
	up_read(&fdev->dma_lock);
	mutex_lock(&fdev->pins_lock);
	list_del(&pin->node);
	mutex_unlock(&fdev->pins_lock);
	kvfree(pin->segs);
	kfree(pin);
	atomic64_dec(&fdev->stats.pins);
	fpgagdr_dev_put(fdev);
}

/**
 * fpgagdr_pinned_get() - take a reference
 * @pin: the pin, referenced by the caller (or found under a lock that
 *	keeps its table's reference)
 *
 * Context: any.
 */
void fpgagdr_pinned_get(struct fpgagdr_pinned *pin)
{
	kref_get(&pin->ref);
}

/**
 * fpgagdr_pinned_put() - drop a reference; the last releases the memory
 * @pin: the pin
 *
 * Context: process context.
 */
void fpgagdr_pinned_put(struct fpgagdr_pinned *pin)
{
	kref_put(&pin->ref, fpgagdr_pinned_free);
}

/**
 * fpgagdr_pinned_revoke() - stop all DMA into a pin and keep it stopped
 * @pin: the pin
 *
 * Sets FPGAGDR_PIN_DYING, wakes the engines so that a transfer in flight
 * on the pin, or waiting for its engine, sees it, and waits until no
 * transfer owns the pin.  Bounded by FPGAGDR_REVOKE_WAIT_MS; past it the
 * card is fenced (bus mastering off), so on return no run can touch the
 * memory either way.  Takes no lock: the NVIDIA free callback calls this
 * with NVIDIA's lock held.
 *
 * Context: process context; sleeps up to FPGAGDR_REVOKE_WAIT_MS.
 */
void fpgagdr_pinned_revoke(struct fpgagdr_pinned *pin)
{
	set_bit(FPGAGDR_PIN_DYING, &pin->flags);
	/*
	 * Order DYING before reading BUSY; fpgagdr_transfer() orders BUSY
	 * before reading DYING.  Either it sees DYING, or we see BUSY.
	 */
	smp_mb__after_atomic();
	fpgagdr_dev_wake_engines(pin->fdev);
	if (!wait_event_timeout(pin->wq,
				!test_bit(FPGAGDR_PIN_BUSY, &pin->flags),
				msecs_to_jiffies(FPGAGDR_REVOKE_WAIT_MS))) {
		struct fpgagdr_engine *eng = READ_ONCE(pin->eng);

		/* the fence stays until that engine is seen stopped */
		if (eng)
			set_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
		fpgagdr_engine_fence(pin->fdev,
				     "a transfer did not let go of a revoked pin");
	}
}

/**
 * fpgagdr_pinned_sync() - hand a run's bytes to the device or back
 * @pin: the pin, owned by the caller's transfer (FPGAGDR_PIN_BUSY)
 * @x: the run: its direction and its range of the buffer
 * @for_device: before the run (true) or after it
 *
 * Syncs exactly [head + offset, head + offset + len) of the back-end's
 * DMA API mapping, C2H as DMA_FROM_DEVICE, H2C as DMA_TO_DEVICE, one
 * piece per CPU-side entry and DMA segment (fpgagdr-dmasync.c: an IOMMU's
 * merged segment spans entries that are not physically contiguous).
 * Nothing to do for memory the DMA API did not map (nvidia_p2p BAR
 * addresses) or whose mapping needs no sync (a dma-buf on a coherent card
 * without bounce buffers).
 *
 * Context: process context.
 */
void fpgagdr_pinned_sync(struct fpgagdr_pinned *pin,
			 const struct fpgagdr_xfer *x, bool for_device)
{
	if (!pin->sgt)
		return;
	fpgagdr_dma_sync_range(pin->fdev->dev, pin->sgt, pin->head + x->offset,
			       x->len, x->c2h ? DMA_FROM_DEVICE : DMA_TO_DEVICE,
			       for_device);
}

/**
 * fpgagdr_pinned_release_all() - removal: revoke every pin, release all
 * @fdev: the card, gone, its engines held and stopped (or the card fenced)
 *
 * Every pin of the card is revoked (a transfer on it ends) and its memory
 * and mappings released while the device is still bound; the pin objects
 * live on in their files until UNPIN or close, which then release
 * nothing.  Then the card's own DMA resources go.
 *
 * Context: process context (remove()).
 */
void fpgagdr_pinned_release_all(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_pinned *pin;

	/* no pin is added after this: mapping checks the card under it */
	down_write(&fdev->dma_lock);
	mutex_lock(&fdev->pins_lock);
	list_for_each_entry(pin, &fdev->pins, node) {
		set_bit(FPGAGDR_PIN_DYING, &pin->flags);
		/* DYING before reading BUSY, as fpgagdr_pinned_revoke() */
		smp_mb__after_atomic();
		/* transfers end at once: the card is gone */
		wait_event(pin->wq, !test_bit(FPGAGDR_PIN_BUSY, &pin->flags));
		fpgagdr_pinned_release(pin);
	}
	mutex_unlock(&fdev->pins_lock);
	fpgagdr_dev_free_dma(fdev);
	up_write(&fdev->dma_lock);
}
