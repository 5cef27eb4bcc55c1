// SPDX-License-Identifier: GPL-2.0
/*
 * The control node /dev/fpgagdrN: open, release and the ioctls.  This file
 * copies arguments in and out and checks the rules every ioctl shares
 * (ABI version, flags, padding, enums, timeout); the work is elsewhere.
 */
#include <linux/fs.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "fpgagdr-card.h"
#include "fpgagdr-link.h"
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

	fpgagdr_frames_unsubscribe(fdev, f->sub);
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

/*
 * The PCI core's speed of a link as a generation, numbered as Link Status'
 * Current Link Speed (1 = 2.5 GT/s ... 6 = 64 GT/s); 0 for anything else.
 */
static u32 fpgagdr_speed_gen(enum pci_bus_speed speed)
{
	switch (speed) {
	case PCIE_SPEED_2_5GT:
		return 1;
	case PCIE_SPEED_5_0GT:
		return 2;
	case PCIE_SPEED_8_0GT:
		return 3;
	case PCIE_SPEED_16_0GT:
		return 4;
	case PCIE_SPEED_32_0GT:
		return 5;
#ifdef FPGAGDR_HAVE_PCIE_SPEED_64_0GT
	case PCIE_SPEED_64_0GT:
		return 6;
#endif
	default:
		return 0;
	}
}

/*
 * The narrowest link between the card and the root complex, as the PCI
 * core computes it for its "limited by ... at BDF" messages:
 * pcie_bandwidth_available() reads Link Status of the card and of every
 * bridge above it and keeps the link with the least bandwidth (a tie goes
 * to the device further up).  The limiting device is in the card's PCI
 * domain; its address is packed as the header says.  Zeros when no link
 * on the path is known (a conventional PCI card on a root bus).
 */
static void fpgagdr_fill_link_path(struct pci_dev *pdev,
				   struct fpgagdr_status *s)
{
	enum pcie_link_width width = PCIE_LNK_WIDTH_UNKNOWN;
	enum pci_bus_speed speed = PCI_SPEED_UNKNOWN;
	struct pci_dev *limit = NULL;
	int domain;
	u32 gen;

	if (!pcie_bandwidth_available(pdev, &limit, &speed, &width) || !limit)
		return;
	gen = fpgagdr_speed_gen(speed);
	if (!gen || !width || width == PCIE_LNK_WIDTH_UNKNOWN)
		return;
	s->link_path_gen = gen;
	s->link_path_width = width;
	domain = pci_domain_nr(limit->bus);
	if (domain >= 0 && domain < 0xffff)
		s->link_path_dev = (u32)domain << 16 | pci_dev_id(limit);
	else
		s->link_path_dev = FPGAGDR_LINK_PATH_DEV_UNKNOWN;
}

/*
 * The negotiated PCIe link, what the card is capable of, and its payload
 * and read request sizes, decoded from its registers (fpgagdr-link.c);
 * zeros where the function is not PCIe, capable fields zero when Link
 * Capabilities cannot be read, sizes zero when Device Control cannot.
 */
static void fpgagdr_fill_link(struct fpgagdr_dev *fdev,
			      struct fpgagdr_status *s)
{
	struct pci_dev *pdev = fdev->pdev;
	u16 lnksta, devctl = 0;
	struct fpgagdr_link l;
	bool sizes;
	u32 lnkcap;

	/* a removed card has no path; its bridges may be going too */
	if (!READ_ONCE(fdev->gone))
		fpgagdr_fill_link_path(pdev, s);
	if (!pci_is_pcie(pdev) ||
	    pcie_capability_read_word(pdev, PCI_EXP_LNKSTA, &lnksta))
		return;
	if (pcie_capability_read_dword(pdev, PCI_EXP_LNKCAP, &lnkcap))
		lnkcap = 0;
	sizes = !pcie_capability_read_word(pdev, PCI_EXP_DEVCTL, &devctl);
	fpgagdr_link_decode(lnksta, lnkcap, devctl, &l);
	s->link_gen = l.gen;
	s->link_width = l.width;
	s->link_cap_gen = l.cap_gen;
	s->link_cap_width = l.cap_width;
	if (sizes) {
		s->link_max_payload = l.max_payload;
		s->link_max_read_req = l.max_read_req;
	}
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
	fpgagdr_fill_link(fdev, s);
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
	if (p.flags || p.handle || p.segments || p.page_size || p.method ||
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
	if ((t.flags & ~FPGAGDR_XFER_FRAME) || t.bytes || t.duration_ns ||
	    t.frame_check || t.direction > FPGAGDR_DIR_H2C ||
	    fpgagdr_timeout_check(t.timeout_ms, FPGAGDR_TIMEOUT_MAX_MS))
		return -EINVAL;
	if (!(t.flags & FPGAGDR_XFER_FRAME)) {
		if (t.frame_seq || t.frame_epoch)
			return -EINVAL;
	} else if (t.direction != FPGAGDR_DIR_C2H ||
		   fpgagdr_frames_frame_range(f->fdev, t.frame_seq,
					      t.card_addr, t.length)) {
		return -EINVAL;
	}
	ret = fpgagdr_transfer(f, &t);
	if (ret)
		return ret;
	/* the card protocol's torn-frame check, once the run completed */
	if (t.flags & FPGAGDR_XFER_FRAME)
		t.frame_check = fpgagdr_frames_check_copy(f->fdev, t.frame_seq,
							  t.frame_epoch);
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
	if ((a.flags & ~FPGAGDR_ABORT_WAITS) || a.direction > FPGAGDR_DIR_H2C)
		return -EINVAL;
	if (a.flags & FPGAGDR_ABORT_WAITS) {
		if (a.direction || a.channel)
			return -EINVAL;
		fpgagdr_frames_cancel(f->fdev, READ_ONCE(f->sub));
		return 0;
	}
	eng = fpgagdr_dev_engine(f->fdev, a.direction, a.channel);
	if (!eng)
		return -ECHRNG;
	return fpgagdr_engine_request_abort(eng, f->owner);
}

static long fpgagdr_ioc_wait_frame(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_wait_frame w;
	int ret;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, w.abi_version);
	if (ret)
		return ret;
	if ((w.flags & ~FPGAGDR_WAIT_NOWAIT) || w.slot || w.sequence ||
	    w.length || w.epoch || w.arrival_ns || w.missed || w.overflows ||
	    w.queued ||
	    fpgagdr_timeout_check(w.timeout_ms, FPGAGDR_TIMEOUT_MAX_MS))
		return -EINVAL;
	ret = fpgagdr_frames_wait(f->fdev, &f->sub, &w);
	/* a broken event is handed back as read, with its error */
	if ((!ret || ret == -EBADMSG) && copy_to_user(uarg, &w, sizeof(w)))
		return -EFAULT;
	return ret;
}

static long fpgagdr_ioc_frame_info(struct fpgagdr_file *f, void __user *uarg)
{
	struct fpgagdr_frame_info fi;
	int ret;

	if (copy_from_user(&fi, uarg, sizeof(fi)))
		return -EFAULT;
	ret = fpgagdr_check_version(uarg, fi.abi_version);
	if (ret)
		return ret;
	if (fi.flags || fi.state || fi.proto_version || fi.slot_count ||
	    fi.slot_size || fi.user_irq || fi.epoch || fi.slot_base ||
	    fi.events || fi.missed || fi.queue_overflows ||
	    fi.protocol_errors || fi.dropped || fi.torn || fi.epoch_changes)
		return -EINVAL;
	fpgagdr_frames_info(f->fdev, &fi);
	return copy_to_user(uarg, &fi, sizeof(fi)) ? -EFAULT : 0;
}

/*
 * One of the ioctls above with another structure size: a binary built
 * against another ABI version (TRANSFER and FRAME_INFO grew in version 4).
 * It is told the module's version, as a wrong abi_version is; anything
 * else is not ours.
 */
static long fpgagdr_ioc_other_size(void __user *uarg, unsigned int cmd)
{
	if (_IOC_TYPE(cmd) != FPGAGDR_IOC_MAGIC ||
	    _IOC_DIR(cmd) != (_IOC_READ | _IOC_WRITE) ||
	    _IOC_NR(cmd) > _IOC_NR(FPGAGDR_IOC_FRAME_INFO) ||
	    _IOC_SIZE(cmd) < sizeof(u32))
		return -ENOTTY;
	return fpgagdr_check_version(uarg, 0);
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
	case FPGAGDR_IOC_WAIT_FRAME:
		return fpgagdr_ioc_wait_frame(f, uarg);
	case FPGAGDR_IOC_FRAME_INFO:
		return fpgagdr_ioc_frame_info(f, uarg);
	default:
		return fpgagdr_ioc_other_size(uarg, cmd);
	}
}

static __poll_t fpgagdr_ctl_poll(struct file *file, struct poll_table_struct *pt)
{
	struct fpgagdr_file *f = file->private_data;

	return fpgagdr_frames_poll(f->fdev, &f->sub, file, pt);
}

const struct file_operations fpgagdr_ctl_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_ctl_open,
	.release = fpgagdr_ctl_release,
	.unlocked_ioctl = fpgagdr_ctl_ioctl,
	.poll = fpgagdr_ctl_poll,
	.compat_ioctl = compat_ptr_ioctl,
};
