/* SPDX-License-Identifier: GPL-2.0 */
/* The XDMA engine implementation, used by the PCI driver. */
#ifndef FPGAGDR_XDMA_H
#define FPGAGDR_XDMA_H

#include <linux/interrupt.h>
#include <linux/types.h>

#include "fpgagdr-core.h"

/**
 * struct fpgagdr_xdma_engine - one XDMA channel's registers
 * @chan: channel block
 * @sgdma: SGDMA block
 * @irq_bit: the channel's bit in the IRQ block's channel registers
 * @ndesc: descriptors in the running chain
 * @x: the XDMA core
 */
struct fpgagdr_xdma_engine {
	void __iomem *chan;
	void __iomem *sgdma;
	u32 irq_bit;
	u32 ndesc;
	struct fpgagdr_xdma *x;
};

/**
 * struct fpgagdr_xdma - one XDMA core
 * @regs: the config BAR, XDMA_REG_SPACE_LEN bytes
 * @fdev: the card
 * @use_irq: channel interrupts are wired up
 * @eng: engines by direction and channel
 * @xe: register views by direction and channel
 */
struct fpgagdr_xdma {
	void __iomem *regs;
	struct fpgagdr_dev *fdev;
	bool use_irq;
	struct fpgagdr_engine *eng[2][XDMA_MAX_CHANNELS];
	struct fpgagdr_xdma_engine xe[2][XDMA_MAX_CHANNELS];
};

bool fpgagdr_xdma_is_config_bar(void __iomem *regs);
u32 fpgagdr_xdma_stop_leftovers(void __iomem *regs);
int fpgagdr_xdma_add_engines(struct fpgagdr_xdma *x, bool use_irq);
void fpgagdr_xdma_irq_setup(struct fpgagdr_xdma *x);
void fpgagdr_xdma_restore(struct fpgagdr_xdma *x);
void fpgagdr_xdma_irq_teardown(struct fpgagdr_xdma *x);
void fpgagdr_xdma_user_irq_enable(struct fpgagdr_xdma *x, u32 mask, bool on);
irqreturn_t fpgagdr_xdma_irq(int irq, void *data);

#endif /* FPGAGDR_XDMA_H */
