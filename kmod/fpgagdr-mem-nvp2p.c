// SPDX-License-Identifier: GPL-2.0
/*
 * nvidia_p2p back-end for discrete GPUs: CUDA device memory (cudaMalloc)
 * pinned in 64 KiB GPU pages and mapped for the card with
 * nvidia_p2p_dma_map_pages().
 *
 * Persistent pins first.  A persistent pin has no free callback: the GPU
 * memory stays until we release it, whatever the process does, so none of
 * the races below exist.  Drivers that define
 * NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API (CUDA 12.2 and later) pin with
 * nvidia_p2p_get_pages_persistent(); older ones through
 * nvidia_p2p_get_pages() with a NULL callback where
 * nvidia_p2p_cap_persistent_pages says so.  MIG and vGPU refuse persistent
 * pins as not supported (-ENOTSUPP, -EOPNOTSUPP); only then does a pin take
 * a free callback.  Any other error fails the PIN: -EINVAL, NVIDIA's
 * answer to an address that is not CUDA device memory (host memory on the
 * GPU path), becomes EOPNOTSUPP, as the uapi header says; -ENOMEM stays;
 * anything else is EIO.
 *
 * The free callback, as NVIDIA's driver runs it (open kernel modules,
 * kernel-open/nvidia/nv-p2p.c, since R515; see fpgagdr-nv-p2p-compat.h):
 * it is called from the path that frees the memory (cudaFree, process
 * exit) with NVIDIA's RM API lock held; when it returns, NVIDIA unmaps the
 * DMA mappings still registered on the table and frees the table
 * (nvidia_p2p_free_page_table() and nvidia_p2p_free_dma_mapping() are
 * no-ops; a winning callback still calls them, as drivers before R515 want).
 * nvidia_p2p_put_pages() and nvidia_p2p_dma_map_pages() take the API lock,
 * so they wait for a callback in flight.  nvidia_p2p_dma_unmap_pages()
 * does not, but it reads the table: after the callback has returned it is
 * a use after free.
 *
 * @state moves by atomic_cmpxchg() only:
 *   PINNING -> COPYING -> PINNED -> RELEASED (unpin won)
 *                                -> REVOKED  (callback won)
 *   PINNING -> REVOKED (callback during the pin)
 * and the callback never waits for anything that waits for the API lock:
 *   unpin won:  unmap, complete @unmapped, put_pages.  A callback that
 *               lost waits for @unmapped, so NVIDIA frees the table only
 *               after our unmap; put_pages returns only after that
 *               callback has, so @nv is freed after both.
 *   callback won: DMA stopped (fpgagdr_pinned_revoke(), bounded), then it
 *               returns and NVIDIA frees its objects; unpin waits for
 *               @cb_done and frees only ours, calling nothing of NVIDIA's.
 *   PINNING:    the pin path may be inside dma_map_pages(), waiting for
 *               the API lock the callback's caller holds, so the callback
 *               only marks REVOKED and returns.  The pin path looks at
 *               @state after get_pages and after dma_map_pages; once it
 *               sees REVOKED it touches no NVIDIA object and fails ESTALE.
 *   COPYING:    the pin path copies the bus addresses out of NVIDIA's
 *               mapping, calling nothing of NVIDIA's: the callback waits
 *               for @copied, then finds PINNED (and wins) or RELEASED.
 * What no client can close: a callback that runs to its end after the pin
 * path's look at @state and before dma_map_pages() has read the table.
 * Only a cudaFree racing the PIN ioctl of the same buffer gets there, and
 * only without persistent pins (docs/kernel-module.md).
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "fpgagdr-nv-p2p.h"
#include "fpgagdr-pinned.h"

enum {
	FPGAGDR_NV_PINNING,
	FPGAGDR_NV_COPYING,
	FPGAGDR_NV_PINNED,
	FPGAGDR_NV_RELEASED,
	FPGAGDR_NV_REVOKED,
};

/**
 * struct fpgagdr_nv - one nvidia_p2p pin
 * @pin: the pinned buffer this belongs to
 * @va: GPU virtual address of the first 64 KiB page
 * @pt: NVIDIA's page table
 * @map: NVIDIA's DMA mapping for the card
 * @state: FPGAGDR_NV_*, changed only by atomic_cmpxchg()
 * @persistent: pinned without a free callback
 * @copied: completed (for all) when the pin path leaves COPYING
 * @unmapped: completed (for all) when unpin has unmapped, before put_pages
 * @cb_done: completed when a winning free callback has finished with us
 */
struct fpgagdr_nv {
	struct fpgagdr_pinned *pin;
	u64 va;
	struct nvidia_p2p_page_table *pt;
	struct nvidia_p2p_dma_mapping *map;
	atomic_t state;
	bool persistent;
	struct completion copied;
	struct completion unmapped;
	struct completion cb_done;
};

/**
 * fpgagdr_nvp2p_persistent() - does the NVIDIA driver offer persistent pins
 *
 * Context: any.
 * Return: true when pins are made persistent where the GPU allows it (not
 * on MIG or vGPU, where a pin falls back to a free callback).
 */
bool fpgagdr_nvp2p_persistent(void)
{
	return fpgagdr_nv_cap_persistent();
}

static void fpgagdr_nv_free_cb(void *data)
{
	struct fpgagdr_nv *nv = data;

	for (;;) {
		switch (atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNED,
				       FPGAGDR_NV_REVOKED)) {
		case FPGAGDR_NV_PINNED:
			goto won;
		case FPGAGDR_NV_PINNING:
			if (atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNING,
					   FPGAGDR_NV_REVOKED) ==
			    FPGAGDR_NV_PINNING)
				return;	/* the pin path sees it and fails */
			break;		/* it moved on: look again */
		case FPGAGDR_NV_COPYING:
			wait_for_completion(&nv->copied);
			break;
		case FPGAGDR_NV_RELEASED:
			/* NVIDIA frees the table when we return: not before
			 * unpin has unmapped it
			 */
			wait_for_completion(&nv->unmapped);
			return;
		default:
			return;
		}
	}
won:
	set_bit(FPGAGDR_PIN_REVOKED, &nv->pin->flags);
	/*
	 * Bounded: FPGAGDR_REVOKE_WAIT_MS at most (the stop budget and the
	 * waiter's wake-up); past it the card is fenced, so returning (and
	 * NVIDIA freeing the memory) is safe either way.
	 */
	fpgagdr_pinned_revoke(nv->pin);
	nvidia_p2p_free_dma_mapping(nv->map);
	nvidia_p2p_free_page_table(nv->pt);
	/* last touch of @nv: unpin may free it once this completes */
	complete(&nv->cb_done);
}

/* NVIDIA's errno as the PIN errno the uapi header lists. */
static int fpgagdr_nv_errno(int ret)
{
	switch (ret) {
	case -EINVAL:		/* not CUDA device memory */
	case -ENOTSUPP:
	case -EOPNOTSUPP:
		return -EOPNOTSUPP;
	case -ENOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int fpgagdr_nv_get_pages(struct fpgagdr_nv *nv, u64 len)
{
	int ret;

	if (fpgagdr_nv_cap_persistent()) {
		ret = fpgagdr_nv_get_persistent(nv->va, len, &nv->pt);
		if (!ret) {
			nv->persistent = true;
			return 0;
		}
		/* only "not supported" (MIG, vGPU) falls back to a callback */
		if (ret != -ENOTSUPP && ret != -EOPNOTSUPP)
			return fpgagdr_nv_errno(ret);
	}
	ret = nvidia_p2p_get_pages(0, 0, nv->va, len, &nv->pt,
				   fpgagdr_nv_free_cb, nv);
	return ret ? fpgagdr_nv_errno(ret) : 0;
}

static void fpgagdr_nv_put_pages(struct fpgagdr_nv *nv)
{
	if (nv->persistent)
		fpgagdr_nv_put_persistent(nv->va, nv->pt);
	else
		nvidia_p2p_put_pages(0, 0, nv->va, nv->pt);
}

/*
 * Copy the bus addresses out of NVIDIA's mapping into @pin's segments
 * (allocated by the caller for @npages).  Calls nothing of NVIDIA's and
 * allocates nothing: a free callback may be waiting for this to end.
 */
static int fpgagdr_nv_segs(struct fpgagdr_pinned *pin, struct fpgagdr_nv *nv,
			   u32 npages)
{
	u32 i;

	if (!fpgagdr_nv_version_ok(nv->pt->version,
				   NVIDIA_P2P_PAGE_TABLE_VERSION) ||
	    !fpgagdr_nv_version_ok(nv->map->version,
				   NVIDIA_P2P_DMA_MAPPING_VERSION) ||
	    nv->pt->page_size != NVIDIA_P2P_PAGE_SIZE_64KB ||
	    nv->map->entries != npages)
		return -EOPNOTSUPP;
	for (i = 0; i < npages; i++) {
		pin->segs[i].addr = nv->map->dma_addresses[i];
		pin->segs[i].len = SZ_64K;
	}
	pin->nsegs = npages;
	return 0;
}

/* Unpin won (or the pin path gave up): unmap, let a callback go, release. */
static void fpgagdr_nv_release(struct fpgagdr_nv *nv, struct pci_dev *pdev)
{
	nvidia_p2p_dma_unmap_pages(pdev, nv->pt, nv->map);
	complete_all(&nv->unmapped);
	/* returns after a callback in flight has returned */
	fpgagdr_nv_put_pages(nv);
	kfree(nv);
}

static int fpgagdr_nvp2p_pin(struct fpgagdr_pinned *pin,
			     const struct fpgagdr_pin *args,
			     const struct fpgagdr_span *span)
{
	struct pci_dev *pdev = pin->fdev->pdev;
	u64 npages = (span->end - span->start) / SZ_64K;
	struct fpgagdr_nv *nv;
	int ret;

	if (npages > U32_MAX)
		return -EINVAL;
	/* before get_pages: nothing may allocate while a callback waits */
	pin->segs = kvmalloc_array(npages, sizeof(*pin->segs),
				   GFP_KERNEL_ACCOUNT);
	if (!pin->segs)
		return -ENOMEM;
	nv = kzalloc(sizeof(*nv), GFP_KERNEL_ACCOUNT);
	if (!nv)
		return -ENOMEM;
	nv->pin = pin;
	nv->va = span->start;
	atomic_set(&nv->state, FPGAGDR_NV_PINNING);
	init_completion(&nv->copied);
	init_completion(&nv->unmapped);
	init_completion(&nv->cb_done);
	ret = fpgagdr_nv_get_pages(nv, span->end - span->start);
	if (ret)
		goto free_nv;
	if (atomic_read(&nv->state) == FPGAGDR_NV_REVOKED)
		goto revoked;
	ret = nvidia_p2p_dma_map_pages(pdev, nv->pt, &nv->map);
	if (ret) {
		if (atomic_read(&nv->state) == FPGAGDR_NV_REVOKED)
			goto revoked;
		/* a callback from here on finds PINNING and only marks it */
		fpgagdr_nv_put_pages(nv);
		ret = fpgagdr_nv_errno(ret);
		goto free_nv;
	}
	if (atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNING,
			   FPGAGDR_NV_COPYING) != FPGAGDR_NV_PINNING)
		goto revoked;
	ret = fpgagdr_nv_segs(pin, nv, npages);
	if (ret) {
		atomic_set(&nv->state, FPGAGDR_NV_RELEASED);
		complete_all(&nv->copied);
		fpgagdr_nv_release(nv, pdev);
		return ret;
	}
	pin->head = span->head;
	pin->mem_priv = nv;
	atomic_set(&nv->state, FPGAGDR_NV_PINNED);
	complete_all(&nv->copied);
	return 0;

revoked:
	/* the callback ran: NVIDIA frees (or has freed) its objects */
	ret = -ESTALE;
free_nv:
	kfree(nv);
	return ret;
}

static void fpgagdr_nvp2p_unpin(struct fpgagdr_pinned *pin)
{
	struct fpgagdr_nv *nv = pin->mem_priv;

	pin->mem_priv = NULL;
	if (atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNED,
			   FPGAGDR_NV_RELEASED) == FPGAGDR_NV_PINNED) {
		fpgagdr_nv_release(nv, pin->fdev->pdev);
		return;
	}
	/*
	 * The callback won and may still be using @nv and the pin.  Its one
	 * blocking step, fpgagdr_pinned_revoke(), is bounded by
	 * FPGAGDR_REVOKE_WAIT_MS, so this wait is bounded too; a timeout here
	 * could only trade it for a use after free.
	 */
	wait_for_completion(&nv->cb_done);
	kfree(nv);
}

const struct fpgagdr_mem_ops fpgagdr_mem_nvp2p_ops = {
	.kind = FPGAGDR_MEM_NV_P2P,
	.name = "nvidia_p2p",
	.page_size = SZ_64K,
	.pin = fpgagdr_nvp2p_pin,
	.unpin = fpgagdr_nvp2p_unpin,
};
