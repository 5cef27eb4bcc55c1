// SPDX-License-Identifier: GPL-2.0
/*
 * Bad ioctls: each rule of the errno table in uapi/linux/fpgagdr.h, then
 * the module still works.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tlib.h"

static struct fpgagdr_status st;

static int raw(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* The module works: a round trip through a fresh pin. */
static void still_works(const char *after)
{
	const __u64 len = 64 * KIB;
	unsigned char *buf = t_alloc(len), *want = malloc(len);
	int fd = t_open();
	__u32 h;

	t_pattern(want, len, 99);
	memcpy(buf, want, len);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, h, 0, 0x70000000, len, 5000));
	memset(buf, 0, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0x70000000, len, 5000));
	t_same(buf, want, len, after);
	close(fd);
	free(want);
	t_free(buf, len);
}

static void test_unknown_ioctl_and_bad_pointer(void)
{
	struct fpgagdr_status s;
	int fd = t_open();

	CHECK_ERR(raw(fd, _IOWR(FPGAGDR_IOC_MAGIC, 0x7f, struct fpgagdr_status),
		      &s), ENOTTY);
	CHECK_ERR(raw(fd, FPGAGDR_IOC_GET_STATUS, NULL), EFAULT);
	CHECK_ERR(raw(fd, FPGAGDR_IOC_PIN, (void *)8), EFAULT);
	CHECK_ERR(raw(fd, FPGAGDR_IOC_UNPIN, NULL), EFAULT);
	CHECK_ERR(raw(fd, FPGAGDR_IOC_TRANSFER, NULL), EFAULT);
	CHECK_ERR(raw(fd, FPGAGDR_IOC_ABORT, NULL), EFAULT);
	close(fd);
	still_works("after ENOTTY/EFAULT");
}

static void test_wrong_abi_version(void)
{
	struct fpgagdr_status s = { .abi_version = FPGAGDR_ABI_VERSION + 1 };
	struct fpgagdr_pin p = {
		.abi_version = 0, .kind = 0, .addr = 0x1000,
		.length = 0x1000, .dmabuf_fd = -1,
	};
	struct fpgagdr_unpin u = { .abi_version = 77, .handle = 1 };
	struct fpgagdr_transfer t = { .abi_version = FPGAGDR_ABI_VERSION + 7,
				      .length = 4096, .timeout_ms = 100 };
	struct fpgagdr_abort a = { .abi_version = 0xffffffff };
	__u32 old3[16];
	int fd = t_open();

	CHECK_ERR(raw(fd, FPGAGDR_IOC_GET_STATUS, &s), EPROTO);
	CHECK(s.abi_version == FPGAGDR_ABI_VERSION, "version written back %u",
	      s.abi_version);
	CHECK(s.platform == 0 && s.caps == 0, "other fields written");
	CHECK_ERR(raw(fd, FPGAGDR_IOC_PIN, &p), EPROTO);
	CHECK(p.abi_version == FPGAGDR_ABI_VERSION && p.handle == 0 &&
	      p.addr == 0x1000, "pin after EPROTO");
	CHECK_ERR(raw(fd, FPGAGDR_IOC_UNPIN, &u), EPROTO);
	CHECK(u.abi_version == FPGAGDR_ABI_VERSION, "unpin version");
	CHECK_ERR(raw(fd, FPGAGDR_IOC_TRANSFER, &t), EPROTO);
	CHECK(t.abi_version == FPGAGDR_ABI_VERSION && t.bytes == 0,
	      "transfer after EPROTO");
	CHECK_ERR(raw(fd, FPGAGDR_IOC_ABORT, &a), EPROTO);
	CHECK(a.abi_version == FPGAGDR_ABI_VERSION, "abort version");
	/*
	 * ABI 3's TRANSFER (64 bytes): another ioctl number, the same
	 * answer as a wrong abi_version, the rest of it untouched
	 */
	memset(old3, 0, sizeof(old3));
	old3[0] = 3;
	old3[15] = 0x5a5a5a5a;
	CHECK_ERR(raw(fd, _IOC(_IOC_READ | _IOC_WRITE, FPGAGDR_IOC_MAGIC, 3, 64),
		      old3), EPROTO);
	CHECK(old3[0] == FPGAGDR_ABI_VERSION && old3[15] == 0x5a5a5a5a,
	      "ABI 3 TRANSFER: version %u written back", old3[0]);
	close(fd);
	still_works("after EPROTO");
}

static int pin_args(int fd, struct fpgagdr_pin *p)
{
	p->abi_version = FPGAGDR_ABI_VERSION;
	return raw(fd, FPGAGDR_IOC_PIN, p);
}

static void test_pin_rules(void)
{
	unsigned char *buf = t_alloc(64 * KIB);
	const __u64 a = (unsigned long)buf;
	struct fpgagdr_status s = { .abi_version = FPGAGDR_ABI_VERSION,
				    .flags = 1 };
	struct fpgagdr_pin p;
	int fd = t_open();
	void *gone;
	__u32 h;

	CHECK_ERR(raw(fd, FPGAGDR_IOC_GET_STATUS, &s), EINVAL);
	/* unaligned address, length 0, unaligned length */
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, a + 1, 4096, &h), EINVAL);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, a + 512, 4096, &h), EINVAL);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, a, 0, &h), EINVAL);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, a, 4097, &h), EINVAL);
	CHECK_ERR(t_pin(fd, 7, a, 4096, &h), EINVAL);
	p = (struct fpgagdr_pin){ .addr = a, .length = 4096, .dmabuf_fd = 3 };
	CHECK_ERR(pin_args(fd, &p), EINVAL);
	p = (struct fpgagdr_pin){ .addr = a, .length = 4096, .dmabuf_fd = -1,
				  .flags = 1 };
	CHECK_ERR(pin_args(fd, &p), EINVAL);
	p = (struct fpgagdr_pin){ .addr = a, .length = 4096, .dmabuf_fd = -1,
				  .method = 1 };
	CHECK_ERR(pin_args(fd, &p), EINVAL);
	p = (struct fpgagdr_pin){ .addr = a, .length = 4096, .dmabuf_fd = -1,
				  .handle = 5 };
	CHECK_ERR(pin_args(fd, &p), EINVAL);
	/* too long, wrapping */
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, a, FPGAGDR_PIN_MAX_BYTES + 4096,
			&h), E2BIG);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, 0xfffffffffffff000ULL, 0x2000,
			&h), EOVERFLOW);
	/* memory that is not mapped */
	gone = mmap(NULL, 64 * KIB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 64 * KIB);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)gone, 64 * KIB,
			&h), EFAULT);
	/* dma-buf: not an open file */
	p = (struct fpgagdr_pin){ .kind = FPGAGDR_MEM_DMABUF, .addr = 0,
				  .length = 4096, .dmabuf_fd = 999 };
	CHECK_ERR(pin_args(fd, &p), EBADF);
	if (!(st.mem_kinds & (1U << FPGAGDR_MEM_NV_P2P)))
		CHECK_ERR(t_pin(fd, FPGAGDR_MEM_NV_P2P, 0x7d0000000000ULL,
				65536, &h), EOPNOTSUPP);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "a refused pin is counted");
	close(fd);
	t_free(buf, 64 * KIB);
	still_works("after refused pins");
}

/* A transfer of 4 KiB to card address 0 unless the caller says else. */
static int xf(int fd, __u32 h, __u32 dir, __u32 ch, __u64 off, __u64 card,
	      __u64 len, __u32 timeout_ms)
{
	struct fpgagdr_transfer t = {
		.direction = dir, .channel = ch, .handle = h, .offset = off,
		.card_addr = card, .length = len, .timeout_ms = timeout_ms,
	};

	return t_xfer_full(fd, &t);
}

static void test_transfer_rules(void)
{
	const __u64 len = 64 * KIB, end = st.card_size, wrap = ~4095ULL;
	unsigned char *buf = t_alloc(len);
	struct fpgagdr_transfer t = {
		.length = 4096, .timeout_ms = 1000,
	};
	int fd = t_open();
	__u32 h;

	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h));
	CHECK_OK(xf(fd, h, 0, 0, 0, 0, 4096, 1000));
	CHECK_ERR(xf(fd, h, 2, 0, 0, 0, 4096, 1000), EINVAL);
	CHECK_ERR(xf(fd, h, 0, 0, 0, 0, 0, 1000), EINVAL);
	CHECK_ERR(xf(fd, h, 0, 0, 0, 0, 4096, 0), EINVAL);
	CHECK_ERR(xf(fd, h, 0, 0, 0, 0, 4096, FPGAGDR_TIMEOUT_MAX_MS + 1),
		  EINVAL);
	t.handle = h;
	t.flags = 2;
	CHECK_ERR(t_xfer_full(fd, &t), EINVAL);
	t.flags = 0;
	t.bytes = 1;
	CHECK_ERR(t_xfer_full(fd, &t), EINVAL);
	t.bytes = 0;
	/* the torn-frame check's fields: only with the flag, only on C2H */
	t.frame_seq = 1;
	CHECK_ERR(t_xfer_full(fd, &t), EINVAL);
	t.frame_seq = 0;
	t.frame_epoch = 1;
	CHECK_ERR(t_xfer_full(fd, &t), EINVAL);
	t.frame_epoch = 0;
	t.frame_check = FPGAGDR_FRAME_CHECK_WHOLE;
	CHECK_ERR(t_xfer_full(fd, &t), EINVAL);
	t.frame_check = 0;
	t.flags = FPGAGDR_XFER_FRAME;
	t.direction = FPGAGDR_DIR_H2C;
	CHECK_ERR(t_xfer_full(fd, &t), EINVAL);
	t.direction = FPGAGDR_DIR_C2H;
	t.flags = 0;
	if (st.xfer_align > 1) {
		CHECK_ERR(xf(fd, h, 0, 0, st.xfer_align / 2, 0, 4096, 1000),
			  EINVAL);
		CHECK_ERR(xf(fd, h, 0, 0, 0, 1, 4096, 1000), EINVAL);
	}
	if (st.len_granularity > 1)
		CHECK_ERR(xf(fd, h, 0, 0, 0, 0, st.len_granularity + 1, 1000),
			  EINVAL);
	/* offset + length past the pin, or wrapping */
	CHECK_ERR(xf(fd, h, 0, 0, len - 4096, 0, 8192, 1000), EOVERFLOW);
	CHECK_ERR(xf(fd, h, 1, 0, wrap, 0, 8192, 1000), EOVERFLOW);
	/* card address past the end, or wrapping */
	CHECK_ERR(xf(fd, h, 0, 0, 0, end - 4096, 8192, 1000), ERANGE);
	CHECK_ERR(xf(fd, h, 1, 0, 0, end, 4096, 1000), ERANGE);
	CHECK_ERR(xf(fd, h, 0, 0, 0, wrap, 8192, 1000), ERANGE);
	CHECK_OK(xf(fd, h, 0, 0, 0, end - 4096, 4096, 1000));
	/* no such channel */
	CHECK_ERR(xf(fd, h, 0, st.c2h_channels, 0, 0, 4096, 1000), ECHRNG);
	CHECK_ERR(xf(fd, h, 1, 99, 0, 0, 4096, 1000), ECHRNG);
	/* unknown handles */
	CHECK_ERR(xf(fd, 12345, 0, 0, 0, 0, 4096, 1000), ENOENT);
	CHECK_ERR(xf(fd, 0, 0, 0, 0, 0, 4096, 1000), ENOENT);
	close(fd);
	t_free(buf, len);
	still_works("after refused transfers");
}

static void test_unpin_rules(void)
{
	unsigned char *buf = t_alloc(64 * KIB);
	struct fpgagdr_unpin u = { .abi_version = FPGAGDR_ABI_VERSION };
	int fd = t_open(), other = t_open();
	__u32 h;

	CHECK_ERR(t_unpin(fd, 0), ENOENT);
	CHECK_ERR(t_unpin(fd, 12345), ENOENT);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 64 * KIB,
		       &h));
	/* a handle belongs to its file */
	CHECK_ERR(t_unpin(other, h), ENOENT);
	CHECK_ERR(t_xfer(other, 0, 0, h, 0, 0, 4096, 1000), ENOENT);
	u.handle = h;
	u.flags = 1;
	CHECK_ERR(raw(fd, FPGAGDR_IOC_UNPIN, &u), EINVAL);
	u.flags = 0;
	u.pad0 = 1;
	CHECK_ERR(raw(fd, FPGAGDR_IOC_UNPIN, &u), EINVAL);
	CHECK_OK(t_unpin(fd, h));
	CHECK_ERR(t_unpin(fd, h), EALREADY);
	CHECK_ERR(t_xfer(fd, 0, 0, h, 0, 0, 4096, 1000), ENOENT);
	close(fd);
	close(other);
	t_free(buf, 64 * KIB);
	still_works("after double unpin");
}

static void test_pin_limit_per_file(void)
{
	const size_t n = FPGAGDR_MAX_PINS_PER_FILE;
	unsigned char *buf = t_alloc((n + 1) * 4096);
	int fd = t_open(), bad = 0;
	size_t i;
	__u32 h;

	for (i = 0; i < n; i++)
		if (t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf + i * 4096,
			  4096, &h))
			bad++;
	CHECK(!bad, "%d of %zu pins failed", bad, n);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf + n * 4096,
			4096, &h), ENOSPC);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == (long long)n, "pins %lld",
	      t_dbg(DBG_COUNTERS, "pins"));
	close(fd);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "pins %lld after close",
	      t_dbg(DBG_COUNTERS, "pins"));
	t_free(buf, (n + 1) * 4096);
	still_works("after 4096 pins");
}

/*
 * Module parameters that bound a wait refuse values past their cap, so
 * that no wait can be made unbounded (or days long) through sysfs.
 */
static void test_module_parameters_capped(void)
{
	static const struct {
		const char *name;
		const char *bad[3];
		const char *good;
	} params[] = {
		{ "rw_timeout_ms", { "4294967295", "60001", "-1" }, "60000" },
		{ "poll_us", { "4294967295", "1001", "-1" }, "1000" },
	};
	char path[128], old[32];
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(params); i++) {
		snprintf(path, sizeof(path), "/sys/module/fpgagdr/parameters/%s",
			 params[i].name);
		CHECK_OK(t_read_file(path, old, sizeof(old)));
		for (j = 0; j < ARRAY_SIZE(params[i].bad); j++)
			CHECK_ERR(t_dbg_write(path, params[i].bad[j]), EINVAL);
		CHECK_OK(t_dbg_write(path, params[i].good));
		CHECK_OK(t_dbg_write(path, old));
	}
	still_works("after refused module parameters");
}

int suite_badioctl(void)
{
	static const struct t_case cases[] = {
		{ "unknown_ioctl_and_bad_pointer",
		  test_unknown_ioctl_and_bad_pointer },
		{ "wrong_abi_version", test_wrong_abi_version },
		{ "pin_rules", test_pin_rules },
		{ "transfer_rules", test_transfer_rules },
		{ "unpin_rules", test_unpin_rules },
		{ "pin_limit_per_file", test_pin_limit_per_file },
		{ "module_parameters_capped", test_module_parameters_capped },
	};
	int fd = t_open();

	CHECK_OK(t_status(fd, &st));
	close(fd);
	return t_run("badioctl", cases, ARRAY_SIZE(cases));
}
