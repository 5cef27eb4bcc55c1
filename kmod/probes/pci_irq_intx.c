// SPDX-License-Identifier: GPL-2.0
/* Compiles when PCI_IRQ_INTX exists (6.8 and later). */
#include <linux/pci.h>

unsigned int fpgagdr_probe(void);

unsigned int fpgagdr_probe(void)
{
	return PCI_IRQ_INTX;
}
