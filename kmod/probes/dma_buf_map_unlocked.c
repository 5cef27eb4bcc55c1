// SPDX-License-Identifier: GPL-2.0
/* Compiles when dma_buf_map_attachment_unlocked() exists (6.2 and later). */
#include <linux/dma-buf.h>

struct sg_table *fpgagdr_probe(struct dma_buf_attachment *attach);

struct sg_table *fpgagdr_probe(struct dma_buf_attachment *attach)
{
	return dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
}
