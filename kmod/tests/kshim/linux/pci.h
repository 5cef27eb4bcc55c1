/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-in for <linux/pci.h>: a PCI function as
 * tests/pci-model.c models it (BARs, the calls fpgagdr-pci.c makes).
 */
#ifndef FPGAGDR_KSHIM_LINUX_PCI_H
#define FPGAGDR_KSHIM_LINUX_PCI_H

#include "../kshim.h"

#define PCI_STD_NUM_BARS	6
#define IORESOURCE_MEM		0x00000200
#define PCI_IRQ_LEGACY		BIT(0)
#define PCI_IRQ_INTX		BIT(0)
#define PCI_IRQ_MSI		BIT(1)
#define PCI_IRQ_MSIX		BIT(2)

#define pci_ers_result_t	unsigned int
enum {
	PCI_ERS_RESULT_NONE = 1,
	PCI_ERS_RESULT_CAN_RECOVER = 2,
	PCI_ERS_RESULT_NEED_RESET = 3,
	PCI_ERS_RESULT_DISCONNECT = 4,
	PCI_ERS_RESULT_RECOVERED = 5,
};

#define pci_channel_state_t	unsigned int
enum {
	pci_channel_io_normal = 1,
	pci_channel_io_frozen = 2,
	pci_channel_io_perm_failure = 3,
};

struct pci_dev {
	struct device dev;
	bool msix_enabled;
	bool msi_enabled;
	void *drvdata;
};

struct pci_device_id {
	unsigned int vendor;
	unsigned int device;
};

#define PCI_DEVICE(v, d)	.vendor = (v), .device = (d)

struct pci_error_handlers {
	pci_ers_result_t (*error_detected)(struct pci_dev *dev,
					   pci_channel_state_t state);
	pci_ers_result_t (*mmio_enabled)(struct pci_dev *dev);
	pci_ers_result_t (*slot_reset)(struct pci_dev *dev);
	void (*reset_prepare)(struct pci_dev *dev);
	void (*reset_done)(struct pci_dev *dev);
	void (*resume)(struct pci_dev *dev);
};

struct pci_driver {
	const char *name;
	const struct pci_device_id *id_table;
	int (*probe)(struct pci_dev *dev, const struct pci_device_id *id);
	void (*remove)(struct pci_dev *dev);
	void (*shutdown)(struct pci_dev *dev);
	const struct pci_error_handlers *err_handler;
};

static inline void pci_set_drvdata(struct pci_dev *pdev, void *data)
{
	pdev->drvdata = data;
}

static inline void *pci_get_drvdata(struct pci_dev *pdev)
{
	return pdev->drvdata;
}

/* tests/pci-model.c */
unsigned long pci_resource_flags(struct pci_dev *pdev, int bar);
u64 pci_resource_len(struct pci_dev *pdev, int bar);
u64 pci_resource_start(struct pci_dev *pdev, int bar);
void __iomem *pci_iomap_range(struct pci_dev *pdev, int bar,
			      unsigned long offset, unsigned long maxlen);
void pci_iounmap(struct pci_dev *pdev, void __iomem *addr);
int pci_request_region(struct pci_dev *pdev, int bar, const char *name);
void pci_release_region(struct pci_dev *pdev, int bar);
int pci_enable_device_mem(struct pci_dev *pdev);
void pci_disable_device(struct pci_dev *pdev);
void pci_set_master(struct pci_dev *pdev);
void pci_clear_master(struct pci_dev *pdev);
int pci_save_state(struct pci_dev *pdev);
void pci_restore_state(struct pci_dev *pdev);
int pci_alloc_irq_vectors(struct pci_dev *pdev, unsigned int min,
			  unsigned int max, unsigned int flags);
int pci_irq_vector(struct pci_dev *pdev, unsigned int nr);
void pci_free_irq_vectors(struct pci_dev *pdev);
int pci_register_driver(struct pci_driver *drv);
void pci_unregister_driver(struct pci_driver *drv);

#endif
