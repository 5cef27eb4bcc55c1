// SPDX-License-Identifier: GPL-2.0
/*
 * The per-file handle table of the control node, and the work of PIN,
 * UNPIN and TRANSFER on it.
 *
 * Locking.  The table is an xarray and its xa_lock is the only lock here;
 * no back-end call is made under it.  A pin's own rules (lifetime,
 * revocation, DMA sync) are in fpgagdr-pinned.c.
 */
#include <linux/ktime.h>
#include <linux/slab.h>

#include "fpgagdr-pinned.h"

/**
 * fpgagdr_file_init() - set up the handle table of an open control node
 * @f: the file's state
 * @fdev: the card, referenced by the caller for @f
 * @owner: the open file (ABORT stops only its transfers)
 *
 * Context: process context.
 */
void fpgagdr_file_init(struct fpgagdr_file *f, struct fpgagdr_dev *fdev,
		       const void *owner)
{
	f->fdev = fdev;
	f->owner = owner;
	xa_init_flags(&f->pins, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	f->next = 1;
	atomic_set(&f->npins, 0);
}

/* Remove a pin from the table's ownership: cancel, wait, drop the ref. */
static void fpgagdr_pin_retire(struct fpgagdr_pinned *pin)
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
		fpgagdr_pin_retire(pin);
	}
	xa_destroy(&f->pins);
}

/*
 * PIN answers only the errnos of the uapi header's table; an error of
 * the kernel's that is not there (a failed mapping, an internal code)
 * becomes EIO, and the kernel log says which it was.
 */
static int fpgagdr_pin_errno(struct fpgagdr_dev *fdev, int ret)
{
	switch (ret) {
	case -EINVAL:
	case -EFAULT:
	case -EBADF:
	case -EOPNOTSUPP:
	case -E2BIG:
	case -EOVERFLOW:
	case -ENOSPC:
	case -ENOMEM:
	case -ESTALE:
	case -ENODEV:
	case -EINTR:
	case -EIO:
		return ret;
	case -ERESTARTSYS:
		return -EINTR;
	default:
		dev_info(fdev->dev, "%s: PIN failed with %d: EIO\n", fdev->name,
			 ret);
		return -EIO;
	}
}

/**
 * fpgagdr_pin() - the PIN ioctl
 * @f: the file's state
 * @args: checked for version, flags and padding by the caller; handle,
 *	segments, page_size and method are filled in
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
	pin = fpgagdr_pinned_new(fdev, mem, args->addr, args->length);
	if (!pin) {
		ret = -ENOMEM;
		goto dec_npins;
	}
	ret = fpgagdr_pinned_map(pin, args);
	if (ret)
		goto put_pin;
	ret = xa_alloc_cyclic(&f->pins, &handle, pin, XA_LIMIT(1, U32_MAX),
			      &f->next, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto put_pin;
	if (ret == 1)
		WRITE_ONCE(f->wrapped, true);

	atomic64_inc(&fdev->stats.pins_total);
	args->handle = handle;
	args->segments = pin->nsegs;
	args->page_size = mem->page_size;
	args->method = pin->method;
	dev_dbg(fdev->dev, "%s: pin %u: %s %#llx+%#llx, %u segments\n",
		fdev->name, handle, mem->name, args->addr, args->length,
		pin->nsegs);
	return 0;

put_pin:
	fpgagdr_pinned_put(pin);
dec_npins:
	atomic_dec(&f->npins);
	return fpgagdr_pin_errno(fdev, ret);
}

/**
 * fpgagdr_unpin() - the UNPIN ioctl
 * @f: the file's state
 * @handle: handle from PIN
 *
 * The handle is gone at once.  A transfer on it, in flight or waiting for
 * its engine, is cancelled and waited for; on return no run can touch the
 * memory any more, and the memory is released (unless a transfer did not
 * let go within the revocation's bound: then the card was fenced and the
 * transfer releases the memory as it drops its reference).
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
	fpgagdr_pin_retire(pin);
	return 0;
}

static struct fpgagdr_pinned *fpgagdr_pin_lookup(struct fpgagdr_file *f,
						 u32 handle)
{
	struct fpgagdr_pinned *pin;

	xa_lock(&f->pins);
	pin = xa_load(&f->pins, handle);
	if (pin)
		fpgagdr_pinned_get(pin);
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
static int fpgagdr_pin_chain(struct fpgagdr_pinned *pin,
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

static int fpgagdr_pin_run(struct fpgagdr_file *f, struct fpgagdr_engine *eng,
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
	ktime_t deadline = ktime_add_ms(ktime_get(), t->timeout_ms);
	int ret;

	ret = fpgagdr_xfer_check(&rules, t->offset, t->card_addr, t->length);
	if (ret)
		return ret;
	ret = fpgagdr_pin_chain(pin, &x);
	if (ret)
		return ret;
	ret = fpgagdr_engine_claim(eng, f->owner, pin, deadline);
	if (ret)
		return ret;
	WRITE_ONCE(pin->eng, eng);
	fpgagdr_pinned_sync(pin, &x, true);
	ret = fpgagdr_engine_exec(eng, &pin->chain, pin, deadline,
				  &t->duration_ns);
	/*
	 * The engine is seen stopped (or the card fenced): the CPU's turn.
	 * Not for a failed C2H: bytes the card never wrote would be copied
	 * from a bounce buffer over what the CPU wrote since the last run.
	 */
	if (!ret || !x.c2h)
		fpgagdr_pinned_sync(pin, &x, false);
	WRITE_ONCE(pin->eng, NULL);
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
	pin = fpgagdr_pin_lookup(f, t->handle);
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
	else if (READ_ONCE(f->fdev->gone))
		ret = -ENODEV;
	else if (test_bit(FPGAGDR_PIN_DYING, &pin->flags))
		ret = -ENOENT;
	else
		ret = fpgagdr_pin_run(f, eng, pin, t);

	clear_bit_unlock(FPGAGDR_PIN_BUSY, &pin->flags);
	wake_up_all(&pin->wq);
put_pin:
	fpgagdr_pinned_put(pin);
	return ret;
}
