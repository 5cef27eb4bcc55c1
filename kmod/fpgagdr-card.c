// SPDX-License-Identifier: GPL-2.0
/*
 * A card's life as its driver sees it: publish (nodes, debugfs), removal,
 * shutdown, PCIe error recovery.  The XDMA PCI driver (fpgagdr-pci.c) and
 * the test-only software card call these in the same order:
 *
 *   probe:    stop leftover engines, then bus mastering on;
 *             fpgagdr_dev_alloc(), engines, fpgagdr_card_request_irq(),
 *             fpgagdr_card_register()
 *   remove:   fpgagdr_card_unregister(), then free the interrupt, unmap
 *             the registers, disable the function
 *   shutdown: fpgagdr_card_shutdown(), then bus mastering off
 *   AER:      fpgagdr_card_error_detected(), (after a reset) restore the
 *             function's state, fpgagdr_card_reset_done(),
 *             fpgagdr_card_resume()
 *   reset:    fpgagdr_card_reset_prepare(); after the reset restore the
 *             function's state, fpgagdr_card_reset_done(),
 *             fpgagdr_card_resume()
 *
 * A driver whose card has a user register block or user interrupts calls
 * fpgagdr_frames_attach() before fpgagdr_card_register().
 *
 * After fpgagdr_card_unregister() returns, nothing of the module touches
 * the card's registers, its driver's data or its DMA state again: every
 * engine was held (no run starts) and seen stopped or the card fenced,
 * every pin's memory and mapping was released, the descriptor pool
 * destroyed.  Open files keep the struct fpgagdr_dev; every call on them
 * answers ENODEV (UNPIN 0), and close frees what is left.
 */
#include <linux/cdev.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "fpgagdr-card.h"
#include "fpgagdr-pinned.h"

static int fpgagdr_node_add(struct fpgagdr_dev *fdev, u32 node,
			    const struct file_operations *fops,
			    struct cdev **cdevp, struct device **devp,
			    const char *name)
{
	dev_t devt = fpgagdr_dev_devt(fdev, node);
	struct cdev *cdev;
	struct device *dev;
	int ret;

	cdev = cdev_alloc();
	if (!cdev)
		return -ENOMEM;
	cdev->owner = THIS_MODULE;
	cdev->ops = fops;
	ret = cdev_add(cdev, devt, 1);
	if (ret) {
		kobject_put(&cdev->kobj);
		return ret;
	}
	dev = device_create(fpgagdr_class, fdev->dev, devt, fdev, "%s", name);
	if (IS_ERR(dev)) {
		cdev_del(cdev);
		return PTR_ERR(dev);
	}
	*cdevp = cdev;
	*devp = dev;
	return 0;
}

static void fpgagdr_node_del(struct fpgagdr_dev *fdev, u32 node,
			     struct cdev **cdevp, struct device **devp)
{
	if (!*cdevp)
		return;
	device_destroy(fpgagdr_class, fpgagdr_dev_devt(fdev, node));
	cdev_del(*cdevp);
	*cdevp = NULL;
	*devp = NULL;
}

static void fpgagdr_card_del_nodes(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	struct fpgagdr_engine *eng;
	u32 dir, ch, k;

	for (k = 0; k < FPROTO_USER_IRQS; k++)
		fpgagdr_node_del(fdev, FPGAGDR_NODE_EVENTS + k, &fr->ev_cdev[k],
				 &fr->ev_node[k]);
	fpgagdr_node_del(fdev, FPGAGDR_NODE_USER, &fr->user_cdev,
			 &fr->user_node);

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			eng = fdev->eng[dir][ch];
			fpgagdr_node_del(fdev, fpgagdr_dev_node(eng),
					 &eng->cdev, &eng->node);
		}
	}
	fpgagdr_node_del(fdev, 0, &fdev->ctl_cdev, &fdev->ctl);
}

/*
 * fpgagdrN_user where the card has a user register block, and
 * fpgagdrN_events_K where it has user interrupts (not in poll mode).
 */
static int fpgagdr_card_add_frame_nodes(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	char name[32];
	int ret = 0;
	u32 k;

	if (!fr->ops)
		return 0;
	if (fr->len) {
		snprintf(name, sizeof(name), "%s_user", fdev->name);
		ret = fpgagdr_node_add(fdev, FPGAGDR_NODE_USER,
				       &fpgagdr_user_fops, &fr->user_cdev,
				       &fr->user_node, name);
	}
	for (k = 0; k < FPROTO_USER_IRQS && !fr->polled && !ret; k++) {
		snprintf(name, sizeof(name), "%s_events_%u", fdev->name, k);
		ret = fpgagdr_node_add(fdev, FPGAGDR_NODE_EVENTS + k,
				       &fpgagdr_events_fops, &fr->ev_cdev[k],
				       &fr->ev_node[k], name);
	}
	return ret;
}

static int fpgagdr_card_add_nodes(struct fpgagdr_dev *fdev)
{
	static const char * const dir_name[] = { "c2h", "h2c" };
	struct fpgagdr_engine *eng;
	char name[32];
	u32 dir, ch;
	int ret;

	ret = fpgagdr_node_add(fdev, 0, &fpgagdr_ctl_fops, &fdev->ctl_cdev,
			       &fdev->ctl, fdev->name);
	for (dir = 0; dir < 2 && !ret; dir++) {
		for (ch = 0; ch < fdev->nch[dir] && !ret; ch++) {
			eng = fdev->eng[dir][ch];
			snprintf(name, sizeof(name), "%s_%s_%u", fdev->name,
				 dir_name[dir], ch);
			ret = fpgagdr_node_add(fdev, fpgagdr_dev_node(eng),
					       &fpgagdr_chan_fops, &eng->cdev,
					       &eng->node, name);
		}
	}
	if (!ret)
		ret = fpgagdr_card_add_frame_nodes(fdev);
	if (ret)
		fpgagdr_card_del_nodes(fdev);
	return ret;
}

/**
 * fpgagdr_card_request_irq() - request the card's interrupt, named after it
 * @fdev: the card, allocated (its name is known)
 * @irq: the Linux interrupt number
 * @handler: the handler
 * @data: its argument
 *
 * The interrupt is shared (INTx may be) and named "fpgagdrN" in
 * /proc/interrupts, so two cards' interrupts can be told apart.
 *
 * Context: process context.
 * Return: 0 or request_irq()'s error.
 */
int fpgagdr_card_request_irq(struct fpgagdr_dev *fdev, unsigned int irq,
			     irq_handler_t handler, void *data)
{
	return request_irq(irq, handler, IRQF_SHARED, fdev->name, data);
}

/**
 * fpgagdr_card_register() - publish a card: opens, nodes, debugfs
 * @fdev: the card with its engines added
 *
 * Context: process context.
 * Return: 0 or a node error.
 */
int fpgagdr_card_register(struct fpgagdr_dev *fdev)
{
	int ret;

	fdev->platform = fpgagdr_mem_platform();
	/* first: a node is open()ed as soon as it appears */
	fpgagdr_dev_publish(fdev);
	ret = fpgagdr_card_add_nodes(fdev);
	if (ret) {
		fpgagdr_dev_unpublish(fdev);
		return ret;
	}
	fpgagdr_debugfs_add(fdev);
	fpgagdr_frames_debugfs(fdev);
	dev_dbg(fdev->dev, "%s: %u H2C, %u C2H channels\n", fdev->name,
		fdev->nch[FPGAGDR_DIR_H2C], fdev->nch[FPGAGDR_DIR_C2H]);
	return 0;
}

/* Cancel everything in flight: new work and waiting work end -ENODEV. */
static void fpgagdr_card_gone(struct fpgagdr_dev *fdev)
{
	WRITE_ONCE(fdev->gone, true);
	/* pairs with the barriers of the claim and transfer paths */
	smp_mb();
	fpgagdr_dev_wake_engines(fdev);
}

/*
 * Hold every engine (no run starts again) and see each stopped; fence
 * the card when one is not.  @wait_ms bounds the wait for each engine's
 * transfer to end (0: as long as it takes).  Returns how many engines
 * could not be held.
 */
static u32 fpgagdr_card_hold_engines(struct fpgagdr_dev *fdev,
				     unsigned int wait_ms, bool dead)
{
	struct fpgagdr_engine *eng;
	u32 dir, ch, missed = 0;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			eng = fdev->eng[dir][ch];
			if (!fpgagdr_engine_hold(eng, wait_ms)) {
				missed++;
				continue;
			}
			if (!fpgagdr_engine_stop_held(eng))
				fpgagdr_engine_fence(fdev, READ_ONCE(fdev->link_down) ?
						     "a PCIe error: an engine not seen stopped" :
						     "an engine did not stop");
			if (dead)
				set_bit(FPGAGDR_ENG_DEAD, &eng->flags);
		}
	}
	return missed;
}

/**
 * fpgagdr_card_unregister() - take a card away from user space and hardware
 * @fdev: a registered card
 *
 * New opens fail; calls in flight end with -ENODEV (a channel-node call
 * still pinning user pages finds the card gone when it is done, without
 * being waited for); every engine is held and stopped, the card stops
 * mastering the bus, and every pin's memory, mapping and descriptor
 * memory is released, all while the device is still bound.  Open files
 * keep the struct until they are closed.
 *
 * Context: process context; waits for the transfers in flight, each of
 * which ends within its engine's stop budget once cancelled.
 */
void fpgagdr_card_unregister(struct fpgagdr_dev *fdev)
{
	fpgagdr_dev_unpublish(fdev);
	fpgagdr_card_gone(fdev);
	fpgagdr_frames_detach(fdev);
	fpgagdr_debugfs_remove(fdev);
	fpgagdr_card_del_nodes(fdev);
	fpgagdr_card_hold_engines(fdev, 0, true);
	/* whatever an engine does now cannot reach memory */
	pci_clear_master(fdev->pdev);
	fpgagdr_pinned_release_all(fdev);
	dev_info(fdev->dev, "%s: removed\n", fdev->name);
}

/**
 * fpgagdr_card_shutdown() - stop the card for reboot, kexec or power-off
 * @fdev: a registered card
 *
 * Calls in flight end -ENODEV, every engine is stopped (waiting at most a
 * second for each transfer to let go), and bus mastering goes off, so a
 * kexec'd kernel finds no engine writing into memory it now owns.  Pins
 * are not released: the system is going down.
 *
 * Context: process context (the driver's .shutdown).
 */
void fpgagdr_card_shutdown(struct fpgagdr_dev *fdev)
{
	u32 missed;

	fpgagdr_card_gone(fdev);
	fpgagdr_frames_detach(fdev);
	missed = fpgagdr_card_hold_engines(fdev, 1000, true);
	pci_clear_master(fdev->pdev);
	if (missed)
		dev_warn(fdev->dev, "%s: shutdown: %u engines still claimed, bus mastering off\n",
			 fdev->name, missed);
}

/**
 * fpgagdr_card_error_detected() - AER: a PCIe error was reported
 * @fdev: the card
 * @state: the channel's state
 *
 * Runs in flight end -EIO at once, new ones fail -EIO, and every engine
 * is held until fpgagdr_card_resume().  Each run in flight stops its
 * engine on the way out: through its registers when the link is up (a
 * non-fatal error: nothing resets the function, so nothing else would
 * stop it); when the link is frozen the registers are left alone and
 * the card is fenced (Bus Master Enable cleared) before the run lets go
 * of its memory, until the reset.  A frozen link asks for a reset (which
 * stops the function); a permanent failure disconnects (remove()
 * follows).
 *
 * Context: process context (the AER core).
 * Return: what the driver's error_detected returns.
 */
pci_ers_result_t fpgagdr_card_error_detected(struct fpgagdr_dev *fdev,
					     pci_channel_state_t state)
{
	atomic64_inc(&fdev->stats.link_errors);
	dev_warn(fdev->dev, "%s: PCIe error (%s): runs in flight end EIO\n",
		 fdev->name, state == pci_channel_io_normal ? "link up" :
		 state == pci_channel_io_frozen ? "link frozen" :
		 "permanent failure");
	WRITE_ONCE(fdev->link_frozen, state != pci_channel_io_normal);
	WRITE_ONCE(fdev->link_down, true);
	/* the flag before the wake-ups: waiters look at it when woken */
	smp_mb();
	fpgagdr_dev_wake_engines(fdev);
	if (state == pci_channel_io_perm_failure)
		return PCI_ERS_RESULT_DISCONNECT;
	fpgagdr_card_hold_engines(fdev, 0, false);
	return state == pci_channel_io_normal ? PCI_ERS_RESULT_CAN_RECOVER :
						PCI_ERS_RESULT_NEED_RESET;
}

/**
 * fpgagdr_card_reset_prepare() - a reset of the function is about to happen
 * @fdev: the card
 *
 * A reset asked for outside PCIe error recovery (sysfs reset, a hot reset
 * of the bus, another driver's FLR): as a PCIe error with a working link
 * (runs in flight end -EIO and stop their engines through the registers,
 * every engine is held and stopped), but not counted as one.  The driver
 * follows the reset with fpgagdr_card_reset_done() and
 * fpgagdr_card_resume(), as after an AER slot reset.
 *
 * Context: process context (the driver's reset_prepare).
 */
void fpgagdr_card_reset_prepare(struct fpgagdr_dev *fdev)
{
	dev_info(fdev->dev, "%s: function reset: runs in flight end EIO\n",
		 fdev->name);
	WRITE_ONCE(fdev->link_frozen, false);
	WRITE_ONCE(fdev->link_down, true);
	/* the flag before the wake-ups: waiters look at it when woken */
	smp_mb();
	fpgagdr_dev_wake_engines(fdev);
	fpgagdr_card_hold_engines(fdev, 0, false);
}

/**
 * fpgagdr_card_reset_done() - AER: the function was reset and restored
 * @fdev: the card; its engines are idle after the reset, its user register
 *	block in its reset state (the frame sequence restarted)
 *
 * The fence is forgotten (the reset stopped every engine) and frame
 * capture re-baselined; the driver has restored what the reset cleared of
 * the DMA core's own setup (interrupt routing and enables) before.
 *
 * Context: process context (the driver's slot_reset).
 */
void fpgagdr_card_reset_done(struct fpgagdr_dev *fdev)
{
	fpgagdr_engine_unfence_reset(fdev);
	fpgagdr_frames_reset_done(fdev);
}

/**
 * fpgagdr_card_resume() - AER: recovery is over, transfers may run again
 * @fdev: the card
 *
 * Every engine held since the error is stopped (clearing what the error
 * left in its status) and given back.
 *
 * Context: process context (the driver's resume).
 */
void fpgagdr_card_resume(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_engine *eng;
	u32 dir, ch;

	WRITE_ONCE(fdev->link_down, false);
	WRITE_ONCE(fdev->link_frozen, false);
	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			eng = fdev->eng[dir][ch];
			/* held since the error (not by a transfer) */
			if (!test_bit(FPGAGDR_ENG_BUSY, &eng->flags) ||
			    READ_ONCE(eng->owner) != fdev)
				continue;
			if (!fpgagdr_engine_stop_held(eng))
				fpgagdr_engine_fence(fdev, "an engine did not stop");
			fpgagdr_engine_release(eng);
		}
	}
	fpgagdr_frames_resume(fdev);
	dev_info(fdev->dev, "%s: recovered from a PCIe error or reset\n",
		 fdev->name);
}
