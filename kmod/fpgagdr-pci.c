// SPDX-License-Identifier: GPL-2.0
/*
 * The PCI driver for XDMA cards.  More device IDs can be bound at run time
 * through /sys/bus/pci/drivers/fpgagdr/new_id.  The card's life (removal,
 * shutdown, AER) is fpgagdr-card.c's; this file maps the registers, wires
 * the interrupt and calls it in the order fpgagdr-card.c describes.
 */
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "compat.h"
#include "fpgagdr-card.h"
#include "fpgagdr-xdma.h"

static bool fpgagdr_poll_mode;
module_param_named(poll_mode, fpgagdr_poll_mode, bool, 0444);
MODULE_PARM_DESC(poll_mode, "Find completions by polling status registers, no interrupts (default off)");

/**
 * struct fpgagdr_pci - driver data of one XDMA function
 * @x: the XDMA core
 * @fdev: the card
 * @bar: the config BAR's number
 * @irq: whether the interrupt was requested
 * @ubar: the user BAR's number, -1 without one
 * @user: the user BAR, @ulen bytes of it mapped
 * @ulen: bytes of the user BAR the user node reaches
 */
struct fpgagdr_pci {
	struct fpgagdr_xdma x;
	struct fpgagdr_dev *fdev;
	int bar;
	bool irq;
	int ubar;
	void __iomem *user;
	u32 ulen;
};

/* The user node reaches at most this much of the user BAR. */
#define FPGAGDR_PCI_USER_MAX	SZ_16M

/*
 * Map each memory BAR big enough in turn; keep the one with XDMA's IDs
 * (PG195 "Target Bridge": the config BAR follows the AXI-Lite master's
 * user BAR, the DMA bypass BAR follows it).  A user BAR is read at offset
 * 0 only (fpgagdr_xdma_is_config_bar()).
 */
static int fpgagdr_pci_find_bar(struct pci_dev *pdev, void __iomem **regs)
{
	void __iomem *base;
	int bar;

	for (bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
		if (!(pci_resource_flags(pdev, bar) & IORESOURCE_MEM) ||
		    pci_resource_len(pdev, bar) < XDMA_REG_SPACE_LEN)
			continue;
		base = pci_iomap_range(pdev, bar, 0, XDMA_REG_SPACE_LEN);
		if (!base)
			continue;
		if (fpgagdr_xdma_is_config_bar(base)) {
			*regs = base;
			return bar;
		}
		pci_iounmap(pdev, base);
	}
	return -ENODEV;
}

/*
 * The XDMA user BAR (PG195, "PCIe to AXI Lite Master"): the first memory
 * BAR before the config BAR; a core without the AXI-Lite master has its
 * config BAR first and no user BAR.
 */
static void fpgagdr_pci_find_user_bar(struct pci_dev *pdev,
				      struct fpgagdr_pci *fp)
{
	int bar;

	fp->ubar = -1;
	for (bar = 0; bar < fp->bar; bar++) {
		if (!(pci_resource_flags(pdev, bar) & IORESOURCE_MEM) ||
		    pci_resource_len(pdev, bar) < 4)
			continue;
		fp->ulen = min_t(u64, pci_resource_len(pdev, bar),
				 FPGAGDR_PCI_USER_MAX);
		if (pci_request_region(pdev, bar, "fpgagdr-user"))
			return;
		fp->user = pci_iomap_range(pdev, bar, 0, fp->ulen);
		if (!fp->user) {
			pci_release_region(pdev, bar);
			return;
		}
		fp->ubar = bar;
		return;
	}
}

static void fpgagdr_pci_release_user_bar(struct pci_dev *pdev,
					 struct fpgagdr_pci *fp)
{
	if (fp->ubar < 0)
		return;
	pci_iounmap(pdev, fp->user);
	pci_release_region(pdev, fp->ubar);
	fp->ubar = -1;
}

static u32 fpgagdr_pci_user_read(void *ctx, u32 off)
{
	struct fpgagdr_pci *fp = ctx;

	return ioread32(fp->user + off);
}

static void fpgagdr_pci_user_write(void *ctx, u32 off, u32 val)
{
	struct fpgagdr_pci *fp = ctx;

	iowrite32(val, fp->user + off);
}

static void fpgagdr_pci_user_irq_enable(void *ctx, u32 mask, bool on)
{
	struct fpgagdr_pci *fp = ctx;

	fpgagdr_xdma_user_irq_enable(&fp->x, mask, on);
}

static int fpgagdr_pci_user_pfn(void *ctx, unsigned long pgoff,
				unsigned long *pfn, bool *io)
{
	struct fpgagdr_pci *fp = ctx;

	if (fp->ubar < 0 || pgoff >= DIV_ROUND_UP(fp->ulen, PAGE_SIZE))
		return -EINVAL;
	*pfn = (pci_resource_start(fp->fdev->pdev, fp->ubar) >> PAGE_SHIFT) +
	       pgoff;
	*io = true;
	return 0;
}

static const struct fpgagdr_user_ops fpgagdr_pci_user_ops = {
	.read = fpgagdr_pci_user_read,
	.write = fpgagdr_pci_user_write,
	.irq_enable = fpgagdr_pci_user_irq_enable,
	.pfn = fpgagdr_pci_user_pfn,
};

static int fpgagdr_pci_irq_init(struct pci_dev *pdev, struct fpgagdr_pci *fp)
{
	int ret;

	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX | PCI_IRQ_MSI |
				    FPGAGDR_PCI_IRQ_INTX);
	if (ret < 0)
		return ret;
	fpgagdr_xdma_irq_setup(&fp->x);
	ret = fpgagdr_card_request_irq(fp->fdev, pci_irq_vector(pdev, 0),
				       fpgagdr_xdma_irq, &fp->x);
	if (ret) {
		pci_free_irq_vectors(pdev);
		return ret;
	}
	fp->irq = true;
	dev_dbg(&pdev->dev, "interrupt %s\n", pdev->msix_enabled ? "MSI-X" :
		pdev->msi_enabled ? "MSI" : "INTx");
	return 0;
}

static void fpgagdr_pci_irq_exit(struct pci_dev *pdev, struct fpgagdr_pci *fp)
{
	if (!fp->irq)
		return;
	fpgagdr_xdma_irq_teardown(&fp->x);
	free_irq(pci_irq_vector(pdev, 0), &fp->x);
	pci_free_irq_vectors(pdev);
	fp->irq = false;
}

static int fpgagdr_pci_probe(struct pci_dev *pdev,
			     const struct pci_device_id *id)
{
	struct fpgagdr_pci *fp;
	int ret;

	fp = kzalloc(sizeof(*fp), GFP_KERNEL);
	if (!fp)
		return -ENOMEM;
	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto free_fp;
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
	if (ret)
		goto disable;

	fp->bar = fpgagdr_pci_find_bar(pdev, &fp->x.regs);
	if (fp->bar < 0) {
		ret = fp->bar;
		dev_err(&pdev->dev, "no BAR with the XDMA register identifiers\n");
		goto disable;
	}
	ret = pci_request_region(pdev, fp->bar, "fpgagdr");
	if (ret)
		goto unmap;
	fpgagdr_pci_find_user_bar(pdev, fp);
	/* an engine left running (kexec, an old driver) never gets the bus */
	if (fpgagdr_xdma_stop_leftovers(fp->x.regs))
		dev_warn(&pdev->dev, "an engine left running does not stop; bus mastering stays off\n");
	else
		pci_set_master(pdev);
	pci_save_state(pdev);

	fp->fdev = fpgagdr_dev_alloc(pdev);
	if (IS_ERR(fp->fdev)) {
		ret = PTR_ERR(fp->fdev);
		goto release_region;
	}
	fp->x.fdev = fp->fdev;
	ret = fpgagdr_xdma_add_engines(&fp->x, !fpgagdr_poll_mode);
	if (ret)
		goto put_fdev;
	if (!fpgagdr_poll_mode) {
		ret = fpgagdr_pci_irq_init(pdev, fp);
		if (ret)
			goto put_fdev;
	}
	fpgagdr_frames_attach(fp->fdev, &fpgagdr_pci_user_ops, fp,
			      fp->ubar < 0 ? 0 : fp->ulen, fpgagdr_poll_mode);
	ret = fpgagdr_card_register(fp->fdev);
	if (ret)
		goto irq_exit;
	pci_set_drvdata(pdev, fp);
	return 0;

irq_exit:
	fpgagdr_frames_detach(fp->fdev);
	fpgagdr_pci_irq_exit(pdev, fp);
put_fdev:
	fpgagdr_dev_put(fp->fdev);
release_region:
	fpgagdr_pci_release_user_bar(pdev, fp);
	pci_release_region(pdev, fp->bar);
unmap:
	pci_iounmap(pdev, fp->x.regs);
disable:
	pci_clear_master(pdev);
	pci_disable_device(pdev);
free_fp:
	kfree(fp);
	return ret;
}

static void fpgagdr_pci_remove(struct pci_dev *pdev)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	/* after this no engine op runs: safe to unmap the registers */
	fpgagdr_card_unregister(fp->fdev);
	fpgagdr_pci_irq_exit(pdev, fp);
	fpgagdr_dev_put(fp->fdev);
	fpgagdr_pci_release_user_bar(pdev, fp);
	pci_release_region(pdev, fp->bar);
	pci_iounmap(pdev, fp->x.regs);
	pci_disable_device(pdev);
	kfree(fp);
}

/* Reboot, kexec, power-off: no engine may run into the next kernel. */
static void fpgagdr_pci_shutdown(struct pci_dev *pdev)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	if (fp)
		fpgagdr_card_shutdown(fp->fdev);
}

static pci_ers_result_t fpgagdr_pci_error_detected(struct pci_dev *pdev,
						   pci_channel_state_t state)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	return fpgagdr_card_error_detected(fp->fdev, state);
}

/*
 * The link was reset: the function's engines are idle, its config space
 * and the core's registers back at their reset values.
 */
static pci_ers_result_t fpgagdr_pci_slot_reset(struct pci_dev *pdev)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	pci_restore_state(pdev);
	pci_save_state(pdev);
	fpgagdr_xdma_restore(&fp->x);
	fpgagdr_card_reset_done(fp->fdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void fpgagdr_pci_resume(struct pci_dev *pdev)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	fpgagdr_card_resume(fp->fdev);
}

/* A reset asked for outside error recovery (sysfs reset, a bus reset). */
static void fpgagdr_pci_reset_prepare(struct pci_dev *pdev)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	fpgagdr_card_reset_prepare(fp->fdev);
}

/* The PCI core has restored the function's config space. */
static void fpgagdr_pci_reset_done(struct pci_dev *pdev)
{
	struct fpgagdr_pci *fp = pci_get_drvdata(pdev);

	fpgagdr_xdma_restore(&fp->x);
	fpgagdr_card_reset_done(fp->fdev);
	fpgagdr_card_resume(fp->fdev);
}

static const struct pci_error_handlers fpgagdr_pci_err = {
	.error_detected = fpgagdr_pci_error_detected,
	.slot_reset = fpgagdr_pci_slot_reset,
	.resume = fpgagdr_pci_resume,
	.reset_prepare = fpgagdr_pci_reset_prepare,
	.reset_done = fpgagdr_pci_reset_done,
};

/*
 * Xilinx's default XDMA IDs (0x7xxx 7-series, 0x8xxx UltraScale, 0x9xxx
 * UltraScale+; the low digits give PCIe generation and lanes), and the
 * card of the seed design (reported as vendor 0x0b03, device 0x1004).
 */
static const struct pci_device_id fpgagdr_pci_ids[] = {
	{ PCI_DEVICE(0x10ee, 0x7011) }, { PCI_DEVICE(0x10ee, 0x7012) },
	{ PCI_DEVICE(0x10ee, 0x7014) }, { PCI_DEVICE(0x10ee, 0x7018) },
	{ PCI_DEVICE(0x10ee, 0x7021) }, { PCI_DEVICE(0x10ee, 0x7022) },
	{ PCI_DEVICE(0x10ee, 0x7024) }, { PCI_DEVICE(0x10ee, 0x7028) },
	{ PCI_DEVICE(0x10ee, 0x8011) }, { PCI_DEVICE(0x10ee, 0x8012) },
	{ PCI_DEVICE(0x10ee, 0x8014) }, { PCI_DEVICE(0x10ee, 0x8018) },
	{ PCI_DEVICE(0x10ee, 0x8021) }, { PCI_DEVICE(0x10ee, 0x8022) },
	{ PCI_DEVICE(0x10ee, 0x8024) }, { PCI_DEVICE(0x10ee, 0x8028) },
	{ PCI_DEVICE(0x10ee, 0x8031) }, { PCI_DEVICE(0x10ee, 0x8032) },
	{ PCI_DEVICE(0x10ee, 0x8034) }, { PCI_DEVICE(0x10ee, 0x8038) },
	{ PCI_DEVICE(0x10ee, 0x9011) }, { PCI_DEVICE(0x10ee, 0x9012) },
	{ PCI_DEVICE(0x10ee, 0x9014) }, { PCI_DEVICE(0x10ee, 0x9018) },
	{ PCI_DEVICE(0x10ee, 0x9021) }, { PCI_DEVICE(0x10ee, 0x9022) },
	{ PCI_DEVICE(0x10ee, 0x9024) }, { PCI_DEVICE(0x10ee, 0x9028) },
	{ PCI_DEVICE(0x10ee, 0x9031) }, { PCI_DEVICE(0x10ee, 0x9032) },
	{ PCI_DEVICE(0x10ee, 0x9034) }, { PCI_DEVICE(0x10ee, 0x9038) },
	{ PCI_DEVICE(0x0b03, 0x1004) },
	{ }
};
MODULE_DEVICE_TABLE(pci, fpgagdr_pci_ids);

static struct pci_driver fpgagdr_pci_driver = {
	.name = "fpgagdr",
	.id_table = fpgagdr_pci_ids,
	.probe = fpgagdr_pci_probe,
	.remove = fpgagdr_pci_remove,
	.shutdown = fpgagdr_pci_shutdown,
	.err_handler = &fpgagdr_pci_err,
};

/**
 * fpgagdr_pci_register() - register the PCI driver
 *
 * Context: module init.
 * Return: 0 or the driver core's error.
 */
int fpgagdr_pci_register(void)
{
	return pci_register_driver(&fpgagdr_pci_driver);
}

/**
 * fpgagdr_pci_unregister() - unregister the PCI driver (removes all cards)
 *
 * Context: module exit.
 */
void fpgagdr_pci_unregister(void)
{
	pci_unregister_driver(&fpgagdr_pci_driver);
}
