/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-ins for the kernel headers fpgagdr-xdma.c,
 * fpgagdr-pci.c, fpgagdr-dmasync.c and fpgagdr-core.h include, so that
 * tests/test-xdma.c and tests/test-pci.c build the XDMA engine's and the
 * PCI driver's own source against tests/xdma-model.c (a register-level
 * model of the PG195 register file) and tests/pci-model.c, and
 * tests/test-dmasync.c the per-run DMA sync.  The linux/ headers next to
 * this file each include it.  Register access goes to the models;
 * everything else is just enough to declare the core's structures.
 */
#ifndef FPGAGDR_KSHIM_H
#define FPGAGDR_KSHIM_H

#include <stddef.h>
#include <sys/types.h>

#include "../ushim.h"

#define __iomem
#define __force

typedef u64 dma_addr_t;

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct fgk_atomic64 {
	long long counter;
};

struct fgk_atomic {
	int counter;
};

struct fgk_wait {
	int unused;
};

struct delayed_work {
	int unused;
};

#define atomic_t		struct fgk_atomic
#define atomic64_t		struct fgk_atomic64
#define wait_queue_head_t	struct fgk_wait
#define irqreturn_t		int
#define IRQ_NONE		0
#define IRQ_HANDLED		1

struct kref {
	int refcount;
};

struct list_head {
	struct list_head *next, *prev;
};

struct mutex {
	int unused;
};

struct rw_semaphore {
	int unused;
};

struct fgk_spinlock {
	int unused;
};

#define spinlock_t		struct fgk_spinlock

struct class;

/* A device: enough for messages (tests/pci-model.c prints them). */
struct device {
	const char *name;
};

struct xarray {
	void *unused;
};

static inline u32 roundup_pow_of_two(u32 v)
{
	u32 p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Register access and delays: tests/xdma-model.c */
u32 ioread32(const void __iomem *addr);
void iowrite32(u32 val, void __iomem *addr);
void usleep_range(unsigned long min, unsigned long max);

/* Time: the model's clock, which usleep_range() advances. */
typedef long long s64;
typedef s64 ktime_t;
ktime_t ktime_get(void);
#define ktime_add_us(t, us)	((t) + (s64)(us) * 1000)
#define ktime_before(a, b)	((a) < (b))

/*
 * What fpgagdr-pci.c and compat.h use besides the PCI calls of
 * linux/pci.h; tests/pci-model.c implements the functions.
 */
#define SZ_16M			0x01000000
#define PAGE_SHIFT		12
#define PAGE_SIZE		BIT(PAGE_SHIFT)
#define GFP_KERNEL		0
#define THIS_MODULE		NULL
#define DMA_BIT_MASK(n)		(~0ULL >> (64 - (n)))
#define MAX_ERRNO		4095
#define IS_ERR(p)		((unsigned long)(p) >= (unsigned long)-MAX_ERRNO)
#define PTR_ERR(p)		((long)(p))
#define ERR_PTR(e)		((void *)(long)(e))
#define MODULE_PARM_DESC(name, text)
#define MODULE_DEVICE_TABLE(type, table)
#define module_param_named(name, var, type, perm)

typedef int (*irq_handler_t)(int irq, void *data);
#define vm_flags_t		unsigned long

struct vm_area_struct {
	vm_flags_t vm_flags;
};

struct dma_buf_attachment;
struct sg_table;

void *kzalloc(size_t size, int gfp);
void kfree(const void *p);
int dma_set_mask_and_coherent(struct device *dev, u64 mask);
void fgk_dev_msg(const struct device *dev, const char *level,
		 const char *fmt, ...);
#define dev_err(dev, ...)	fgk_dev_msg(dev, "err", __VA_ARGS__)
#define dev_warn(dev, ...)	fgk_dev_msg(dev, "warn", __VA_ARGS__)
#define dev_info(dev, ...)	fgk_dev_msg(dev, "info", __VA_ARGS__)
#define dev_dbg(dev, ...)	fgk_dev_msg(dev, "dbg", __VA_ARGS__)

#endif /* FPGAGDR_KSHIM_H */
