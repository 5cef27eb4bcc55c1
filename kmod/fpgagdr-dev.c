// SPDX-License-Identifier: GPL-2.0
/*
 * Card lifetime and nodes.  A card is created by a driver (the PCI driver,
 * or a test-only software card) with fpgagdr_dev_alloc(), given engines with
 * fpgagdr_dev_add_engine() and published with fpgagdr_dev_register().
 *
 * References: the driver holds one from alloc until after unregister; each
 * open file and each pin holds one.  Opens find the card through
 * fpgagdr_devs, from which unregister removes it first, so no new file can
 * reach a card that is going away.
 */
#include <linux/cdev.h>
#include <linux/dmapool.h>
#include <linux/fs.h>
#include <linux/of.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "fpgagdr-core.h"

/* id -> struct fpgagdr_dev of registered cards; xa_lock protects lookups */
static DEFINE_XARRAY_ALLOC(fpgagdr_devs);

static u32 fpgagdr_platform(void)
{
	if (IS_ENABLED(CONFIG_ARCH_TEGRA) &&
	    of_machine_is_compatible("nvidia,tegra234"))
		return FPGAGDR_PLATFORM_ORIN;
	if (fpgagdr_mem_ops(FPGAGDR_MEM_NV_P2P))
		return FPGAGDR_PLATFORM_X86_DGPU;
	return FPGAGDR_PLATFORM_NONE;
}

/**
 * fpgagdr_dev_alloc() - create a card for a DMA-capable device
 * @dev: the device the card's DMA is mapped for; a reference is taken
 *
 * Context: process context.
 * Return: the card with one reference, or NULL when out of memory.
 */
struct fpgagdr_dev *fpgagdr_dev_alloc(struct device *dev)
{
	struct fpgagdr_dev *fdev = kzalloc(sizeof(*fdev), GFP_KERNEL);

	if (!fdev)
		return NULL;
	fdev->desc_pool = dma_pool_create("fpgagdr-desc", dev,
					  XDMA_DESC_BOUNDARY,
					  XDMA_DESC_BOUNDARY, 0);
	if (!fdev->desc_pool) {
		kfree(fdev);
		return NULL;
	}
	kref_init(&fdev->ref);
	fdev->dev = get_device(dev);
	fdev->id = -1;
	fdev->card_size = fpgagdr_card_size;
	fdev->platform = fpgagdr_platform();
	return fdev;
}

static void fpgagdr_dev_release(struct kref *ref)
{
	struct fpgagdr_dev *fdev = container_of(ref, struct fpgagdr_dev, ref);
	struct fpgagdr_engine *eng;
	u32 dir, ch;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < XDMA_MAX_CHANNELS; ch++) {
			eng = fdev->eng[dir][ch];
			if (!eng)
				continue;
			fpgagdr_descmem_free(&eng->rw);
			kfree(eng);
		}
	}
	dma_pool_destroy(fdev->desc_pool);
	put_device(fdev->dev);
	kfree(fdev);
}

/**
 * fpgagdr_dev_put() - drop a reference to a card
 * @fdev: the card
 *
 * Context: process context; the last put frees engines and descriptor pool.
 */
void fpgagdr_dev_put(struct fpgagdr_dev *fdev)
{
	kref_put(&fdev->ref, fpgagdr_dev_release);
}

/**
 * fpgagdr_dev_add_engine() - give a card an engine before registering it
 * @fdev: the card, not yet registered
 * @dir: FPGAGDR_DIR_C2H or FPGAGDR_DIR_H2C
 * @index: channel number; channels of a direction are added 0, 1, ...
 * @ops: the engine implementation
 * @priv: implementation data, returned in engine->priv
 * @use_irq: whether the implementation signals fpgagdr_engine_complete()
 * @addr_align: address alignment the engine needs (power of 2)
 * @len_gran: length granularity the engine needs (power of 2)
 *
 * Context: process context, before fpgagdr_dev_register().
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
 * Waiters re-check their cancel conditions (pin dying, card gone).
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

static dev_t fpgagdr_node_devt(struct fpgagdr_dev *fdev, u32 node)
{
	return MKDEV(MAJOR(fpgagdr_devt),
		     MINOR(fpgagdr_devt) + fdev->id * FPGAGDR_NODES + node);
}

static int fpgagdr_node_add(struct fpgagdr_dev *fdev, u32 node,
			    const struct file_operations *fops,
			    struct cdev **cdevp, struct device **devp,
			    const char *name)
{
	dev_t devt = fpgagdr_node_devt(fdev, node);
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
	device_destroy(fpgagdr_class, fpgagdr_node_devt(fdev, node));
	cdev_del(*cdevp);
	*cdevp = NULL;
	*devp = NULL;
}

static u32 fpgagdr_engine_node(const struct fpgagdr_engine *eng)
{
	return 1 + eng->dir * XDMA_MAX_CHANNELS + eng->index;
}

static void fpgagdr_dev_del_nodes(struct fpgagdr_dev *fdev)
{
	struct fpgagdr_engine *eng;
	u32 dir, ch;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			eng = fdev->eng[dir][ch];
			fpgagdr_node_del(fdev, fpgagdr_engine_node(eng),
					 &eng->cdev, &eng->node);
		}
	}
	fpgagdr_node_del(fdev, 0, &fdev->ctl_cdev, &fdev->ctl);
}

static int fpgagdr_dev_add_nodes(struct fpgagdr_dev *fdev)
{
	static const char * const dir_name[] = { "c2h", "h2c" };
	struct fpgagdr_engine *eng;
	char name[32];
	u32 dir, ch;
	int ret;

	snprintf(name, sizeof(name), "fpgagdr%d", fdev->id);
	ret = fpgagdr_node_add(fdev, 0, &fpgagdr_ctl_fops, &fdev->ctl_cdev,
			       &fdev->ctl, name);
	for (dir = 0; dir < 2 && !ret; dir++) {
		for (ch = 0; ch < fdev->nch[dir] && !ret; ch++) {
			eng = fdev->eng[dir][ch];
			snprintf(name, sizeof(name), "fpgagdr%d_%s_%u",
				 fdev->id, dir_name[dir], ch);
			ret = fpgagdr_node_add(fdev, fpgagdr_engine_node(eng),
					       &fpgagdr_chan_fops, &eng->cdev,
					       &eng->node, name);
		}
	}
	if (ret)
		fpgagdr_dev_del_nodes(fdev);
	return ret;
}

/**
 * fpgagdr_dev_register() - publish a card: number, nodes, debugfs
 * @fdev: the card with its engines added
 *
 * Context: process context.
 * Return: 0, -ENOSPC when FPGAGDR_MAX_DEVS cards exist, or a node error.
 */
int fpgagdr_dev_register(struct fpgagdr_dev *fdev)
{
	u32 id;
	int ret;

	ret = xa_alloc(&fpgagdr_devs, &id, NULL,
		       XA_LIMIT(0, FPGAGDR_MAX_DEVS - 1), GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -ENOSPC : ret;
	fdev->id = id;

	ret = fpgagdr_dev_add_nodes(fdev);
	if (ret)
		goto free_id;
	fpgagdr_debugfs_add(fdev);
	/* last: from here on opens can find the card */
	xa_store(&fpgagdr_devs, id, fdev, GFP_KERNEL);
	dev_dbg(fdev->dev, "fpgagdr%d: %u H2C, %u C2H channels\n", fdev->id,
		fdev->nch[FPGAGDR_DIR_H2C], fdev->nch[FPGAGDR_DIR_C2H]);
	return 0;

free_id:
	xa_erase(&fpgagdr_devs, id);
	fdev->id = -1;
	return ret;
}

/**
 * fpgagdr_dev_unregister() - take a card away from user space and hardware
 * @fdev: a registered card
 *
 * New opens fail; transfers in flight are cancelled (-ENODEV) and every
 * engine is stopped and marked dead, so that after this returns no engine
 * op runs again and the driver may unmap its registers.  Open files keep
 * the card's memory until they are closed; their pins stay mapped for the
 * device until then.
 *
 * Context: process context; sleeps up to FPGAGDR_STOP_WAIT_MS per engine.
 */
void fpgagdr_dev_unregister(struct fpgagdr_dev *fdev)
{
	u32 dir, ch;

	xa_erase(&fpgagdr_devs, fdev->id);
	WRITE_ONCE(fdev->gone, true);
	fpgagdr_dev_wake_engines(fdev);
	fpgagdr_debugfs_remove(fdev);
	fpgagdr_dev_del_nodes(fdev);
	for (dir = 0; dir < 2; dir++)
		for (ch = 0; ch < fdev->nch[dir]; ch++)
			fpgagdr_engine_quiesce(fdev->eng[dir][ch]);
}

/**
 * fpgagdr_dev_get_by_minor() - find the card of a node being opened
 * @minor: minor number of the node
 *
 * Context: process context.
 * Return: the card with a reference taken, or NULL if it is gone.
 */
struct fpgagdr_dev *fpgagdr_dev_get_by_minor(unsigned int minor)
{
	unsigned long id = (minor - MINOR(fpgagdr_devt)) / FPGAGDR_NODES;
	struct fpgagdr_dev *fdev;

	xa_lock(&fpgagdr_devs);
	fdev = xa_load(&fpgagdr_devs, id);
	if (fdev && !READ_ONCE(fdev->gone))
		kref_get(&fdev->ref);
	else
		fdev = NULL;
	xa_unlock(&fpgagdr_devs);
	return fdev;
}
