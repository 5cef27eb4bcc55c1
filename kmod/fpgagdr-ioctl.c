// SPDX-License-Identifier: GPL-2.0
/*
 * The control node /dev/fpgagdrN: open, release and the ioctls.  This file
 * copies arguments in and out and checks the rules every ioctl shares
 * (ABI version, flags, padding, enums, timeout); the work is elsewhere.
 */
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fpgagdr-card.h"
#include "fpgagdr-pinned.h"

static int fpgagdr_ctl_open(struct inode *inode, struct file *file)
{
	struct fpgagdr_dev *fdev;
	struct fpgagdr_file *f;
	u32 node;

	fdev = fpgagdr_dev_get_by_minor(iminor(inode), &node);
	if (!fdev)
		return -ENODEV;
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f) {
		fpgagdr_dev_put(fdev);
		return -ENOMEM;
	}
	fpgagdr_file_init(f, fdev, file);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int fpgagdr_ctl_release(struct inode *inode, struct file *file)
{
	struct fpgagdr_file *f = file->private_data;
	struct fpgagdr_dev *fdev = f->fdev;

	fpgagdr_file_release(f);
	kfree(f);
	fpgagdr_dev_put(fdev);
	return 0;
}

/*
 * A wrong ABI version is answered with the module's version in the first
 * field, the only field written, so that user space can say what it met.
 */
static int fpgagdr_check_version(void __user *uarg, u32 version)
{
	u32 mine = FPGAGDR_ABI_VERSION;

	if (version == FPGAGDR_ABI_VERSION)
		return 0;
	if (copy_to_user(uarg, &mine, sizeof(mine)))
		return -EFAULT;
	return -EPROTO;
}

static void fpgagdr_fill_status(struct fpgagdr_dev *fdev,
				struct fpgagdr_status *s)
{
	const struct fpgagdr_stats *st = &fdev->stats;
	const struct fpgagdr_engine *eng;
	u32 align = 1, gran = 1, dir, ch;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			eng = fdev->eng[dir][ch];
			align = max(align, eng->addr_align);
			gran = max(gran, eng->len_gran);
		}
	}
	s->platform = fdev->platform;
	s->caps = fdev->caps |
		  (fpgagdr_nvp2p_persistent() ? FPGAGDR_CAP_NV_PERSISTENT : 0);
	s->mem_kinds = fpgagdr_mem_kinds();
	s->default_kind = fdev->platform == FPGAGDR_PLATFORM_X86_DGPU ?
			  FPGAGDR_MEM_NV_P2P : FPGAGDR_MEM_HOST;
	s->gpu_page_size = fpgagdr_mem_ops(s->default_kind)->page_size;
	s->pin_align = FPGAGDR_PIN_ALIGN;
	s->xfer_align = align;
	s->len_granularity = gran;
	s->h2c_channels = fdev->nch[FPGAGDR_DIR_H2C];
	s->c2h_channels = fdev->nch[FPGAGDR_DIR_C2H];
	s->desc_max_bytes = FPGAGDR_DESC_MAX_LEN;
	s->card_size = fdev->card_size;
	s->pins = atomic64_read(&st->pins);
	s->pins_total = atomic64_read(&st->pins_total);
	s->cache_hits = atomic64_read(&st->cache_hits);
	s->cache_misses = atomic64_read(&st->cache_misses);
	s->transfers = atomic64_read(&st->transfers);
	s->transfer_bytes = atomic64_read(&st->transfer_bytes);
	s->timeouts = atomic64_read(&st->timeouts);
	s->aborts = atomic64_read(&st->aborts);
	s->errors = atomic64_read(&st->errors);
}

static long fpgagdr_ioc_status(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_status s;
	int ret;

	if (copy_from_user(&s, uarg, sizeof(s)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, s.abi_version);
	if (ret)
		return ret;
	if (s.flags)
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.abi_version = FPGAGDR_ABI_VERSION;
	fpgagdr_fill_status(f->fdev, &s);
	return copy_to_user(uarg, &s, sizeof(s)) ? -EFAULT : 0;
}

static long fpgagdr_ioc_pin(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_pin p;
	int ret;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, p.abi_version);
	if (ret)
		return ret;
	if (p.flags || p.handle || p.segments || p.page_size || p.pad0 ||
	    (p.kind != FPGAGDR_MEM_DMABUF && p.dmabuf_fd != -1))
		return -EINVAL;
	ret = fpgagdr_pin(f, &p);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &p, sizeof(p))) {
		/* user space cannot learn the handle: do not leak the pin */
		fpgagdr_unpin(f, p.handle);
		return -EFAULT;
	}
	return 0;
}

static long fpgagdr_ioc_unpin(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_unpin u;
	int ret;

	if (copy_from_user(&u, uarg, sizeof(u)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, u.abi_version);
	if (ret)
		return ret;
	if (u.flags || u.pad0)
		return -EINVAL;
	return fpgagdr_unpin(f, u.handle);
}

static long fpgagdr_ioc_transfer(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_transfer t;
	int ret;

	if (copy_from_user(&t, uarg, sizeof(t)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, t.abi_version);
	if (ret)
		return ret;
	if (t.flags || t.bytes || t.duration_ns ||
	    t.direction > FPGAGDR_DIR_H2C ||
	    fpgagdr_timeout_check(t.timeout_ms, FPGAGDR_TIMEOUT_MAX_MS))
		return -EINVAL;
	ret = fpgagdr_transfer(f, &t);
	if (ret)
		return ret;
	return copy_to_user(uarg, &t, sizeof(t)) ? -EFAULT : 0;
}

static long fpgagdr_ioc_abort(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_engine *eng;
	struct fpgagdr_abort a;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, a.abi_version);
	if (ret)
		return ret;
	if (a.flags || a.direction > FPGAGDR_DIR_H2C)
		return -EINVAL;
	eng = fpgagdr_dev_engine(f->fdev, a.direction, a.channel);
	if (!eng)
		return -ECHRNG;
	return fpgagdr_engine_request_abort(eng, f->owner);
}

static long fpgagdr_ctl_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct fpgagdr_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* UNPIN still works on a removed card: it only gives memory back */
	if (READ_ONCE(f->fdev->gone) && cmd != FPGAGDR_IOC_UNPIN)
		return -ENODEV;
	switch (cmd) {
	case FPGAGDR_IOC_GET_STATUS:
		return fpgagdr_ioc_status(f, uarg);
	case FPGAGDR_IOC_PIN:
		return fpgagdr_ioc_pin(f, uarg);
	case FPGAGDR_IOC_UNPIN:
		return fpgagdr_ioc_unpin(f, uarg);
	case FPGAGDR_IOC_TRANSFER:
		return fpgagdr_ioc_transfer(f, uarg);
	case FPGAGDR_IOC_ABORT:
		return fpgagdr_ioc_abort(f, uarg);
	default:
		return -ENOTTY;
	}
}

const struct file_operations fpgagdr_ctl_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_ctl_open,
	.release = fpgagdr_ctl_release,
	.unlocked_ioctl = fpgagdr_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
