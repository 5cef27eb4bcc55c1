// SPDX-License-Identifier: GPL-2.0
/*
 * Running a descriptor chain on an engine, whatever the engine is: claim,
 * start, a wait that is always bounded and always cancellable, and a stop
 * that leaves the engine ready for the next transfer.
 *
 * No memory is released behind an engine that has not been seen stopped.
 * An engine stop is bounded by FPGAGDR_STOP_BUDGET_US (the descriptor in
 * flight drained at the slowest link).  An engine that is not seen idle
 * within it is marked wedged, and the card stops mastering the bus (the
 * function's Bus Master Enable bit, which the PCIe specification makes the
 * function obey) before anyone may release the memory the engine was
 * pointed at.  Bus mastering comes back when every engine of the card has
 * been seen stopped.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>

#include "fpgagdr-pinned.h"

/* Upper bound of poll_us: polling is never a long sleep. */
#define FPGAGDR_POLL_US_MAX	1000

static unsigned int fpgagdr_poll_us = 5;

static int fpgagdr_poll_us_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v > FPGAGDR_POLL_US_MAX)
		return -EINVAL;
	*(unsigned int *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops fpgagdr_poll_us_ops = {
	.set = fpgagdr_poll_us_set,
	.get = param_get_uint,
};

module_param_cb(poll_us, &fpgagdr_poll_us_ops, &fpgagdr_poll_us, 0644);
MODULE_PARM_DESC(poll_us, "Sleep between status reads in poll mode, us (default 5, at most 1000)");

/* Why a claimed run must not start or go on: 0, or its errno. */
static int fpgagdr_engine_cancelled(struct fpgagdr_engine *eng,
				    struct fpgagdr_pinned *pin)
{
	if (READ_ONCE(eng->fdev->gone) || test_bit(FPGAGDR_ENG_DEAD, &eng->flags))
		return -ENODEV;
	if (READ_ONCE(eng->fdev->link_down))
		return -EIO;
	if (test_bit(FPGAGDR_ENG_ABORT, &eng->flags))
		return -ECANCELED;
	if (pin && test_bit(FPGAGDR_PIN_DYING, &pin->flags))
		return -ECANCELED;
	return 0;
}

/* Wait condition of fpgagdr_engine_claim(): claimed, or a reason not to. */
static bool fpgagdr_engine_claim_ended(struct fpgagdr_engine *eng,
				       struct fpgagdr_pinned *pin, int *ret)
{
	if (READ_ONCE(eng->fdev->gone) || test_bit(FPGAGDR_ENG_DEAD, &eng->flags))
		*ret = -ENODEV;
	else if (READ_ONCE(eng->fdev->link_down))
		*ret = -EIO;
	else if (pin && test_bit(FPGAGDR_PIN_DYING, &pin->flags))
		*ret = -ECANCELED;
	else
		*ret = test_and_set_bit_lock(FPGAGDR_ENG_BUSY, &eng->flags) ?
		       -EBUSY : 0;
	return *ret != -EBUSY;
}

static bool fpgagdr_engine_woken(struct fpgagdr_engine *eng,
				 struct fpgagdr_pinned *pin)
{
	return test_bit(FPGAGDR_ENG_DONE, &eng->flags) ||
	       fpgagdr_engine_cancelled(eng, pin);
}

/*
 * Jiffies to wait for @deadline, one more than it takes: a timeout is
 * measured by the clock (jiffies can jump in a virtual machine) and is
 * never shorter than asked.  0 once it has passed.
 */
static long fpgagdr_engine_left(ktime_t deadline)
{
	s64 us = ktime_us_delta(deadline, ktime_get());

	return us > 0 ? (long)usecs_to_jiffies(us) + 1 : 0;
}

static void fpgagdr_engine_own(struct fpgagdr_engine *eng, const void *owner)
{
	spin_lock(&eng->lock);
	eng->owner = owner;
	/* an ABORT from before this claim is not for this transfer */
	clear_bit(FPGAGDR_ENG_ABORT, &eng->flags);
	spin_unlock(&eng->lock);
}

/*
 * Stop a claimed engine and see it stopped.  Returns 0, or -EIO when it
 * was not seen idle within the stop budget: then it is wedged, and the
 * caller must fence the card before releasing memory.  During a PCIe
 * error whose link is frozen the registers are not touched (the reset that
 * follows stops the engine): the engine counts as not seen stopped.
 * After a non-fatal error the registers work and the engine, which no
 * reset will stop, is stopped through them.
 */
static int fpgagdr_engine_stop(struct fpgagdr_engine *eng)
{
	struct fpgagdr_dev *fdev = eng->fdev;

	if (READ_ONCE(fdev->link_down) && READ_ONCE(fdev->link_frozen)) {
		set_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
		return -EIO;
	}
	if (eng->ops->stop(eng)) {
		set_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
		atomic64_inc(&fdev->stats.stop_failures);
		dev_warn(fdev->dev, "%s: %s %u not seen stopped within %u us (status %#x)\n",
			 fdev->name, eng->dir ? "H2C" : "C2H", eng->index,
			 FPGAGDR_STOP_BUDGET_US, eng->ops->status(eng));
		return -EIO;
	}
	clear_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
	return 0;
}

/**
 * fpgagdr_engine_fence() - stop the card mastering the bus
 * @fdev: the card
 * @why: for the log
 *
 * Called when an engine was not seen stopped, or a transfer did not let go
 * of a pin in time, before the memory behind it may be released.  With Bus
 * Master Enable clear the function issues no memory request, so no DMA
 * reaches memory given back.  Counted (debugfs "fences") and logged.
 *
 * Context: process context; takes no lock the NVIDIA free callback's
 * caller could wait for.
 */
void fpgagdr_engine_fence(struct fpgagdr_dev *fdev, const char *why)
{
	mutex_lock(&fdev->fence_lock);
	if (!fdev->fenced) {
		pci_clear_master(fdev->pdev);
		fdev->fenced = true;
		atomic64_inc(&fdev->stats.fences);
		dev_err(fdev->dev, "%s: %s: bus mastering off until every engine is seen stopped\n",
			fdev->name, why);
	}
	mutex_unlock(&fdev->fence_lock);
}

/**
 * fpgagdr_engine_unfence_reset() - forget the fence after a function reset
 * @fdev: the card, its engines reset with the function
 *
 * Context: process context (PCIe error recovery).
 */
void fpgagdr_engine_unfence_reset(struct fpgagdr_dev *fdev)
{
	u32 dir, ch;

	mutex_lock(&fdev->fence_lock);
	/*
	 * A reset asked for outside error recovery restores the command
	 * register as it was before: mastering the fence had turned off.
	 */
	if (fdev->fenced)
		pci_set_master(fdev->pdev);
	fdev->fenced = false;
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < fdev->nch[dir]; ch++)
			clear_bit(FPGAGDR_ENG_WEDGED, &fdev->eng[dir][ch]->flags);
	mutex_unlock(&fdev->fence_lock);
}

/*
 * Bring a fenced card back once no engine is wedged: an engine that runs
 * now belongs to a live transfer whose memory is pinned, so only engines
 * not seen stopped (and the engine of a transfer that did not let go of a
 * revoked pin, marked wedged too) keep the fence.  Idle wedged engines are
 * stopped here; a wedged engine someone else holds is stopped by its
 * claimer, and the fence stays until then.  Called with @eng claimed and
 * itself seen stopped.
 */
static int fpgagdr_engine_unfence(struct fpgagdr_engine *eng)
{
	struct fpgagdr_dev *fdev = eng->fdev;
	struct fpgagdr_engine *e;
	u32 dir, ch;
	int ret = 0;

	mutex_lock(&fdev->fence_lock);
	for (dir = 0; dir < 2 && fdev->fenced; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			e = fdev->eng[dir][ch];
			if (e == eng || !test_bit(FPGAGDR_ENG_WEDGED, &e->flags))
				continue;
			if (test_and_set_bit_lock(FPGAGDR_ENG_BUSY, &e->flags)) {
				ret = -EIO;	/* its claimer stops it */
				continue;
			}
			if (fpgagdr_engine_stop(e))
				ret = -EIO;
			fpgagdr_engine_release(e);
		}
	}
	if (fdev->fenced && !ret) {
		pci_set_master(fdev->pdev);
		fdev->fenced = false;
		dev_info(fdev->dev, "%s: every engine seen stopped: bus mastering on\n",
			 fdev->name);
	}
	mutex_unlock(&fdev->fence_lock);
	return ret;
}

/**
 * fpgagdr_engine_claim() - take an engine for one transfer
 * @eng: the engine
 * @owner: the open file the transfer belongs to (ABORT matches it)
 * @pin: the pin the transfer targets, or NULL; its revocation ends the
 *	wait (-ECANCELED)
 * @deadline: when the transfer must be done (ktime_get())
 *
 * Waits, interruptibly and at most until @deadline, for the transfer that
 * holds the engine to finish.  An engine left wedged is stopped again
 * first, and a fenced card gets bus mastering back once every engine is
 * seen stopped.
 *
 * Context: process context; sleeps.
 * Return: 0 with the engine claimed, -ETIMEDOUT, -EINTR, -ECANCELED when
 * @pin is revoked or unpinned meanwhile, -ENODEV when the card is gone,
 * -EIO during a PCIe error recovery or when the card's engines still do
 * not stop.
 */
int fpgagdr_engine_claim(struct fpgagdr_engine *eng, const void *owner,
			 struct fpgagdr_pinned *pin, ktime_t deadline)
{
	long left;
	int ret = 0;

	for (;;) {
		left = fpgagdr_engine_left(deadline);
		if (!left)
			return -ETIMEDOUT;
		left = wait_event_interruptible_timeout(eng->wq,
							fpgagdr_engine_claim_ended(eng, pin, &ret),
							left);
		if (left < 0)
			return -EINTR;
		if (left)
			break;
	}
	if (ret)
		return ret;
	fpgagdr_engine_own(eng, owner);
	if (test_bit(FPGAGDR_ENG_WEDGED, &eng->flags) &&
	    fpgagdr_engine_stop(eng))
		ret = -EIO;
	else if (READ_ONCE(eng->fdev->fenced))
		ret = fpgagdr_engine_unfence(eng);
	if (ret) {
		fpgagdr_engine_release(eng);
		return ret;
	}
	return 0;
}

/**
 * fpgagdr_engine_release() - give back a claimed engine
 * @eng: the engine, claimed by the caller
 *
 * Context: any.
 */
void fpgagdr_engine_release(struct fpgagdr_engine *eng)
{
	spin_lock(&eng->lock);
	eng->owner = NULL;
	spin_unlock(&eng->lock);
	clear_bit_unlock(FPGAGDR_ENG_BUSY, &eng->flags);
	wake_up_all(&eng->wq);
}

/**
 * fpgagdr_engine_complete() - signal that the running chain has ended
 * @eng: the engine
 *
 * Called by the engine implementation, from its interrupt handler or a
 * worker, when the chain completed or failed; the waiter asks
 * &fpgagdr_engine_ops.poll which.
 *
 * Context: any, including hard interrupt.
 */
void fpgagdr_engine_complete(struct fpgagdr_engine *eng)
{
	set_bit(FPGAGDR_ENG_DONE, &eng->flags);
	wake_up_all(&eng->wq);
}

/* Wait for completion, polling or by interrupt, bounded by @deadline. */
static int fpgagdr_engine_wait(struct fpgagdr_engine *eng,
			       struct fpgagdr_pinned *pin,
			       ktime_t deadline)
{
	long left;
	int ret;

	for (;;) {
		ret = eng->ops->poll(eng);
		if (ret != -EINPROGRESS)
			return ret;
		ret = fpgagdr_engine_cancelled(eng, pin);
		if (ret)
			return ret;
		left = fpgagdr_engine_left(deadline);
		if (!left)
			return -ETIMEDOUT;
		if (!eng->use_irq) {
			if (signal_pending(current))
				return -EINTR;
			usleep_range(fpgagdr_poll_us, 2 * fpgagdr_poll_us + 1);
			continue;
		}
		left = wait_event_interruptible_timeout(eng->wq,
							fpgagdr_engine_woken(eng, pin),
							left);
		if (left < 0)
			return -EINTR;
	}
}

/**
 * fpgagdr_engine_exec() - run one chain to its end
 * @eng: the engine, claimed by the caller
 * @chain: the chain, in memory that stays valid until this returns
 * @pin: the pinned buffer the chain targets, or NULL; its DYING bit
 *	cancels the run, also when it is set before the run starts
 * @deadline: when the run must be done (ktime_get())
 * @ns: set to the time from start to completion
 *
 * Cancellation is checked once more after the claim, right before the
 * chain starts.  Whatever the outcome, the engine is stopped before this
 * returns; when it is not seen stopped, the card is fenced, so the caller
 * may release the memory.
 *
 * Context: process context, engine claimed; sleeps.
 * Return: 0; -ETIMEDOUT; -EINTR on a signal; -ECANCELED by ABORT of the
 * same file or the pin dying; -ENODEV when the card is gone; -EIO on an
 * engine error, a PCIe error, or an engine that was not seen stopped.
 */
int fpgagdr_engine_exec(struct fpgagdr_engine *eng,
			const struct fpgagdr_chain *chain,
			struct fpgagdr_pinned *pin, ktime_t deadline, u64 *ns)
{
	struct fpgagdr_dev *fdev = eng->fdev;
	struct fpgagdr_stats *st = &fdev->stats;
	ktime_t t0;
	int ret;

	*ns = 0;
	ret = fpgagdr_engine_cancelled(eng, pin);
	if (ret)
		return ret;	/* nothing started */
	clear_bit(FPGAGDR_ENG_DONE, &eng->flags);
	t0 = ktime_get();
	ret = eng->ops->start(eng, chain);
	if (!ret)
		ret = fpgagdr_engine_wait(eng, pin, deadline);
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));

	if (ret) {
		atomic64_inc(&st->aborts);
		if (ret == -ETIMEDOUT)
			atomic64_inc(&st->timeouts);
		if (ret == -EIO)
			atomic64_inc(&st->errors);
		dev_dbg(fdev->dev, "%s: %s %u: run failed %d, status %#x\n",
			fdev->name, eng->dir ? "H2C" : "C2H", eng->index, ret,
			eng->ops->status(eng));
	}
	if (fpgagdr_engine_stop(eng)) {
		/* whatever the reason, before anyone releases the memory */
		fpgagdr_engine_fence(fdev, READ_ONCE(fdev->link_down) ?
				     "a PCIe error: an engine not seen stopped" :
				     "an engine did not stop");
		return ret ? ret : -EIO;
	}
	if (!ret) {
		atomic64_inc(&st->transfers);
		atomic64_add(chain->bytes, &st->transfer_bytes);
	}
	return ret;
}

/**
 * fpgagdr_engine_request_abort() - the ABORT ioctl
 * @eng: the engine
 * @owner: the open file asking
 *
 * A transfer of @owner in flight on the engine sees the request, stops the
 * engine and fails with -ECANCELED.  A transfer of another file is not
 * touched.  An idle engine is stopped and its status cleared here.
 *
 * Context: process context.
 * Return: 0, -EBUSY when another file's transfer holds the engine,
 * -ENODEV when the card is gone, -EIO when the engine would not stop.
 */
int fpgagdr_engine_request_abort(struct fpgagdr_engine *eng,
				 const void *owner)
{
	int ret = -EBUSY;

	spin_lock(&eng->lock);
	if (test_bit(FPGAGDR_ENG_BUSY, &eng->flags) && eng->owner == owner) {
		set_bit(FPGAGDR_ENG_ABORT, &eng->flags);
		ret = 0;
	}
	spin_unlock(&eng->lock);
	if (!ret) {
		wake_up_all(&eng->wq);
		return 0;
	}
	if (READ_ONCE(eng->fdev->gone) || test_bit(FPGAGDR_ENG_DEAD, &eng->flags))
		return -ENODEV;
	if (test_and_set_bit_lock(FPGAGDR_ENG_BUSY, &eng->flags))
		return -EBUSY;
	fpgagdr_engine_own(eng, owner);
	atomic64_inc(&eng->fdev->stats.aborts);
	ret = fpgagdr_engine_stop(eng);
	if (ret)
		fpgagdr_engine_fence(eng->fdev, "an engine did not stop on ABORT");
	fpgagdr_engine_release(eng);
	return ret;
}

/**
 * fpgagdr_engine_hold() - claim an engine for the card itself
 * @eng: the engine; the card is gone or its link is down, so whoever
 *	holds it is on the way out
 * @wait_ms: how long to wait for the holder, 0 for as long as it takes
 *	(each holder's run ends within its stop budget once cancelled)
 *
 * Used by removal, shutdown and PCIe error recovery: from here on no run
 * starts on the engine.
 *
 * Context: process context; sleeps.
 * Return: true when the engine is held, false when @wait_ms passed.
 */
bool fpgagdr_engine_hold(struct fpgagdr_engine *eng, unsigned int wait_ms)
{
	struct fpgagdr_dev *fdev = eng->fdev;
	unsigned int waited = 0;

	wake_up_all(&eng->wq);
	while (!wait_event_timeout(eng->wq,
				   !test_and_set_bit_lock(FPGAGDR_ENG_BUSY,
							  &eng->flags),
				   msecs_to_jiffies(1000))) {
		waited += 1000;
		if (wait_ms && waited >= wait_ms)
			return false;
		if (!(waited % 5000))
			dev_warn(fdev->dev, "%s: %s %u: waiting for its transfer to end (%u s)\n",
				 fdev->name, eng->dir ? "H2C" : "C2H",
				 eng->index, waited / 1000);
	}
	fpgagdr_engine_own(eng, fdev);
	return true;
}

/**
 * fpgagdr_engine_stop_held() - stop an engine held by the card
 * @eng: the engine, from fpgagdr_engine_hold()
 *
 * Context: process context.
 * Return: true when it was seen stopped.
 */
bool fpgagdr_engine_stop_held(struct fpgagdr_engine *eng)
{
	return !fpgagdr_engine_stop(eng);
}
