// SPDX-License-Identifier: GPL-2.0
/*
 * Host memory back-end: user pages pinned long-term with the kernel's own
 * pinning, charged to RLIMIT_MEMLOCK, and mapped with the DMA API.  On
 * Jetson Orin this is the GPU buffer path: cudaHostAlloc() memory is
 * ordinary user memory the integrated GPU also sees, so no NVIDIA symbol
 * is needed.
 *
 * Pinning (which may wait on user space: a fault, userfaultfd) happens in
 * prepare(), without the card's DMA lock; mapping in pin().  Segments are
 * built no longer than the DMA API can map in one piece
 * (dma_max_mapping_size(): 256 KiB under swiotlb) or the device takes
 * (dma_get_max_seg_size()).  The mapping is kept for the pin's life and
 * made and torn down without CPU syncs (DMA_ATTR_SKIP_CPU_SYNC): each
 * transfer syncs exactly its own bytes around its run (fpgagdr-pinned.c),
 * and a sync at unmap would, with bounce buffers, copy stale bounce data
 * over what the CPU wrote after the last run.  Everything the
 * pin allocates is charged to the caller's memory cgroup.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "fpgagdr-pinned.h"

/**
 * struct fpgagdr_host - pinned user pages
 * @mm: the mm the pages were charged to, grabbed
 * @pages: the pages
 * @npages: entries in @pages
 * @sgt: the table, mapped when @mapped
 * @mapped: @sgt is allocated and mapped for the device
 */
struct fpgagdr_host {
	struct mm_struct *mm;
	struct page **pages;
	unsigned long npages;
	struct sg_table sgt;
	bool mapped;
};

static int fpgagdr_host_pin_pages(struct fpgagdr_host *h, u64 start)
{
	unsigned long done = 0;
	int ret;

	while (done < h->npages) {
		ret = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					  min_t(unsigned long, h->npages - done,
						INT_MAX >> PAGE_SHIFT),
					  FOLL_WRITE | FOLL_LONGTERM,
					  h->pages + done);
		if (ret <= 0) {
			unpin_user_pages(h->pages, done);
			return ret ? ret : -EFAULT;
		}
		done += ret;
	}
	return 0;
}

/* Pin the pages: may wait on user space; no device access. */
static int fpgagdr_host_prepare(struct fpgagdr_pinned *pin,
				const struct fpgagdr_pin *args,
				const struct fpgagdr_span *span)
{
	struct fpgagdr_host *h;
	int ret;

	h = kzalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		return -ENOMEM;
	h->npages = span->npages;
	h->pages = kvmalloc_array(h->npages, sizeof(*h->pages),
				  GFP_KERNEL_ACCOUNT);
	if (!h->pages) {
		ret = -ENOMEM;
		goto free_h;
	}
	h->mm = current->mm;
	mmgrab(h->mm);
	ret = account_locked_vm(h->mm, h->npages, true);
	if (ret)
		goto drop_mm;
	ret = fpgagdr_host_pin_pages(h, span->start);
	if (ret)
		goto unaccount;
	pin->head = span->head;
	pin->mem_priv = h;
	return 0;

unaccount:
	account_locked_vm(h->mm, h->npages, false);
drop_mm:
	mmdrop(h->mm);
	kvfree(h->pages);
free_h:
	kfree(h);
	return ret;
}

static int fpgagdr_host_segs(struct fpgagdr_pinned *pin,
			     struct fpgagdr_host *h)
{
	struct scatterlist *sg;
	u32 i, n = 0;

	pin->segs = kvmalloc_array(h->sgt.nents, sizeof(*pin->segs),
				   GFP_KERNEL_ACCOUNT);
	if (!pin->segs)
		return -ENOMEM;
	for_each_sgtable_dma_sg(&h->sgt, sg, i) {
		pin->segs[n].addr = sg_dma_address(sg);
		pin->segs[n].len = sg_dma_len(sg);
		n++;
	}
	pin->nsegs = n;
	return 0;
}

/**
 * fpgagdr_host_max_segment() - longest segment to build for a device
 * @dev: the device
 *
 * What the DMA API maps in one piece (a bounce buffer is at most 256 KiB
 * under swiotlb) and what the device takes, in whole pages.
 *
 * Context: any.
 * Return: bytes, a multiple of PAGE_SIZE.
 */
static unsigned int fpgagdr_host_max_segment(struct device *dev)
{
	size_t max = min_t(size_t, dma_max_mapping_size(dev),
			   dma_get_max_seg_size(dev));

	max = min_t(size_t, max, UINT_MAX);
	return max_t(size_t, round_down(max, PAGE_SIZE), PAGE_SIZE);
}

/* Map the pinned pages for the card: bounded, under the card's lock. */
static int fpgagdr_host_pin(struct fpgagdr_pinned *pin,
			    const struct fpgagdr_pin *args,
			    const struct fpgagdr_span *span)
{
	struct fpgagdr_host *h = pin->mem_priv;
	struct device *dev = pin->fdev->dev;
	int ret;

	ret = sg_alloc_table_from_pages_segment(&h->sgt, h->pages, h->npages,
						0, h->npages << PAGE_SHIFT,
						fpgagdr_host_max_segment(dev),
						GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	/* each run syncs its own range (fpgagdr-pinned.c), nothing else */
	ret = dma_map_sgtable(dev, &h->sgt, DMA_BIDIRECTIONAL,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (ret) {
		dev_dbg(dev, "host pin: dma_map_sgtable: %d\n", ret);
		sg_free_table(&h->sgt);
		return ret == -ENOMEM ? -ENOMEM : -EIO;
	}
	h->mapped = true;
	ret = fpgagdr_host_segs(pin, h);
	if (ret)
		return ret;
	pin->sgt = &h->sgt;
	return 0;
}

static void fpgagdr_host_unpin(struct fpgagdr_pinned *pin)
{
	struct fpgagdr_host *h = pin->mem_priv;

	if (h->mapped) {
		/*
		 * no sync: the last run handed its bytes back already, and
		 * with bounce buffers a sync here would copy stale bounce
		 * data over what the CPU wrote since
		 */
		dma_unmap_sgtable(pin->fdev->dev, &h->sgt, DMA_BIDIRECTIONAL,
				  DMA_ATTR_SKIP_CPU_SYNC);
		sg_free_table(&h->sgt);
	}
	unpin_user_pages_dirty_lock(h->pages, h->npages, true);
	account_locked_vm(h->mm, h->npages, false);
	mmdrop(h->mm);
	kvfree(h->pages);
	kfree(h);
	pin->mem_priv = NULL;
}

const struct fpgagdr_mem_ops fpgagdr_mem_host_ops = {
	.kind = FPGAGDR_MEM_HOST,
	.name = "host",
	.page_size = PAGE_SIZE,
	.prepare = fpgagdr_host_prepare,
	.pin = fpgagdr_host_pin,
	.unpin = fpgagdr_host_unpin,
};
