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
 *   /dev/fpgagdrN_events_K read() blocks (bounded) until XDMA user
 *                          interrupt K fired, returns a __u32 count
 *   /dev/fpgagdrN_user     pread()/pwrite()/mmap() of the card's user
 *                          register block (the XDMA user BAR)
 * On the channel nodes the file offset is the card address.  The frame
 * protocol of the user register block is docs/card-protocol.md.
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
 *   EINVAL      any             unknown flag bits; nonzero pad or reserved
 *                               field; unknown kind or direction; ABORT with
 *                               FPGAGDR_ABORT_WAITS and a nonzero direction
 *                               or channel; zero length; address,
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
 *   EOVERFLOW   PIN             addr + length wraps (DMABUF: or passes
 *                               the end of the dma-buf)
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
 *               WAIT_FRAME      no frame-done event within timeout_ms
 *   EINTR       TRANSFER        a signal arrived while waiting; the engine
 *                               was stopped (the ioctl is not restarted)
 *               PIN             a fatal signal arrived while pinning
 *               WAIT_FRAME      a signal arrived while waiting
 *   ECANCELED   TRANSFER        stopped, or given up while waiting for its
 *                               engine, by ABORT from the same open file,
 *                               by UNPIN of its handle or by the NVIDIA
 *                               free callback
 *               WAIT_FRAME      woken by ABORT with FPGAGDR_ABORT_WAITS from
 *                               the same open file
 *   EIO         TRANSFER,ABORT  the engine reported an error (descriptor,
 *                               read or write error, magic mismatch), was
 *                               not seen stopped within the stop budget
 *                               (the card then stops mastering the bus
 *                               until it is), or a PCIe error (AER) ended
 *                               the run
 *               PIN             the back-end or the DMA API failed to pin
 *                               or map the memory (the kernel log says how)
 *               WAIT_FRAME      no event queued and the card reads all ones
 *                               (gone from the bus, or its link down);
 *                               capture resumes when it answers again
 *   ENXIO       WAIT_FRAME      the card does not speak the frame protocol
 *                               (FRAME_INFO's state says which rule failed:
 *                               no user BAR, magic, version, slot geometry)
 *   EAGAIN      WAIT_FRAME      FPGAGDR_WAIT_NOWAIT and no event is queued
 *   EBADMSG     WAIT_FRAME      the card broke the frame protocol: sequence
 *                               not increasing, slot != sequence mod
 *                               slot_count, length < the 64-byte header or
 *                               > slot_size; the event is returned as read
 *                               and counted in protocol_errors
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
 *
 * ABI version 3 (from 2): WAIT_FRAME and FRAME_INFO (the frame protocol
 * of docs/card-protocol.md), ABORT's FPGAGDR_ABORT_WAITS flag, the
 * negotiated PCIe link in GET_STATUS (was reserved[0..1]), each pin's
 * method in PIN (was pad0), the errno rows ENXIO, EAGAIN, EBADMSG and the
 * WAIT_FRAME lines of ETIMEDOUT, EINTR and ECANCELED.  No structure
 * changed size, so old binaries get EPROTO, not ENOTTY.
 *
 * Within ABI version 3: GET_STATUS's link_cap_gen and link_cap_width (the
 * link the card is capable of; were reserved[0], output zero).  A binary
 * that does not know them still sees zero-or-more in a field it ignores;
 * a newer binary reads 0 (unknown) from an older module.  No rule changed,
 * so the version stays 3.
 *
 * Within ABI version 3, the same way: GET_STATUS's link_path_gen and
 * link_path_width (were reserved[0]) and link_path_dev (was pad0), the
 * narrowest link between the card and the root complex and the device
 * whose link it is.  Output only, zero from an older module (link_path_gen
 * 0: unknown, the other two then mean nothing), so the version stays 3.
 */
#ifndef _UAPI_LINUX_FPGAGDR_H
#define _UAPI_LINUX_FPGAGDR_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bumped on any incompatible change of a structure or of a rule. */
#define FPGAGDR_ABI_VERSION		3

/* ioctl type byte; free in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define FPGAGDR_IOC_MAGIC		0xE7

/* Largest timeout_ms accepted by TRANSFER (60 s). */
#define FPGAGDR_TIMEOUT_MAX_MS		60000
/* Largest length accepted by PIN (64 GiB). */
#define FPGAGDR_PIN_MAX_BYTES		(64ULL << 30)
/* Live pins one open file may hold. */
#define FPGAGDR_MAX_PINS_PER_FILE	4096
/* Frame-done events one open file's queue holds; then the oldest is dropped. */
#define FPGAGDR_EVENT_QUEUE_LEN		64
/* Most frame slots a card may declare. */
#define FPGAGDR_MAX_SLOTS		1024
/* Bytes of the frame header every frame starts with (docs/frames.md). */
#define FPGAGDR_FRAME_HEADER_LEN	64

/**
 * enum fpgagdr_platform - what the module was built for and runs on
 * @FPGAGDR_PLATFORM_NONE: generic Linux host; only host memory back-ends
 * @FPGAGDR_PLATFORM_ORIN: NVIDIA Jetson Orin (Tegra, unified memory)
 * @FPGAGDR_PLATFORM_X86_DGPU: x86 host with a discrete GPU (nvidia_p2p)
 * @FPGAGDR_PLATFORM_THOR: NVIDIA Jetson Thor (Tegra264, unified memory; no
 *	nvidia_p2p: host pins only)
 *
 * Values are only ever added: a reader that does not know one treats it as
 * a generic host.
 */
enum fpgagdr_platform {
	FPGAGDR_PLATFORM_NONE = 0,
	FPGAGDR_PLATFORM_ORIN = 1,
	FPGAGDR_PLATFORM_X86_DGPU = 2,
	FPGAGDR_PLATFORM_THOR = 3,
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

/*
 * fpgagdr_status.link_path_dev when the limiting device's PCI domain does
 * not fit in 16 bits (Linux numbers synthetic domains, e.g. Intel VMD's,
 * from 0x10000) or is 0xffff.
 */
#define FPGAGDR_LINK_PATH_DEV_UNKNOWN	0xffffffffU

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
 * @link_path_dev: [out] the device whose link is @link_path_gen x
 *	@link_path_width: (PCI domain << 16) | (bus << 8) | devfn, in the
 *	card's domain (the card itself, or a bridge above it: the kernel's
 *	pci_dev_id() with the domain above it); FPGAGDR_LINK_PATH_DEV_UNKNOWN
 *	when the domain does not fit; meaningless when @link_path_gen is 0
 *	(was pad0, output zero)
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
 * @link_gen: [out] negotiated PCIe generation (1 = 2.5 GT/s ... 6 = 64
 *	GT/s); 0 when the card is not on a PCIe link the module can read
 * @link_width: [out] negotiated link width in lanes (x1 = 1); 0 unknown
 * @link_max_payload: [out] Max_Payload_Size in bytes (Device Control); 0
 *	unknown
 * @link_max_read_req: [out] Max_Read_Request_Size in bytes; 0 unknown
 * @link_cap_gen: [out] highest generation the card supports (Link
 *	Capabilities' Max Link Speed, same numbering as @link_gen); 0 unknown
 *	(no PCIe capability, or a module older than this field)
 * @link_cap_width: [out] widest link the card supports in lanes (Link
 *	Capabilities' Maximum Link Width); 0 unknown
 * @link_path_gen: [out] generation of the narrowest link between the card
 *	and the root complex (same numbering as @link_gen): the PCI core's
 *	pcie_bandwidth_available(), which reads Link Status of the card and
 *	of every bridge above it and keeps the link with the least bandwidth
 *	(a tie goes to the device further up).  The card's own link is on the
 *	path, so this link never carries more than @link_gen x @link_width;
 *	it carries less when a switch or root port above the card trained
 *	narrower or slower.  0 when no link on the path is known
 * @link_path_width: [out] that link's width in lanes; 0 unknown
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
	__u32 link_path_dev;
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
	__u32 link_gen;
	__u32 link_width;
	__u32 link_max_payload;
	__u32 link_max_read_req;
	__u32 link_cap_gen;
	__u32 link_cap_width;
	__u32 link_path_gen;
	__u32 link_path_width;
};

/**
 * enum fpgagdr_pin_method - how the module pinned a buffer (PIN's @method)
 * @FPGAGDR_PIN_METHOD_NONE: never returned (the value of a request)
 * @FPGAGDR_PIN_METHOD_HOST: pin_user_pages(FOLL_LONGTERM) + DMA API
 * @FPGAGDR_PIN_METHOD_DMABUF: dma_buf_map_attachment() (static importer)
 * @FPGAGDR_PIN_METHOD_NV_P2P: nvidia_p2p_get_pages() with a free callback
 * @FPGAGDR_PIN_METHOD_NV_P2P_PERSISTENT: nvidia_p2p persistent pages, no
 *	free callback
 */
enum fpgagdr_pin_method {
	FPGAGDR_PIN_METHOD_NONE = 0,
	FPGAGDR_PIN_METHOD_HOST = 1,
	FPGAGDR_PIN_METHOD_DMABUF = 2,
	FPGAGDR_PIN_METHOD_NV_P2P = 3,
	FPGAGDR_PIN_METHOD_NV_P2P_PERSISTENT = 4,
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
 * @method: [out] enum fpgagdr_pin_method; must be 0 on input
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
	__u32 method;
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

/* ABORT flag: wake this file's WAIT_FRAME callers instead (ECANCELED). */
#define FPGAGDR_ABORT_WAITS		(1U << 0)

/**
 * struct fpgagdr_abort - FPGAGDR_IOC_ABORT argument (16 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @direction: [in] enum fpgagdr_dir (0 with FPGAGDR_ABORT_WAITS)
 * @channel: [in] engine index within @direction (0 with
 *	FPGAGDR_ABORT_WAITS)
 * @flags: [in] 0 or FPGAGDR_ABORT_WAITS
 *
 * Stops the calling open file's transfer in flight on the engine; that
 * transfer fails with ECANCELED.  A transfer of another open file is not
 * touched (EBUSY).  On an idle engine ABORT stops the engine and clears
 * its status, which recovers an engine left in an error state.
 *
 * With FPGAGDR_ABORT_WAITS no engine is touched: every WAIT_FRAME of the
 * calling open file in progress returns ECANCELED (events stay queued).
 */
struct fpgagdr_abort {
	__u32 abi_version;
	__u32 direction;
	__u32 channel;
	__u32 flags;
};

/**
 * enum fpgagdr_frames_state - does the card speak the frame protocol
 * @FPGAGDR_FRAMES_OK: it does; WAIT_FRAME works
 * @FPGAGDR_FRAMES_NO_USER_BAR: no user register block (no XDMA user BAR,
 *	or smaller than the protocol's 4 KiB)
 * @FPGAGDR_FRAMES_BAD_MAGIC: identification register is not
 *	"FGDR" (0x52444746)
 * @FPGAGDR_FRAMES_BAD_VERSION: protocol major version is not 1
 * @FPGAGDR_FRAMES_NO_SLOTS: slot count under 2 (the card would rewrite
 *	the frame the host reads) or over FPGAGDR_MAX_SLOTS
 * @FPGAGDR_FRAMES_SLOT_TOO_SMALL: slot size < FPGAGDR_FRAME_HEADER_LEN
 * @FPGAGDR_FRAMES_SLOT_MISALIGNED: slot base or size not a multiple of
 *	4096
 * @FPGAGDR_FRAMES_SLOTS_PAST_CARD: slot base + count * size wraps or
 *	passes card_size
 * @FPGAGDR_FRAMES_BAD_IRQ: the user interrupt number is not 0..15
 */
enum fpgagdr_frames_state {
	FPGAGDR_FRAMES_OK = 0,
	FPGAGDR_FRAMES_NO_USER_BAR = 1,
	FPGAGDR_FRAMES_BAD_MAGIC = 2,
	FPGAGDR_FRAMES_BAD_VERSION = 3,
	FPGAGDR_FRAMES_NO_SLOTS = 4,
	FPGAGDR_FRAMES_SLOT_TOO_SMALL = 5,
	FPGAGDR_FRAMES_SLOT_MISALIGNED = 6,
	FPGAGDR_FRAMES_SLOTS_PAST_CARD = 7,
	FPGAGDR_FRAMES_BAD_IRQ = 8,
};

/**
 * struct fpgagdr_frame_info - FPGAGDR_IOC_FRAME_INFO argument (72 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @flags: [in] must be 0
 * @state: [out] enum fpgagdr_frames_state, read when the card was bound
 * @proto_version: [out] the card's protocol version register (major in
 *	bits 31:16, minor in 15:0); 0 without a user BAR
 * @slot_count: [out] frame slots N on the card (frame of sequence s is in
 *	slot s mod N)
 * @slot_size: [out] bytes per slot (a frame, header included, fits)
 * @user_irq: [out] XDMA user interrupt (usr_irq_req bit) of frame-done
 * @pad0: [out] zero
 * @slot_base: [out] card (AXI) address of slot 0; slot i is at
 *	slot_base + i * slot_size
 * @events: [out] frame-done events the module took from the card (all
 *	files)
 * @missed: [out] frames the card completed that no interrupt reported
 *	(sequence gaps seen by the interrupt handler)
 * @queue_overflows: [out] events dropped because an open file's queue was
 *	full (summed over files)
 * @protocol_errors: [out] events refused for breaking the protocol
 *
 * Every field but the counters is fixed while the card is bound.
 */
struct fpgagdr_frame_info {
	__u32 abi_version;
	__u32 flags;
	__u32 state;
	__u32 proto_version;
	__u32 slot_count;
	__u32 slot_size;
	__u32 user_irq;
	__u32 pad0;
	__u64 slot_base;
	__u64 events;
	__u64 missed;
	__u64 queue_overflows;
	__u64 protocol_errors;
};

/* WAIT_FRAME flag: do not wait; EAGAIN when the queue is empty. */
#define FPGAGDR_WAIT_NOWAIT		(1U << 0)

/**
 * struct fpgagdr_wait_frame - FPGAGDR_IOC_WAIT_FRAME argument (64 bytes)
 * @abi_version: [in/out] FPGAGDR_ABI_VERSION; the module's on EPROTO
 * @timeout_ms: [in] 1..FPGAGDR_TIMEOUT_MAX_MS (also with
 *	FPGAGDR_WAIT_NOWAIT)
 * @flags: [in] 0 or FPGAGDR_WAIT_NOWAIT
 * @slot: [out] slot the frame is in (== @sequence mod slot_count)
 * @sequence: [out] the card's frame sequence number (0 = first frame
 *	since the card's reset, +1 per frame the card completed)
 * @length: [out] bytes of the frame in its slot, header included
 * @pad0: [out] zero
 * @arrival_ns: [out] ktime_get_ns() (CLOCK_MONOTONIC) in the interrupt
 *	handler that took the event: the frame's arrival time
 * @missed: [out] frames the card completed between the event this file
 *	was given before and this one (sequence gap; 0 for the first event
 *	since the file subscribed), including @overflows
 * @overflows: [out] of @missed, events this file's full queue dropped
 *	(a full queue drops its oldest event)
 * @queued: [out] events still queued for this file after this one
 *
 * A file subscribes to frame-done events with its first WAIT_FRAME (or
 * poll()); from then on every event is queued for it, at most
 * FPGAGDR_EVENT_QUEUE_LEN (then the oldest is dropped and counted).
 * WAIT_FRAME takes the oldest queued event, waiting at most @timeout_ms
 * for one.  While any file is subscribed the module sets the card's
 * CAPTURE bit; poll() on the control node reports EPOLLIN while an
 * event is queued.
 */
struct fpgagdr_wait_frame {
	__u32 abi_version;
	__u32 timeout_ms;
	__u32 flags;
	__u32 slot;
	__u64 sequence;
	__u32 length;
	__u32 pad0;
	__u64 arrival_ns;
	__u64 missed;
	__u64 overflows;
	__u64 queued;
};

#define FPGAGDR_IOC_GET_STATUS	_IOWR(FPGAGDR_IOC_MAGIC, 0x00, struct fpgagdr_status)
#define FPGAGDR_IOC_PIN		_IOWR(FPGAGDR_IOC_MAGIC, 0x01, struct fpgagdr_pin)
#define FPGAGDR_IOC_UNPIN	_IOWR(FPGAGDR_IOC_MAGIC, 0x02, struct fpgagdr_unpin)
#define FPGAGDR_IOC_TRANSFER	_IOWR(FPGAGDR_IOC_MAGIC, 0x03, struct fpgagdr_transfer)
#define FPGAGDR_IOC_ABORT	_IOWR(FPGAGDR_IOC_MAGIC, 0x04, struct fpgagdr_abort)
#define FPGAGDR_IOC_WAIT_FRAME	_IOWR(FPGAGDR_IOC_MAGIC, 0x05, struct fpgagdr_wait_frame)
#define FPGAGDR_IOC_FRAME_INFO	_IOWR(FPGAGDR_IOC_MAGIC, 0x06, struct fpgagdr_frame_info)

#endif /* _UAPI_LINUX_FPGAGDR_H */
