// SPDX-License-Identifier: GPL-2.0
/*
 * Frame capture: the card's frame protocol (docs/card-protocol.md) on its
 * user register block, XDMA user interrupts, and what user space sees of
 * them:
 *
 *  - WAIT_FRAME and poll() on the control node: each open file that
 *    waited once is subscribed and gets every frame-done event in its own
 *    queue of FPGAGDR_EVENT_QUEUE_LEN (a full queue drops the oldest and
 *    counts it); the first subscriber turns capture on (CONTROL = CAPTURE
 *    | IRQ_EN, the user interrupt unmasked), the last one off;
 *  - fpgagdrN_events_K: read() blocks, at most events_wait_ms, until user
 *    interrupt K fired, and returns the count since this file's last read
 *    as a __u32 (as Xilinx's event nodes do).  A user interrupt other than
 *    frame-done has no acknowledge this module knows, so the handler masks
 *    it when it fires and the next read() unmasks it again;
 *  - fpgagdrN_user (fpgagdr-usernode.c): the user register block for
 *    register scripts.
 *
 * The handler and the poll worker take the frame-done record through
 * fpgagdr-fdone.c (latch, read, acknowledge, check; a card that is gone,
 * storms, or breaks a rule), stamp it with ktime_get_ns() and queue it.
 * Every call of the driver's accessors here happens under @lock with
 * interrupts off, a few register accesses per hold; removal clears
 * @attached under the same lock, after which no accessor is called.
 * Without an interrupt (poll mode), during an interrupt storm and while
 * the card is gone, a worker looks at IRQ_STATUS every millisecond (a
 * jiffy at least) while anyone listens.
 */
#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "fpgagdr-core.h"

static unsigned int fpgagdr_events_wait_ms = 5000;

static int fpgagdr_events_wait_set(const char *val,
				   const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v) || !v || v > FPGAGDR_TIMEOUT_MAX_MS)
		return -EINVAL;
	*(unsigned int *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops fpgagdr_events_wait_ops = {
	.set = fpgagdr_events_wait_set,
	.get = param_get_uint,
};

module_param_cb(events_wait_ms, &fpgagdr_events_wait_ops,
		&fpgagdr_events_wait_ms, 0644);
MODULE_PARM_DESC(events_wait_ms, "Longest a read() of an fpgagdrN_events_K node waits, ms (default 5000, 1..60000); then ETIMEDOUT");

#define FPGAGDR_USER_IRQ_MASK	GENMASK(FPROTO_USER_IRQS - 1, 0)
/* Records the poll worker takes per tick (each with the lock on its own). */
#define FPGAGDR_POLL_TAKES	FPGAGDR_EVENT_QUEUE_LEN

/*
 * LOCAL until the card protocol 1.1 register header lands: the protocol's
 * least SLOT_COUNT (FPROTO_SLOT_COUNT_MIN there).  With one slot the card
 * rewrites the frame the host is reading.
 */
#ifndef FPROTO_SLOT_COUNT_MIN
#define FPROTO_SLOT_COUNT_MIN	2
#endif

/**
 * struct fpgagdr_frame_sub - an open control node subscribed to frames
 * @node: in fpgagdr_frames.subs
 * @ev: the queue, a ring
 * @head: index of the oldest event
 * @count: events queued
 * @drops: events dropped that no queued event carries yet
 * @reset_drops: events dropped by a reset of the card (their slots no
 *	longer hold their frames) that no queued event carries yet
 * @have_given: @last_given is meaningful
 * @last_given: sequence of the last event WAIT_FRAME returned
 * @cancel: bumped by ABORT with FPGAGDR_ABORT_WAITS
 */
struct fpgagdr_frame_sub {
	struct list_head node;
	struct fpgagdr_frame_ev ev[FPGAGDR_EVENT_QUEUE_LEN];
	u32 head;
	u32 count;
	u64 drops;
	u64 reset_drops;
	bool have_given;
	u64 last_given;
	u32 cancel;
};

/**
 * struct fpgagdr_events_file - an open event node
 * @fdev: the card, referenced
 * @irq: the user interrupt K
 * @seen: the interrupt count this file has read up to
 */
struct fpgagdr_events_file {
	struct fpgagdr_dev *fdev;
	u32 irq;
	u64 seen;
};

static const char * const fpgagdr_frames_state_name[] = {
	[FPGAGDR_FRAMES_OK] = "ok",
	[FPGAGDR_FRAMES_NO_USER_BAR] = "no user register block (XDMA user BAR) of at least 4 KiB",
	[FPGAGDR_FRAMES_BAD_MAGIC] = "MAGIC is not \"FGDR\" (0x52444746)",
	[FPGAGDR_FRAMES_BAD_VERSION] = "VERSION major is not 1",
	[FPGAGDR_FRAMES_NO_SLOTS] = "SLOT_COUNT is not 2..1024",
	[FPGAGDR_FRAMES_SLOT_TOO_SMALL] = "SLOT_SIZE is smaller than the 64-byte frame header",
	[FPGAGDR_FRAMES_SLOT_MISALIGNED] = "SLOT_BASE or SLOT_SIZE is not a multiple of 4096",
	[FPGAGDR_FRAMES_SLOTS_PAST_CARD] = "the slots wrap or pass the card's address space",
	[FPGAGDR_FRAMES_BAD_IRQ] = "USER_IRQ is not 0..15",
};

static struct fpgagdr_dev *fpgagdr_frames_dev(struct fpgagdr_frames *fr)
{
	return container_of(fr, struct fpgagdr_dev, frames);
}

/* Whoever listens to frame-done: subscribed files, its event node. */
static bool fpgagdr_frames_listened(const struct fpgagdr_frames *fr)
{
	return fr->state == FPGAGDR_FRAMES_OK &&
	       (fr->nsubs || fr->ev_open[fr->user_irq]);
}

/*
 * Bring CONTROL and the XDMA user interrupt mask in line with who listens.
 * Called with @lock held and @attached set.
 */
static void fpgagdr_frames_apply(struct fpgagdr_frames *fr)
{
	bool on = fpgagdr_frames_listened(fr);
	u32 want = 0, k;

	bool irq;

	/* a storm ends with the capture it interrupted */
	if (!on)
		fr->storm = false;
	irq = !fr->polled && !fr->storm;
	for (k = 0; k < FPROTO_USER_IRQS && !fr->polled; k++)
		if (fr->ev_open[k] && !(fr->oneshot & BIT(k)))
			want |= BIT(k);
	if (on && irq)
		want |= BIT(fr->user_irq);
	else if (fr->state == FPGAGDR_FRAMES_OK)
		want &= ~BIT(fr->user_irq);
	if (fr->state == FPGAGDR_FRAMES_OK)
		fr->ops->write(fr->ctx, FPROTO_REG_CONTROL,
			       on ? FPROTO_CONTROL_CAPTURE |
			       (irq ? FPROTO_CONTROL_IRQ_EN : 0) : 0);
	if (want & ~fr->enabled)
		fr->ops->irq_enable(fr->ctx, want & ~fr->enabled, true);
	if (fr->enabled & ~want)
		fr->ops->irq_enable(fr->ctx, fr->enabled & ~want, false);
	fr->enabled = want;
	if (on && (!irq || fr->fd.gone))
		schedule_delayed_work(&fr->poll_work, 1);
}

/* Write CONTROL and the whole mask again: the card may have been reset. */
static void fpgagdr_frames_reapply(struct fpgagdr_frames *fr)
{
	fr->enabled = 0;
	fpgagdr_frames_apply(fr);
}

/*
 * Queue @ev for @sub.  A full queue drops its oldest event (whose slot the
 * card is the first to overwrite) and counts it on the event that is the
 * oldest now, so the reader learns of it with its next event.
 */
static void fpgagdr_frames_queue(struct fpgagdr_frames *fr,
				 struct fpgagdr_frame_sub *sub,
				 const struct fpgagdr_frame_ev *ev)
{
	struct fpgagdr_frame_ev *e;
	u64 dropped;

	if (sub->count == FPGAGDR_EVENT_QUEUE_LEN) {
		dropped = sub->ev[sub->head].overflows + 1;
		sub->head = (sub->head + 1) % FPGAGDR_EVENT_QUEUE_LEN;
		sub->count--;
		fr->queue_overflows++;
		if (sub->count)
			sub->ev[sub->head].overflows += dropped;
		else
			sub->drops += dropped;
	}
	e = &sub->ev[(sub->head + sub->count) % FPGAGDR_EVENT_QUEUE_LEN];
	*e = *ev;
	e->overflows = sub->count ? 0 : sub->drops;
	e->reset_drops = sub->reset_drops;
	if (!sub->count)
		sub->drops = 0;
	sub->reset_drops = 0;
	sub->count++;
}

static void fpgagdr_frames_warn(struct fpgagdr_frames *fr,
				const struct fpgagdr_frame_ev *ev)
{
	struct fpgagdr_dev *fdev = fpgagdr_frames_dev(fr);

	switch (ev->rule) {
	case FPGAGDR_FRAMES_RULE_SEQUENCE:
		dev_warn_ratelimited(fdev->dev, "%s: frame protocol broken: sequence %llu after %llu (the sequence must grow); event refused (EBADMSG)\n",
				     fdev->name, ev->seq, fr->fd.last_seq);
		break;
	case FPGAGDR_FRAMES_RULE_SLOT:
		dev_warn_ratelimited(fdev->dev, "%s: frame protocol broken: slot %u for sequence %llu (the slot must be sequence mod %u); event refused (EBADMSG)\n",
				     fdev->name, ev->slot, ev->seq, fr->slot_count);
		break;
	default:
		dev_warn_ratelimited(fdev->dev, "%s: frame protocol broken: length %u of sequence %llu (a frame is 64..%u bytes, the slot size); event refused (EBADMSG)\n",
				     fdev->name, ev->len, ev->seq, fr->slot_size);
		break;
	}
}

/* The user register block as fpgagdr-fdone.c reaches it. */
static struct fpgagdr_fdone_io fpgagdr_frames_io(const struct fpgagdr_frames *fr)
{
	return (struct fpgagdr_fdone_io){ .read = fr->ops->read,
					  .write = fr->ops->write,
					  .ctx = fr->ctx };
}

/* The card reads all ones: say so once, wake the waiters (EIO). */
static void fpgagdr_frames_gone(struct fpgagdr_frames *fr, const char *where)
{
	struct fpgagdr_dev *fdev = fpgagdr_frames_dev(fr);

	dev_warn_ratelimited(fdev->dev, "%s: card gone: %s reads all ones (0xffffffff); frame waits end EIO, MAGIC watched every 1 ms for it to come back (docs/kernel-module.md)\n",
			     fdev->name, where);
	if (fpgagdr_frames_listened(fr))
		schedule_delayed_work(&fr->poll_work, 1);
}

/* The card answers again: it may have been reset meanwhile. */
static void fpgagdr_frames_back(struct fpgagdr_frames *fr)
{
	struct fpgagdr_dev *fdev = fpgagdr_frames_dev(fr);

	dev_info_ratelimited(fdev->dev, "%s: card back: MAGIC reads \"FGDR\" again; CONTROL and the user interrupt mask set again, sequence re-baselined\n",
			     fdev->name);
	fpgagdr_frames_reapply(fr);
}

/* Frame-done came again and again for one record: poll instead. */
static void fpgagdr_frames_storm(struct fpgagdr_frames *fr)
{
	struct fpgagdr_dev *fdev = fpgagdr_frames_dev(fr);

	if (fr->storm || fr->polled)
		return;
	dev_warn(fdev->dev, "%s: frame-done storm: the card raised user interrupt %u %u times in a row for the same record (sequence %llu) after HOST_ACK (a matching HOST_ACK must clear FRAME_PENDING); interrupt masked, IRQ_STATUS polled every 1 ms until capture restarts\n",
		 fdev->name, fr->user_irq, FPGAGDR_FDONE_STORM_REPEATS,
		 fr->fd.rec_seq);
	fr->storm = true;
	fpgagdr_frames_apply(fr);
}

/* Hand an event to every subscriber. */
static void fpgagdr_frames_event(struct fpgagdr_frames *fr,
				 const struct fpgagdr_fdone_ev *rec)
{
	struct fpgagdr_frame_ev ev = {
		.seq = rec->seq,
		.slot = rec->slot,
		.len = rec->len,
		.rule = rec->rule,
		.fresh = rec->fresh,
		.arrival_ns = ktime_get_ns(),
	};
	struct fpgagdr_frame_sub *sub;

	fr->irq_count[fr->user_irq]++;
	if (ev.rule)
		fpgagdr_frames_warn(fr, &ev);
	list_for_each_entry(sub, &fr->subs, node)
		fpgagdr_frames_queue(fr, sub, &ev);
}

/*
 * Take what the card has (fpgagdr-fdone.c: latch, read, acknowledge,
 * check) and act on it: an event is queued for every subscriber, a storm
 * masks frame-done, a card gone or back is named in the log.  @lock held,
 * attached.  Returns the decision.
 */
static enum fpgagdr_fdone_action fpgagdr_frames_take(struct fpgagdr_frames *fr)
{
	struct fpgagdr_fdone_io io = fpgagdr_frames_io(fr);
	struct fpgagdr_fdone_ev rec;
	enum fpgagdr_fdone_action act;
	u64 gone = fr->fd.gone_reads;

	act = fpgagdr_fdone_take(&fr->fd, &io, &rec);
	if (act == FPGAGDR_FDONE_BACK) {
		fpgagdr_frames_back(fr);
		act = fpgagdr_fdone_take(&fr->fd, &io, &rec);
	}
	switch (act) {
	case FPGAGDR_FDONE_EVENT:
		fpgagdr_frames_event(fr, &rec);
		break;
	case FPGAGDR_FDONE_STORM:
		fpgagdr_frames_storm(fr);
		break;
	case FPGAGDR_FDONE_GONE:
		if (fr->fd.gone_reads != gone)
			fpgagdr_frames_gone(fr, "the user register block");
		break;
	default:
		break;
	}
	return act;
}

/**
 * fpgagdr_frames_irq() - the user interrupts of a card's interrupt
 * @fdev: the card
 * @pending: the XDMA user interrupt requests asserted (bit K: user
 *	interrupt K)
 *
 * Counts each enabled one for its event node (masking those without an
 * acknowledge until their node is read) and, while frame-done is
 * unmasked, takes a frame-done event if IRQ_STATUS has one.
 *
 * Context: hard interrupt (or the driver's worker), any lock but @lock.
 * Return: IRQ_HANDLED when one of them was ours.
 */
irqreturn_t fpgagdr_frames_irq(struct fpgagdr_dev *fdev, u32 pending)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	enum fpgagdr_fdone_action act;
	bool ours = false, wake = false;
	unsigned long flags;
	u32 mine, mask;

	spin_lock_irqsave(&fr->lock, flags);
	if (!fr->attached) {
		spin_unlock_irqrestore(&fr->lock, flags);
		return IRQ_NONE;
	}
	mine = pending & fr->enabled;
	if (fr->state == FPGAGDR_FRAMES_OK) {
		/*
		 * IRQ_STATUS decides, not @pending: with MSI the card may
		 * have dropped its request after the XDMA's acknowledge.
		 */
		if (fr->enabled & BIT(fr->user_irq)) {
			act = fpgagdr_frames_take(fr);
			ours = act != FPGAGDR_FDONE_NONE &&
			       act != FPGAGDR_FDONE_GONE;
			wake = act == FPGAGDR_FDONE_EVENT ||
			       act == FPGAGDR_FDONE_GONE;
		}
		mine &= ~BIT(fr->user_irq);
	}
	if (mine) {
		mask = mine;
		while (mask) {
			fr->irq_count[__ffs(mask)]++;
			mask &= mask - 1;
		}
		/* no acknowledge known: masked until the node is read */
		fr->ops->irq_enable(fr->ctx, mine, false);
		fr->enabled &= ~mine;
		fr->oneshot |= mine;
		ours = true;
		wake = true;
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	if (wake)
		wake_up_all(&fr->wq);
	return ours ? IRQ_HANDLED : IRQ_NONE;
}

/**
 * fpgagdr_frames_card_gone() - the card's own registers read all ones
 * @fdev: the card
 *
 * For a driver whose other registers (the XDMA's interrupt block) show
 * the card gone from the bus: frame waits end EIO, the log says so once,
 * and IRQ_STATUS is watched for the card to come back.
 *
 * Context: any, including hard interrupt; any lock but the frames lock.
 */
void fpgagdr_frames_card_gone(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;
	bool wake = false;

	spin_lock_irqsave(&fr->lock, flags);
	if (fr->attached && fr->state == FPGAGDR_FRAMES_OK &&
	    fpgagdr_fdone_set_gone(&fr->fd)) {
		fpgagdr_frames_gone(fr, "the XDMA's interrupt block");
		wake = true;
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	if (wake)
		wake_up_all(&fr->wq);
}

/*
 * Whether the worker looks at IRQ_STATUS: in poll mode, during a storm
 * and while the card is gone (to see it back), while anyone listens.
 * @lock held.
 */
static bool fpgagdr_frames_polling(const struct fpgagdr_frames *fr)
{
	return fr->attached && fpgagdr_frames_listened(fr) &&
	       (fr->polled || fr->storm || fr->fd.gone);
}

/*
 * The poll worker: every millisecond (a jiffy at least) take the records
 * the card has, one per hold of the lock, at most FPGAGDR_POLL_TAKES.
 */
static void fpgagdr_frames_poll_work(struct work_struct *work)
{
	struct fpgagdr_frames *fr = container_of(to_delayed_work(work),
						 struct fpgagdr_frames,
						 poll_work);
	enum fpgagdr_fdone_action act = FPGAGDR_FDONE_EVENT;
	bool again = true, wake = false;
	unsigned long flags;
	u32 n;

	for (n = 0; again && act == FPGAGDR_FDONE_EVENT &&
	     n < FPGAGDR_POLL_TAKES; n++) {
		spin_lock_irqsave(&fr->lock, flags);
		again = fpgagdr_frames_polling(fr);
		if (again) {
			act = fpgagdr_frames_take(fr);
			wake |= act == FPGAGDR_FDONE_EVENT ||
				act == FPGAGDR_FDONE_GONE;
			again = fpgagdr_frames_polling(fr);
		}
		spin_unlock_irqrestore(&fr->lock, flags);
	}
	if (wake)
		wake_up_all(&fr->wq);
	if (again)
		schedule_delayed_work(&fr->poll_work, msecs_to_jiffies(1));
}

/* The rule the user register block breaks, or FPGAGDR_FRAMES_OK. */
static u32 fpgagdr_frames_validate(struct fpgagdr_frames *fr, u32 magic,
				   u64 card_size)
{
	u64 end;

	if (fr->len < FPROTO_BLOCK_LEN)
		return FPGAGDR_FRAMES_NO_USER_BAR;
	if (magic != FPROTO_MAGIC_VALUE)
		return FPGAGDR_FRAMES_BAD_MAGIC;
	if (FIELD_GET(FPROTO_VERSION_MAJOR, fr->proto_version) !=
	    FPROTO_VERSION_MAJOR_SUPPORTED)
		return FPGAGDR_FRAMES_BAD_VERSION;
	if (fr->slot_count < FPROTO_SLOT_COUNT_MIN ||
	    fr->slot_count > FPGAGDR_MAX_SLOTS)
		return FPGAGDR_FRAMES_NO_SLOTS;
	if (fr->slot_size < FPGAGDR_FRAME_HEADER_LEN)
		return FPGAGDR_FRAMES_SLOT_TOO_SMALL;
	if (!IS_ALIGNED(fr->slot_base, FPROTO_SLOT_ALIGN) ||
	    !IS_ALIGNED(fr->slot_size, FPROTO_SLOT_ALIGN))
		return FPGAGDR_FRAMES_SLOT_MISALIGNED;
	if (check_add_overflow(fr->slot_base,
			       (u64)fr->slot_size * fr->slot_count, &end) ||
	    (card_size && end > card_size))
		return FPGAGDR_FRAMES_SLOTS_PAST_CARD;
	if (fr->user_irq >= FPROTO_USER_IRQS)
		return FPGAGDR_FRAMES_BAD_IRQ;
	return FPGAGDR_FRAMES_OK;
}

/**
 * fpgagdr_frames_attach() - give a card its user register block
 * @fdev: the card, not yet registered
 * @ops: accessors of the block and of the XDMA user interrupt mask
 * @ctx: their argument
 * @len: bytes of the block (0: the card has none; the user interrupts
 *	still work)
 * @polled: the card has no interrupt: poll IRQ_STATUS instead
 *
 * Reads the identification and geometry registers once and decides
 * whether the card speaks the frame protocol; the kernel log names the
 * rule a card breaks (its DMA channels work either way).  Capture stays
 * off and every user interrupt masked until someone listens.
 *
 * Context: process context, before fpgagdr_card_register().
 */
void fpgagdr_frames_attach(struct fpgagdr_dev *fdev,
			   const struct fpgagdr_user_ops *ops, void *ctx,
			   u32 len, bool polled)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;
	u32 magic = 0, lo = 0, hi = 0;

	INIT_DELAYED_WORK(&fr->poll_work, fpgagdr_frames_poll_work);
	fr->ops = ops;
	fr->ctx = ctx;
	fr->len = round_down(len, 4);
	fr->polled = polled;
	spin_lock_irqsave(&fr->lock, flags);
	fr->attached = true;
	if (fr->len >= FPROTO_BLOCK_LEN) {
		magic = ops->read(ctx, FPROTO_REG_MAGIC);
		fr->proto_version = ops->read(ctx, FPROTO_REG_VERSION);
		lo = ops->read(ctx, FPROTO_REG_SLOT_BASE_LO);
		hi = ops->read(ctx, FPROTO_REG_SLOT_BASE_HI);
		fr->slot_size = ops->read(ctx, FPROTO_REG_SLOT_SIZE);
		fr->slot_count = ops->read(ctx, FPROTO_REG_SLOT_COUNT);
		fr->user_irq = ops->read(ctx, FPROTO_REG_USER_IRQ);
	}
	fr->slot_base = (u64)hi << 32 | lo;
	fr->state = fpgagdr_frames_validate(fr, magic, fdev->card_size);
	if (fr->state != FPGAGDR_FRAMES_OK)
		fr->user_irq = 0;
	else
		fpgagdr_fdone_init(&fr->fd, fr->slot_count, fr->slot_size);
	ops->irq_enable(ctx, FPGAGDR_USER_IRQ_MASK, false);
	fr->enabled = 0;
	if (fr->state == FPGAGDR_FRAMES_OK)
		ops->write(ctx, FPROTO_REG_CONTROL, 0);
	spin_unlock_irqrestore(&fr->lock, flags);

	if (fr->state == FPGAGDR_FRAMES_OK)
		dev_info(fdev->dev, "%s: frame protocol %lu.%lu: %u slots of %u bytes at card address %#llx, user interrupt %u%s\n",
			 fdev->name,
			 FIELD_GET(FPROTO_VERSION_MAJOR, fr->proto_version),
			 FIELD_GET(FPROTO_VERSION_MINOR, fr->proto_version),
			 fr->slot_count, fr->slot_size, fr->slot_base,
			 fr->user_irq, polled ? " (polled)" : "");
	else
		dev_warn(fdev->dev, "%s: no frame capture: %s (magic %#x, version %#x, %u slots of %u bytes at %#llx; docs/card-protocol.md); the DMA channels work\n",
			 fdev->name, fpgagdr_frames_state_name[fr->state],
			 magic, fr->proto_version, fr->slot_count,
			 fr->slot_size, fr->slot_base);
}

/**
 * fpgagdr_frames_detach() - the card is going away: capture off, waiters out
 * @fdev: the card, marked gone
 *
 * Turns capture off and masks every user interrupt, stops the poll worker,
 * wakes every waiter (they answer ENODEV) and unmaps the user node's
 * mappings (a later access gets SIGBUS).  No accessor is called after it.
 * Idempotent.
 *
 * Context: process context, before the driver frees its interrupt and
 * unmaps its registers.
 */
void fpgagdr_frames_detach(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;

	if (!fr->ops)
		return;
	spin_lock_irqsave(&fr->lock, flags);
	if (fr->attached) {
		if (fr->state == FPGAGDR_FRAMES_OK)
			fr->ops->write(fr->ctx, FPROTO_REG_CONTROL, 0);
		fr->ops->irq_enable(fr->ctx, FPGAGDR_USER_IRQ_MASK, false);
		fr->enabled = 0;
		fr->attached = false;
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	cancel_delayed_work_sync(&fr->poll_work);
	wake_up_all(&fr->wq);
	fpgagdr_usernode_detach(fr);
}

/**
 * fpgagdr_frames_reset_done() - the function was reset (PCIe error recovery)
 * @fdev: the card; its user register block is in its reset state: the
 *	sequence restarted at 0, CONTROL and the user interrupt mask clear
 *
 * The sequence is re-baselined (the next record is a fresh start) and
 * every queued event is dropped: its slot no longer holds its frame.  A
 * subscriber's next event counts them in its missed.  The card is not
 * touched until fpgagdr_frames_resume().
 *
 * Context: process context (the driver's slot_reset).
 */
void fpgagdr_frames_reset_done(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	struct fpgagdr_frame_sub *sub;
	unsigned long flags;

	if (!fr->ops)
		return;
	spin_lock_irqsave(&fr->lock, flags);
	if (fr->attached && fr->state == FPGAGDR_FRAMES_OK) {
		fpgagdr_fdone_rebase(&fr->fd, false);
		fr->fd.gone = false;
		fr->reset_seen = true;
		list_for_each_entry(sub, &fr->subs, node) {
			sub->reset_drops += sub->count;
			sub->count = 0;
		}
	}
	spin_unlock_irqrestore(&fr->lock, flags);
}

/**
 * fpgagdr_frames_resume() - after a PCIe error: listen again as before
 * @fdev: the card; after a reset every user interrupt is masked
 *
 * CONTROL and the user interrupt mask are written again as they were.
 * Without a reset before (a non-fatal error) the sequence is re-baselined
 * softly: the next record starts afresh only if its sequence did not grow
 * (the card may have reset itself), else its gap counts.
 *
 * Context: process context (AER resume).
 */
void fpgagdr_frames_resume(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;

	if (!fr->ops)
		return;
	spin_lock_irqsave(&fr->lock, flags);
	if (fr->attached) {
		if (fr->state == FPGAGDR_FRAMES_OK && !fr->reset_seen)
			fpgagdr_fdone_rebase(&fr->fd, true);
		fr->reset_seen = false;
		fr->fd.gone = false;
		fr->storm = false;
		fpgagdr_frames_reapply(fr);
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	wake_up_all(&fr->wq);
}

/**
 * fpgagdr_frames_info() - the FRAME_INFO ioctl's answer
 * @fdev: the card
 * @fi: filled (abi_version and flags are the caller's)
 *
 * Context: process context.
 * Return: 0.
 */
int fpgagdr_frames_info(struct fpgagdr_dev *fdev, struct fpgagdr_frame_info *fi)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;

	spin_lock_irqsave(&fr->lock, flags);
	fi->state = fr->state;
	fi->proto_version = fr->proto_version;
	fi->slot_count = fr->slot_count;
	fi->slot_size = fr->slot_size;
	fi->user_irq = fr->user_irq;
	fi->slot_base = fr->slot_base;
	fi->events = fr->fd.events;
	fi->missed = fr->fd.missed;
	fi->queue_overflows = fr->queue_overflows;
	fi->protocol_errors = fr->fd.protocol_errors;
	spin_unlock_irqrestore(&fr->lock, flags);
	return 0;
}

/* The file's subscription, made on its first wait or poll. */
static struct fpgagdr_frame_sub *
fpgagdr_frames_subscribe(struct fpgagdr_frames *fr,
			 struct fpgagdr_frame_sub **subp)
{
	struct fpgagdr_frame_sub *sub = READ_ONCE(*subp), *mine;
	unsigned long flags;

	if (sub)
		return sub;
	mine = kzalloc(sizeof(*mine), GFP_KERNEL_ACCOUNT);
	if (!mine)
		return NULL;
	spin_lock_irqsave(&fr->lock, flags);
	sub = *subp;
	if (!sub) {
		sub = mine;
		mine = NULL;
		list_add_tail(&sub->node, &fr->subs);
		fr->nsubs++;
		if (fr->attached)
			fpgagdr_frames_apply(fr);
		WRITE_ONCE(*subp, sub);
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	kfree(mine);
	return sub;
}

/**
 * fpgagdr_frames_unsubscribe() - an open control node is closed
 * @fdev: the card
 * @sub: its subscription, or NULL; freed
 *
 * The last subscriber turns capture off.
 *
 * Context: process context (release).
 */
void fpgagdr_frames_unsubscribe(struct fpgagdr_dev *fdev,
				struct fpgagdr_frame_sub *sub)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;

	if (!sub)
		return;
	spin_lock_irqsave(&fr->lock, flags);
	list_del(&sub->node);
	fr->nsubs--;
	if (fr->attached)
		fpgagdr_frames_apply(fr);
	spin_unlock_irqrestore(&fr->lock, flags);
	kfree(sub);
}

static bool fpgagdr_frames_ready(struct fpgagdr_dev *fdev,
				 struct fpgagdr_frame_sub *sub, u32 cancel,
				 u64 gone)
{
	return READ_ONCE(sub->count) || READ_ONCE(sub->cancel) != cancel ||
	       READ_ONCE(fdev->frames.fd.gone_reads) != gone ||
	       READ_ONCE(fdev->gone);
}

/*
 * A wait that found no event: is the card gone (-EIO)?  One read of the
 * block (MAGIC while it is gone; back, it is set up again).  @lock held.
 */
static int fpgagdr_frames_no_event(struct fpgagdr_frames *fr)
{
	struct fpgagdr_fdone_io io;
	u64 gone = fr->fd.gone_reads;

	if (!fr->attached)
		return 0;
	io = fpgagdr_frames_io(fr);
	switch (fpgagdr_fdone_probe(&fr->fd, &io)) {
	case FPGAGDR_FDONE_GONE:
		if (fr->fd.gone_reads != gone)
			fpgagdr_frames_gone(fr, "the user register block");
		return -EIO;
	case FPGAGDR_FDONE_BACK:
		fpgagdr_frames_back(fr);
		return 0;
	default:
		return 0;
	}
}

/* The event's missed for the file, and the file's baseline. */
static u64 fpgagdr_frames_given(struct fpgagdr_frame_sub *sub,
				const struct fpgagdr_frame_ev *ev)
{
	u64 missed;

	if (ev->fresh)
		missed = ev->overflows + ev->reset_drops;
	else if (sub->have_given)
		missed = ev->seq - sub->last_given - 1;
	else
		missed = 0;
	sub->last_given = ev->seq;
	sub->have_given = true;
	return missed;
}

/**
 * fpgagdr_frames_wait() - the WAIT_FRAME ioctl
 * @fdev: the card
 * @subp: the file's subscription (made here on the first call)
 * @w: checked by the caller (version, flags, timeout); the event, missed,
 *	overflows and queued are filled in, also for -EBADMSG
 *
 * Context: process context; sleeps at most @w->timeout_ms.
 * Return: 0 or the errno of the header's table: -ENXIO, -ENOMEM,
 * -EINTR, -ETIMEDOUT, -EAGAIN, -ECANCELED, -ENODEV, -EBADMSG, and -EIO
 * when no event was queued and the card reads all ones (gone from the
 * bus, or its link down).
 */
int fpgagdr_frames_wait(struct fpgagdr_dev *fdev,
			struct fpgagdr_frame_sub **subp,
			struct fpgagdr_wait_frame *w)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	struct fpgagdr_frame_sub *sub;
	struct fpgagdr_frame_ev ev;
	unsigned long flags;
	u32 cancel;
	u64 gone;
	long left;
	int ret = 0;

	if (fr->state != FPGAGDR_FRAMES_OK)
		return -ENXIO;
	sub = fpgagdr_frames_subscribe(fr, subp);
	if (!sub)
		return -ENOMEM;
	cancel = READ_ONCE(sub->cancel);
	gone = READ_ONCE(fr->fd.gone_reads);
	if (!(w->flags & FPGAGDR_WAIT_NOWAIT)) {
		left = msecs_to_jiffies(w->timeout_ms);
		left = wait_event_interruptible_timeout(fr->wq,
							fpgagdr_frames_ready(fdev, sub,
									     cancel,
									     gone),
							left);
		if (left < 0)
			return -EINTR;
	}
	spin_lock_irqsave(&fr->lock, flags);
	if (READ_ONCE(fdev->gone)) {
		ret = -ENODEV;
	} else if (sub->count) {
		ev = sub->ev[sub->head];
		sub->head = (sub->head + 1) % FPGAGDR_EVENT_QUEUE_LEN;
		sub->count--;
		w->sequence = ev.seq;
		w->slot = ev.slot;
		w->length = ev.len;
		w->arrival_ns = ev.arrival_ns;
		w->overflows = ev.overflows;
		w->queued = sub->count;
		if (ev.rule)
			ret = -EBADMSG;
		else
			w->missed = fpgagdr_frames_given(sub, &ev);
	} else if (sub->cancel != cancel) {
		ret = -ECANCELED;
	} else {
		ret = fpgagdr_frames_no_event(fr);
		if (!ret)
			ret = w->flags & FPGAGDR_WAIT_NOWAIT ? -EAGAIN :
							       -ETIMEDOUT;
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	return ret;
}

/**
 * fpgagdr_frames_poll() - poll() on the control node
 * @fdev: the card
 * @subp: the file's subscription (made here on the first call)
 * @file: the file
 * @pt: the poll table
 *
 * Context: process context.
 * Return: EPOLLIN while an event is queued; EPOLLERR when the card does
 * not speak the frame protocol; EPOLLHUP | EPOLLERR once it is removed.
 */
__poll_t fpgagdr_frames_poll(struct fpgagdr_dev *fdev,
			     struct fpgagdr_frame_sub **subp,
			     struct file *file, struct poll_table_struct *pt)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	struct fpgagdr_frame_sub *sub;

	if (fr->state != FPGAGDR_FRAMES_OK)
		return EPOLLERR;
	sub = fpgagdr_frames_subscribe(fr, subp);
	if (!sub)
		return EPOLLERR;
	poll_wait(file, &fr->wq, pt);
	if (READ_ONCE(fdev->gone))
		return EPOLLHUP | EPOLLERR;
	return READ_ONCE(sub->count) ? EPOLLIN | EPOLLRDNORM : 0;
}

/**
 * fpgagdr_frames_cancel() - ABORT with FPGAGDR_ABORT_WAITS
 * @fdev: the card
 * @sub: the file's subscription, or NULL (then nobody waits)
 *
 * Every WAIT_FRAME of the file in progress returns -ECANCELED; queued
 * events stay.
 *
 * Context: process context.
 */
void fpgagdr_frames_cancel(struct fpgagdr_dev *fdev,
			   struct fpgagdr_frame_sub *sub)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;

	if (!sub)
		return;
	spin_lock_irqsave(&fr->lock, flags);
	WRITE_ONCE(sub->cancel, sub->cancel + 1);
	spin_unlock_irqrestore(&fr->lock, flags);
	wake_up_all(&fr->wq);
}

static int fpgagdr_frames_show(struct seq_file *m, void *unused)
{
	struct fpgagdr_dev *fdev = m->private;
	struct fpgagdr_frames *fr = &fdev->frames;
	u64 count[FPROTO_USER_IRQS];
	unsigned long flags;
	struct fpgagdr_fdone fd;
	u32 k, nsubs, enabled, oneshot;
	bool storm;
	u64 ovf;

	spin_lock_irqsave(&fr->lock, flags);
	nsubs = fr->nsubs;
	enabled = fr->enabled;
	oneshot = fr->oneshot;
	fd = fr->fd;
	storm = fr->storm;
	ovf = fr->queue_overflows;
	memcpy(count, fr->irq_count, sizeof(count));
	spin_unlock_irqrestore(&fr->lock, flags);

	seq_printf(m, "state %u %s\n", fr->state,
		   fpgagdr_frames_state_name[fr->state]);
	seq_printf(m, "proto_version %#x\n", fr->proto_version);
	seq_printf(m, "slot_base %#llx\n", fr->slot_base);
	seq_printf(m, "slot_size %u\n", fr->slot_size);
	seq_printf(m, "slot_count %u\n", fr->slot_count);
	seq_printf(m, "user_irq %u\n", fr->user_irq);
	seq_printf(m, "polled %d\n", fr->polled);
	seq_printf(m, "subscribers %u\n", nsubs);
	seq_printf(m, "user_irq_enabled %u\n", enabled);
	seq_printf(m, "user_irq_oneshot %u\n", oneshot);
	seq_printf(m, "events %llu\n", fd.events);
	seq_printf(m, "missed %llu\n", fd.missed);
	seq_printf(m, "queue_overflows %llu\n", ovf);
	seq_printf(m, "protocol_errors %llu\n", fd.protocol_errors);
	seq_printf(m, "repeated %llu\n", fd.repeated);
	seq_printf(m, "storms %llu\n", fd.storms);
	seq_printf(m, "storm_polling %d\n", storm);
	seq_printf(m, "gone %d\n", fd.gone);
	seq_printf(m, "gone_reads %llu\n", fd.gone_reads);
	seq_printf(m, "rebases %llu\n", fd.rebases);
	for (k = 0; k < FPROTO_USER_IRQS; k++)
		if (count[k])
			seq_printf(m, "user_irq_%u %llu\n", k, count[k]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fpgagdr_frames);

/**
 * fpgagdr_frames_debugfs() - debugfs fpgagdr/fpgagdrN/frames
 * @fdev: the card, its debugfs directory made
 *
 * Context: process context.
 */
void fpgagdr_frames_debugfs(struct fpgagdr_dev *fdev)
{
	debugfs_create_file("frames", 0444, fdev->dbg, fdev,
			    &fpgagdr_frames_fops);
}

/* ---- fpgagdrN_events_K ---- */

static int fpgagdr_events_open(struct inode *inode, struct file *file)
{
	struct fpgagdr_events_file *ef;
	struct fpgagdr_frames *fr;
	struct fpgagdr_dev *fdev;
	unsigned long flags;
	u32 node;

	fdev = fpgagdr_dev_get_by_minor(iminor(inode), &node);
	if (!fdev)
		return -ENODEV;
	ef = kzalloc(sizeof(*ef), GFP_KERNEL_ACCOUNT);
	if (!ef) {
		fpgagdr_dev_put(fdev);
		return -ENOMEM;
	}
	fr = &fdev->frames;
	ef->fdev = fdev;
	ef->irq = node - FPGAGDR_NODE_EVENTS;
	spin_lock_irqsave(&fr->lock, flags);
	fr->ev_open[ef->irq]++;
	ef->seen = fr->irq_count[ef->irq];
	if (fr->attached)
		fpgagdr_frames_apply(fr);
	spin_unlock_irqrestore(&fr->lock, flags);
	file->private_data = ef;
	return nonseekable_open(inode, file);
}

static int fpgagdr_events_release(struct inode *inode, struct file *file)
{
	struct fpgagdr_events_file *ef = file->private_data;
	struct fpgagdr_frames *fr = &ef->fdev->frames;
	unsigned long flags;

	spin_lock_irqsave(&fr->lock, flags);
	if (!--fr->ev_open[ef->irq])
		fr->oneshot &= ~BIT(ef->irq);
	if (fr->attached)
		fpgagdr_frames_apply(fr);
	spin_unlock_irqrestore(&fr->lock, flags);
	fpgagdr_dev_put(ef->fdev);
	kfree(ef);
	return 0;
}

static bool fpgagdr_events_ready(struct fpgagdr_events_file *ef)
{
	return READ_ONCE(ef->fdev->frames.irq_count[ef->irq]) != ef->seen ||
	       READ_ONCE(ef->fdev->gone);
}

static ssize_t fpgagdr_events_read(struct file *file, char __user *buf,
				   size_t count, loff_t *ppos)
{
	struct fpgagdr_events_file *ef = file->private_data;
	struct fpgagdr_dev *fdev = ef->fdev;
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;
	long left;
	u64 n;
	u32 v;

	if (count < sizeof(v))
		return -EINVAL;
	if (!(file->f_flags & O_NONBLOCK)) {
		left = msecs_to_jiffies(READ_ONCE(fpgagdr_events_wait_ms));
		left = wait_event_interruptible_timeout(fr->wq,
							fpgagdr_events_ready(ef),
							left);
		if (left < 0)
			return -ERESTARTSYS;
	}
	if (READ_ONCE(fdev->gone))
		return -ENODEV;
	spin_lock_irqsave(&fr->lock, flags);
	n = fr->irq_count[ef->irq] - ef->seen;
	ef->seen = fr->irq_count[ef->irq];
	if (n && (fr->oneshot & BIT(ef->irq))) {
		fr->oneshot &= ~BIT(ef->irq);
		if (fr->attached)
			fpgagdr_frames_apply(fr);
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	if (!n)
		return file->f_flags & O_NONBLOCK ? -EAGAIN : -ETIMEDOUT;
	v = min_t(u64, n, U32_MAX);
	if (copy_to_user(buf, &v, sizeof(v)))
		return -EFAULT;
	return sizeof(v);
}

static __poll_t fpgagdr_events_poll(struct file *file,
				    struct poll_table_struct *pt)
{
	struct fpgagdr_events_file *ef = file->private_data;

	poll_wait(file, &ef->fdev->frames.wq, pt);
	if (READ_ONCE(ef->fdev->gone))
		return EPOLLHUP | EPOLLERR;
	return fpgagdr_events_ready(ef) ? EPOLLIN | EPOLLRDNORM : 0;
}

const struct file_operations fpgagdr_events_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_events_open,
	.release = fpgagdr_events_release,
	.read = fpgagdr_events_read,
	.poll = fpgagdr_events_poll,
};
