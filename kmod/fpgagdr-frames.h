/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Frame capture (fpgagdr-frames.c): the card's user register block, the
 * frame protocol of docs/card-protocol.md on it, XDMA user interrupts,
 * per-file frame-done event queues (WAIT_FRAME, poll()), and the nodes
 * fpgagdrN_user and fpgagdrN_events_K.
 *
 * A driver gives the card its user register block with
 * fpgagdr_frames_attach() before fpgagdr_card_register(), and calls
 * fpgagdr_frames_irq() from its interrupt handler with the XDMA user
 * interrupts that are asserted.  The XDMA PCI driver's accessors read the
 * user BAR; the TEST-ONLY software card's read its register model.
 */
#ifndef FPGAGDR_FRAMES_H
#define FPGAGDR_FRAMES_H

#include <linux/interrupt.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <uapi/linux/fpgagdr.h>

#include "fpgagdr-fdone.h"
#include "fpgagdr-frames-regs.h"

struct cdev;
struct device;
struct file;
struct poll_table_struct;
struct fpgagdr_dev;
struct fpgagdr_frame_sub;

/**
 * struct fpgagdr_user_ops - a card's user register block and user IRQs
 * @read: read the 32-bit register at byte offset @off (a multiple of 4,
 *	below the block's length); may have side effects (the frame-done
 *	latch).  Called with a spinlock held, interrupts off, or from the
 *	user node in process context: must not sleep.
 * @write: write the 32-bit register at @off; same context as @read
 * @irq_enable: set (@on) or clear the bits @mask of the XDMA IRQ block's
 *	user interrupt enable mask (PG195: W1S 0x2008, W1C 0x200c); same
 *	context as @read
 * @pfn: the page frame that mmap() of page @pgoff of the block maps, and
 *	whether it is I/O memory (mapped uncached); 0 or -EINVAL
 */
struct fpgagdr_user_ops {
	u32 (*read)(void *ctx, u32 off);
	void (*write)(void *ctx, u32 off, u32 val);
	void (*irq_enable)(void *ctx, u32 mask, bool on);
	int (*pfn)(void *ctx, unsigned long pgoff, unsigned long *pfn,
		   bool *io);
};

/**
 * struct fpgagdr_frame_ev - one frame-done event as the handler took it
 * @seq: sequence number
 * @slot: slot index
 * @len: frame length, bytes
 * @rule: 0, or the FPGAGDR_FRAMES_RULE_* the event broke
 * @fresh: the first event of a new baseline (attach, a reset, the card
 *	back): no gap is known before it
 * @arrival_ns: ktime_get_ns() in the handler
 * @overflows: events this file's full queue dropped just before this one
 * @reset_drops: events a reset of the card dropped from this file's
 *	queue just before this one
 */
struct fpgagdr_frame_ev {
	u64 seq;
	u32 slot;
	u32 len;
	u32 rule;
	bool fresh;
	u64 arrival_ns;
	u64 overflows;
	u64 reset_drops;
};

/**
 * struct fpgagdr_frames - a card's frame capture state
 * @ops: the user register block's accessors, NULL without one
 * @ctx: their argument
 * @len: bytes of the user register block the nodes reach
 * @attached: @ops may be called (cleared for good by removal)
 * @polled: no interrupt: a worker polls IRQ_STATUS while anyone listens
 * @storm: the card raised frame-done for one record again and again:
 *	frame-done stays masked and the worker polls until capture restarts
 *	or the card is reset
 * @reset_seen: the function was reset since the PCIe error (hard rebase)
 * @state: enum fpgagdr_frames_state, decided when attached
 * @proto_version: the VERSION register
 * @slot_base: card address of slot 0
 * @slot_size: bytes per slot
 * @slot_count: slots
 * @user_irq: the frame-done user interrupt
 * @lock: every call of @ops but the user node's (see @io_lock), the
 *	queues, the counters below
 * @subs: subscribed open files (struct fpgagdr_frame_sub)
 * @nsubs: entries in @subs
 * @ev_open: open event nodes per user interrupt
 * @enabled: user interrupts unmasked in the XDMA IRQ block
 * @oneshot: user interrupts the handler masked until their node is read
 * @irq_count: user interrupts seen, per interrupt
 * @fd: the frame-done record's state and counters (fpgagdr-fdone.c)
 * @queue_overflows: events dropped for full queues
 * @wq: woken on every event, cancel, and removal
 * @poll_work: the worker of @polled
 * @io_lock: held by the user node around its register accesses; removal
 *	takes it after clearing @attached, so none is in flight after it
 * @mmap_lock: protects @mappings
 * @mappings: address spaces of open user nodes, zapped on removal
 * @user_cdev: the user node
 * @user_node: its device
 * @ev_cdev: event nodes
 * @ev_node: their devices
 */
struct fpgagdr_frames {
	const struct fpgagdr_user_ops *ops;
	void *ctx;
	u32 len;
	bool attached;
	bool polled;
	bool storm;
	bool reset_seen;
	u32 state;
	u32 proto_version;
	u64 slot_base;
	u32 slot_size;
	u32 slot_count;
	u32 user_irq;
	spinlock_t lock;	/* @ops calls, queues, counters */
	struct list_head subs;
	u32 nsubs;
	u32 ev_open[FPROTO_USER_IRQS];
	u32 enabled;
	u32 oneshot;
	u64 irq_count[FPROTO_USER_IRQS];
	struct fpgagdr_fdone fd;
	u64 queue_overflows;
	wait_queue_head_t wq;
	struct delayed_work poll_work;
	struct mutex io_lock;	/* user node accesses vs removal */
	struct mutex mmap_lock;	/* @mappings */
	struct list_head mappings;
	struct cdev *user_cdev;
	struct device *user_node;
	struct cdev *ev_cdev[FPROTO_USER_IRQS];
	struct device *ev_node[FPROTO_USER_IRQS];
};

void fpgagdr_frames_attach(struct fpgagdr_dev *fdev,
			   const struct fpgagdr_user_ops *ops, void *ctx,
			   u32 len, bool polled);
void fpgagdr_frames_detach(struct fpgagdr_dev *fdev);
void fpgagdr_frames_reset_done(struct fpgagdr_dev *fdev);
void fpgagdr_frames_resume(struct fpgagdr_dev *fdev);
irqreturn_t fpgagdr_frames_irq(struct fpgagdr_dev *fdev, u32 pending);
void fpgagdr_frames_card_gone(struct fpgagdr_dev *fdev);
void fpgagdr_frames_debugfs(struct fpgagdr_dev *fdev);

int fpgagdr_frames_info(struct fpgagdr_dev *fdev,
			struct fpgagdr_frame_info *fi);
int fpgagdr_frames_wait(struct fpgagdr_dev *fdev,
			struct fpgagdr_frame_sub **subp,
			struct fpgagdr_wait_frame *w);
__poll_t fpgagdr_frames_poll(struct fpgagdr_dev *fdev,
			     struct fpgagdr_frame_sub **subp,
			     struct file *file,
			     struct poll_table_struct *pt);
void fpgagdr_frames_cancel(struct fpgagdr_dev *fdev,
			   struct fpgagdr_frame_sub *sub);
void fpgagdr_frames_unsubscribe(struct fpgagdr_dev *fdev,
				struct fpgagdr_frame_sub *sub);

void fpgagdr_usernode_detach(struct fpgagdr_frames *fr);
extern const struct file_operations fpgagdr_user_fops;
extern const struct file_operations fpgagdr_events_fops;

#endif /* FPGAGDR_FRAMES_H */
