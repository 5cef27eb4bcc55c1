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
 * constants and flags; the behaviour quoted next to each declaration is
 * that of kernel-open/nvidia/nv-p2p.c (R515 and later), and NVIDIA's
 * GPUDirect RDMA guide, "Changes in CUDA 12.2" (the persistent API).
 * This is the current API: a module built against it needs a driver that
 * exports nvidia_p2p_get_pages_persistent() (CUDA 12.2, R535, or later).
 *
 * The free callback contract this implies, which fpgagdr-mem-nvp2p.c is
 * written to: the callback runs from the path that frees the memory, with
 * the driver's RM API lock held; once it returns the driver unmaps every
 * DMA mapping still registered on the table and frees the table;
 * nvidia_p2p_put_pages() and nvidia_p2p_dma_map_pages() take the API lock
 * (so they wait for a callback in flight), nvidia_p2p_dma_unmap_pages()
 * does not.
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
 * nv-p2p.h: defined by drivers that have nvidia_p2p_get_pages_persistent()
 * (CUDA 12.2 and later); those no longer take a NULL free callback in
 * nvidia_p2p_get_pages() and no longer export nvidia_p2p_cap_persistent_pages.
 */
#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API

/* nv-p2p.h: flags of the persistent calls. */
#define NVIDIA_P2P_FLAGS_DEFAULT		0
#define NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING	1

/*
 * nv-p2p.h: pin GPU memory for a third-party device.  @virtual_address
 * aligned to 64 KiB, @length a multiple of 64 KiB; p2p_token and va_space
 * are 0 on current drivers.  @free_callback (required: NULL is -EINVAL)
 * is called with @data (non-NULL) when the memory is freed under the pin;
 * after it returns the driver frees the table and its mappings itself.
 * May sleep.  Returns 0, -EINVAL, -ENOTSUPP, -ENOMEM or -EIO.
 */
int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 u64 length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);

/*
 * nv-p2p.h: pin GPU memory until nvidia_p2p_put_pages_persistent(), with no
 * free callback: freeing the memory does not take the pages away.  Not on
 * MIG-enabled GPUs, vGPU or PowerPC (-ENOTSUPP).  @flags:
 * NVIDIA_P2P_FLAGS_DEFAULT.  May sleep.  Returns as nvidia_p2p_get_pages().
 */
int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table,
				    u32 flags);

/* nv-p2p.h: release persistent pages; @flags must be 0.  May sleep. */
int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    u32 flags);

/*
 * nv-p2p.h: release pages from nvidia_p2p_get_pages().  Waits for a free
 * callback in flight; for a table the callback took it returns 0 and
 * touches nothing.  May sleep.
 */
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);

/* nv-p2p.h: make the pages reachable by @peer; bus addresses per page. */
int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);

/*
 * nv-p2p.h: undo nvidia_p2p_dma_map_pages().  Reads the table: not after a
 * free callback on it has returned (the driver has freed it by then).
 */
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);

/* nv-p2p.h: a no-op since R515 (the driver frees after the callback). */
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);

/* nv-p2p.h: a no-op since R515 (the driver frees after the callback). */
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* FPGAGDR_NV_P2P_COMPAT_H */
