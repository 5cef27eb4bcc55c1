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
 *  - fpgagdrN_user: pread()/pwrite() (32-bit words) and mmap() of the user
 *    register block.
 *
 * The handler reads the frame-done record (DONE_SEQ_LO first: it latches
 * the rest), acknowledges it with HOST_ACK, stamps it with ktime_get_ns()
 * and checks the protocol's rules.  Every call of the driver's accessors
 * happens under @lock with interrupts off, so the handler's latch and a
 * user's pread() of the record never interleave; removal clears @attached
 * under the same lock, after which no accessor is called.  Without an
 * interrupt (poll mode) a worker looks at IRQ_STATUS every millisecond
 * (a jiffy at least) while anyone listens.
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

/* Words the user node moves per hold of the lock (interrupts off). */
#define FPGAGDR_USER_BURST	64
#define FPGAGDR_USER_IRQ_MASK	GENMASK(FPROTO_USER_IRQS - 1, 0)

/**
 * struct fpgagdr_frame_sub - an open control node subscribed to frames
 * @node: in fpgagdr_frames.subs
 * @ev: the queue, a ring
 * @head: index of the oldest event
 * @count: events queued
 * @drops: events dropped that no queued event carries yet
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
	bool have_given;
	u64 last_given;
	u32 cancel;
};

/**
 * struct fpgagdr_user_file - an open user register node
 * @fdev: the card, referenced
 * @node: in fpgagdr_frames.mappings
 * @mapping: the address space its mmap()s live in, zapped on removal
 */
struct fpgagdr_user_file {
	struct fpgagdr_dev *fdev;
	struct list_head node;
	struct address_space *mapping;
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
	[FPGAGDR_FRAMES_NO_SLOTS] = "SLOT_COUNT is not 1..1024",
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

	for (k = 0; k < FPROTO_USER_IRQS && !fr->polled; k++)
		if (fr->ev_open[k] && !(fr->oneshot & BIT(k)))
			want |= BIT(k);
	if (on && !fr->polled)
		want |= BIT(fr->user_irq);
	if (fr->state == FPGAGDR_FRAMES_OK)
		fr->ops->write(fr->ctx, FPROTO_REG_CONTROL,
			       on ? FPROTO_CONTROL_CAPTURE |
			       (fr->polled ? 0 : FPROTO_CONTROL_IRQ_EN) : 0);
	if (want & ~fr->enabled)
		fr->ops->irq_enable(fr->ctx, want & ~fr->enabled, true);
	if (fr->enabled & ~want)
		fr->ops->irq_enable(fr->ctx, fr->enabled & ~want, false);
	fr->enabled = want;
	if (on && fr->polled)
		schedule_delayed_work(&fr->poll_work, 1);
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
	if (!sub->count)
		sub->drops = 0;
	sub->count++;
}

static u32 fpgagdr_frames_check(const struct fpgagdr_frames *fr,
				const struct fpgagdr_frame_ev *ev)
{
	u32 slot;

	if (fr->have_last && ev->seq <= fr->last_seq)
		return FPGAGDR_FRAMES_RULE_SEQUENCE;
	div_u64_rem(ev->seq, fr->slot_count, &slot);
	if (ev->slot != slot)
		return FPGAGDR_FRAMES_RULE_SLOT;
	if (ev->len < FPGAGDR_FRAME_HEADER_LEN || ev->len > fr->slot_size)
		return FPGAGDR_FRAMES_RULE_LENGTH;
	return FPGAGDR_FRAMES_RULE_OK;
}

static void fpgagdr_frames_warn(struct fpgagdr_frames *fr,
				const struct fpgagdr_frame_ev *ev)
{
	struct fpgagdr_dev *fdev = fpgagdr_frames_dev(fr);

	switch (ev->rule) {
	case FPGAGDR_FRAMES_RULE_SEQUENCE:
		dev_warn_ratelimited(fdev->dev, "%s: frame protocol broken: sequence %llu after %llu (the sequence must grow); event refused (EBADMSG)\n",
				     fdev->name, ev->seq, fr->last_seq);
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

/*
 * Take the frame-done record if the card has one pending: latch, read,
 * acknowledge, check, queue for every subscriber.  @lock held, attached.
 */
static bool fpgagdr_frames_take(struct fpgagdr_frames *fr)
{
	const struct fpgagdr_user_ops *ops = fr->ops;
	struct fpgagdr_frame_sub *sub;
	struct fpgagdr_frame_ev ev = { 0 };
	u32 lo, hi;

	if (!(ops->read(fr->ctx, FPROTO_REG_IRQ_STATUS) &
	      FPROTO_IRQ_STATUS_FRAME_PENDING))
		return false;
	lo = ops->read(fr->ctx, FPROTO_REG_DONE_SEQ_LO);	/* latches */
	hi = ops->read(fr->ctx, FPROTO_REG_DONE_SEQ_HI);
	ev.slot = ops->read(fr->ctx, FPROTO_REG_DONE_SLOT);
	ev.len = ops->read(fr->ctx, FPROTO_REG_DONE_LENGTH);
	ops->write(fr->ctx, FPROTO_REG_HOST_ACK, lo);
	ev.arrival_ns = ktime_get_ns();
	ev.seq = (u64)hi << 32 | lo;
	ev.rule = fpgagdr_frames_check(fr, &ev);
	fr->events++;
	fr->irq_count[fr->user_irq]++;
	if (ev.rule) {
		fr->protocol_errors++;
		fpgagdr_frames_warn(fr, &ev);
	}
	if (ev.rule != FPGAGDR_FRAMES_RULE_SEQUENCE) {
		if (fr->have_last && ev.seq > fr->last_seq + 1)
			fr->missed += ev.seq - fr->last_seq - 1;
		fr->last_seq = ev.seq;
		fr->have_last = true;
	}
	list_for_each_entry(sub, &fr->subs, node)
		fpgagdr_frames_queue(fr, sub, &ev);
	return true;
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
	bool ours = false;
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
		if (fr->enabled & BIT(fr->user_irq))
			ours = fpgagdr_frames_take(fr);
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
	}
	spin_unlock_irqrestore(&fr->lock, flags);
	if (!ours)
		return IRQ_NONE;
	wake_up_all(&fr->wq);
	return IRQ_HANDLED;
}

/* Poll mode: look at IRQ_STATUS while anyone listens. */
static void fpgagdr_frames_poll_work(struct work_struct *work)
{
	struct fpgagdr_frames *fr = container_of(to_delayed_work(work),
						 struct fpgagdr_frames,
						 poll_work);
	bool again, took = false;
	unsigned long flags;
	u32 n = 0;

	spin_lock_irqsave(&fr->lock, flags);
	again = fr->attached && fpgagdr_frames_listened(fr);
	while (again && n++ < FPGAGDR_EVENT_QUEUE_LEN && fpgagdr_frames_take(fr))
		took = true;
	spin_unlock_irqrestore(&fr->lock, flags);
	if (took)
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
	if (!fr->slot_count || fr->slot_count > FPGAGDR_MAX_SLOTS)
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
	struct fpgagdr_user_file *uf;
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
	mutex_lock(&fr->mmap_lock);
	list_for_each_entry(uf, &fr->mappings, node)
		unmap_mapping_range(uf->mapping, 0, 0, 1);
	mutex_unlock(&fr->mmap_lock);
}

/**
 * fpgagdr_frames_resume() - after a PCIe reset: listen again as before
 * @fdev: the card; the reset left every user interrupt masked
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
		fr->enabled = 0;
		fpgagdr_frames_apply(fr);
	}
	spin_unlock_irqrestore(&fr->lock, flags);
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
	fi->events = fr->events;
	fi->missed = fr->missed;
	fi->queue_overflows = fr->queue_overflows;
	fi->protocol_errors = fr->protocol_errors;
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
				 struct fpgagdr_frame_sub *sub, u32 cancel)
{
	return READ_ONCE(sub->count) || READ_ONCE(sub->cancel) != cancel ||
	       READ_ONCE(fdev->gone);
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
 * -EINTR, -ETIMEDOUT, -EAGAIN, -ECANCELED, -ENODEV, -EBADMSG.
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
	long left;
	int ret = 0;

	if (fr->state != FPGAGDR_FRAMES_OK)
		return -ENXIO;
	sub = fpgagdr_frames_subscribe(fr, subp);
	if (!sub)
		return -ENOMEM;
	cancel = READ_ONCE(sub->cancel);
	if (!(w->flags & FPGAGDR_WAIT_NOWAIT)) {
		left = msecs_to_jiffies(w->timeout_ms);
		left = wait_event_interruptible_timeout(fr->wq,
							fpgagdr_frames_ready(fdev, sub, cancel),
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
		if (ev.rule) {
			ret = -EBADMSG;
		} else {
			w->missed = sub->have_given ?
				    ev.seq - sub->last_given - 1 : 0;
			sub->last_given = ev.seq;
			sub->have_given = true;
		}
	} else if (sub->cancel != cancel) {
		ret = -ECANCELED;
	} else {
		ret = w->flags & FPGAGDR_WAIT_NOWAIT ? -EAGAIN : -ETIMEDOUT;
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
	u32 k, nsubs, enabled, oneshot;
	u64 ev, missed, ovf, perr;

	spin_lock_irqsave(&fr->lock, flags);
	nsubs = fr->nsubs;
	enabled = fr->enabled;
	oneshot = fr->oneshot;
	ev = fr->events;
	missed = fr->missed;
	ovf = fr->queue_overflows;
	perr = fr->protocol_errors;
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
	seq_printf(m, "events %llu\n", ev);
	seq_printf(m, "missed %llu\n", missed);
	seq_printf(m, "queue_overflows %llu\n", ovf);
	seq_printf(m, "protocol_errors %llu\n", perr);
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

/* ---- fpgagdrN_user ---- */

static int fpgagdr_user_open(struct inode *inode, struct file *file)
{
	struct fpgagdr_user_file *uf;
	struct fpgagdr_dev *fdev;
	u32 node;

	fdev = fpgagdr_dev_get_by_minor(iminor(inode), &node);
	if (!fdev)
		return -ENODEV;
	uf = kzalloc(sizeof(*uf), GFP_KERNEL_ACCOUNT);
	if (!uf) {
		fpgagdr_dev_put(fdev);
		return -ENOMEM;
	}
	uf->fdev = fdev;
	uf->mapping = file->f_mapping;
	mutex_lock(&fdev->frames.mmap_lock);
	list_add(&uf->node, &fdev->frames.mappings);
	mutex_unlock(&fdev->frames.mmap_lock);
	file->private_data = uf;
	return 0;
}

static int fpgagdr_user_release(struct inode *inode, struct file *file)
{
	struct fpgagdr_user_file *uf = file->private_data;
	struct fpgagdr_dev *fdev = uf->fdev;

	mutex_lock(&fdev->frames.mmap_lock);
	list_del(&uf->node);
	mutex_unlock(&fdev->frames.mmap_lock);
	kfree(uf);
	fpgagdr_dev_put(fdev);
	return 0;
}

/*
 * Clip [*ppos, *ppos + count) to the block; words only.  Returns the
 * bytes to move (0 at the end) or -EINVAL.
 */
static ssize_t fpgagdr_user_span(struct fpgagdr_frames *fr, loff_t pos,
				 size_t count)
{
	if (pos < 0 || !IS_ALIGNED(pos, 4) || !IS_ALIGNED(count, 4))
		return -EINVAL;
	if (pos >= fr->len)
		return 0;
	return min_t(size_t, min_t(size_t, count, fr->len - pos), PAGE_SIZE);
}

/* Move @n bytes of registers from @pos to or from @kbuf. */
static int fpgagdr_user_io(struct fpgagdr_dev *fdev, u32 *kbuf, u32 pos,
			   size_t n, bool write)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	unsigned long flags;
	size_t i = 0, end;

	while (i < n / 4) {
		end = min_t(size_t, n / 4, i + FPGAGDR_USER_BURST);
		spin_lock_irqsave(&fr->lock, flags);
		if (!fr->attached || READ_ONCE(fdev->gone)) {
			spin_unlock_irqrestore(&fr->lock, flags);
			return -ENODEV;
		}
		for (; i < end; i++) {
			if (write)
				fr->ops->write(fr->ctx, pos + 4 * i, kbuf[i]);
			else
				kbuf[i] = fr->ops->read(fr->ctx, pos + 4 * i);
		}
		spin_unlock_irqrestore(&fr->lock, flags);
	}
	return 0;
}

static ssize_t fpgagdr_user_read(struct file *file, char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct fpgagdr_user_file *uf = file->private_data;
	ssize_t n = fpgagdr_user_span(&uf->fdev->frames, *ppos, count);
	u32 *kbuf;
	int ret;

	if (n <= 0)
		return n;
	kbuf = kmalloc(n, GFP_KERNEL);
	if (!kbuf)
		return -ENOMEM;
	ret = fpgagdr_user_io(uf->fdev, kbuf, *ppos, n, false);
	if (!ret && copy_to_user(buf, kbuf, n))
		ret = -EFAULT;
	kfree(kbuf);
	if (ret)
		return ret;
	*ppos += n;
	return n;
}

static ssize_t fpgagdr_user_write(struct file *file, const char __user *buf,
				  size_t count, loff_t *ppos)
{
	struct fpgagdr_user_file *uf = file->private_data;
	ssize_t n = fpgagdr_user_span(&uf->fdev->frames, *ppos, count);
	u32 *kbuf;
	int ret;

	if (n < 0)
		return n;
	if (!n)
		return count ? -ENOSPC : 0;
	kbuf = memdup_user(buf, n);
	if (IS_ERR(kbuf))
		return PTR_ERR(kbuf);
	ret = fpgagdr_user_io(uf->fdev, kbuf, *ppos, n, true);
	kfree(kbuf);
	if (ret)
		return ret;
	*ppos += n;
	return n;
}

static loff_t fpgagdr_user_llseek(struct file *file, loff_t off, int whence)
{
	struct fpgagdr_user_file *uf = file->private_data;

	return fixed_size_llseek(file, off, whence, uf->fdev->frames.len);
}

static vm_fault_t fpgagdr_user_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct fpgagdr_user_file *uf = vma->vm_private_data;
	struct fpgagdr_frames *fr = &uf->fdev->frames;
	unsigned long pfn, flags;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	bool ok, io = false;

	/* removal zaps under this mutex: no insert can follow its zap */
	mutex_lock(&fr->mmap_lock);
	spin_lock_irqsave(&fr->lock, flags);
	ok = fr->attached && !READ_ONCE(uf->fdev->gone);
	spin_unlock_irqrestore(&fr->lock, flags);
	if (ok && !fr->ops->pfn(fr->ctx, vmf->pgoff, &pfn, &io))
		ret = vmf_insert_pfn_prot(vma, vmf->address, pfn,
					  io ? pgprot_noncached(vma->vm_page_prot) :
					  vma->vm_page_prot);
	mutex_unlock(&fr->mmap_lock);
	return ret;
}

static const struct vm_operations_struct fpgagdr_user_vm_ops = {
	.fault = fpgagdr_user_fault,
};

static int fpgagdr_user_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct fpgagdr_user_file *uf = file->private_data;
	unsigned long pages = DIV_ROUND_UP(uf->fdev->frames.len, PAGE_SIZE);

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= pages || vma_pages(vma) > pages - vma->vm_pgoff)
		return -EINVAL;
	fpgagdr_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND |
			     VM_DONTDUMP);
	vma->vm_ops = &fpgagdr_user_vm_ops;
	vma->vm_private_data = uf;
	return 0;
}

const struct file_operations fpgagdr_user_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_user_open,
	.release = fpgagdr_user_release,
	.read = fpgagdr_user_read,
	.write = fpgagdr_user_write,
	.llseek = fpgagdr_user_llseek,
	.mmap = fpgagdr_user_mmap,
};
