/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for <linux/dma-buf.h>: what compat.h names. */
#ifndef FPGAGDR_KSHIM_LINUX_DMA_BUF_H
#define FPGAGDR_KSHIM_LINUX_DMA_BUF_H

#include "dma-mapping.h"

struct sg_table *dma_buf_map_attachment(struct dma_buf_attachment *attach,
					enum dma_data_direction dir);
struct sg_table *
dma_buf_map_attachment_unlocked(struct dma_buf_attachment *attach,
				enum dma_data_direction dir);
void dma_buf_unmap_attachment(struct dma_buf_attachment *attach,
			      struct sg_table *sgt,
			      enum dma_data_direction dir);
void dma_buf_unmap_attachment_unlocked(struct dma_buf_attachment *attach,
				       struct sg_table *sgt,
				       enum dma_data_direction dir);
void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags);

#endif
