/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Handing a range of a long-lived DMA mapping to the device and back
 * (fpgagdr-dmasync.c), for the runs of a pin.  Built into the module and,
 * against tests/kshim, into tests/test-dmasync.c.
 */
#ifndef FPGAGDR_DMASYNC_H
#define FPGAGDR_DMASYNC_H

#include <linux/dma-mapping.h>
#include <linux/types.h>

struct device;
struct sg_table;

void fpgagdr_dma_sync_range(struct device *dev, struct sg_table *sgt,
			    u64 start, u64 len, enum dma_data_direction dir,
			    bool for_device);

#endif /* FPGAGDR_DMASYNC_H */
