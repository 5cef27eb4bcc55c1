// SPDX-License-Identifier: GPL-2.0
/*
 * The card going away and coming back, through the driver core as on a
 * real machine: sysfs remove and rescan of its PCI function, a hot unplug
 * and plug through QEMU's monitor on a hot-pluggable root port (the host
 * runs the command, kmod/qemu/run.sh), and a fatal PCIe error injected at
 * the root port through the kernel's aer_inject (AER recovery with a link
 * reset).  Calls are in flight each time: a transfer running, one waiting
 * for its engine, a channel-node read held inside page pinning by
 * userfaultfd at a known moment, and a process holding the device open
 * with pins.  remove() must run, promptly; calls in flight end ENODEV (EIO
 * for a link error), and nothing of the card is used afterwards.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tlib.h"

#define BUF	(64 * KIB)

/* The pins of user pages the kernel holds right now. */
static long long pinned_pages(void)
{
	return t_vmstat("nr_foll_pin_acquired") -
	       t_vmstat("nr_foll_pin_released");
}

/* A round trip through a fresh pin: the card is there and works. */
static bool card_works(const char *after)
{
	unsigned char *buf = t_alloc(BUF), *want = malloc(BUF);
	int failures = t_failures, fd = t_open();
	__u32 h;

	t_pattern(want, BUF, 555);
	memcpy(buf, want, BUF);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, BUF, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, h, 0, 0x7a000000, BUF, 5000));
	memset(buf, 0, BUF);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 1, h, 0, 0x7a000000, BUF, 5000));
	t_same(buf, want, BUF, after);
	close(fd);
	free(want);
	t_free(buf, BUF);
	return t_failures == failures;
}

static bool wait_card(double seconds)
{
	return t_wait_path(t_dev, true, seconds);
}

/**
 * struct uffd_read - a channel-node read held inside page pinning
 * @uffd: the userfaultfd the buffer is registered with
 * @buf: the buffer, no page present
 * @node: the channel node
 * @ret: the read's result, -errno
 * @th: the reading thread
 */
struct uffd_read {
	int uffd;
	unsigned char *buf;
	int node;
	int ret;
	pthread_t th;
};

static void *uffd_reader(void *arg)
{
	struct uffd_read *u = arg;
	ssize_t n = pread(u->node, u->buf, BUF, 0x7b000000);

	u->ret = n < 0 ? -errno : 0;
	return NULL;
}

/* Start the read and wait until it faults on the buffer: it is pinning. */
static bool uffd_read_start(struct uffd_read *u)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd;
	struct uffd_msg msg;
	char path[64];

	u->uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	CHECK(u->uffd >= 0, "userfaultfd: %s", strerror(errno));
	if (u->uffd < 0)
		return false;
	CHECK(ioctl(u->uffd, UFFDIO_API, &api) == 0, "UFFDIO_API");
	u->buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)u->buf;
	reg.range.len = BUF;
	CHECK(ioctl(u->uffd, UFFDIO_REGISTER, &reg) == 0, "UFFDIO_REGISTER");
	snprintf(path, sizeof(path), "%s_c2h_1", t_dev);
	u->node = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(u->node >= 0, "open %s", path);
	pthread_create(&u->th, NULL, uffd_reader, u);
	pfd = (struct pollfd){ .fd = u->uffd, .events = POLLIN };
	if (poll(&pfd, 1, 10000) != 1 || read(u->uffd, &msg, sizeof(msg)) !=
	    sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT) {
		t_fail(__FILE__, __LINE__, "the read never faulted on its buffer");
		return false;
	}
	return true;
}

/* Let the held read go on: the missing pages become zero pages. */
static int uffd_read_finish(struct uffd_read *u)
{
	struct uffdio_zeropage zp = {
		.range = { .start = (unsigned long)u->buf, .len = BUF },
	};

	CHECK(ioctl(u->uffd, UFFDIO_ZEROPAGE, &zp) == 0 || errno == EEXIST,
	      "UFFDIO_ZEROPAGE: %s", strerror(errno));
	pthread_join(u->th, NULL);
	close(u->node);
	close(u->uffd);
	munmap(u->buf, BUF);
	return u->ret;
}

/*
 * sysfs remove of the card's PCI function with every kind of call in
 * flight, then rescan.
 */
static void test_remove_with_calls_in_flight(void)
{
	unsigned char *a = t_alloc(BUF), *b = t_alloc(BUF);
	struct t_bg hung = { .dir = FPGAGDR_DIR_C2H, .ch = 0, .len = BUF };
	struct t_bg wait = { .dir = FPGAGDR_DIR_C2H, .ch = 0, .len = BUF,
			     .timeout_ms = 30000 };
	struct fpgagdr_status s;
	long long base = pinned_pages();
	struct uffd_read u = { 0 };
	char bdf[32], dev[96], drv[128];
	int fd = t_open(), ret;
	double dt;

	CHECK_OK(t_card_bdf(bdf, sizeof(bdf)));
	snprintf(dev, sizeof(dev), "/sys/bus/pci/devices/%s", bdf);
	snprintf(drv, sizeof(drv), "/sys/bus/pci/drivers/fpgagdr-testcard/%s",
		 bdf);
	CHECK(t_wait_path(drv, true, 0), "%s is not bound", bdf);
	hung.fd = fd;
	wait.fd = fd;
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)a, BUF,
		       &hung.handle));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)b, BUF,
		       &wait.handle));
	t_bg_start_hung(&hung);
	t_bg_start(&wait);
	if (!uffd_read_start(&u))
		return;
	usleep(100 * 1000);

	dt = t_now();
	CHECK_OK(t_dbg_write(strcat(dev, "/remove"), "1"));
	dt = t_now() - dt;
	CHECK(dt < 2, "remove() took %.1f s with calls in flight", dt);
	*strrchr(dev, '/') = 0;
	CHECK(!t_wait_path(drv, true, 0), "remove() did not unbind the driver");
	CHECK(!t_wait_path(dev, true, 0), "%s is still there", dev);
	CHECK(t_wait_path(t_dev, false, 2), "%s is still there", t_dev);
	CHECK_ERR(t_bg_join(&hung), ENODEV);
	CHECK_ERR(t_bg_join(&wait), ENODEV);
	/* the pins were released by remove(), with the file still open */
	CHECK(pinned_pages() <= base + (long long)(BUF / 4096),
	      "%lld user pages still pinned after remove() (%lld before)",
	      pinned_pages(), base);
	ret = uffd_read_finish(&u);
	CHECK(ret == -ENODEV, "channel-node read held in pinning: %s, want ENODEV",
	      t_errname(-ret));
	CHECK_ERR(t_status(fd, &s), ENODEV);
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)a, BUF, NULL),
		  ENODEV);
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 0, hung.handle, 0, 0, BUF, 1000),
		  ENODEV);
	CHECK_OK(t_unpin(fd, hung.handle));
	close(fd);
	CHECK(pinned_pages() == base, "%lld user pages pinned after close (%lld before)",
	      pinned_pages(), base);

	CHECK_OK(t_dbg_write("/sys/bus/pci/rescan", "1"));
	CHECK(wait_card(10), "no %s after rescan", t_dev);
	card_works("after remove and rescan");
	t_free(a, BUF);
	t_free(b, BUF);
}

/*
 * The card unplugged and plugged back through QEMU's monitor (the host
 * runs device_del and device_add on the root port rp1).
 */
static void test_hot_unplug_and_plug(void)
{
	struct t_bg hung = { .dir = FPGAGDR_DIR_C2H, .ch = 3, .len = BUF };
	unsigned char *a = t_alloc(BUF);
	struct fpgagdr_status s;
	int fd;

	if (!getenv("FPGAGDR_HOTPLUG")) {
		printf("    no hot-pluggable root port in this pass\n");
		t_free(a, BUF);
		return;
	}
	fd = t_open();
	hung.fd = fd;
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)a, BUF,
		       &hung.handle));
	t_bg_start_hung(&hung);
	t_host_cmd("device_del card");
	CHECK(t_wait_path(t_dev, false, 30), "%s still there after device_del",
	      t_dev);
	CHECK_ERR(t_bg_join(&hung), ENODEV);
	CHECK_ERR(t_status(fd, &s), ENODEV);
	close(fd);
	t_host_cmd("device_add edu,bus=rp1,id=card");
	CHECK(wait_card(30), "no %s after device_add", t_dev);
	card_works("after hot unplug and plug");
	t_free(a, BUF);
}

/*
 * A fatal PCIe error (malformed TLP) reported by the root port: AER
 * resets the link under the card.  The transfer in flight ends EIO at
 * once instead of waiting out its timeout, and after recovery the card
 * works again, through the same open file.
 */
static void test_aer_fatal_error(void)
{
	struct t_bg hung = { .dir = FPGAGDR_DIR_C2H, .ch = 2, .len = BUF,
			     .timeout_ms = 20000 };
	unsigned char *a = t_alloc(BUF);
	int fd, ok = 0;
	double t0;

	if (!t_aer_present()) {
		printf("    no /dev/aer_inject in this pass\n");
		t_free(a, BUF);
		return;
	}
	fd = t_open();
	hung.fd = fd;
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)a, BUF,
		       &hung.handle));
	t_bg_start_hung(&hung);
	t0 = t_now();
	CHECK_OK(t_aer_inject(T_AER_FATAL));
	CHECK_ERR(t_bg_join(&hung), EIO);
	CHECK(t_now() - t0 < 5, "the transfer ended %.1f s after the error",
	      t_now() - t0);
	/* recovery: the same file's pin works again */
	for (t0 = t_now(); t_now() - t0 < 10 && !ok; usleep(100 * 1000))
		ok = !t_xfer(fd, FPGAGDR_DIR_C2H, 2, hung.handle, 0, 0, BUF,
			     1000);
	CHECK(ok, "no transfer works after AER recovery");
	close(fd);
	card_works("after a fatal PCIe error");
	t_free(a, BUF);
}

int suite_removal(void)
{
	static const struct t_case cases[] = {
		{ "remove_with_calls_in_flight",
		  test_remove_with_calls_in_flight },
		{ "hot_unplug_and_plug", test_hot_unplug_and_plug },
		{ "aer_fatal_error", test_aer_fatal_error },
	};

	return t_run("removal", cases, ARRAY_SIZE(cases));
}
