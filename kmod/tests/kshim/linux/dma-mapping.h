/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-in for <linux/dma-mapping.h>: the sync calls are the
 * test's (tests/test-dmasync.c records what they would maintain).
 */
#ifndef FPGAGDR_KSHIM_LINUX_DMA_MAPPING_H
#define FPGAGDR_KSHIM_LINUX_DMA_MAPPING_H

#include "../kshim.h"

enum dma_data_direction {
	DMA_BIDIRECTIONAL = 0,
	DMA_TO_DEVICE = 1,
	DMA_FROM_DEVICE = 2,
	DMA_NONE = 3,
};

struct device;

void dma_sync_single_range_for_cpu(struct device *dev, dma_addr_t addr,
				   unsigned long offset, size_t size,
				   enum dma_data_direction dir);
void dma_sync_single_range_for_device(struct device *dev, dma_addr_t addr,
				      unsigned long offset, size_t size,
				      enum dma_data_direction dir);

#endif
