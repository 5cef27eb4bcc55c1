// SPDX-License-Identifier: GPL-2.0
/*
 * Host memory back-end: user pages pinned long-term with the kernel's own
 * pinning, charged to RLIMIT_MEMLOCK, and mapped with the DMA API.  On
 * Jetson Orin this is the GPU buffer path: cudaHostAlloc() memory is
 * ordinary user memory the integrated GPU also sees, so no NVIDIA symbol
 * is needed.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "fpgagdr-core.h"

/**
 * struct fpgagdr_host - pinned user pages
 * @mm: the mm the pages were charged to, grabbed
 * @pages: the pages
 * @npages: entries in @pages
 * @sgt: the mapped table
 */
struct fpgagdr_host {
	struct mm_struct *mm;
	struct page **pages;
	unsigned long npages;
	struct sg_table sgt;
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

static int fpgagdr_host_segs(struct fpgagdr_pinned *pin,
			     struct fpgagdr_host *h)
{
	struct scatterlist *sg;
	u32 i, n = 0;

	pin->segs = kvmalloc_array(h->sgt.nents, sizeof(*pin->segs),
				   GFP_KERNEL);
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

static int fpgagdr_host_pin(struct fpgagdr_pinned *pin,
			    const struct fpgagdr_pin *args,
			    const struct fpgagdr_span *span)
{
	struct device *dev = pin->fdev->dev;
	struct fpgagdr_host *h;
	int ret;

	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->npages = span->npages;
	h->pages = kvmalloc_array(h->npages, sizeof(*h->pages), GFP_KERNEL);
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
	ret = sg_alloc_table_from_pages(&h->sgt, h->pages, h->npages, 0,
					h->npages << PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		goto unpin;
	ret = dma_map_sgtable(dev, &h->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto free_table;
	ret = fpgagdr_host_segs(pin, h);
	if (ret)
		goto unmap;
	pin->head = span->head;
	pin->mem_priv = h;
	return 0;

unmap:
	dma_unmap_sgtable(dev, &h->sgt, DMA_BIDIRECTIONAL, 0);
free_table:
	sg_free_table(&h->sgt);
unpin:
	unpin_user_pages(h->pages, h->npages);
unaccount:
	account_locked_vm(h->mm, h->npages, false);
drop_mm:
	mmdrop(h->mm);
	kvfree(h->pages);
free_h:
	kfree(h);
	return ret;
}

static void fpgagdr_host_unpin(struct fpgagdr_pinned *pin)
{
	struct fpgagdr_host *h = pin->mem_priv;

	dma_unmap_sgtable(pin->fdev->dev, &h->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&h->sgt);
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
	.pin = fpgagdr_host_pin,
	.unpin = fpgagdr_host_unpin,
};
