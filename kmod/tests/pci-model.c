// SPDX-License-Identifier: GPL-2.0
/*
 * TEST DOUBLE: a PCI function with an XDMA core, see pci-model.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pci-model.h"
#include "xdma-model.h"

#define PM_USER_MAX	0x100000	/* bytes of user BAR kept */
#define PM_BLOCK	0x1000		/* the frame protocol's block */

struct pm_state pm;
struct pci_dev pm_dev = { .dev = { .name = "0000:01:00.0" } };
u32 pm_user_regs[PM_USER_MAX / 4];
static u32 pm_bypass[1024];
static struct pm_bar pm_bars[PCI_STD_NUM_BARS];
static struct pci_driver *pm_drv;

static u32 pm_user_read(u32 off)
{
	pm.user_reads++;
	if (off >= PM_BLOCK && !pm.user_far++)
		pm.user_far_off = off;
	return off < PM_USER_MAX ? pm_user_regs[off / 4] : 0;
}

static void pm_user_write(u32 off, u32 val)
{
	pm.user_writes++;
	if (off < PM_USER_MAX)
		pm_user_regs[off / 4] = val;
}

static u32 pm_bypass_read(u32 off)
{
	/* the driver has no business in the bypass BAR */
	CHECK(false);
	return 0;
}

static void pm_bypass_write(u32 off, u32 val)
{
	CHECK(false);
}

void pm_init(const struct pm_bar *bars, u32 n)
{
	memset(&pm, 0, sizeof(pm));
	memset(pm_bars, 0, sizeof(pm_bars));
	memcpy(pm_bars, bars, n * sizeof(*bars));
	pm_dev.drvdata = NULL;
	pm_dev.msix_enabled = false;
	pm_dev.msi_enabled = false;
}

struct pci_driver *pm_driver(void)
{
	return pm_drv;
}

unsigned long pci_resource_flags(struct pci_dev *pdev, int bar)
{
	return pm_bars[bar].kind == PM_NONE || pm_bars[bar].kind == PM_UPPER ?
	       0 : IORESOURCE_MEM;
}

u64 pci_resource_len(struct pci_dev *pdev, int bar)
{
	return pm_bars[bar].kind == PM_UPPER ? 0 : pm_bars[bar].len;
}

u64 pci_resource_start(struct pci_dev *pdev, int bar)
{
	return 0xf0000000ULL + (u64)bar * 0x1000000;
}

void __iomem *pci_iomap_range(struct pci_dev *pdev, int bar,
			      unsigned long offset, unsigned long maxlen)
{
	struct xm_bar b = { 0 };
	void *base;

	switch (pm_bars[bar].kind) {
	case PM_DMA:
		base = xm_regs();
		break;
	case PM_USER:
		base = pm_user_regs;
		b = (struct xm_bar){ base, PM_USER_MAX, pm_user_read,
				     pm_user_write };
		break;
	case PM_BYPASS:
		base = pm_bypass;
		b = (struct xm_bar){ base, sizeof(pm_bypass), pm_bypass_read,
				     pm_bypass_write };
		break;
	default:
		return NULL;
	}
	if (b.base)
		xm_add_bar(&b);
	pm.maps++;
	return (char *)base + offset;
}

void pci_iounmap(struct pci_dev *pdev, void __iomem *addr)
{
	pm.maps--;
}

int pci_request_region(struct pci_dev *pdev, int bar, const char *name)
{
	if (pm.regions & (1U << bar))
		return -EBUSY;
	pm.regions |= 1U << bar;
	return 0;
}

void pci_release_region(struct pci_dev *pdev, int bar)
{
	CHECK(pm.regions & (1U << bar));
	pm.regions &= ~(1U << bar);
}

int pci_enable_device_mem(struct pci_dev *pdev)
{
	pm.enabled = true;
	return 0;
}

void pci_disable_device(struct pci_dev *pdev)
{
	pm.enabled = false;
}

void pci_set_master(struct pci_dev *pdev)
{
	pm.master = true;
}

void pci_clear_master(struct pci_dev *pdev)
{
	pm.master = false;
}

int pci_save_state(struct pci_dev *pdev)
{
	pm.saves++;
	pm.saved_master = pm.master;
	return 0;
}

void pci_restore_state(struct pci_dev *pdev)
{
	pm.restores++;
	pm.master = pm.saved_master;
}

int pci_alloc_irq_vectors(struct pci_dev *pdev, unsigned int min,
			  unsigned int max, unsigned int flags)
{
	if (!(flags & PCI_IRQ_MSIX))
		return -ENOSPC;
	pdev->msix_enabled = true;
	pm.vectors = 1;
	return 1;
}

int pci_irq_vector(struct pci_dev *pdev, unsigned int nr)
{
	return 42;
}

void pci_free_irq_vectors(struct pci_dev *pdev)
{
	pdev->msix_enabled = false;
	pm.vectors = 0;
}

int pci_register_driver(struct pci_driver *drv)
{
	pm_drv = drv;
	return 0;
}

void pci_unregister_driver(struct pci_driver *drv)
{
	pm_drv = NULL;
}

int dma_set_mask_and_coherent(struct device *dev, u64 mask)
{
	return 0;
}

void *kzalloc(size_t size, int gfp)
{
	return calloc(1, size);
}

void kfree(const void *p)
{
	free((void *)p);
}

void fgk_dev_msg(const struct device *dev, const char *level,
		 const char *fmt, ...)
{
	va_list ap;

	pm.msgs++;
	if (!getenv("FPGAGDR_TEST_VERBOSE"))
		return;
	fprintf(stderr, "%s %s: ", level, dev ? dev->name : "-");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
