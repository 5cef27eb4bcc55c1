/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-ins for the kernel headers fpgagdr-xdma.c and
 * fpgagdr-core.h include, so that tests/test-xdma.c builds the XDMA
 * engine's own source against tests/xdma-model.c, a register-level model
 * of the PG195 register file.  The linux/ headers next to this file each
 * include it.  Register access goes to the model; everything else is just
 * enough to declare the core's structures.
 */
#ifndef FPGAGDR_KSHIM_H
#define FPGAGDR_KSHIM_H

#include <stddef.h>
#include <sys/types.h>

#include "../ushim.h"

#define __iomem
#define __force

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

#endif /* FPGAGDR_KSHIM_H */
