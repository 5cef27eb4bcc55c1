// SPDX-License-Identifier: GPL-2.0
/*
 * The card object.  A driver creates a card for its PCI function with
 * fpgagdr_dev_alloc(), gives it engines with fpgagdr_dev_add_engine() and
 * publishes it with fpgagdr_card_register() (fpgagdr-card.c).
 *
 * References: the driver holds one from alloc until after removal; each
 * open file and each pin holds one.  Opens find the card through
 * fpgagdr_devs, from which removal takes it first, so no new file can
 * reach a card that is going away.  The card's number is reserved from
 * alloc, so that its interrupt can be named before it is published.
 *
 * DMA resources (the descriptor pool, the engines' descriptor memory) are
 * released by removal while the device is still bound (the IOMMU state of
 * a removed device is gone), or by the last reference of a card that was
 * never published.
 */
#include <linux/cdev.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "compat.h"
#include "fpgagdr-core.h"

static unsigned long long fpgagdr_card_size;
module_param_named(card_size, fpgagdr_card_size, ullong, 0444);
MODULE_PARM_DESC(card_size, "Card address space in bytes that transfers are checked against (default 0: unknown, only wrap-around is checked)");

struct class *fpgagdr_class;
static dev_t fpgagdr_devt;

/*
 * id -> struct fpgagdr_dev: NULL (reserved) from alloc until published;
 * xa_lock protects lookups
 */
static DEFINE_XARRAY_ALLOC(fpgagdr_devs);

/**
 * fpgagdr_dev_init() - reserve the device numbers, create the class
 *
 * Context: module init.
 * Return: 0 or an error of the character device or class code.
 */
int fpgagdr_dev_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&fpgagdr_devt, 0,
				  FPGAGDR_MAX_DEVS * FPGAGDR_NODES, "fpgagdr");
	if (ret)
		return ret;
	fpgagdr_class = fpgagdr_class_create("fpgagdr");
	if (IS_ERR(fpgagdr_class)) {
		unregister_chrdev_region(fpgagdr_devt,
					 FPGAGDR_MAX_DEVS * FPGAGDR_NODES);
		return PTR_ERR(fpgagdr_class);
	}
	return 0;
}

/**
 * fpgagdr_dev_exit() - undo fpgagdr_dev_init()
 *
 * Context: module exit, every card removed.
 */
void fpgagdr_dev_exit(void)
{
	class_destroy(fpgagdr_class);
	unregister_chrdev_region(fpgagdr_devt, FPGAGDR_MAX_DEVS * FPGAGDR_NODES);
}

/**
 * fpgagdr_dev_devt() - the device number of one of a card's nodes
 * @fdev: the card
 * @node: 0 for the control node, fpgagdr_dev_node() for a channel node
 *
 * Context: any.
 * Return: the device number.
 */
dev_t fpgagdr_dev_devt(const struct fpgagdr_dev *fdev, u32 node)
{
	return MKDEV(MAJOR(fpgagdr_devt),
		     MINOR(fpgagdr_devt) + fdev->id * FPGAGDR_NODES + node);
}

/**
 * fpgagdr_dev_node() - the node number of an engine's channel node
 * @eng: the engine
 *
 * Context: any.
 * Return: 1..FPGAGDR_NODES - 1.
 */
u32 fpgagdr_dev_node(const struct fpgagdr_engine *eng)
{
	return 1 + eng->dir * XDMA_MAX_CHANNELS + eng->index;
}

/**
 * fpgagdr_dev_alloc() - create a card for a PCI function
 * @pdev: the function the card's DMA is mapped for; a reference is taken
 *
 * Reserves the card's number (its name is fdev->name from here on) and
 * sets the device's maximum DMA segment size to the longest descriptor,
 * so that the DMA API (an IOMMU merging a scatterlist) never makes a
 * segment the card would split.
 *
 * Context: process context.
 * Return: the card with one reference, ERR_PTR(-ENOSPC) when
 * FPGAGDR_MAX_DEVS cards exist, or ERR_PTR(-ENOMEM).
 */
struct fpgagdr_dev *fpgagdr_dev_alloc(struct pci_dev *pdev)
{
	struct fpgagdr_dev *fdev;
	u32 id;
	int ret;

	fdev = kzalloc(sizeof(*fdev), GFP_KERNEL);
	if (!fdev)
		return ERR_PTR(-ENOMEM);
	ret = xa_alloc(&fpgagdr_devs, &id, NULL,
		       XA_LIMIT(0, FPGAGDR_MAX_DEVS - 1), GFP_KERNEL);
	if (ret) {
		kfree(fdev);
		return ERR_PTR(ret == -EBUSY ? -ENOSPC : ret);
	}
	fdev->id = id;
	fdev->id_held = true;
	snprintf(fdev->name, sizeof(fdev->name), "fpgagdr%u", id);
	fdev->desc_pool = dma_pool_create("fpgagdr-desc", &pdev->dev,
					  XDMA_DESC_BOUNDARY,
					  XDMA_DESC_BOUNDARY, 0);
	if (!fdev->desc_pool) {
		xa_erase(&fpgagdr_devs, id);
		kfree(fdev);
		return ERR_PTR(-ENOMEM);
	}
	dma_set_max_seg_size(&pdev->dev, FPGAGDR_DESC_MAX_LEN);
	kref_init(&fdev->ref);
	fdev->pdev = pci_dev_get(pdev);
	fdev->dev = &pdev->dev;
	fdev->card_size = fpgagdr_card_size;
	mutex_init(&fdev->fence_lock);
	init_rwsem(&fdev->dma_lock);
	mutex_init(&fdev->pins_lock);
	INIT_LIST_HEAD(&fdev->pins);
	/* no user register block until the driver attaches one */
	fdev->frames.state = FPGAGDR_FRAMES_NO_USER_BAR;
	spin_lock_init(&fdev->frames.lock);
	INIT_LIST_HEAD(&fdev->frames.subs);
	init_waitqueue_head(&fdev->frames.wq);
	mutex_init(&fdev->frames.io_lock);
	mutex_init(&fdev->frames.mmap_lock);
	INIT_LIST_HEAD(&fdev->frames.mappings);
	return fdev;
}

/**
 * fpgagdr_dev_free_dma() - release the card's descriptor memory and pool
 * @fdev: the card; no engine runs and no pin holds descriptor memory
 *
 * Context: process context, with @dma_lock held for writing (removal) or
 * the last reference gone.
 */
void fpgagdr_dev_free_dma(struct fpgagdr_dev *fdev)
{
	u32 dir, ch;

	if (fdev->dma_gone)
		return;
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < fdev->nch[dir]; ch++)
			fpgagdr_descmem_free(&fdev->eng[dir][ch]->rw);
	dma_pool_destroy(fdev->desc_pool);
	fdev->desc_pool = NULL;
	fdev->dma_gone = true;
}

static void fpgagdr_dev_release(struct kref *ref)
{
	struct fpgagdr_dev *fdev = container_of(ref, struct fpgagdr_dev, ref);
	u32 dir, ch;

	WARN_ON_ONCE(!list_empty(&fdev->pins));
	fpgagdr_dev_free_dma(fdev);
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++)
			kfree(fdev->eng[dir][ch]);
	/* a card never published still holds its number */
	if (fdev->id_held)
		xa_erase(&fpgagdr_devs, fdev->id);
	pci_dev_put(fdev->pdev);
	kfree(fdev);
}

/**
 * fpgagdr_dev_get() - take a reference to a card
 * @fdev: the card, referenced by the caller
 *
 * Context: any.
 */
void fpgagdr_dev_get(struct fpgagdr_dev *fdev)
{
	kref_get(&fdev->ref);
}

/**
 * fpgagdr_dev_put() - drop a reference to a card
 * @fdev: the card
 *
 * Context: process context; the last put frees the card.
 */
void fpgagdr_dev_put(struct fpgagdr_dev *fdev)
{
	kref_put(&fdev->ref, fpgagdr_dev_release);
}

/**
 * fpgagdr_dev_add_engine() - give a card an engine before publishing it
 * @fdev: the card, not yet published
 * @dir: FPGAGDR_DIR_C2H or FPGAGDR_DIR_H2C
 * @index: channel number; channels of a direction are added 0, 1, ...
 * @ops: the engine implementation
 * @priv: implementation data, returned in engine->priv
 * @use_irq: whether the implementation signals fpgagdr_engine_complete()
 * @addr_align: address alignment the engine needs (power of 2)
 * @len_gran: length granularity the engine needs (power of 2)
 *
 * Context: process context, before fpgagdr_card_register().
 * Return: 0, -EINVAL for a bad slot or alignment, -ENOMEM.
 */
int fpgagdr_dev_add_engine(struct fpgagdr_dev *fdev, u32 dir, u32 index,
			   const struct fpgagdr_engine_ops *ops, void *priv,
			   bool use_irq, u32 addr_align, u32 len_gran)
{
	struct fpgagdr_engine *eng;
	int ret;

	if (dir > FPGAGDR_DIR_H2C || index != fdev->nch[dir] ||
	    index >= XDMA_MAX_CHANNELS || !is_power_of_2(addr_align) ||
	    !is_power_of_2(len_gran))
		return -EINVAL;
	eng = kzalloc(sizeof(*eng), GFP_KERNEL);
	if (!eng)
		return -ENOMEM;
	ret = fpgagdr_descmem_alloc(&eng->rw, fdev->desc_pool,
				    FPGAGDR_RW_CHUNK_PAGES + 1);
	if (ret) {
		kfree(eng);
		return ret;
	}
	eng->fdev = fdev;
	eng->ops = ops;
	eng->priv = priv;
	eng->dir = dir;
	eng->index = index;
	eng->use_irq = use_irq;
	eng->addr_align = addr_align;
	eng->len_gran = len_gran;
	spin_lock_init(&eng->lock);
	init_waitqueue_head(&eng->wq);
	fdev->eng[dir][index] = eng;
	fdev->nch[dir]++;
	return 0;
}

/**
 * fpgagdr_dev_engine() - look up an engine
 * @fdev: the card
 * @dir: direction from user space, unchecked
 * @channel: channel from user space, unchecked
 *
 * Context: any.
 * Return: the engine, or NULL if there is none (the caller's -ECHRNG).
 */
struct fpgagdr_engine *fpgagdr_dev_engine(struct fpgagdr_dev *fdev, u32 dir,
					  u32 channel)
{
	if (dir > FPGAGDR_DIR_H2C || channel >= fdev->nch[dir])
		return NULL;
	return fdev->eng[dir][channel];
}

/**
 * fpgagdr_dev_wake_engines() - wake every waiter on the card's engines
 * @fdev: the card
 *
 * Waiters re-check their cancel conditions (pin dying, card gone, link
 * down).
 *
 * Context: any.
 */
void fpgagdr_dev_wake_engines(struct fpgagdr_dev *fdev)
{
	u32 dir, ch;

	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < fdev->nch[dir]; ch++)
			wake_up_all(&fdev->eng[dir][ch]->wq);
}

/**
 * fpgagdr_dev_publish() - let opens find the card
 * @fdev: the card, its nodes created
 *
 * Context: process context.
 */
void fpgagdr_dev_publish(struct fpgagdr_dev *fdev)
{
	xa_store(&fpgagdr_devs, fdev->id, fdev, GFP_KERNEL);
}

/**
 * fpgagdr_dev_unpublish() - no new open finds the card; its number is free
 * @fdev: the card
 *
 * Context: process context.
 */
void fpgagdr_dev_unpublish(struct fpgagdr_dev *fdev)
{
	xa_erase(&fpgagdr_devs, fdev->id);
	fdev->id_held = false;
}

/**
 * fpgagdr_dev_get_by_minor() - find the card of a node being opened
 * @minor: minor number of the node
 * @node: set to the node's number in its card (0: the control node)
 *
 * Context: process context.
 * Return: the card with a reference taken, or NULL if it is gone.
 */
struct fpgagdr_dev *fpgagdr_dev_get_by_minor(unsigned int minor, u32 *node)
{
	unsigned long id = (minor - MINOR(fpgagdr_devt)) / FPGAGDR_NODES;
	struct fpgagdr_dev *fdev;

	*node = (minor - MINOR(fpgagdr_devt)) % FPGAGDR_NODES;
	xa_lock(&fpgagdr_devs);
	fdev = xa_load(&fpgagdr_devs, id);
	if (fdev && !READ_ONCE(fdev->gone))
		kref_get(&fdev->ref);
	else
		fdev = NULL;
	xa_unlock(&fpgagdr_devs);
	return fdev;
}
