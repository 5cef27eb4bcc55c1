/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only place that knows kernel API differences between L4T R36's 5.15
 * and current kernels.  Each shim keys on a FPGAGDR_HAVE_* macro that
 * scripts/probe-features.sh sets by compiling a snippet from probes/
 * against the target kernel; nothing compares version numbers.
 */
#ifndef FPGAGDR_COMPAT_H
#define FPGAGDR_COMPAT_H

#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "fpgagdr-features.h"

/* 6.4 dropped the owner argument of class_create(). */
#ifdef FPGAGDR_HAVE_CLASS_CREATE_NO_OWNER
#define fpgagdr_class_create(name)	class_create(name)
#else
#define fpgagdr_class_create(name)	class_create(THIS_MODULE, name)
#endif

/* 6.8 renamed PCI_IRQ_LEGACY to PCI_IRQ_INTX (the old name went later). */
#ifdef FPGAGDR_HAVE_PCI_IRQ_INTX
#define FPGAGDR_PCI_IRQ_INTX		PCI_IRQ_INTX
#else
#define FPGAGDR_PCI_IRQ_INTX		PCI_IRQ_LEGACY
#endif

/* 6.13 made MODULE_IMPORT_NS() take a string literal. */
#ifdef FPGAGDR_HAVE_IMPORT_NS_IDENT
#define FPGAGDR_IMPORT_NS_DMA_BUF()	MODULE_IMPORT_NS(DMA_BUF)
#else
#define FPGAGDR_IMPORT_NS_DMA_BUF()	MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * 6.2 split dma_buf_map_attachment() into a locked and an _unlocked form;
 * before, the plain form took the reservation lock itself.
 */
static inline struct sg_table *
fpgagdr_dma_buf_map(struct dma_buf_attachment *attach,
		    enum dma_data_direction dir)
{
#ifdef FPGAGDR_HAVE_DMA_BUF_MAP_UNLOCKED
	return dma_buf_map_attachment_unlocked(attach, dir);
#else
	return dma_buf_map_attachment(attach, dir);
#endif
}

static inline void fpgagdr_dma_buf_unmap(struct dma_buf_attachment *attach,
					 struct sg_table *sgt,
					 enum dma_data_direction dir)
{
#ifdef FPGAGDR_HAVE_DMA_BUF_MAP_UNLOCKED
	dma_buf_unmap_attachment_unlocked(attach, sgt, dir);
#else
	dma_buf_unmap_attachment(attach, sgt, dir);
#endif
}

/* 6.3 made vm_flags read-only outside vm_flags_set() and friends. */
static inline void fpgagdr_vm_flags_set(struct vm_area_struct *vma,
					vm_flags_t flags)
{
#ifdef FPGAGDR_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#endif /* FPGAGDR_COMPAT_H */
