// SPDX-License-Identifier: GPL-2.0
/*
 * nvidia_p2p back-end for discrete GPUs: CUDA device memory (cudaMalloc)
 * pinned with nvidia_p2p_get_pages() in 64 KiB GPU pages and mapped for the
 * card with nvidia_p2p_dma_map_pages().  Persistent pages are used where
 * the driver offers them; otherwise a free callback is registered.
 *
 * The free callback and the AB-BA it must avoid.  NVIDIA calls the
 * callback while holding its own lock, when the memory is freed under our
 * pin (cudaFree, process exit).  Our unpin path calls
 * nvidia_p2p_put_pages(), which takes that same lock.  If unpin held a lock
 * of ours (say a per-file mutex) across put_pages and the callback took it
 * too, each side would hold one lock and wait for the other.  So the
 * callback takes no lock of ours: it claims the pin with one atomic
 * compare-and-exchange on @state, cancels DMA through the pin's flags and
 * waits only for the transfer in flight, which never calls into NVIDIA.
 *
 * @state goes PINNING -> PINNED -> RELEASED (unpin won) or -> REVOKED
 * (callback won).  Exactly one side frees NVIDIA's objects:
 *   unpin wins:    nvidia_p2p_dma_unmap_pages() + nvidia_p2p_put_pages();
 *                  NVIDIA does not call the callback after put_pages
 *                  returns, and put_pages waits for a callback in flight.
 *   callback wins: DMA stopped, then nvidia_p2p_free_dma_mapping() +
 *                  nvidia_p2p_free_page_table(); unpin waits for the
 *                  callback to finish (@cb_done), then frees only ours.
 *   callback during PINNING: it marks REVOKED; the pin path sees that,
 *                  frees NVIDIA's objects the callback's way and fails.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "fpgagdr-core.h"
#include "fpgagdr-nv-p2p.h"

enum {
	FPGAGDR_NV_PINNING,
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
 * @cb_done: completed when a winning free callback has finished with us
 */
struct fpgagdr_nv {
	struct fpgagdr_pinned *pin;
	u64 va;
	struct nvidia_p2p_page_table *pt;
	struct nvidia_p2p_dma_mapping *map;
	atomic_t state;
	bool persistent;
	struct completion cb_done;
};

/**
 * fpgagdr_nvp2p_persistent() - does the NVIDIA driver offer persistent pins
 *
 * Context: any.
 * Return: true when nvidia_p2p_get_pages() accepts a NULL free callback.
 */
bool fpgagdr_nvp2p_persistent(void)
{
	return fpgagdr_nv_cap_persistent();
}

static void fpgagdr_nv_free_cb(void *data)
{
	struct fpgagdr_nv *nv = data;

	if (atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNED,
			   FPGAGDR_NV_REVOKED) != FPGAGDR_NV_PINNED) {
		/* unpin owns it, or the pin path will clean up */
		atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNING,
			       FPGAGDR_NV_REVOKED);
		return;
	}
	set_bit(FPGAGDR_PIN_REVOKED, &nv->pin->flags);
	fpgagdr_pinned_revoke(nv->pin);
	nvidia_p2p_free_dma_mapping(nv->map);
	nvidia_p2p_free_page_table(nv->pt);
	/* last touch of @nv: unpin may free it once this completes */
	complete(&nv->cb_done);
}

static int fpgagdr_nv_get_pages(struct fpgagdr_nv *nv, u64 len)
{
	int ret;

	if (fpgagdr_nv_cap_persistent()) {
		ret = nvidia_p2p_get_pages(0, 0, nv->va, len, &nv->pt, NULL, nv);
		if (!ret) {
			nv->persistent = true;
			return 0;
		}
		/* MIG, vGPU: fall back to a free callback */
	}
	return nvidia_p2p_get_pages(0, 0, nv->va, len, &nv->pt,
				    fpgagdr_nv_free_cb, nv);
}

static int fpgagdr_nv_segs(struct fpgagdr_pinned *pin, struct fpgagdr_nv *nv)
{
	u32 i;

	if (!fpgagdr_nv_version_ok(nv->pt->version,
				   NVIDIA_P2P_PAGE_TABLE_VERSION) ||
	    !fpgagdr_nv_version_ok(nv->map->version,
				   NVIDIA_P2P_DMA_MAPPING_VERSION) ||
	    nv->pt->page_size != NVIDIA_P2P_PAGE_SIZE_64KB)
		return -EOPNOTSUPP;
	pin->segs = kvmalloc_array(nv->map->entries, sizeof(*pin->segs),
				   GFP_KERNEL);
	if (!pin->segs)
		return -ENOMEM;
	for (i = 0; i < nv->map->entries; i++) {
		pin->segs[i].addr = nv->map->dma_addresses[i];
		pin->segs[i].len = SZ_64K;
	}
	pin->nsegs = nv->map->entries;
	return 0;
}

static int fpgagdr_nvp2p_pin(struct fpgagdr_pinned *pin,
			     const struct fpgagdr_pin *args,
			     const struct fpgagdr_span *span)
{
	struct pci_dev *pdev = to_pci_dev(pin->fdev->dev);
	struct fpgagdr_nv *nv;
	int ret;

	if (!dev_is_pci(pin->fdev->dev))
		return -EOPNOTSUPP;
	nv = kzalloc(sizeof(*nv), GFP_KERNEL);
	if (!nv)
		return -ENOMEM;
	nv->pin = pin;
	nv->va = span->start;
	atomic_set(&nv->state, FPGAGDR_NV_PINNING);
	init_completion(&nv->cb_done);
	ret = fpgagdr_nv_get_pages(nv, span->end - span->start);
	if (ret)
		goto free_nv;
	ret = nvidia_p2p_dma_map_pages(pdev, nv->pt, &nv->map);
	if (ret)
		goto put_pages;
	ret = fpgagdr_nv_segs(pin, nv);
	if (ret)
		goto unmap;
	if (atomic_cmpxchg(&nv->state, FPGAGDR_NV_PINNING,
			   FPGAGDR_NV_PINNED) != FPGAGDR_NV_PINNING) {
		ret = -ESTALE;
		goto revoked;
	}
	pin->head = span->head;
	pin->mem_priv = nv;
	return 0;

revoked:
	/* the callback ran while we pinned: free NVIDIA's objects its way */
	nvidia_p2p_free_dma_mapping(nv->map);
	nvidia_p2p_free_page_table(nv->pt);
	goto free_nv;
unmap:
	nvidia_p2p_dma_unmap_pages(pdev, nv->pt, nv->map);
put_pages:
	nvidia_p2p_put_pages(0, 0, nv->va, nv->pt);
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
		nvidia_p2p_dma_unmap_pages(to_pci_dev(pin->fdev->dev), nv->pt,
					   nv->map);
		nvidia_p2p_put_pages(0, 0, nv->va, nv->pt);
		kfree(nv);
		return;
	}
	/*
	 * The callback won and may still be using @nv and the pin.  Its one
	 * blocking step, fpgagdr_pinned_revoke(), is bounded by
	 * FPGAGDR_STOP_WAIT_MS, so this wait is bounded too; a timeout here
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
