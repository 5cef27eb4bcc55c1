/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Our own declarations of the part of NVIDIA's nvidia_p2p kernel API that
 * fpgagdr-mem-nvp2p.c uses, for building where NVIDIA's nv-p2p.h is not
 * installed.  Where it is (NVIDIA_SRC given to the build), that header is
 * used instead and this one is not included.
 *
 * Source of the facts: the public nv-p2p.h shipped with NVIDIA's Linux
 * driver and in NVIDIA/open-gpu-kernel-modules, kernel-open/nvidia/nv-p2p.h
 * (MIT licence): function signatures, structure layouts (the driver
 * allocates these structures, so the layouts must match), version
 * constants, and the rules quoted next to each declaration.
 */
#ifndef FPGAGDR_NV_P2P_COMPAT_H
#define FPGAGDR_NV_P2P_COMPAT_H

#include <linux/types.h>

struct pci_dev;

/* nv-p2p.h: page size of a page table; we need 64 KiB. */
enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

/* nv-p2p.h: one GPU page; only the layout matters to us. */
struct nvidia_p2p_page {
	u64 physical_address;
	union nvidia_p2p_request_registers {
		struct {
			u32 wreqmb_h;
			u32 rreqmb_h;
			u32 rreqmb_0;
			u32 reserved[3];
		} fermi;
	} registers;
};

/* nv-p2p.h: version word, major in the upper 16 bits, minor below. */
#define NVIDIA_P2P_PAGE_TABLE_VERSION	0x00010002

/* nv-p2p.h: result of nvidia_p2p_get_pages(), allocated by the driver. */
struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size;		/* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	u32 entries;
	u8 *gpu_uuid;
};

#define NVIDIA_P2P_DMA_MAPPING_VERSION	0x00020003

/* nv-p2p.h: result of nvidia_p2p_dma_map_pages(), one address per page. */
struct nvidia_p2p_dma_mapping {
	u32 version;
	enum nvidia_p2p_page_size_type page_size_type;
	u32 entries;
	u64 *dma_addresses;
	void *private;
	struct pci_dev *pci_dev;
};

/*
 * nv-p2p.h: the driver exports this flag and defines the macro when it
 * supports persistent pages (get_pages with a NULL free callback).
 */
extern int nvidia_p2p_cap_persistent_pages;
#define NVIDIA_P2P_CAP_PERSISTENT_PAGES

/*
 * nv-p2p.h: pin GPU memory for a third-party device.  @virtual_address
 * aligned to 64 KiB, @length a multiple of 64 KiB; p2p_token and va_space
 * are 0 on current drivers.  A NULL @free_callback asks for persistent
 * pages (not on MIG, vGPU or PowerPC); otherwise @free_callback(@data) is
 * called when the memory is freed under the pin.  May sleep.  Returns 0,
 * -EINVAL, -ENOTSUPP, -ENOMEM or -EIO.
 */
int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 u64 length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);

/* nv-p2p.h: release pages from nvidia_p2p_get_pages(). */
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);

/* nv-p2p.h: make the pages reachable by @peer; bus addresses per page. */
int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);

/* nv-p2p.h: undo nvidia_p2p_dma_map_pages(). */
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);

/* nv-p2p.h: free a page table, from the free callback only. */
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);

/* nv-p2p.h: free a DMA mapping, from the free callback only. */
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* FPGAGDR_NV_P2P_COMPAT_H */
