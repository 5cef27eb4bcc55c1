/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for <linux/interrupt.h>: see ../kshim.h. */
#include "../kshim.h"

void free_irq(unsigned int irq, void *data);
