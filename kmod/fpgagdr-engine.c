// SPDX-License-Identifier: GPL-2.0
/*
 * Running a descriptor chain on an engine, whatever the engine is: claim,
 * start, a wait that is always bounded and always cancellable, and a stop
 * that leaves the engine ready for the next transfer.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>

#include "fpgagdr-core.h"

static bool fpgagdr_engine_cancelled(struct fpgagdr_engine *eng,
				     struct fpgagdr_pinned *pin)
{
	return test_bit(FPGAGDR_ENG_ABORT, &eng->flags) ||
	       (pin && test_bit(FPGAGDR_PIN_DYING, &pin->flags)) ||
	       READ_ONCE(eng->fdev->gone);
}

static int fpgagdr_engine_try_claim(struct fpgagdr_engine *eng)
{
	if (test_bit(FPGAGDR_ENG_DEAD, &eng->flags) || READ_ONCE(eng->fdev->gone))
		return -ENODEV;
	return test_and_set_bit_lock(FPGAGDR_ENG_BUSY, &eng->flags) ? -EBUSY : 0;
}

/* Wait condition of fpgagdr_engine_claim(): claimed, or a reason not to. */
static bool fpgagdr_engine_claim_ended(struct fpgagdr_engine *eng, int *ret)
{
	*ret = fpgagdr_engine_try_claim(eng);
	return *ret != -EBUSY;
}

static bool fpgagdr_engine_woken(struct fpgagdr_engine *eng,
				 struct fpgagdr_pinned *pin)
{
	return test_bit(FPGAGDR_ENG_DONE, &eng->flags) ||
	       fpgagdr_engine_cancelled(eng, pin);
}

/**
 * fpgagdr_engine_claim() - take an engine for one transfer
 * @eng: the engine
 * @deadline: jiffies by which the transfer must be done
 *
 * Waits, interruptibly and at most until @deadline, for the transfer that
 * holds the engine to finish.  An engine left wedged by an earlier stop is
 * stopped again first.
 *
 * Context: process context; sleeps.
 * Return: 0 with the engine claimed, -ETIMEDOUT, -EINTR, -ENODEV when the
 * card is gone, -EIO when a wedged engine still does not stop.
 */
int fpgagdr_engine_claim(struct fpgagdr_engine *eng, unsigned long deadline)
{
	long left = (long)(deadline - jiffies);
	int ret = 0;

	if (left <= 0)
		return -ETIMEDOUT;
	left = wait_event_interruptible_timeout(eng->wq,
						fpgagdr_engine_claim_ended(eng, &ret),
						left);
	if (left < 0)
		return -EINTR;
	if (!left)
		return -ETIMEDOUT;
	if (ret)
		return ret;
	/* an ABORT from before this claim is not for this transfer */
	clear_bit(FPGAGDR_ENG_ABORT, &eng->flags);
	if (test_bit(FPGAGDR_ENG_WEDGED, &eng->flags) &&
	    fpgagdr_engine_abort(eng)) {
		fpgagdr_engine_release(eng);
		return -EIO;
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

/**
 * fpgagdr_engine_abort() - stop a claimed engine
 * @eng: the engine, claimed by the caller
 *
 * Context: process context, engine claimed.
 * Return: 0 when the engine is idle; -EIO when it would not stop, in
 * which case it is marked wedged and stopped again before its next use.
 */
int fpgagdr_engine_abort(struct fpgagdr_engine *eng)
{
	int ret;

	WARN_ON_ONCE(!test_bit(FPGAGDR_ENG_BUSY, &eng->flags));
	atomic64_inc(&eng->fdev->stats.aborts);
	ret = eng->ops->stop(eng);
	if (ret) {
		set_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
		dev_warn(eng->fdev->dev, "fpgagdr%d: %s %u does not stop (status %#x)\n",
			 eng->fdev->id, eng->dir ? "H2C" : "C2H", eng->index,
			 eng->ops->status(eng));
		return -EIO;
	}
	clear_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
	return 0;
}

/* Wait for completion, polling or by interrupt, bounded by @deadline. */
static int fpgagdr_engine_wait(struct fpgagdr_engine *eng,
			       struct fpgagdr_pinned *pin,
			       unsigned long deadline)
{
	long left;
	int ret;

	for (;;) {
		ret = eng->ops->poll(eng);
		if (ret != -EINPROGRESS)
			return ret;
		if (fpgagdr_engine_cancelled(eng, pin))
			return READ_ONCE(eng->fdev->gone) ? -ENODEV : -ECANCELED;
		left = (long)(deadline - jiffies);
		if (left <= 0)
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
 *	cancels the run
 * @deadline: jiffies by which the run must be done
 * @ns: set to the time from start to completion
 *
 * On any failure the engine is stopped before returning, so the next
 * transfer finds it idle.
 *
 * Context: process context, engine claimed; sleeps.
 * Return: 0; -ETIMEDOUT; -EINTR on a signal; -ECANCELED by ABORT or the
 * pin dying; -ENODEV when the card is gone; -EIO on an engine error.
 */
int fpgagdr_engine_exec(struct fpgagdr_engine *eng,
			const struct fpgagdr_chain *chain,
			struct fpgagdr_pinned *pin, unsigned long deadline,
			u64 *ns)
{
	struct fpgagdr_stats *st = &eng->fdev->stats;
	ktime_t t0;
	int ret;

	clear_bit(FPGAGDR_ENG_DONE, &eng->flags);
	t0 = ktime_get();
	ret = eng->ops->start(eng, chain);
	if (!ret)
		ret = fpgagdr_engine_wait(eng, pin, deadline);
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));

	if (!ret) {
		ret = eng->ops->stop(eng);
		if (ret)
			set_bit(FPGAGDR_ENG_WEDGED, &eng->flags);
		atomic64_inc(&st->transfers);
		atomic64_add(chain->bytes, &st->transfer_bytes);
		return ret;
	}
	if (ret == -ETIMEDOUT)
		atomic64_inc(&st->timeouts);
	if (ret == -EIO)
		atomic64_inc(&st->errors);
	dev_dbg(eng->fdev->dev, "fpgagdr%d: %s %u: run failed %d, status %#x\n",
		eng->fdev->id, eng->dir ? "H2C" : "C2H", eng->index, ret,
		eng->ops->status(eng));
	fpgagdr_engine_abort(eng);
	return ret;
}

/**
 * fpgagdr_engine_request_abort() - the ABORT ioctl
 * @eng: the engine
 *
 * A transfer in flight sees the request, stops the engine and fails with
 * -ECANCELED.  An idle engine is stopped and its status cleared here.
 *
 * Context: process context.
 * Return: 0, -ENODEV when the card is gone, -EIO when the engine would
 * not stop.
 */
int fpgagdr_engine_request_abort(struct fpgagdr_engine *eng)
{
	int ret;

	set_bit(FPGAGDR_ENG_ABORT, &eng->flags);
	wake_up_all(&eng->wq);
	ret = fpgagdr_engine_try_claim(eng);
	if (ret == -EBUSY)
		return 0;
	if (ret)
		return ret;
	ret = fpgagdr_engine_abort(eng);
	fpgagdr_engine_release(eng);
	return ret;
}

/**
 * fpgagdr_engine_quiesce() - stop an engine for good (card removal)
 * @eng: the engine
 *
 * Waits, bounded, for the transfer in flight (already cancelled by the
 * card's gone flag) to give the engine back, stops it and marks it dead.
 *
 * Context: process context; sleeps up to FPGAGDR_STOP_WAIT_MS.
 */
void fpgagdr_engine_quiesce(struct fpgagdr_engine *eng)
{
	long left;

	set_bit(FPGAGDR_ENG_ABORT, &eng->flags);
	wake_up_all(&eng->wq);
	left = wait_event_timeout(eng->wq,
				  !test_and_set_bit_lock(FPGAGDR_ENG_BUSY,
							 &eng->flags),
				  msecs_to_jiffies(FPGAGDR_STOP_WAIT_MS));
	if (!left) {
		dev_warn(eng->fdev->dev, "fpgagdr%d: engine still busy at removal\n",
			 eng->fdev->id);
		set_bit(FPGAGDR_ENG_DEAD, &eng->flags);
		return;
	}
	eng->ops->stop(eng);
	set_bit(FPGAGDR_ENG_DEAD, &eng->flags);
	fpgagdr_engine_release(eng);
}
