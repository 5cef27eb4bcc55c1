// SPDX-License-Identifier: GPL-2.0
/*
 * Handing a range of a long-lived DMA mapping to the device and back.
 *
 * A pin is mapped once and used by many runs, so each run hands exactly
 * its bytes to the device before it and back to the CPU after it
 * (docs/kernel-module.md, "DMA API ownership").  The range is given in
 * bytes of the buffer; the sync calls want a DMA address, an offset and a
 * size that the DMA API can maintain.  dma_sync_single_range_*() on an
 * IOMMU translates the address once and maintains @size bytes of
 * physically contiguous memory from there (iommu_dma_sync_single_for_cpu()
 * and arch_sync_dma_for_cpu(); swiotlb bounces the same way), so a piece
 * must lie inside one CPU-side entry of the scatterlist (a physically
 * contiguous run) as well as inside one DMA segment: an IOMMU concatenates
 * entries into one IOVA-contiguous segment, and a sync over such a
 * segment's whole length would maintain the wrong physical memory past the
 * first entry (cache lines of someone else's pages on a non-coherent
 * device: a Jetson's PCIe behind its SMMU).
 *
 * The DMA segments, concatenated, hold the buffer's bytes in the order of
 * the CPU-side entries (the descriptors are built from them the same way);
 * the two lists are walked side by side and the range cut at both kinds
 * of boundary.  Tested in user space (tests/test-dmasync.c) against
 * merged and unmerged mappings.
 */
#include <linux/dma-mapping.h>
#include <linux/minmax.h>
#include <linux/scatterlist.h>

#include "fpgagdr-dmasync.h"

static void fpgagdr_dma_sync_piece(struct device *dev, dma_addr_t addr,
				   u64 off, u64 len,
				   enum dma_data_direction dir,
				   bool for_device)
{
	if (for_device)
		dma_sync_single_range_for_device(dev, addr, off, len, dir);
	else
		dma_sync_single_range_for_cpu(dev, addr, off, len, dir);
}

/**
 * fpgagdr_dma_sync_range() - sync bytes of a mapped scatterlist
 * @dev: the device the table is mapped for
 * @sgt: the table, mapped (orig_nents CPU-side entries, nents DMA
 *	segments)
 * @start: first byte, counted from the table's first byte
 * @len: bytes
 * @dir: DMA_FROM_DEVICE or DMA_TO_DEVICE, the run's direction
 * @for_device: before the run (hand to the device) or after it
 *
 * One sync call per piece of the range that lies in one CPU-side entry
 * and one DMA segment.  Bytes past the table are ignored.
 *
 * Context: any that the DMA API's sync calls allow.
 */
void fpgagdr_dma_sync_range(struct device *dev, struct sg_table *sgt,
			    u64 start, u64 len, enum dma_data_direction dir,
			    bool for_device)
{
	struct scatterlist *cpu = sgt->sgl, *seg = sgt->sgl;
	u64 end = start + len, cpu_pos = 0, seg_pos = 0;
	u64 cpu_end, seg_end, from, to, next;
	u32 ci = 0, si = 0;

	if (!len || !sgt->orig_nents || !sgt->nents)
		return;
	for (;;) {
		cpu_end = cpu_pos + cpu->length;
		seg_end = seg_pos + sg_dma_len(seg);
		from = max(start, max(cpu_pos, seg_pos));
		to = min(end, min(cpu_end, seg_end));
		if (from < to)
			fpgagdr_dma_sync_piece(dev, sg_dma_address(seg),
					       from - seg_pos, to - from, dir,
					       for_device);
		next = min(cpu_end, seg_end);
		if (next >= end)
			return;
		if (cpu_end == next) {
			if (++ci == sgt->orig_nents)
				return;
			cpu_pos = cpu_end;
			cpu = sg_next(cpu);
		}
		if (seg_end == next) {
			if (++si == sgt->nents)
				return;
			seg_pos = seg_end;
			seg = sg_next(seg);
		}
	}
}
