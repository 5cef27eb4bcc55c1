// SPDX-License-Identifier: GPL-2.0
/*
 * fpgagdrN_user, the card's user register block (the XDMA user BAR, up to
 * 16 MiB) for register scripts, as Xilinx's xdmaN_user node offers it:
 * pread()/pwrite() of 32-bit words and shared mmap().
 *
 * A card that speaks the frame protocol shares the block with the frame-
 * done handler (fpgagdr-frames.c), whose record latches on a read of
 * DONE_SEQ_LO.  So the record's words and HOST_ACK are moved under the
 * handler's lock, everything else with interrupts on (a card whose
 * AXI-Lite slave stalls keeps nobody's interrupts off), and the protocol's
 * 4 KiB block is not mappable: only the design's own registers above it
 * are (docs/kernel-module.md, "Frame capture").  Removal unmaps every
 * mapping (a later access is SIGBUS) and waits for the access in flight.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "fpgagdr-core.h"

/**
 * struct fpgagdr_user_file - an open user register node
 * @fdev: the card, referenced
 * @node: in fpgagdr_frames.mappings
 * @mapping: the address space its mmap()s live in, zapped on removal
 */
struct fpgagdr_user_file {
	struct fpgagdr_dev *fdev;
	struct list_head node;
	struct address_space *mapping;
};

/**
 * fpgagdr_usernode_detach() - removal: no access in flight, no mapping
 * @fr: the card's frames, @attached cleared
 *
 * Waits for the register access in flight (one at most, see
 * fpgagdr_user_io()) and unmaps every mapping of the block.
 *
 * Context: process context (fpgagdr_frames_detach()).
 */
void fpgagdr_usernode_detach(struct fpgagdr_frames *fr)
{
	struct fpgagdr_user_file *uf;

	mutex_lock(&fr->io_lock);
	mutex_unlock(&fr->io_lock);
	mutex_lock(&fr->mmap_lock);
	list_for_each_entry(uf, &fr->mappings, node)
		unmap_mapping_range(uf->mapping, 0, 0, 1);
	mutex_unlock(&fr->mmap_lock);
}

static int fpgagdr_user_open(struct inode *inode, struct file *file)
{
	struct fpgagdr_user_file *uf;
	struct fpgagdr_dev *fdev;
	u32 node;

	fdev = fpgagdr_dev_get_by_minor(iminor(inode), &node);
	if (!fdev)
		return -ENODEV;
	uf = kzalloc(sizeof(*uf), GFP_KERNEL_ACCOUNT);
	if (!uf) {
		fpgagdr_dev_put(fdev);
		return -ENOMEM;
	}
	uf->fdev = fdev;
	uf->mapping = file->f_mapping;
	mutex_lock(&fdev->frames.mmap_lock);
	list_add(&uf->node, &fdev->frames.mappings);
	mutex_unlock(&fdev->frames.mmap_lock);
	file->private_data = uf;
	return 0;
}

static int fpgagdr_user_release(struct inode *inode, struct file *file)
{
	struct fpgagdr_user_file *uf = file->private_data;
	struct fpgagdr_dev *fdev = uf->fdev;

	mutex_lock(&fdev->frames.mmap_lock);
	list_del(&uf->node);
	mutex_unlock(&fdev->frames.mmap_lock);
	kfree(uf);
	fpgagdr_dev_put(fdev);
	return 0;
}

/*
 * Clip [*ppos, *ppos + count) to the block; words only.  Returns the
 * bytes to move (0 at the end) or -EINVAL.
 */
static ssize_t fpgagdr_user_span(struct fpgagdr_frames *fr, loff_t pos,
				 size_t count)
{
	if (pos < 0 || !IS_ALIGNED(pos, 4) || !IS_ALIGNED(count, 4))
		return -EINVAL;
	if (pos >= fr->len)
		return 0;
	return min_t(size_t, min_t(size_t, count, fr->len - pos), PAGE_SIZE);
}

/*
 * Whether the word at @off of the block is read as one of the frame-done
 * record's (DONE_SEQ_LO..DONE_LENGTH, read in one hold of the frames lock
 * so that a read of the whole record is one record, and so that a read of
 * DONE_SEQ_LO, which latches the record, never falls between the
 * handler's reads) or written as HOST_ACK (under the same lock: an
 * acknowledge between the handler's latch and its own acknowledge would
 * clear FRAME_PENDING for a frame it has not taken).  Only when the card
 * speaks the frame protocol; every other access is none of the handler's
 * business and is made with interrupts on.
 */
static bool fpgagdr_user_record(const struct fpgagdr_frames *fr, u32 off,
				bool write)
{
	if (fr->state != FPGAGDR_FRAMES_OK)
		return false;
	if (write)
		return off == FPROTO_REG_HOST_ACK;
	return off >= FPROTO_REG_DONE_SEQ_LO && off <= FPROTO_REG_DONE_LENGTH;
}

/* One word; @lock held or not, as fpgagdr_user_record() says. */
static void fpgagdr_user_word(struct fpgagdr_frames *fr, u32 *word, u32 off,
			      bool write)
{
	if (write)
		fr->ops->write(fr->ctx, off, *word);
	else
		*word = fr->ops->read(fr->ctx, off);
}

/*
 * Move @n bytes of registers from @pos to or from @kbuf, in order.  Under
 * @io_lock (which removal waits for) with interrupts on, looking at
 * @attached before every word, so removal waits for one register access
 * at most.  The record's words go under the frames lock as one hold of at
 * most four accesses, the handler's own bound; nothing else runs with
 * interrupts off, however slowly the card's AXI-Lite slave answers.
 */
static int fpgagdr_user_io(struct fpgagdr_dev *fdev, u32 *kbuf, u32 pos,
			   size_t n, bool write)
{
	struct fpgagdr_frames *fr = &fdev->frames;
	size_t i = 0, words = n / 4;
	unsigned long flags;
	int ret = 0;
	u32 off;

	mutex_lock(&fr->io_lock);
	while (i < words) {
		if (!READ_ONCE(fr->attached) || READ_ONCE(fdev->gone)) {
			ret = -ENODEV;
			break;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		off = pos + 4 * i;
		if (!fpgagdr_user_record(fr, off, write)) {
			fpgagdr_user_word(fr, &kbuf[i++], off, write);
			cond_resched();
			continue;
		}
		spin_lock_irqsave(&fr->lock, flags);
		while (i < words && fpgagdr_user_record(fr, off, write) &&
		       READ_ONCE(fr->attached)) {
			fpgagdr_user_word(fr, &kbuf[i++], off, write);
			off += 4;
		}
		spin_unlock_irqrestore(&fr->lock, flags);
	}
	mutex_unlock(&fr->io_lock);
	return ret;
}

static ssize_t fpgagdr_user_read(struct file *file, char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct fpgagdr_user_file *uf = file->private_data;
	ssize_t n = fpgagdr_user_span(&uf->fdev->frames, *ppos, count);
	u32 *kbuf;
	int ret;

	if (n <= 0)
		return n;
	kbuf = kmalloc(n, GFP_KERNEL);
	if (!kbuf)
		return -ENOMEM;
	ret = fpgagdr_user_io(uf->fdev, kbuf, *ppos, n, false);
	if (!ret && copy_to_user(buf, kbuf, n))
		ret = -EFAULT;
	kfree(kbuf);
	if (ret)
		return ret;
	*ppos += n;
	return n;
}

static ssize_t fpgagdr_user_write(struct file *file, const char __user *buf,
				  size_t count, loff_t *ppos)
{
	struct fpgagdr_user_file *uf = file->private_data;
	ssize_t n = fpgagdr_user_span(&uf->fdev->frames, *ppos, count);
	u32 *kbuf;
	int ret;

	if (n < 0)
		return n;
	if (!n)
		return count ? -ENOSPC : 0;
	kbuf = memdup_user(buf, n);
	if (IS_ERR(kbuf))
		return PTR_ERR(kbuf);
	ret = fpgagdr_user_io(uf->fdev, kbuf, *ppos, n, true);
	kfree(kbuf);
	if (ret)
		return ret;
	*ppos += n;
	return n;
}

static loff_t fpgagdr_user_llseek(struct file *file, loff_t off, int whence)
{
	struct fpgagdr_user_file *uf = file->private_data;

	return fixed_size_llseek(file, off, whence, uf->fdev->frames.len);
}

/*
 * The first page mmap() may map: past the protocol's 4 KiB block when the
 * card speaks the frame protocol (a load of DONE_SEQ_LO through a mapping
 * would latch the record between the handler's reads, and nothing can
 * serialise a load), page 0 otherwise.  The block is reached through
 * pread()/pwrite(), which are serialised with the handler.
 */
static unsigned long fpgagdr_user_first_page(const struct fpgagdr_frames *fr)
{
	return fr->state == FPGAGDR_FRAMES_OK ?
	       DIV_ROUND_UP(FPROTO_BLOCK_LEN, PAGE_SIZE) : 0;
}

static vm_fault_t fpgagdr_user_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct fpgagdr_user_file *uf = vma->vm_private_data;
	struct fpgagdr_frames *fr = &uf->fdev->frames;
	unsigned long pfn, flags;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	bool ok, io = false;

	/* removal zaps under this mutex: no insert can follow its zap */
	mutex_lock(&fr->mmap_lock);
	spin_lock_irqsave(&fr->lock, flags);
	ok = fr->attached && !READ_ONCE(uf->fdev->gone) &&
	     vmf->pgoff >= fpgagdr_user_first_page(fr);
	spin_unlock_irqrestore(&fr->lock, flags);
	if (ok && !fr->ops->pfn(fr->ctx, vmf->pgoff, &pfn, &io))
		ret = vmf_insert_pfn_prot(vma, vmf->address, pfn,
					  io ? pgprot_noncached(vma->vm_page_prot) :
					  vma->vm_page_prot);
	mutex_unlock(&fr->mmap_lock);
	return ret;
}

static const struct vm_operations_struct fpgagdr_user_vm_ops = {
	.fault = fpgagdr_user_fault,
};

static int fpgagdr_user_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct fpgagdr_user_file *uf = file->private_data;
	unsigned long pages = DIV_ROUND_UP(uf->fdev->frames.len, PAGE_SIZE);

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= pages || vma_pages(vma) > pages - vma->vm_pgoff)
		return -EINVAL;
	if (vma->vm_pgoff < fpgagdr_user_first_page(&uf->fdev->frames))
		return -EACCES;
	fpgagdr_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND |
			     VM_DONTDUMP);
	vma->vm_ops = &fpgagdr_user_vm_ops;
	vma->vm_private_data = uf;
	return 0;
}

const struct file_operations fpgagdr_user_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_user_open,
	.release = fpgagdr_user_release,
	.read = fpgagdr_user_read,
	.write = fpgagdr_user_write,
	.llseek = fpgagdr_user_llseek,
	.mmap = fpgagdr_user_mmap,
};
