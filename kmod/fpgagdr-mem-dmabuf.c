// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf back-end: import a dma-buf (for example CUDA memory exported
 * with cuMemGetHandleForAddressRange() by the open GPU kernel modules),
 * attach the card to it and map it once.  The attachment is static: the
 * exporter keeps the buffer in place while it is mapped.
 *
 * The exporter maps the buffer for the card's device with the streaming
 * DMA API (dma_map_sgtable(), as vgem and udmabuf do), and that mapping
 * belongs to the device only while a run uses it: where the DMA API says
 * a mapping needs syncing (dma_need_sync(): bounce buffers, a card that
 * is not cache-coherent) the pin hands it to the transfers, which sync
 * each run's bytes as they do for host pins (fpgagdr-pinned.c).  Without
 * that, under swiotlb a C2H landed in the bounce buffer and never in the
 * dma-buf's pages.  Where nothing needs syncing (a coherent card without
 * bounce buffers, the x86 GPU case) transfers do not sync at all.  CPU
 * access on the exporter's side stays bracketed by DMA_BUF_IOCTL_SYNC.
 *
 * Errors are the uapi header's: a file that is not a dma-buf is EBADF,
 * an exporter that refuses the card EOPNOTSUPP, a failed mapping EIO (or
 * ENOMEM).
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "compat.h"
#include "fpgagdr-pinned.h"

/**
 * struct fpgagdr_dmabuf - an imported, mapped dma-buf
 * @buf: the dma-buf, referenced
 * @attach: the card's attachment
 * @sgt: the mapping
 */
struct fpgagdr_dmabuf {
	struct dma_buf *buf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
};

static int fpgagdr_dmabuf_segs(struct fpgagdr_pinned *pin,
			       struct sg_table *sgt)
{
	struct scatterlist *sg;
	u32 i, n = 0;

	pin->segs = kvmalloc_array(sgt->nents, sizeof(*pin->segs),
				   GFP_KERNEL_ACCOUNT);
	if (!pin->segs)
		return -ENOMEM;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		pin->segs[n].addr = sg_dma_address(sg);
		pin->segs[n].len = sg_dma_len(sg);
		n++;
	}
	pin->nsegs = n;
	return 0;
}

/*
 * Whether the card's mapping of the dma-buf must be synced around runs:
 * the DMA API's answer for any of its segments.
 */
static bool fpgagdr_dmabuf_need_sync(struct device *dev,
				     struct sg_table *sgt)
{
	struct scatterlist *sg;
	u32 i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		if (dma_need_sync(dev, sg_dma_address(sg)))
			return true;
	return false;
}

static int fpgagdr_dmabuf_pin(struct fpgagdr_pinned *pin,
			      const struct fpgagdr_pin *args,
			      const struct fpgagdr_span *span)
{
	struct fpgagdr_dmabuf *d;
	u64 end;
	int ret;

	d = kzalloc(sizeof(*d), GFP_KERNEL_ACCOUNT);
	if (!d)
		return -ENOMEM;
	d->buf = dma_buf_get(args->dmabuf_fd);
	if (IS_ERR(d->buf)) {
		/* -EBADF: no such file; -EINVAL: not a dma-buf */
		ret = -EBADF;
		goto free_d;
	}
	if (check_add_overflow(args->addr, args->length, &end) ||
	    end > d->buf->size) {
		ret = -EOVERFLOW;
		goto put_buf;
	}
	d->attach = dma_buf_attach(d->buf, pin->fdev->dev);
	if (IS_ERR(d->attach)) {
		ret = PTR_ERR(d->attach) == -ENOMEM ? -ENOMEM : -EOPNOTSUPP;
		goto put_buf;
	}
	d->sgt = fpgagdr_dma_buf_map(d->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(d->sgt)) {
		ret = PTR_ERR(d->sgt) == -ENOMEM ? -ENOMEM : -EIO;
		goto detach;
	}
	ret = fpgagdr_dmabuf_segs(pin, d->sgt);
	if (ret)
		goto unmap;
	/* the segments start at offset 0 of the dma-buf */
	pin->head = args->addr;
	if (fpgagdr_dmabuf_need_sync(pin->fdev->dev, d->sgt))
		pin->sgt = d->sgt;
	pin->mem_priv = d;
	pin->method = FPGAGDR_PIN_METHOD_DMABUF;
	return 0;

unmap:
	fpgagdr_dma_buf_unmap(d->attach, d->sgt, DMA_BIDIRECTIONAL);
detach:
	dma_buf_detach(d->buf, d->attach);
put_buf:
	dma_buf_put(d->buf);
free_d:
	kfree(d);
	return ret;
}

static void fpgagdr_dmabuf_unpin(struct fpgagdr_pinned *pin)
{
	struct fpgagdr_dmabuf *d = pin->mem_priv;

	fpgagdr_dma_buf_unmap(d->attach, d->sgt, DMA_BIDIRECTIONAL);
	dma_buf_detach(d->buf, d->attach);
	dma_buf_put(d->buf);
	kfree(d);
	pin->mem_priv = NULL;
}

const struct fpgagdr_mem_ops fpgagdr_mem_dmabuf_ops = {
	.kind = FPGAGDR_MEM_DMABUF,
	.name = "dma-buf",
	.page_size = PAGE_SIZE,
	.pin = fpgagdr_dmabuf_pin,
	.unpin = fpgagdr_dmabuf_unpin,
};
