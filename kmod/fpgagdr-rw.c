// SPDX-License-Identifier: GPL-2.0
/*
 * The channel nodes /dev/fpgagdrN_c2h_K and _h2c_K: read() and write() DMA
 * straight between the card and the caller's CPU memory, the file offset
 * being the card address, as the XDMA reference tools expect.
 *
 * Each call pins the user pages for one step of at most
 * FPGAGDR_RW_CHUNK_PAGES pages (short-term), maps them, claims the engine,
 * builds the chain into the engine's own descriptor memory and runs it.
 * Pinning may wait on user space for as long as user space likes (a
 * fault, userfaultfd), so it happens before the engine is claimed and
 * before the card's DMA lock is taken: a removal never waits for it, and
 * the step finds the card gone afterwards (ENODEV).  Steps of one call are
 * in card-address order; other transfers may run between them.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "fpgagdr-card.h"
#include "fpgagdr-core.h"

static unsigned int fpgagdr_rw_timeout_ms = 10000;

static int fpgagdr_rw_timeout_set(const char *val,
				  const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v > FPGAGDR_TIMEOUT_MAX_MS)
		return -EINVAL;
	*(unsigned int *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops fpgagdr_rw_timeout_ops = {
	.set = fpgagdr_rw_timeout_set,
	.get = param_get_uint,
};

module_param_cb(rw_timeout_ms, &fpgagdr_rw_timeout_ops,
		&fpgagdr_rw_timeout_ms, 0644);
MODULE_PARM_DESC(rw_timeout_ms, "Timeout of each read/write step on channel nodes, ms (default 10000, 0 = 10000, at most 60000)");

/**
 * struct fpgagdr_rw - buffers of one read() or write() call
 * @eng: the engine
 * @owner: the channel node's open file
 * @pages: pinned pages of the current step
 * @segs: their bus segments
 * @c2h: direction
 */
struct fpgagdr_rw {
	struct fpgagdr_engine *eng;
	const void *owner;
	struct page **pages;
	struct fpgagdr_seg *segs;
	bool c2h;
};

static int fpgagdr_chan_open(struct inode *inode, struct file *file)
{
	struct fpgagdr_engine *eng;
	struct fpgagdr_dev *fdev;
	u32 node;

	fdev = fpgagdr_dev_get_by_minor(iminor(inode), &node);
	if (!fdev)
		return -ENODEV;
	node--;
	eng = fpgagdr_dev_engine(fdev, node / XDMA_MAX_CHANNELS,
				 node % XDMA_MAX_CHANNELS);
	if (!eng) {
		fpgagdr_dev_put(fdev);
		return -ENODEV;
	}
	file->private_data = eng;
	return 0;
}

static int fpgagdr_chan_release(struct inode *inode, struct file *file)
{
	struct fpgagdr_engine *eng = file->private_data;

	fpgagdr_dev_put(eng->fdev);
	return 0;
}

/* Map pinned pages and turn them into segments covering [ofs, ofs+len). */
static int fpgagdr_rw_map(struct fpgagdr_rw *rw, struct sg_table *sgt,
			  u32 npages, u64 ofs, u64 len, u32 *nsegs)
{
	struct device *dev = rw->eng->fdev->dev;
	enum dma_data_direction dir = rw->c2h ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	size_t max = min_t(size_t, dma_max_mapping_size(dev),
			   dma_get_max_seg_size(dev));
	struct scatterlist *sg;
	u32 i, n = 0;
	int ret;

	/* segments the DMA API maps in one piece (256 KiB under swiotlb) */
	max = max_t(size_t, round_down(min_t(size_t, max, UINT_MAX), PAGE_SIZE),
		    PAGE_SIZE);
	ret = sg_alloc_table_from_pages_segment(sgt, rw->pages, npages, 0,
						(unsigned long)npages << PAGE_SHIFT,
						max, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	ret = dma_map_sgtable(dev, sgt, dir, 0);
	if (ret) {
		sg_free_table(sgt);
		return ret == -ENOMEM ? -ENOMEM : -EIO;
	}
	for_each_sgtable_dma_sg(sgt, sg, i) {
		rw->segs[n].addr = sg_dma_address(sg);
		rw->segs[n].len = sg_dma_len(sg);
		n++;
	}
	n = fpgagdr_sg_merge(rw->segs, n, dma_get_max_seg_size(dev));
	return fpgagdr_sg_clip(rw->segs, n, ofs, len, nsegs);
}

static ktime_t fpgagdr_rw_deadline(void)
{
	return ktime_add_ms(ktime_get(),
			    READ_ONCE(fpgagdr_rw_timeout_ms) ?: 10000);
}

/* Map, claim, build, run, release, unmap: the card present throughout. */
static int fpgagdr_rw_run(struct fpgagdr_rw *rw, u32 npages, u64 ofs,
			  u64 len, u64 card)
{
	struct fpgagdr_engine *eng = rw->eng;
	struct fpgagdr_dev *fdev = eng->fdev;
	struct fpgagdr_xfer x = { 0, card, len, rw->c2h };
	struct fpgagdr_chain chain;
	struct sg_table sgt;
	u32 nsegs;
	int ret;
	u64 ns;

	down_read(&fdev->dma_lock);
	if (fdev->dma_gone || READ_ONCE(fdev->gone)) {
		ret = -ENODEV;
		goto unlock;
	}
	ret = fpgagdr_rw_map(rw, &sgt, npages, ofs, len, &nsegs);
	if (ret)
		goto unlock;
	ret = fpgagdr_engine_claim(eng, rw->owner, NULL, fpgagdr_rw_deadline());
	if (!ret) {
		ret = fpgagdr_desc_build(&eng->rw.ring, rw->segs, nsegs, &x,
					 FPGAGDR_DESC_MAX_LEN, &chain);
		if (!ret)
			ret = fpgagdr_engine_exec(eng, &chain, NULL,
						  fpgagdr_rw_deadline(), &ns);
		fpgagdr_engine_release(eng);
	}
	/*
	 * The engine is seen stopped, or the card fenced.  A failed C2H
	 * copies nothing back: bounce bytes the card never wrote stay out of
	 * the caller's buffer (and its pages are not dirtied).
	 */
	dma_unmap_sgtable(fdev->dev, &sgt,
			  rw->c2h ? DMA_FROM_DEVICE : DMA_TO_DEVICE,
			  rw->c2h && ret ? DMA_ATTR_SKIP_CPU_SYNC : 0);
	sg_free_table(&sgt);
unlock:
	up_read(&fdev->dma_lock);
	return ret;
}

/* One step: pin (may wait on user space), then run. */
static int fpgagdr_rw_step(struct fpgagdr_rw *rw, unsigned long uaddr,
			   u64 len, u64 card)
{
	u64 ofs = offset_in_page(uaddr);
	u32 npages = DIV_ROUND_UP(ofs + len, PAGE_SIZE);
	int pinned, ret;

	pinned = pin_user_pages_fast(uaddr & PAGE_MASK, npages,
				     rw->c2h ? FOLL_WRITE : 0, rw->pages);
	if (pinned < 0)
		return pinned;
	if (pinned != npages)
		ret = -EFAULT;
	else
		ret = fpgagdr_rw_run(rw, npages, ofs, len, card);
	unpin_user_pages_dirty_lock(rw->pages, pinned, rw->c2h && !ret);
	return ret;
}

static ssize_t fpgagdr_rw(struct file *file, unsigned long uaddr, size_t len,
			  loff_t *pos, bool c2h)
{
	struct fpgagdr_rw rw = {
		.eng = file->private_data, .owner = file, .c2h = c2h,
	};
	struct fpgagdr_engine *eng = rw.eng;
	u64 chunk = (u64)FPGAGDR_RW_CHUNK_PAGES << PAGE_SHIFT, done = 0, step;
	struct fpgagdr_xfer_rules rules = {
		.buf_len = len,
		.card_size = eng->fdev->card_size,
		.addr_align = eng->addr_align,
		.len_gran = eng->len_gran,
	};
	int ret;

	if (!len)
		return 0;
	if (*pos < 0 || !IS_ALIGNED(uaddr, eng->addr_align))
		return -EINVAL;
	ret = fpgagdr_xfer_check(&rules, 0, *pos, len);
	if (ret)
		return ret;
	rw.pages = kvmalloc_array(FPGAGDR_RW_CHUNK_PAGES + 1,
				  sizeof(*rw.pages), GFP_KERNEL_ACCOUNT);
	rw.segs = kvmalloc_array(FPGAGDR_RW_CHUNK_PAGES + 1,
				 sizeof(*rw.segs), GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!rw.pages || !rw.segs)
		goto free;
	while (done < len) {
		step = min_t(u64, len - done,
			     chunk - offset_in_page(uaddr + done));
		ret = fpgagdr_rw_step(&rw, uaddr + done, step, *pos + done);
		if (ret)
			break;
		done += step;
	}
	*pos += done;
free:
	kvfree(rw.segs);
	kvfree(rw.pages);
	return done ? done : ret;
}

static ssize_t fpgagdr_chan_read(struct file *file, char __user *buf,
				 size_t len, loff_t *pos)
{
	struct fpgagdr_engine *eng = file->private_data;

	if (eng->dir != FPGAGDR_DIR_C2H)
		return -EBADF;
	return fpgagdr_rw(file, (unsigned long)buf, len, pos, true);
}

static ssize_t fpgagdr_chan_write(struct file *file, const char __user *buf,
				  size_t len, loff_t *pos)
{
	struct fpgagdr_engine *eng = file->private_data;

	if (eng->dir != FPGAGDR_DIR_H2C)
		return -EBADF;
	return fpgagdr_rw(file, (unsigned long)buf, len, pos, false);
}

const struct file_operations fpgagdr_chan_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_chan_open,
	.release = fpgagdr_chan_release,
	.read = fpgagdr_chan_read,
	.write = fpgagdr_chan_write,
	.llseek = default_llseek,
};
