/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a driver of a card calls (fpgagdr-card.c): publish the card, take
 * it away on removal, stop it for shutdown, and carry it through PCIe
 * error recovery.  The XDMA PCI driver and the test-only software card use
 * the same calls in the same order.
 */
#ifndef FPGAGDR_CARD_H
#define FPGAGDR_CARD_H

#include <linux/pci.h>

#include "fpgagdr-core.h"

int fpgagdr_card_register(struct fpgagdr_dev *fdev);
void fpgagdr_card_unregister(struct fpgagdr_dev *fdev);
void fpgagdr_card_shutdown(struct fpgagdr_dev *fdev);
pci_ers_result_t fpgagdr_card_error_detected(struct fpgagdr_dev *fdev,
					     pci_channel_state_t state);
void fpgagdr_card_reset_prepare(struct fpgagdr_dev *fdev);
void fpgagdr_card_reset_done(struct fpgagdr_dev *fdev);
void fpgagdr_card_resume(struct fpgagdr_dev *fdev);
int fpgagdr_card_request_irq(struct fpgagdr_dev *fdev, unsigned int irq,
			     irq_handler_t handler, void *data);

/*
 * A test-only software card (issues 5 and 13) plugs in here: built only
 * with FPGAGDR_TEST_ENGINE=y, it is a PCI driver for QEMU's edu device
 * whose engines execute the real descriptor chains in software.
 */
#ifdef FPGAGDR_WITH_TEST_ENGINE
int fpgagdr_testeng_register(void);
void fpgagdr_testeng_unregister(void);
#else
static inline int fpgagdr_testeng_register(void) { return 0; }
static inline void fpgagdr_testeng_unregister(void) { }
#endif

int fpgagdr_pci_register(void);
void fpgagdr_pci_unregister(void);

/* The nodes' file operations (fpgagdr-ioctl.c, fpgagdr-rw.c). */
extern const struct file_operations fpgagdr_ctl_fops;
extern const struct file_operations fpgagdr_chan_fops;

#endif /* FPGAGDR_CARD_H */
