/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST DOUBLE: a PCI function with an XDMA core (PG195) for fpgagdr-pci.c
 * in user space.  Its BARs are laid out as PG195's "Target Bridge" tables
 * lay them out for a configuration: the AXI4-Lite master's user BAR, the
 * DMA BAR (tests/xdma-model.c's register file), the DMA bypass BAR.  The
 * calls of <linux/pci.h> that the driver makes are recorded: enable,
 * regions, mappings, bus mastering, saved and restored state, interrupt
 * vectors.  The user BAR records every offset read: the driver must read
 * nothing past the frame protocol's 4 KiB block.
 */
#ifndef FPGAGDR_PCI_MODEL_H
#define FPGAGDR_PCI_MODEL_H

#include "kshim/linux/pci.h"

enum pm_kind { PM_NONE, PM_USER, PM_DMA, PM_BYPASS, PM_UPPER };

/**
 * struct pm_bar - one BAR
 * @kind: what is behind it (PM_UPPER: the upper half of a 64-bit BAR)
 * @len: bytes
 */
struct pm_bar {
	enum pm_kind kind;
	u64 len;
};

/**
 * struct pm_state - what the driver did to the function
 * @enabled: pci_enable_device_mem() without a disable
 * @master: Bus Master Enable
 * @saved_master: Bus Master Enable as pci_save_state() saved it
 * @saves: pci_save_state() calls
 * @restores: pci_restore_state() calls
 * @regions: BARs requested and not released (bit per BAR)
 * @maps: mappings not unmapped
 * @vectors: interrupt vectors allocated
 * @user_reads: reads of the user BAR
 * @user_far: reads of the user BAR at or past 4 KiB
 * @user_far_off: the first such offset
 * @user_writes: writes to the user BAR
 * @msgs: messages the driver printed
 */
struct pm_state {
	bool enabled;
	bool master;
	bool saved_master;
	u32 saves;
	u32 restores;
	u32 regions;
	int maps;
	u32 vectors;
	u32 user_reads;
	u32 user_far;
	u32 user_far_off;
	u32 user_writes;
	u32 msgs;
};

extern struct pm_state pm;
extern struct pci_dev pm_dev;
extern u32 pm_user_regs[];

void pm_init(const struct pm_bar *bars, u32 n);
struct pci_driver *pm_driver(void);

#endif /* FPGAGDR_PCI_MODEL_H */
