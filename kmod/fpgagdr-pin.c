// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned buffers: the per-file handle table, pin and unpin, and transfers
 * into a pinned buffer.
 *
 * Lifetime.  A struct fpgagdr_pinned is reference counted: the handle
 * table holds one reference, each transfer using it holds one.  The memory
 * is unpinned by whoever drops the last reference, in process context.
 * A transfer owns the pin's chain while it holds FPGAGDR_PIN_BUSY; UNPIN,
 * release() and the NVIDIA free callback set FPGAGDR_PIN_DYING, which
 * cancels that transfer, and wait (bounded) for BUSY to clear before the
 * memory goes, so the card never writes memory that was given back.
 *
 * Locking.  The table is an xarray and its xa_lock is the only lock here;
 * no back-end call is made under it.  The NVIDIA free callback takes no
 * lock of ours (see fpgagdr-mem-nvp2p.c for the AB-BA this avoids).
 */
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "fpgagdr-core.h"

static const struct fpgagdr_mem_ops *const fpgagdr_mems[] = {
	[FPGAGDR_MEM_HOST] = &fpgagdr_mem_host_ops,
	[FPGAGDR_MEM_NV_P2P] = FPGAGDR_NVP2P_OPS,
	[FPGAGDR_MEM_DMABUF] = &fpgagdr_mem_dmabuf_ops,
};

/**
 * fpgagdr_mem_ops() - the back-end for a memory kind
 * @kind: enum fpgagdr_mem_kind from user space, unchecked
 *
 * Context: any.
 * Return: the back-end, or NULL when it is not built in.
 */
const struct fpgagdr_mem_ops *fpgagdr_mem_ops(u32 kind)
{
	return kind < ARRAY_SIZE(fpgagdr_mems) ? fpgagdr_mems[kind] : NULL;
}

/**
 * fpgagdr_mem_kinds() - bit mask of the memory kinds built in
 *
 * Context: any.
 * Return: bit (1 << kind) set for each available back-end.
 */
u32 fpgagdr_mem_kinds(void)
{
	u32 kind, mask = 0;

	for (kind = 0; kind < ARRAY_SIZE(fpgagdr_mems); kind++)
		if (fpgagdr_mems[kind])
			mask |= BIT(kind);
	return mask;
}

/**
 * fpgagdr_file_init() - set up the handle table of an open control node
 * @f: the file's state
 * @fdev: the card, referenced by the caller for @f
 *
 * Context: process context.
 */
void fpgagdr_file_init(struct fpgagdr_file *f, struct fpgagdr_dev *fdev)
{
	f->fdev = fdev;
	xa_init_flags(&f->pins, XA_FLAGS_ALLOC1);
	f->next = 1;
	atomic_set(&f->npins, 0);
}

static void fpgagdr_pinned_free(struct kref *ref)
{
	struct fpgagdr_pinned *pin = container_of(ref, struct fpgagdr_pinned,
						  ref);
	struct fpgagdr_dev *fdev = pin->fdev;

	WARN_ON_ONCE(test_bit(FPGAGDR_PIN_BUSY, &pin->flags));
	if (pin->mem_priv)
		pin->mem->unpin(pin);
	fpgagdr_descmem_free(&pin->desc);
	kvfree(pin->segs);
	kfree(pin);
	atomic64_dec(&fdev->stats.pins);
	fpgagdr_dev_put(fdev);
}

static void fpgagdr_pinned_put(struct fpgagdr_pinned *pin)
{
	kref_put(&pin->ref, fpgagdr_pinned_free);
}

/**
 * fpgagdr_pinned_revoke() - stop all DMA into a pin and keep it stopped
 * @pin: the pin
 *
 * Sets FPGAGDR_PIN_DYING, wakes the engines so a transfer in flight sees
 * it and stops, and waits (bounded) until no transfer owns the pin.  Takes
 * no lock: the NVIDIA free callback calls this.
 *
 * Context: process context; sleeps up to FPGAGDR_STOP_WAIT_MS.
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
				msecs_to_jiffies(FPGAGDR_STOP_WAIT_MS)))
		dev_warn(pin->fdev->dev, "fpgagdr%d: transfer outlived its pin's revocation\n",
			 pin->fdev->id);
}

/* Remove a pin from the table's ownership: cancel, wait, drop the ref. */
static void fpgagdr_pinned_retire(struct fpgagdr_pinned *pin)
{
	fpgagdr_pinned_revoke(pin);
	fpgagdr_pinned_put(pin);
}

/**
 * fpgagdr_file_release() - unpin everything an open file still holds
 * @f: the file's state
 *
 * No ioctl can run on @f any more; the NVIDIA free callback may, and is
 * safe against this (it does not touch the table).
 *
 * Context: process context (release()).
 */
void fpgagdr_file_release(struct fpgagdr_file *f)
{
	struct fpgagdr_pinned *pin;
	unsigned long handle;

	xa_for_each(&f->pins, handle, pin) {
		xa_erase(&f->pins, handle);
		fpgagdr_pinned_retire(pin);
	}
	xa_destroy(&f->pins);
}

/* Pin through the back-end, then keep exactly the buffer's bytes. */
static int fpgagdr_pinned_map(struct fpgagdr_pinned *pin,
			      const struct fpgagdr_pin *args)
{
	struct fpgagdr_span span;
	u64 ndesc;
	int ret;

	ret = fpgagdr_pin_span(args->addr, args->length, FPGAGDR_PIN_ALIGN,
			       pin->mem->page_size, FPGAGDR_PIN_MAX_BYTES,
			       &span);
	if (ret)
		return ret;
	ret = pin->mem->pin(pin, args, &span);
	if (ret)
		return ret;
	pin->nsegs = fpgagdr_sg_merge(pin->segs, pin->nsegs);
	ret = fpgagdr_sg_clip(pin->segs, pin->nsegs, pin->head, pin->len,
			      &pin->nsegs);
	if (ret)
		return ret;
	ndesc = fpgagdr_desc_count(pin->segs, pin->nsegs, 0, pin->len,
				   FPGAGDR_DESC_MAX_LEN);
	return fpgagdr_descmem_alloc(&pin->desc, pin->fdev->desc_pool, ndesc);
}

/**
 * fpgagdr_pin() - the PIN ioctl
 * @f: the file's state
 * @args: checked for version, flags and padding by the caller; handle,
 *	segments and page_size are filled in
 *
 * Context: process context; sleeps.
 * Return: 0 or the errno of the rule broken (see the uapi header).
 */
int fpgagdr_pin(struct fpgagdr_file *f, struct fpgagdr_pin *args)
{
	const struct fpgagdr_mem_ops *mem = fpgagdr_mem_ops(args->kind);
	struct fpgagdr_dev *fdev = f->fdev;
	struct fpgagdr_pinned *pin;
	u32 handle;
	int ret;

	if (args->kind > FPGAGDR_MEM_DMABUF)
		return -EINVAL;
	if (!mem)
		return -EOPNOTSUPP;
	if (atomic_inc_return(&f->npins) > FPGAGDR_MAX_PINS_PER_FILE) {
		ret = -ENOSPC;
		goto dec_npins;
	}
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin) {
		ret = -ENOMEM;
		goto dec_npins;
	}
	kref_init(&pin->ref);
	init_waitqueue_head(&pin->wq);
	kref_get(&fdev->ref);
	pin->fdev = fdev;
	pin->mem = mem;
	pin->addr = args->addr;
	pin->len = args->length;
	atomic64_inc(&fdev->stats.pins);

	ret = fpgagdr_pinned_map(pin, args);
	if (ret)
		goto put_pin;
	ret = xa_alloc_cyclic(&f->pins, &handle, pin, XA_LIMIT(1, U32_MAX),
			      &f->next, GFP_KERNEL);
	if (ret < 0)
		goto put_pin;
	if (ret == 1)
		WRITE_ONCE(f->wrapped, true);

	atomic64_inc(&fdev->stats.pins_total);
	args->handle = handle;
	args->segments = pin->nsegs;
	args->page_size = mem->page_size;
	dev_dbg(fdev->dev, "fpgagdr%d: pin %u: %s %#llx+%#llx, %u segments\n",
		fdev->id, handle, mem->name, args->addr, args->length,
		pin->nsegs);
	return 0;

put_pin:
	fpgagdr_pinned_put(pin);
dec_npins:
	atomic_dec(&f->npins);
	return ret;
}

/**
 * fpgagdr_unpin() - the UNPIN ioctl
 * @f: the file's state
 * @handle: handle from PIN
 *
 * The handle is gone at once.  A transfer in flight on it is cancelled
 * and waited for, and the memory is released before this returns (unless
 * the transfer outlives FPGAGDR_STOP_WAIT_MS, when it releases the memory
 * itself as it drops its reference).
 *
 * Context: process context; sleeps.
 * Return: 0, -EALREADY for a handle already unpinned, -ENOENT otherwise.
 */
int fpgagdr_unpin(struct fpgagdr_file *f, u32 handle)
{
	struct fpgagdr_pinned *pin = handle ? xa_erase(&f->pins, handle) : NULL;

	if (!pin)
		return fpgagdr_handle_missing(handle, READ_ONCE(f->next),
					      READ_ONCE(f->wrapped));
	atomic_dec(&f->npins);
	fpgagdr_pinned_retire(pin);
	return 0;
}

static struct fpgagdr_pinned *fpgagdr_pinned_get(struct fpgagdr_file *f,
						 u32 handle)
{
	struct fpgagdr_pinned *pin;

	xa_lock(&f->pins);
	pin = xa_load(&f->pins, handle);
	if (pin)
		kref_get(&pin->ref);
	xa_unlock(&f->pins);
	return pin;
}

static bool fpgagdr_xfer_same(const struct fpgagdr_xfer *a,
			      const struct fpgagdr_xfer *b)
{
	return a->offset == b->offset && a->card_addr == b->card_addr &&
	       a->len == b->len && a->c2h == b->c2h;
}

/* Build the chain unless the one built last time is for the same range. */
static int fpgagdr_pinned_chain(struct fpgagdr_pinned *pin,
				const struct fpgagdr_xfer *x)
{
	struct fpgagdr_stats *st = &pin->fdev->stats;
	int ret;

	if (pin->chain_valid && fpgagdr_xfer_same(&pin->key, x)) {
		atomic64_inc(&st->cache_hits);
		return 0;
	}
	atomic64_inc(&st->cache_misses);
	pin->chain_valid = false;
	ret = fpgagdr_desc_build(&pin->desc.ring, pin->segs, pin->nsegs, x,
				 FPGAGDR_DESC_MAX_LEN, &pin->chain);
	if (ret)
		return ret;
	pin->key = *x;
	pin->chain_valid = true;
	return 0;
}

static int fpgagdr_transfer_pinned(struct fpgagdr_engine *eng,
				   struct fpgagdr_pinned *pin,
				   struct fpgagdr_transfer *t)
{
	struct fpgagdr_xfer_rules rules = {
		.buf_len = pin->len,
		.card_size = eng->fdev->card_size,
		.addr_align = eng->addr_align,
		.len_gran = eng->len_gran,
	};
	struct fpgagdr_xfer x = {
		.offset = t->offset,
		.card_addr = t->card_addr,
		.len = t->length,
		.c2h = t->direction == FPGAGDR_DIR_C2H,
	};
	unsigned long deadline = jiffies + msecs_to_jiffies(t->timeout_ms);
	int ret;

	ret = fpgagdr_xfer_check(&rules, t->offset, t->card_addr, t->length);
	if (ret)
		return ret;
	ret = fpgagdr_pinned_chain(pin, &x);
	if (ret)
		return ret;
	ret = fpgagdr_engine_claim(eng, deadline);
	if (ret)
		return ret;
	ret = fpgagdr_engine_exec(eng, &pin->chain, pin, deadline,
				  &t->duration_ns);
	fpgagdr_engine_release(eng);
	if (!ret)
		t->bytes = t->length;
	return ret;
}

/**
 * fpgagdr_transfer() - the TRANSFER ioctl
 * @f: the file's state
 * @t: checked for version, flags, direction and timeout by the caller;
 *	bytes and duration_ns are filled in
 *
 * No allocation: the chain goes into the pin's descriptor memory, and is
 * not even rebuilt when the range is the one used last time.
 *
 * Context: process context; sleeps, at most until timeout_ms has passed
 * (plus the bounded engine stop).
 * Return: 0 or the errno of the rule broken (see the uapi header).
 */
int fpgagdr_transfer(struct fpgagdr_file *f, struct fpgagdr_transfer *t)
{
	struct fpgagdr_engine *eng;
	struct fpgagdr_pinned *pin;
	int ret;

	eng = fpgagdr_dev_engine(f->fdev, t->direction, t->channel);
	if (!eng)
		return -ECHRNG;
	pin = fpgagdr_pinned_get(f, t->handle);
	if (!pin)
		return -ENOENT;
	if (test_and_set_bit_lock(FPGAGDR_PIN_BUSY, &pin->flags)) {
		ret = -EBUSY;
		goto put_pin;
	}
	/* pairs with the barrier in fpgagdr_pinned_revoke() */
	smp_mb__after_atomic();
	if (test_bit(FPGAGDR_PIN_REVOKED, &pin->flags))
		ret = -ESTALE;
	else if (test_bit(FPGAGDR_PIN_DYING, &pin->flags))
		ret = -ENOENT;
	else
		ret = fpgagdr_transfer_pinned(eng, pin, t);

	clear_bit_unlock(FPGAGDR_PIN_BUSY, &pin->flags);
	wake_up_all(&pin->wq);
put_pin:
	fpgagdr_pinned_put(pin);
	return ret;
}
