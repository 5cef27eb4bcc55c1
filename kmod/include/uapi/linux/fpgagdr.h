/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fpgagdr: DMA between an XDMA FPGA card and pinned GPU or host memory.
 *
 * This header is the only definition of the fpgagdr ioctl ABI.  Every
 * structure uses fixed-width types, has explicit padding, is a multiple of
 * 8 bytes long and starts with @abi_version, which must equal
 * FPGAGDR_ABI_VERSION.  Padding and reserved fields must be zero on input
 * and are zero on output.  Each member is marked [in], [out] or [in/out].
 *
 * Nodes:
 *   /dev/fpgagdrN          control node, the ioctls below
 *   /dev/fpgagdrN_c2h_K    read()/pread() DMA card -> CPU memory
 *   /dev/fpgagdrN_h2c_K    write()/pwrite() DMA CPU memory -> card
 * On the channel nodes the file offset is the card address.
 *
 * Error numbers (an ioctl returns -1 and sets errno; the rule decides the
 * value, the first rule broken wins, in the order of this table):
 *
 *   errno       ioctl           rule
 *   ----------  --------------  ---------------------------------------------
 *   ENOTTY      any             unknown ioctl number
 *   EFAULT      any             the argument pointer cannot be copied
 *               PIN             HOST: the range is not mapped user memory
 *   EPROTO      any             abi_version != FPGAGDR_ABI_VERSION; the
 *                               module's version is written back to
 *                               abi_version (only that field is written)
 *   EINVAL      any             nonzero flags, pad or reserved field; unknown
 *                               kind or direction; zero length; address,
 *                               length, offset or card address not a multiple
 *                               of the alignment GET_STATUS reports;
 *                               timeout_ms == 0 or > FPGAGDR_TIMEOUT_MAX_MS
 *   EBADF       PIN             DMABUF: dmabuf_fd is not an open dma-buf
 *   EOPNOTSUPP  PIN             the memory kind's back-end is not built in
 *                               (see mem_kinds) or refuses the memory
 *                               (NV_P2P: not CUDA device memory, e.g. host
 *                               memory; DMABUF: the exporter refuses the
 *                               card)
 *   E2BIG       PIN             length > FPGAGDR_PIN_MAX_BYTES
 *   EOVERFLOW   PIN             addr + length wraps
 *               TRANSFER        offset + length wraps or passes the end of
 *                               the pinned buffer
 *   ERANGE      TRANSFER        card_addr + length wraps or passes card_size
 *   ECHRNG      TRANSFER,ABORT  channel >= the channel count of direction
 *   ENOENT      UNPIN,TRANSFER  handle never issued by this file (TRANSFER:
 *                               or already unpinned)
 *   EALREADY    UNPIN           handle already unpinned by this file
 *   ENOSPC      PIN             FPGAGDR_MAX_PINS_PER_FILE pins are live
 *   ENOMEM      PIN             out of memory, or RLIMIT_MEMLOCK exceeded
 *   EBUSY       TRANSFER        another transfer on the same handle is in
 *                               flight
 *               ABORT           a transfer of another open file holds the
 *                               engine (it is not touched)
 *   ESTALE      TRANSFER        the GPU memory behind the handle was freed
 *                               (NVIDIA free callback); UNPIN it
 *               PIN             NV_P2P: the memory was freed while pinning
 *   ETIMEDOUT   TRANSFER        not complete within timeout_ms; the engine
 *                               was stopped and is ready for the next one
 *   EINTR       TRANSFER        a signal arrived while waiting; the engine
 *                               was stopped (the ioctl is not restarted)
 *               PIN             a fatal signal arrived while pinning
 *   ECANCELED   TRANSFER        stopped, or given up while waiting for its
 *                               engine, by ABORT from the same open file,
 *                               by UNPIN of its handle or by the NVIDIA
 *                               free callback
 *   EIO         TRANSFER,ABORT  the engine reported an error (descriptor,
 *                               read or write error, magic mismatch), was
 *                               not seen stopped within the stop budget
 *                               (the card then stops mastering the bus
 *                               until it is), or a PCIe error (AER) ended
 *                               the run
 *               PIN             the back-end or the DMA API failed to pin
 *                               or map the memory (the kernel log says how)
 *   ENODEV      any             the card was removed (or the system is
 *                               shutting down); UNPIN still answers 0, and
 *                               read()/write() on channel nodes fail too
 *
 * Timeouts: a zero timeout is an error (EINVAL), never "wait forever".
 * Every wait in the module is bounded.
 *
 * Lifetime: a handle belongs to the open file that pinned it; closing the
 * file unpins every handle it still holds.  UNPIN stops a transfer that is
 * in flight on the handle or waiting for its engine (that transfer fails
 * with ECANCELED) and returns when no run can touch the memory any more,
 * after the memory is released.  When the card is removed, every pin's
 * memory is released at once; the handles stay until UNPIN or close.
 *
 * ABI version 2 (from 1): EBUSY for ABORT of another file's transfer
 * (ABORT used to stop it), EOPNOTSUPP for host memory given as NV_P2P (was
 * EINVAL), EIO for PIN failures of the back-end or the DMA API (were
 * errnos outside this table), EBADF for a dmabuf_fd that is not a dma-buf
 * (was EINVAL), ECANCELED also for a transfer waiting for its engine, and
 * desc_max_bytes is 1 MiB (was 256 MiB - 4 KiB).
 */
#ifndef _UAPI_LINUX_FPGAGDR_H
#define _UAPI_LINUX_FPGAGDR_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bumped on any incompatible change of a structure or of a rule. */
#define FPGAGDR_ABI_VERSION		2

/* ioctl type byte; free in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define FPGAGDR_IOC_MAGIC		0xE7

/* Largest timeout_ms accepted by TRANSFER (60 s). */
#define FPGAGDR_TIMEOUT_MAX_MS		60000
/* Largest length accepted by PIN (64 GiB). */
#define FPGAGDR_PIN_MAX_BYTES		(64ULL << 30)
/* Live pins one open file may hold. */
#define FPGAGDR_MAX_PINS_PER_FILE	4096

/**
 * enum fpgagdr_platform - what the module was built for and runs on
 * @FPGAGDR_PLATFORM_NONE: generic Linux host; only host memory back-ends
 * @FPGAGDR_PLATFORM_ORIN: NVIDIA Jetson Orin (Tegra, unified memory)
 * @FPGAGDR_PLATFORM_X86_DGPU: x86 host with a discrete GPU (nvidia_p2p)
 */
enum fpgagdr_platform {
	FPGAGDR_PLATFORM_NONE = 0,
	FPGAGDR_PLATFORM_ORIN = 1,
	FPGAGDR_PLATFORM_X86_DGPU = 2,
};

/**
 * enum fpgagdr_mem_kind - memory a PIN refers to
 * @FPGAGDR_MEM_HOST: user memory (malloc, mmap, cudaHostAlloc on Orin);
 *	pinned long-term with the kernel's user-page pinning, DMA API mapped
 * @FPGAGDR_MEM_NV_P2P: CUDA device memory (cudaMalloc) through nvidia_p2p
 * @FPGAGDR_MEM_DMABUF: a dma-buf (e.g. exported by CUDA); @dmabuf_fd names
 *	it and @addr is the byte offset inside it
 */
enum fpgagdr_mem_kind {
	FPGAGDR_MEM_HOST = 0,
	FPGAGDR_MEM_NV_P2P = 1,
	FPGAGDR_MEM_DMABUF = 2,
};

/**
 * enum fpgagdr_dir - transfer direction
 * @FPGAGDR_DIR_C2H: card to host (into the pinned buffer)
 * @FPGAGDR_DIR_H2C: host to card (from the pinned buffer)
 */
enum fpgagdr_dir {
	FPGAGDR_DIR_C2H = 0,
	FPGAGDR_DIR_H2C = 1,
};

/* Capability bits of fpgagdr_status.caps */
#define FPGAGDR_CAP_IRQ			(1U << 0) /* completion by interrupt */
#define FPGAGDR_CAP_POLL		(1U << 1) /* completion by polling */
#define FPGAGDR_CAP_NV_PERSISTENT	(1U << 2) /* nvidia_p2p persistent pins */
#define FPGAGDR_CAP_TEST_ENGINE		(1U << 3) /* test-only software engine */
#define FPGAGDR_CAP_STREAM		(1U << 4) /* AXI-ST engines (no card address) */

/**
 * struct fpgagdr_status - FPGAGDR_IOC_GET_STATUS argument (168 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @flags: [in] must be 0
 * @platform: [out] enum fpgagdr_platform
 * @caps: [out] FPGAGDR_CAP_* bits
 * @mem_kinds: [out] bit (1 << kind) set for each enum fpgagdr_mem_kind
 *	whose back-end is built in
 * @default_kind: [out] the kind the platform's GPU buffers use
 * @gpu_page_size: [out] page size of GPU memory in bytes (64 KiB on x86
 *	dGPU, the kernel page size on Orin and without a GPU)
 * @pin_align: [out] PIN addr and length must be multiples of this
 * @xfer_align: [out] TRANSFER offset and card_addr must be multiples of this
 * @len_granularity: [out] TRANSFER length must be a multiple of this
 * @h2c_channels: [out] number of H2C channels (0..4)
 * @c2h_channels: [out] number of C2H channels (0..4)
 * @desc_max_bytes: [out] bytes one descriptor moves at most (1 MiB: what
 *	the slowest PCIe link drains within the engine stop budget); longer
 *	contiguous runs are split
 * @pad0: [out] zero
 * @card_size: [out] bytes of card address space checked by TRANSFER;
 *	0 means unknown (only wrap-around is checked)
 * @pins: [out] pins live on this card (all files)
 * @pins_total: [out] pins made since the module was loaded
 * @cache_hits: [out] transfers that replayed the descriptor chain already
 *	built for the same handle, direction, offset, card address, length
 * @cache_misses: [out] transfers that had to (re)build their chain
 * @transfers: [out] transfers completed successfully (ioctl and read/write)
 * @transfer_bytes: [out] bytes moved by those transfers
 * @timeouts: [out] transfers that timed out
 * @aborts: [out] engine stops: timeouts, signals, ABORT, UNPIN, callback
 * @errors: [out] transfers the engine reported an error for
 * @reserved: [out] zero
 */
struct fpgagdr_status {
	__u32 abi_version;
	__u32 flags;
	__u32 platform;
	__u32 caps;
	__u32 mem_kinds;
	__u32 default_kind;
	__u32 gpu_page_size;
	__u32 pin_align;
	__u32 xfer_align;
	__u32 len_granularity;
	__u32 h2c_channels;
	__u32 c2h_channels;
	__u32 desc_max_bytes;
	__u32 pad0;
	__u64 card_size;
	__u64 pins;
	__u64 pins_total;
	__u64 cache_hits;
	__u64 cache_misses;
	__u64 transfers;
	__u64 transfer_bytes;
	__u64 timeouts;
	__u64 aborts;
	__u64 errors;
	__u64 reserved[4];
};

/**
 * struct fpgagdr_pin - FPGAGDR_IOC_PIN argument (48 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @kind: [in] enum fpgagdr_mem_kind
 * @addr: [in] user virtual address of the buffer (HOST, NV_P2P) or byte
 *	offset inside the dma-buf (DMABUF); a multiple of pin_align
 * @length: [in] bytes; nonzero, a multiple of pin_align
 * @dmabuf_fd: [in] the dma-buf for DMABUF; must be -1 for other kinds
 * @flags: [in] must be 0
 * @handle: [out] nonzero handle, valid in this open file only
 * @segments: [out] DMA-contiguous segments the buffer maps to
 * @page_size: [out] page size of the memory pinned (4 KiB host pages,
 *	64 KiB GPU pages); the card is never given bytes outside
 *	[addr, addr + length) even when they share a page
 * @pad0: [out] zero
 */
struct fpgagdr_pin {
	__u32 abi_version;
	__u32 kind;
	__u64 addr;
	__u64 length;
	__s32 dmabuf_fd;
	__u32 flags;
	__u32 handle;
	__u32 segments;
	__u32 page_size;
	__u32 pad0;
};

/**
 * struct fpgagdr_unpin - FPGAGDR_IOC_UNPIN argument (16 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @handle: [in] a handle PIN returned on this file
 * @flags: [in] must be 0
 * @pad0: [in] must be 0
 */
struct fpgagdr_unpin {
	__u32 abi_version;
	__u32 handle;
	__u32 flags;
	__u32 pad0;
};

/**
 * struct fpgagdr_transfer - FPGAGDR_IOC_TRANSFER argument (64 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @direction: [in] enum fpgagdr_dir
 * @channel: [in] engine index within @direction
 * @handle: [in] a handle PIN returned on this file
 * @offset: [in] byte offset into the pinned buffer; multiple of xfer_align
 * @card_addr: [in] card (AXI) address; multiple of xfer_align
 * @length: [in] bytes; nonzero, multiple of len_granularity
 * @timeout_ms: [in] 1..FPGAGDR_TIMEOUT_MAX_MS
 * @flags: [in] must be 0
 * @bytes: [out] bytes moved (== @length on success, 0 on error)
 * @duration_ns: [out] engine start to completion, in nanoseconds
 */
struct fpgagdr_transfer {
	__u32 abi_version;
	__u32 direction;
	__u32 channel;
	__u32 handle;
	__u64 offset;
	__u64 card_addr;
	__u64 length;
	__u32 timeout_ms;
	__u32 flags;
	__u64 bytes;
	__u64 duration_ns;
};

/**
 * struct fpgagdr_abort - FPGAGDR_IOC_ABORT argument (16 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @direction: [in] enum fpgagdr_dir
 * @channel: [in] engine index within @direction
 * @flags: [in] must be 0
 *
 * Stops the calling open file's transfer in flight on the engine; that
 * transfer fails with ECANCELED.  A transfer of another open file is not
 * touched (EBUSY).  On an idle engine ABORT stops the engine and clears
 * its status, which recovers an engine left in an error state.
 */
struct fpgagdr_abort {
	__u32 abi_version;
	__u32 direction;
	__u32 channel;
	__u32 flags;
};

#define FPGAGDR_IOC_GET_STATUS	_IOWR(FPGAGDR_IOC_MAGIC, 0x00, struct fpgagdr_status)
#define FPGAGDR_IOC_PIN		_IOWR(FPGAGDR_IOC_MAGIC, 0x01, struct fpgagdr_pin)
#define FPGAGDR_IOC_UNPIN	_IOWR(FPGAGDR_IOC_MAGIC, 0x02, struct fpgagdr_unpin)
#define FPGAGDR_IOC_TRANSFER	_IOWR(FPGAGDR_IOC_MAGIC, 0x03, struct fpgagdr_transfer)
#define FPGAGDR_IOC_ABORT	_IOWR(FPGAGDR_IOC_MAGIC, 0x04, struct fpgagdr_abort)

#endif /* _UAPI_LINUX_FPGAGDR_H */
