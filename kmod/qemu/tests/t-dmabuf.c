// SPDX-License-Identifier: GPL-2.0
/*
 * The dma-buf back-end against real exporters of the guest's kernel, the
 * same cases for each:
 *
 * - vgem, the kernel's virtual GEM driver: a dumb buffer (shmem pages,
 *   scattered) exported with PRIME; the CPU sees it through an mmap() of
 *   the dma-buf itself, bracketed by DMA_BUF_IOCTL_SYNC.
 * - udmabuf, the kernel's exporter of memfd pages (built for the tests
 *   from Debian's linux-source as linux-udmabuf-test.ko: run.sh says
 *   how): a memfd sealed against shrinking, made a dma-buf with
 *   UDMABUF_CREATE; the CPU sees it through an mmap() of the memfd, the
 *   user's own memory, which is where a C2H must land.  udmabuf's
 *   DMA_BUF_IOCTL_SYNC syncs a mapping made for its own misc device, not
 *   the card's, so it is not used.
 *
 * The module pins each through PIN with FPGAGDR_MEM_DMABUF, the software
 * card writes into it (C2H) and reads from it (H2C), and the bytes are
 * checked through the CPU's view.  Also: a pinned sub-range, a range
 * that passes the end of the dma-buf (EOVERFLOW) and the exporter going
 * away while the buffer is pinned (every user-space reference closed;
 * for udmabuf also its module, which the pin must keep loaded).
 *
 * The DRM ioctls are declared here from the kernel's uapi (drm.h,
 * drm_mode.h): Debian ships those headers in libdrm-dev only, and these
 * five structures are the whole of what the test needs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/dma-buf.h>
#include <linux/udmabuf.h>

#include "tlib.h"

/* include/uapi/drm/drm.h */
struct t_drm_version {
	int version_major;
	int version_minor;
	int version_patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct t_drm_gem_close {
	__u32 handle;
	__u32 pad;
};

struct t_drm_prime_handle {
	__u32 handle;
	__u32 flags;
	__s32 fd;
};

/* include/uapi/drm/drm_mode.h */
struct t_drm_mode_create_dumb {
	__u32 height;
	__u32 width;
	__u32 bpp;
	__u32 flags;
	__u32 handle;
	__u32 pitch;
	__u64 size;
};

#define T_DRM_IOCTL_VERSION		_IOWR('d', 0x00, struct t_drm_version)
#define T_DRM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct t_drm_gem_close)
#define T_DRM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, struct t_drm_prime_handle)
#define T_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xb2, struct t_drm_mode_create_dumb)

/* card addresses the tests stage their data at */
#define CARD_A		0x08000000ULL
#define CARD_B		0x09000000ULL

/* the udmabuf test build: its module name and the file init.sh loads */
#define UDMABUF_MOD	"linux_udmabuf_test"
#define UDMABUF_KO	"/lib/fpgagdr/deps/linux-udmabuf-test.ko"

struct t_dbuf;

/**
 * struct t_exporter - a kernel exporter of dma-bufs
 * @name: prefix of the test names
 * @make: make a dma-buf of exactly the given size (a multiple of 4 KiB)
 *	and its CPU view; false (the reason checked) when it cannot
 * @close_fds: close every user-space reference but the CPU view: the
 *	exporter's side goes away
 * @sync: CPU access to the view is bracketed with DMA_BUF_IOCTL_SYNC
 */
struct t_exporter {
	const char *name;
	bool (*make)(struct t_dbuf *b, __u64 size);
	void (*close_fds)(struct t_dbuf *b);
	bool sync;
};

/**
 * struct t_dbuf - a dma-buf made by one exporter
 * @exp: the exporter
 * @dev: the exporter's node (vgem's DRM node, /dev/udmabuf), or -1
 * @handle: vgem: the GEM handle on @dev
 * @memfd: udmabuf: the memfd behind the dma-buf, or -1
 * @fd: the dma-buf, or -1
 * @size: its size in bytes
 * @map: the CPU's view, shared, read and write: the dma-buf's mmap()
 *	(vgem) or the memfd's (udmabuf)
 */
struct t_dbuf {
	const struct t_exporter *exp;
	int dev;
	__u32 handle;
	int memfd;
	int fd;
	__u64 size;
	unsigned char *map;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The vgem node of /dev/dri, or -1. */
static int vgem_open(void)
{
	char path[32], name[16];
	struct t_drm_version v;
	int i, fd;

	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!ioctl(fd, T_DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/* A vgem dumb buffer, exported, mapped through the dma-buf. */
static bool vgem_make(struct t_dbuf *b, __u64 size)
{
	struct t_drm_mode_create_dumb c = {
		.width = 1024, .height = size / 4096, .bpp = 32,
	};
	struct t_drm_prime_handle p = { .flags = O_CLOEXEC | O_RDWR };

	b->dev = vgem_open();
	CHECK(b->dev >= 0, "no vgem node in /dev/dri (is vgem.ko loaded?)");
	if (b->dev < 0)
		return false;
	CHECK(!ioctl(b->dev, T_DRM_IOCTL_MODE_CREATE_DUMB, &c),
	      "vgem CREATE_DUMB: %s", t_errname(errno));
	CHECK(c.size == size, "vgem buffer of %llu bytes, want %llu",
	      (unsigned long long)c.size, (unsigned long long)size);
	b->handle = c.handle;
	b->size = c.size;
	p.handle = c.handle;
	CHECK(!ioctl(b->dev, T_DRM_IOCTL_PRIME_HANDLE_TO_FD, &p),
	      "vgem PRIME_HANDLE_TO_FD: %s", t_errname(errno));
	b->fd = p.fd;
	b->map = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      b->fd, 0);
	CHECK(b->map != MAP_FAILED, "mmap of the dma-buf: %s",
	      t_errname(errno));
	if (b->map == MAP_FAILED)
		b->map = NULL;
	return b->map && b->size == size;
}

static void vgem_close_fds(struct t_dbuf *b)
{
	struct t_drm_gem_close g = { .handle = b->handle };

	close_fd(&b->fd);
	if (b->dev >= 0)
		CHECK(!ioctl(b->dev, T_DRM_IOCTL_GEM_CLOSE, &g),
		      "vgem GEM_CLOSE: %s", t_errname(errno));
	close_fd(&b->dev);
}

/*
 * Linux 6.1's udmabuf maps a run of physically contiguous pages as one
 * segment whatever its length, and swiotlb cannot bounce one longer than
 * dma_max_mapping_size() (256 KiB): the exporter's mapping fails, and
 * PIN with it (EIO, the uapi's failed mapping).  In the swiotlb pass the
 * memfd's pages are therefore allocated alternately with a scratch
 * memfd's, so that no two neighbours are adjacent; the exporter's limit
 * is not what the tests are about.
 */
static void memfd_scatter(int memfd, __u64 size)
{
	int scratch = memfd_create("fgtest-scratch", MFD_CLOEXEC);
	unsigned char *a, *s = MAP_FAILED;
	__u64 off;

	a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (scratch >= 0 && !ftruncate(scratch, size))
		s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 scratch, 0);
	CHECK(a != MAP_FAILED && s != MAP_FAILED,
	      "mapping the memfd and its scratch: %s", t_errname(errno));
	for (off = 0; a != MAP_FAILED && s != MAP_FAILED && off < size;
	     off += 4096) {
		a[off] = 0;
		s[off] = 0;
	}
	if (a != MAP_FAILED)
		munmap(a, size);
	if (s != MAP_FAILED)
		munmap(s, size);
	if (scratch >= 0)
		close(scratch);
}

/*
 * A memfd of @size bytes sealed against shrinking (udmabuf's rule), made
 * a dma-buf; the CPU's view is the memfd's own mapping.
 */
static bool udmabuf_make(struct t_dbuf *b, __u64 size)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC };

	b->dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	CHECK(b->dev >= 0, "/dev/udmabuf: %s (is linux-udmabuf-test.ko loaded?)",
	      t_errname(errno));
	b->memfd = memfd_create("fgtest-udmabuf",
				MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(b->memfd >= 0, "memfd_create: %s", t_errname(errno));
	if (b->dev < 0 || b->memfd < 0)
		return false;
	CHECK(!ftruncate(b->memfd, size), "ftruncate of the memfd: %s",
	      t_errname(errno));
	CHECK(!fcntl(b->memfd, F_ADD_SEALS, F_SEAL_SHRINK),
	      "F_ADD_SEALS F_SEAL_SHRINK: %s", t_errname(errno));
	if (t_pass_is("swiotlb"))
		memfd_scatter(b->memfd, size);
	c.memfd = b->memfd;
	c.size = size;
	b->fd = ioctl(b->dev, UDMABUF_CREATE, &c);
	CHECK(b->fd >= 0, "UDMABUF_CREATE: %s", t_errname(errno));
	if (b->fd < 0)
		return false;
	b->size = size;
	b->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      b->memfd, 0);
	CHECK(b->map != MAP_FAILED, "mmap of the memfd: %s", t_errname(errno));
	if (b->map == MAP_FAILED)
		b->map = NULL;
	return b->map;
}

static void udmabuf_close_fds(struct t_dbuf *b)
{
	close_fd(&b->fd);
	close_fd(&b->memfd);
	close_fd(&b->dev);
}

static const struct t_exporter vgem = {
	.name = "vgem",
	.make = vgem_make,
	.close_fds = vgem_close_fds,
	.sync = true,
};

static const struct t_exporter udmabuf = {
	.name = "udmabuf",
	.make = udmabuf_make,
	.close_fds = udmabuf_close_fds,
	.sync = false,
};

/* A dma-buf of @size bytes from @e, with its CPU view. */
static bool dbuf_new(struct t_dbuf *b, const struct t_exporter *e,
		     __u64 size)
{
	memset(b, 0, sizeof(*b));
	b->exp = e;
	b->dev = -1;
	b->memfd = -1;
	b->fd = -1;
	return e->make(b, size);
}

static void dbuf_free(struct t_dbuf *b)
{
	if (b->map)
		munmap(b->map, b->size);
	b->map = NULL;
	b->exp->close_fds(b);
}

/* CPU access to the view, bracketed where the exporter wants it. */
static void cpu_sync(const struct t_dbuf *b, __u64 flags)
{
	struct dma_buf_sync s = { .flags = flags | DMA_BUF_SYNC_RW };

	if (b->exp->sync && b->fd >= 0)
		CHECK(!ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &s),
		      "DMA_BUF_IOCTL_SYNC: %s", t_errname(errno));
}

static int pin_dmabuf(int fd, int dmabuf, __u64 off, __u64 len,
		      struct fpgagdr_pin *p)
{
	*p = (struct fpgagdr_pin){
		.abi_version = FPGAGDR_ABI_VERSION,
		.kind = FPGAGDR_MEM_DMABUF,
		.addr = off,
		.length = len,
		.dmabuf_fd = dmabuf,
	};
	return ioctl(fd, FPGAGDR_IOC_PIN, p) ? -errno : 0;
}

/*
 * The card's bytes at @card, @len long, read back through a pinned host
 * buffer (C2H), compared with @want.
 */
static void card_holds(int fd, __u64 card, const void *want, __u64 len,
		       const char *what)
{
	unsigned char *h = t_alloc(len);
	__u32 hh;

	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)h, len, &hh));
	memset(h, 0, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, hh, 0, card, len, 5000));
	t_same(h, want, len, what);
	CHECK_OK(t_unpin(fd, hh));
	t_free(h, len);
}

/* Write @len bytes of @src to the card at @card (H2C from host memory). */
static void card_load(int fd, __u64 card, const void *src, __u64 len)
{
	unsigned char *h = t_alloc(len);
	__u32 hh;

	memcpy(h, src, len);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)h, len, &hh));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, hh, 0, card, len, 5000));
	CHECK_OK(t_unpin(fd, hh));
	t_free(h, len);
}

/* "EXPORTER: WHAT", for the failure messages */
static const char *what(const struct t_exporter *e, const char *s)
{
	static char buf[160];

	snprintf(buf, sizeof(buf), "%s: %s", e->name, s);
	return buf;
}

/* The whole buffer: PIN's answer, C2H into it, H2C out of it. */
static void round_trip(const struct t_exporter *e)
{
	const __u64 len = MIB;
	unsigned char *want = malloc(len);
	struct fpgagdr_pin p;
	struct t_dbuf b;
	int fd = t_open();

	if (!dbuf_new(&b, e, len))
		goto out;
	CHECK_OK(pin_dmabuf(fd, b.fd, 0, len, &p));
	CHECK(p.method == FPGAGDR_PIN_METHOD_DMABUF, "method %u, want DMABUF",
	      p.method);
	/* shmem pages: scattered, one segment each unless neighbours */
	CHECK(p.segments >= 1 && p.segments <= len / 4096, "segments %u",
	      p.segments);
	CHECK(p.page_size == 4096, "page_size %u", p.page_size);

	/* C2H: the card's bytes land in the dma-buf's memory */
	t_pattern(want, len, 0x23a1);
	card_load(fd, CARD_A, want, len);
	cpu_sync(&b, DMA_BUF_SYNC_START);
	memset(b.map, 0, len);
	cpu_sync(&b, DMA_BUF_SYNC_END);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 0, CARD_A, len,
			5000));
	cpu_sync(&b, DMA_BUF_SYNC_START);
	t_same(b.map, want, len, what(e, "dma-buf after C2H"));
	cpu_sync(&b, DMA_BUF_SYNC_END);

	/* H2C: bytes the CPU wrote reach the card */
	t_pattern(want, len, 0x23a2);
	cpu_sync(&b, DMA_BUF_SYNC_START);
	memcpy(b.map, want, len);
	cpu_sync(&b, DMA_BUF_SYNC_END);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, p.handle, 0, CARD_B, len,
			5000));
	card_holds(fd, CARD_B, want, len,
		   what(e, "card after H2C from the dma-buf"));

	/* a transfer at an offset inside the pin */
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 256 * KIB, CARD_A,
			64 * KIB, 5000));
	t_pattern(want, len, 0x23a1);
	cpu_sync(&b, DMA_BUF_SYNC_START);
	t_same(b.map + 256 * KIB, want, 64 * KIB,
	       what(e, "dma-buf at offset 256 KiB"));
	cpu_sync(&b, DMA_BUF_SYNC_END);
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, len - 4096, CARD_A,
			 8192, 5000), EOVERFLOW);
	CHECK_OK(t_unpin(fd, p.handle));
out:
	dbuf_free(&b);
	free(want);
	close(fd);
}

/* A pin of part of the dma-buf: the card never touches the rest. */
static void sub_range(const struct t_exporter *e)
{
	const __u64 len = MIB, off = 192 * KIB, sub = 128 * KIB;
	unsigned char *want = malloc(len), *was = malloc(len);
	struct fpgagdr_pin p;
	struct t_dbuf b;
	int fd = t_open();

	if (!dbuf_new(&b, e, len))
		goto out;
	t_pattern(was, len, 0x23b0);
	cpu_sync(&b, DMA_BUF_SYNC_START);
	memcpy(b.map, was, len);
	cpu_sync(&b, DMA_BUF_SYNC_END);
	CHECK_OK(pin_dmabuf(fd, b.fd, off, sub, &p));
	t_pattern(want, sub, 0x23b1);
	card_load(fd, CARD_A, want, sub);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 0, CARD_A, sub,
			5000));
	/* offset 0 of the pin is byte @off of the dma-buf */
	memcpy(was + off, want, sub);
	cpu_sync(&b, DMA_BUF_SYNC_START);
	t_same(b.map, was, len,
	       what(e, "dma-buf after C2H into [192 KiB, 320 KiB)"));
	cpu_sync(&b, DMA_BUF_SYNC_END);
	/* H2C of the sub-range reads the same bytes back */
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, p.handle, 0, CARD_B, sub,
			5000));
	card_holds(fd, CARD_B, want, sub,
		   what(e, "card after H2C of the sub-range"));
	/* the pin ends at off + sub, not at the end of the dma-buf */
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 0, CARD_A,
			 sub + 4096, 5000), EOVERFLOW);
	CHECK_OK(t_unpin(fd, p.handle));
out:
	dbuf_free(&b);
	free(want);
	free(was);
	close(fd);
}

/*
 * A range that passes the end of the dma-buf is EOVERFLOW (the uapi
 * header's rule), and nothing stays pinned; a file that is not a dma-buf
 * (the exporter's node, udmabuf's memfd) is EBADF.
 */
static void wrong_size(const struct t_exporter *e)
{
	const __u64 len = 256 * KIB;
	long long pins = t_dbg(DBG_COUNTERS, "pins");
	struct fpgagdr_pin p;
	struct t_dbuf b;
	int fd = t_open();

	if (!dbuf_new(&b, e, len))
		goto out;
	CHECK_ERR(pin_dmabuf(fd, b.fd, 0, 2 * len, &p), EOVERFLOW);
	CHECK_ERR(pin_dmabuf(fd, b.fd, 0, len + 4096, &p), EOVERFLOW);
	CHECK_ERR(pin_dmabuf(fd, b.fd, len, 4096, &p), EOVERFLOW);
	CHECK_ERR(pin_dmabuf(fd, b.fd, len - 4096, 8192, &p), EOVERFLOW);
	CHECK_ERR(pin_dmabuf(fd, b.fd, ~0ULL & ~4095ULL, 8192, &p),
		  EOVERFLOW);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == pins, "pins %lld, want %lld",
	      t_dbg(DBG_COUNTERS, "pins"), pins);
	/* the exact size is fine */
	CHECK_OK(pin_dmabuf(fd, b.fd, 0, len, &p));
	CHECK_OK(t_unpin(fd, p.handle));
	/* the exporter's node is a file, but not a dma-buf */
	CHECK_ERR(pin_dmabuf(fd, b.dev, 0, 4096, &p), EBADF);
	/* nor is the memory behind a udmabuf */
	if (b.memfd >= 0)
		CHECK_ERR(pin_dmabuf(fd, b.memfd, 0, 4096, &p), EBADF);
out:
	dbuf_free(&b);
	close(fd);
}

/*
 * udmabuf's module: unload it without waiting; EWOULDBLOCK while a
 * dma-buf of it lives.  Loaded again (finit_module of the file init.sh
 * loaded) once it went, for the tests after this one.
 */
static int udmabuf_unload(void)
{
	int ret, ko;

	if (syscall(SYS_delete_module, UDMABUF_MOD, O_NONBLOCK))
		return -errno;
	ko = open(UDMABUF_KO, O_RDONLY | O_CLOEXEC);
	ret = ko >= 0 ? (int)syscall(SYS_finit_module, ko, "", 0) : -1;
	CHECK(!ret, "reloading %s: %s", UDMABUF_KO, t_errname(errno));
	if (ko >= 0)
		close(ko);
	CHECK(t_wait_path("/dev/udmabuf", true, 10), "no /dev/udmabuf after reload");
	return 0;
}

/*
 * The exporter's side goes away while pinned: the dma-buf fd and the
 * exporter's references (vgem: GEM handle and node; udmabuf: the memfd
 * and /dev/udmabuf) are all closed.  The pin holds the dma-buf, so the
 * memory stays and transfers still land in it (seen through the CPU's
 * view, which holds the memory too); then the view goes, and UNPIN
 * releases the last reference.  udmabuf's module cannot be unloaded
 * while the pin holds its dma-buf, and can after UNPIN.
 */
static void exporter_gone(const struct t_exporter *e)
{
	const __u64 len = 512 * KIB;
	unsigned char *want = malloc(len);
	long long pins = t_dbg(DBG_COUNTERS, "pins");
	struct fpgagdr_pin p;
	struct t_dbuf b;
	int fd = t_open();

	if (!dbuf_new(&b, e, len))
		goto out;
	CHECK_OK(pin_dmabuf(fd, b.fd, 0, len, &p));
	e->close_fds(&b);
	t_pattern(want, len, 0x23c1);
	card_load(fd, CARD_A, want, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 0, CARD_A, len,
			5000));
	t_same(b.map, want, len, what(e, "dma-buf after C2H, exporter's fds closed"));
	memset(b.map, 0x5a, len);
	memset(want, 0x5a, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, p.handle, 0, CARD_B, len,
			5000));
	card_holds(fd, CARD_B, want, len, what(e, "card after H2C, exporter gone"));
	/* the view goes too: the pin is the dma-buf's last holder */
	munmap(b.map, b.size);
	b.map = NULL;
	if (e == &udmabuf)
		CHECK_ERR(udmabuf_unload(), EWOULDBLOCK);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, p.handle, 0, CARD_A, len,
			5000));
	CHECK_OK(t_unpin(fd, p.handle));
	CHECK(t_dbg(DBG_COUNTERS, "pins") == pins, "pins %lld, want %lld",
	      t_dbg(DBG_COUNTERS, "pins"), pins);
	if (e == &udmabuf)
		CHECK_OK(udmabuf_unload());
	/* and closing the control node with a dma-buf pinned releases it */
	if (dbuf_new(&b, e, len)) {
		CHECK_OK(pin_dmabuf(fd, b.fd, 0, len, &p));
		dbuf_free(&b);
	}
out:
	dbuf_free(&b);
	free(want);
	close(fd);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == pins,
	      "pins %lld after close, want %lld",
	      t_dbg(DBG_COUNTERS, "pins"), pins);
}

/* each case once per exporter */
static void vgem_round_trip(void) { round_trip(&vgem); }
static void vgem_sub_range(void) { sub_range(&vgem); }
static void vgem_wrong_size(void) { wrong_size(&vgem); }
static void vgem_exporter_gone(void) { exporter_gone(&vgem); }
static void udmabuf_round_trip(void) { round_trip(&udmabuf); }
static void udmabuf_sub_range(void) { sub_range(&udmabuf); }
static void udmabuf_wrong_size(void) { wrong_size(&udmabuf); }
static void udmabuf_exporter_gone(void) { exporter_gone(&udmabuf); }

int suite_dmabuf(void)
{
	static const struct t_case cases[] = {
		{ "vgem_round_trip", vgem_round_trip },
		{ "vgem_sub_range", vgem_sub_range },
		{ "vgem_wrong_size", vgem_wrong_size },
		{ "vgem_exporter_gone", vgem_exporter_gone },
		{ "udmabuf_round_trip", udmabuf_round_trip },
		{ "udmabuf_sub_range", udmabuf_sub_range },
		{ "udmabuf_wrong_size", udmabuf_wrong_size },
		{ "udmabuf_exporter_gone", udmabuf_exporter_gone },
	};

	return t_run("dmabuf", cases, ARRAY_SIZE(cases));
}
