// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the guest tests: results, ioctls, buffers, patterns, debugfs.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tlib.h"

int t_failures;
const char *t_dev = "/dev/fpgagdr0";
/* stop timeouts of the software card before this process's tests */
static long long t_stop_timeouts_base;
long long t_expected_stop_timeouts;

void t_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	t_failures++;
	printf("    FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

const char *t_errname(int err)
{
	static const struct {
		int err;
		const char *name;
	} names[] = {
		{ 0, "0" }, { EPERM, "EPERM" }, { ENOENT, "ENOENT" },
		{ EINTR, "EINTR" }, { EIO, "EIO" }, { E2BIG, "E2BIG" },
		{ EBADF, "EBADF" }, { ENOMEM, "ENOMEM" }, { EFAULT, "EFAULT" },
		{ EBUSY, "EBUSY" }, { ENODEV, "ENODEV" }, { EINVAL, "EINVAL" },
		{ ENOTTY, "ENOTTY" }, { ENOSPC, "ENOSPC" }, { ERANGE, "ERANGE" },
		{ ECHRNG, "ECHRNG" }, { EPROTO, "EPROTO" },
		{ EOVERFLOW, "EOVERFLOW" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ EALREADY, "EALREADY" }, { ETIMEDOUT, "ETIMEDOUT" },
		{ ESTALE, "ESTALE" }, { ECANCELED, "ECANCELED" },
		{ EEXIST, "EEXIST" }, { EAGAIN, "EAGAIN" },
		{ ENXIO, "ENXIO" }, { EBADMSG, "EBADMSG" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].err == err)
			return names[i].name;
	return "?";
}

double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * After every test the software card must have seen no broken chain, no
 * access to memory not mapped for it, no run walked twice, and no engine
 * that missed the stop budget unless a test caused it on purpose.
 */
static void t_check_card(void)
{
	long long e = t_dbg(DBG_TE "stats", "desc_errors");
	long long s = t_dbg(DBG_TE "stats", "stop_timeouts");
	long long u = t_dbg(DBG_TE "stats", "refused_unmapped");
	long long r = t_dbg(DBG_TE "stats", "runs");
	long long w = t_dbg(DBG_TE "stats", "walks");

	if (e < 0)
		return;		/* not the software card */
	CHECK(e == 0, "software card rejected %lld descriptor chains", e);
	CHECK(u == 0, "software card refused %lld accesses to memory not mapped for it",
	      u);
	CHECK(w <= r, "software card walked %lld chains of %lld runs started",
	      w, r);
	CHECK(s - t_stop_timeouts_base == t_expected_stop_timeouts,
	      "software card had %lld stop timeouts, %lld on purpose",
	      s - t_stop_timeouts_base, t_expected_stop_timeouts);
}

int t_run(const char *suite, const struct t_case *cases, size_t n)
{
	const char *only = getenv("FPGAGDR_ONLY");
	int failed = 0, before;
	size_t i;
	double t0;

	t_stop_timeouts_base = t_dbg(DBG_TE "stats", "stop_timeouts");

	for (i = 0; i < n; i++) {
		/* FPGAGDR_ONLY=a,b runs only those tests (debugging) */
		if (only && !strstr(only, cases[i].name))
			continue;
		before = t_failures;
		t0 = t_now();
		cases[i].fn();
		t_check_card();
		printf("%s - %s/%s (%.2f s)\n", t_failures == before ?
		       "ok" : "not ok", suite, cases[i].name, t_now() - t0);
		fflush(stdout);
		if (t_failures != before)
			failed++;
	}
	printf("%s: %zu tests, %d failed\n", suite, n, failed);
	return failed ? 1 : 0;
}

int t_open(void)
{
	int fd = open(t_dev, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		t_fail(__FILE__, __LINE__, "open %s: %s", t_dev,
		       strerror(errno));
		exit(2);
	}
	return fd;
}

static int t_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int t_status(int fd, struct fpgagdr_status *st)
{
	memset(st, 0, sizeof(*st));
	st->abi_version = FPGAGDR_ABI_VERSION;
	return t_ioctl(fd, FPGAGDR_IOC_GET_STATUS, st);
}

int t_pin(int fd, __u32 kind, __u64 addr, __u64 len, __u32 *handle)
{
	struct fpgagdr_pin p = {
		.abi_version = FPGAGDR_ABI_VERSION,
		.kind = kind,
		.addr = addr,
		.length = len,
		.dmabuf_fd = -1,
	};
	int ret = t_ioctl(fd, FPGAGDR_IOC_PIN, &p);

	if (!ret && handle)
		*handle = p.handle;
	return ret;
}

int t_unpin(int fd, __u32 handle)
{
	struct fpgagdr_unpin u = {
		.abi_version = FPGAGDR_ABI_VERSION,
		.handle = handle,
	};

	return t_ioctl(fd, FPGAGDR_IOC_UNPIN, &u);
}

int t_xfer_full(int fd, struct fpgagdr_transfer *t)
{
	t->abi_version = FPGAGDR_ABI_VERSION;
	return t_ioctl(fd, FPGAGDR_IOC_TRANSFER, t);
}

int t_xfer(int fd, __u32 dir, __u32 ch, __u32 handle, __u64 off, __u64 card,
	   __u64 len, __u32 timeout_ms)
{
	struct fpgagdr_transfer t = {
		.direction = dir,
		.channel = ch,
		.handle = handle,
		.offset = off,
		.card_addr = card,
		.length = len,
		.timeout_ms = timeout_ms,
	};
	int ret = t_xfer_full(fd, &t);

	if (!ret && t.bytes != len)
		t_fail(__FILE__, __LINE__, "transfer moved %llu of %llu bytes",
		       (unsigned long long)t.bytes, (unsigned long long)len);
	return ret;
}

int t_abort(int fd, __u32 dir, __u32 ch)
{
	struct fpgagdr_abort a = {
		.abi_version = FPGAGDR_ABI_VERSION,
		.direction = dir,
		.channel = ch,
	};

	return t_ioctl(fd, FPGAGDR_IOC_ABORT, &a);
}

/* Page-aligned anonymous memory, faulted in back to front. */
void *t_alloc(size_t len)
{
	char *p;
	size_t off;

	len = (len + 4095) & ~(size_t)4095;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		t_fail(__FILE__, __LINE__, "mmap %zu: %s", len,
		       strerror(errno));
		exit(2);
	}
	/* back to front: physically scattered pages, many segments */
	madvise(p, len, MADV_NOHUGEPAGE);
	for (off = len; off > 0; off -= 4096)
		p[off - 1] = 0;
	return p;
}

void t_free(void *p, size_t len)
{
	munmap(p, len);
}

/* A pattern that differs per seed and per position. */
void t_pattern(void *buf, size_t len, __u64 seed)
{
	__u64 x = seed * 0x9e3779b97f4a7c15ULL + 0x1234567;
	unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)(x >> 24);
	}
}

/* Compare every byte; report the first difference and how many. */
bool t_same(const void *got, const void *want, size_t len, const char *what)
{
	const unsigned char *g = got, *w = want;
	size_t i, first = 0, bad = 0;

	for (i = 0; i < len; i++) {
		if (g[i] != w[i]) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	if (bad)
		t_fail(__FILE__, __LINE__,
		       "%s: %zu of %zu bytes differ, first at %zu (%#x, want %#x)",
		       what, bad, len, first, g[first], w[first]);
	return !bad;
}

/* The value of "key value" in a debugfs file; -1 when absent. */
long long t_dbg(const char *path, const char *key)
{
	char line[256], name[128];
	long long v, ret = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", name, &v) == 2 &&
		    !strcmp(name, key))
			ret = v;
	fclose(f);
	return ret;
}

int t_dbg_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* Arm a fault of the software card for the next @runs runs. */
void t_fault(int mode, int runs)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", mode);
	CHECK_OK(t_dbg_write(DBG_TE "fault_mode", v));
	snprintf(v, sizeof(v), "%d", runs);
	CHECK_OK(t_dbg_write(DBG_TE "fault_runs", v));
}

/* Wait until the software card started a run after @before runs. */
bool t_wait_runs(long long before, double seconds)
{
	double end = t_now() + seconds;

	while (t_now() < end) {
		if (t_dbg(DBG_TE "stats", "runs") > before)
			return true;
		usleep(2000);
	}
	return false;
}

bool t_nv_present(void)
{
	return access(DBG_NV "mem", F_OK) == 0;
}

/* cudaMalloc() of [va, va + len) in the double. */
int t_nv_alloc(__u64 va, __u64 len)
{
	char v[64];

	snprintf(v, sizeof(v), "%llx %llx", (unsigned long long)va,
		 (unsigned long long)len);
	return t_dbg_write(DBG_NV "alloc", v);
}

/* Read or write the double's "GPU memory" at GPU address @va. */
int t_nv_rw(__u64 va, void *buf, size_t len, bool write)
{
	int fd = open(DBG_NV "mem", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write ? pwrite(fd, buf, len, (off_t)va) :
		    pread(fd, buf, len, (off_t)va);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* cudaFree() of [va, va + len) in the double. */
int t_nv_free(__u64 va, __u64 len)
{
	char v[64];

	snprintf(v, sizeof(v), "%llx %llx", (unsigned long long)va,
		 (unsigned long long)len);
	return t_dbg_write(DBG_NV "free", v);
}

static void *t_bg_thread(void *arg)
{
	struct t_bg *b = arg;

	b->ret = t_xfer(b->fd, b->dir, b->ch, b->handle, b->off, b->card,
			b->len, b->timeout_ms ? b->timeout_ms : 20000);
	return NULL;
}

/* Start a transfer in another thread. */
void t_bg_start(struct t_bg *b)
{
	pthread_create(&b->th, NULL, t_bg_thread, b);
}

/* Start a transfer the software card will never complete; true once the
 * card runs it.
 */
bool t_bg_start_hung(struct t_bg *b)
{
	long long runs = t_dbg(DBG_TE "stats", "runs");

	t_fault(FAULT_HANG, 1);
	t_bg_start(b);
	if (t_wait_runs(runs, 10))
		return true;
	t_fail(__FILE__, __LINE__, "the hung transfer never started");
	return false;
}

int t_bg_join(struct t_bg *b)
{
	pthread_join(b->th, NULL);
	return b->ret;
}

/* The guest's pass: FPGAGDR_PASS (plain, swiotlb, iommu, arm64). */
const char *t_pass(void)
{
	const char *p = getenv("FPGAGDR_PASS");

	return p ? p : "plain";
}

bool t_pass_is(const char *name)
{
	return !strcmp(t_pass(), name);
}

/* The PCI address of the card behind t_dev, from its class device. */
int t_card_bdf(char *bdf, size_t len)
{
	char path[256], link[256];
	const char *name = strrchr(t_dev, '/');
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/fpgagdr/%s/device",
		 name ? name + 1 : t_dev);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	name = strrchr(link, '/');
	snprintf(bdf, len, "%s", name ? name + 1 : link);
	return 0;
}

/* Wait until @path exists (or is gone); true when it happened in time. */
bool t_wait_path(const char *path, bool exists, double seconds)
{
	double end = t_now() + seconds;

	do {
		if ((access(path, F_OK) == 0) == exists)
			return true;
		usleep(10000);
	} while (t_now() < end);
	return false;
}

/*
 * Ask the host to run a QEMU monitor command: kmod/qemu/run.sh watches the
 * serial console for this line.  The caller waits for its effect.
 */
void t_host_cmd(const char *cmd)
{
	printf("FPGAGDR-HOST-CMD: %s\n", cmd);
	fflush(stdout);
}

int t_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* A counter of /proc/vmstat, per-CPU deltas folded in; -1 when absent. */
long long t_vmstat(const char *key)
{
	char line[256], name[128];
	long long v, ret = -1;
	FILE *f;

	t_dbg_write("/proc/sys/vm/stat_refresh", "1");
	f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", name, &v) == 2 &&
		    !strcmp(name, key))
			ret = v;
	fclose(f);
	return ret;
}

/* struct aer_error_inj of the kernel's aer_inject (drivers/pci/pcie) */
struct aer_inj {
	unsigned char bus;
	unsigned char dev;
	unsigned char fn;
	unsigned int uncor_status;
	unsigned int cor_status;
	unsigned int header_log[4];
	unsigned int domain;
};

/* The root port above the card, from its sysfs path. */
static int t_root_port(struct aer_inj *e)
{
	char bdf[32], dev[96], link[256], *p;
	unsigned int dom, bus, d, fn;
	ssize_t n;

	if (t_card_bdf(bdf, sizeof(bdf)))
		return -ENODEV;
	snprintf(dev, sizeof(dev), "/sys/bus/pci/devices/%s", bdf);
	n = readlink(dev, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	*strrchr(link, '/') = 0;
	p = strrchr(link, '/');
	if (!p || sscanf(p + 1, "%x:%x:%x.%x", &dom, &bus, &d, &fn) != 4)
		return -ENODEV;
	e->domain = dom;
	e->bus = bus;
	e->dev = d;
	e->fn = fn;
	return 0;
}

bool t_aer_present(void)
{
	return !access("/dev/aer_inject", F_OK);
}

/*
 * Inject a PCIe error at the root port above the card through the
 * kernel's aer_inject: T_AER_CORRECTABLE (Receiver Error), T_AER_NONFATAL
 * (Poisoned TLP, non-fatal by the root port's default severity: no reset)
 * or T_AER_FATAL (Malformed TLP: the AER core resets the link under the
 * card).  0 or -errno.
 */
int t_aer_inject(int kind)
{
	struct aer_inj e = { 0 };
	ssize_t n;
	int fd, ret;

	ret = t_root_port(&e);
	if (ret)
		return ret;
	if (kind == T_AER_CORRECTABLE)
		e.cor_status = 1U << 0;
	else if (kind == T_AER_NONFATAL)
		e.uncor_status = 1U << 12;
	else
		e.uncor_status = 1U << 18;
	fd = open("/dev/aer_inject", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, &e, sizeof(e));
	ret = n == sizeof(e) ? 0 : -errno;
	close(fd);
	return ret;
}
