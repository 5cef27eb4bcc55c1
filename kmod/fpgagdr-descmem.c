// SPDX-License-Identifier: GPL-2.0
/*
 * Descriptor memory: 4 KiB pages from the card's dma_pool, allocated when a
 * pin or an engine is created so that no transfer allocates.  Charged to
 * the memory cgroup of whoever makes the pin (__GFP_ACCOUNT).
 */
#include <linux/dmapool.h>
#include <linux/slab.h>

#include "fpgagdr-core.h"

/**
 * fpgagdr_descmem_alloc() - allocate room for @ndesc descriptors
 * @dm: zeroed descriptor memory to fill
 * @pool: the card's pool of 4 KiB, 4 KiB aligned blocks
 * @ndesc: descriptors needed at most
 *
 * Context: process context; sleeps.
 * Return: 0, -E2BIG for an absurd @ndesc, -ENOMEM.
 */
int fpgagdr_descmem_alloc(struct fpgagdr_desc_mem *dm, struct dma_pool *pool,
			  u64 ndesc)
{
	u64 npages = DIV_ROUND_UP_ULL(ndesc, FPGAGDR_DESC_PER_PAGE);
	dma_addr_t dma;
	u32 i;

	if (!npages || npages > U32_MAX / FPGAGDR_DESC_PER_PAGE)
		return -E2BIG;
	dm->pool = pool;
	dm->page = kvcalloc(npages, sizeof(*dm->page), GFP_KERNEL_ACCOUNT);
	dm->dma = kvcalloc(npages, sizeof(*dm->dma), GFP_KERNEL_ACCOUNT);
	if (!dm->page || !dm->dma)
		goto free;
	for (i = 0; i < npages; i++) {
		dm->page[i] = dma_pool_zalloc(pool, GFP_KERNEL_ACCOUNT, &dma);
		if (!dm->page[i])
			goto free;
		dm->dma[i] = dma;
		dm->ring.npages = i + 1;
	}
	dm->ring.page = dm->page;
	dm->ring.page_dma = dm->dma;
	return 0;

free:
	fpgagdr_descmem_free(dm);
	return -ENOMEM;
}

/**
 * fpgagdr_descmem_free() - free descriptor memory
 * @dm: memory from fpgagdr_descmem_alloc(), or zeroed; no engine may be
 *	running a chain in it
 *
 * Context: process context.
 */
void fpgagdr_descmem_free(struct fpgagdr_desc_mem *dm)
{
	u32 i;

	for (i = 0; i < dm->ring.npages; i++)
		dma_pool_free(dm->pool, dm->page[i], dm->dma[i]);
	kvfree(dm->page);
	kvfree(dm->dma);
	memset(dm, 0, sizeof(*dm));
}
