// SPDX-License-Identifier: GPL-2.0
/*
 * The Orin-style back-end end to end: long-term pinning of host memory
 * (what cudaHostAlloc() gives on Jetson Orin), a frame ring pinned once
 * and filled frame after frame with replayed chains, RLIMIT_MEMLOCK
 * accounting, read-only memory refused, pins per open file.
 */
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlib.h"

#define FRAMES		8
#define FRAME		(256 * KIB)
#define CARD_FRAMES	0x10000000ULL

static void test_status(void)
{
	struct fpgagdr_status s;
	int fd = t_open();

	CHECK_OK(t_status(fd, &s));
	CHECK(s.mem_kinds & (1U << FPGAGDR_MEM_HOST), "no host back-end");
	if (s.platform != FPGAGDR_PLATFORM_X86_DGPU)
		CHECK(s.default_kind == FPGAGDR_MEM_HOST &&
		      s.gpu_page_size == 4096, "default %u page %u",
		      s.default_kind, s.gpu_page_size);
	close(fd);
}

/*
 * A ring of frames, each slot pinned once: a slot's chain is built on
 * the first lap and replayed on the next ones.
 */
static void test_frame_ring(void)
{
	unsigned char *ring = mmap(NULL, FRAMES * FRAME, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned char *stage = t_alloc(FRAME), *want = malloc(FRAME);
	struct fpgagdr_status a, b;
	int fd = t_open(), i, slot;
	__u32 hr[FRAMES], hs;
	char what[64];

	CHECK(ring != MAP_FAILED, "mmap ring");
	memset(ring, 0, FRAMES * FRAME);
	for (slot = 0; slot < FRAMES; slot++)
		CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST,
			       (unsigned long)ring + slot * FRAME, FRAME,
			       &hr[slot]));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)stage, FRAME, &hs));
	CHECK_OK(t_status(fd, &a));
	for (i = 0; i < 3 * FRAMES; i++) {
		slot = i % FRAMES;
		/* the "camera" puts frame i into card memory */
		t_pattern(want, FRAME, 500 + i);
		memcpy(stage, want, FRAME);
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 1, hs, 0,
				CARD_FRAMES + slot * FRAME, FRAME, 5000));
		/* and the ring slot receives it */
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, hr[slot], 0,
				CARD_FRAMES + slot * FRAME, FRAME, 5000));
		snprintf(what, sizeof(what), "frame %d in slot %d", i, slot);
		t_same(ring + slot * FRAME, want, FRAME, what);
	}
	CHECK_OK(t_status(fd, &b));
	/* per slot the ring's chain is built once, then replayed */
	CHECK(b.cache_hits - a.cache_hits == 2 * FRAMES, "cache hits %llu",
	      (unsigned long long)(b.cache_hits - a.cache_hits));
	CHECK(b.transfers - a.transfers == 6 * FRAMES, "transfers %llu",
	      (unsigned long long)(b.transfers - a.transfers));
	close(fd);
	munmap(ring, FRAMES * FRAME);
	free(want);
	t_free(stage, FRAME);
}

/* Give up CAP_IPC_LOCK so that RLIMIT_MEMLOCK applies. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { { 0 } };

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[0].effective &= ~(1U << CAP_IPC_LOCK);
	data[0].permitted &= ~(1U << CAP_IPC_LOCK);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

static void memlock_child(void)
{
	struct rlimit rl = { .rlim_cur = MIB, .rlim_max = MIB };
	unsigned char *buf = t_alloc(4 * MIB);
	int fd = t_open();
	__u32 h1, h2, h3;

	t_failures = 0;		/* the parent's count came along */
	CHECK_OK(drop_ipc_lock());
	CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit");
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 2 * MIB,
			&h1), ENOMEM);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 512 * KIB,
		       &h1));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf + MIB,
		       512 * KIB, &h2));
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf + 2 * MIB,
			512 * KIB, &h3), ENOMEM);
	CHECK_OK(t_unpin(fd, h1));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf + 2 * MIB,
		       512 * KIB, &h3));
	close(fd);
	_exit(t_failures ? 1 : 0);
}

static void test_memlock_accounting(void)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		memlock_child();
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child status %#x", status);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "pins left by the child");
}

static void test_read_only_memory_refused(void)
{
	void *ro = mmap(NULL, 64 * KIB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	int fd = t_open();
	__u32 h;

	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)ro, 64 * KIB, &h),
		  EFAULT);
	close(fd);
	munmap(ro, 64 * KIB);
}

static void test_pins_belong_to_their_file(void)
{
	const __u64 len = 128 * KIB;
	unsigned char *buf = t_alloc(len), *want = malloc(len);
	int f1 = t_open(), f2 = t_open();
	__u32 h1, h2;

	t_pattern(want, len, 71);
	CHECK_OK(t_pin(f1, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h1));
	CHECK_OK(t_pin(f2, FPGAGDR_MEM_HOST, (unsigned long)buf, len, &h2));
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 2, "pins %lld",
	      t_dbg(DBG_COUNTERS, "pins"));
	memcpy(buf, want, len);
	CHECK_OK(t_xfer(f1, FPGAGDR_DIR_H2C, 0, h1, 0, 0x11000000, len, 5000));
	close(f1);
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 1, "pins after close %lld",
	      t_dbg(DBG_COUNTERS, "pins"));
	memset(buf, 0, len);
	CHECK_OK(t_xfer(f2, FPGAGDR_DIR_C2H, 0, h2, 0, 0x11000000, len, 5000));
	t_same(buf, want, len, "through the other file's pin");
	close(f2);
	free(want);
	t_free(buf, len);
}

#define CGROUP		"/sys/fs/cgroup"
#define MEMCG_PINS	64

static long long memcg_current(const char *dir)
{
	char path[128], v[64];

	snprintf(path, sizeof(path), "%s/memory.current", dir);
	return t_read_file(path, v, sizeof(v)) ? -1 : atoll(v);
}

/* In a memory cgroup of its own: pins charge its kernel memory there. */
static void memcg_child(const char *dir)
{
	unsigned char *buf[MEMCG_PINS];
	char path[128], pid[32];
	long long before, after;
	int fd, i;
	__u32 h;

	t_failures = 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", getpid());
	CHECK_OK(t_dbg_write(path, pid));
	fd = t_open();
	/* the buffers' pages are charged as they fault in, before the pins */
	for (i = 0; i < MEMCG_PINS; i++)
		buf[i] = t_alloc(MIB);
	before = memcg_current(dir);
	for (i = 0; i < MEMCG_PINS; i++)
		CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf[i], MIB,
			       &h));
	after = memcg_current(dir);
	printf("    %d pins of 1 MiB of scattered pages: memory.current %lld -> %lld\n",
	       MEMCG_PINS, before, after);
	/*
	 * each pin's segment and page arrays, sg table and descriptors
	 * are over 16 KiB for 256 scattered pages
	 */
	CHECK(after - before >= MEMCG_PINS * 8 * (long long)KIB,
	      "pins charged %lld bytes to the caller's memory cgroup, want >= %lld",
	      after - before, MEMCG_PINS * 8 * (long long)KIB);
	close(fd);
	_exit(t_failures ? 1 : 0);
}

/*
 * A pin's kernel memory (segment arrays, descriptor memory, the pinned
 * page array) is charged to the memory cgroup of the process that pins
 * (__GFP_ACCOUNT), so a container's limit covers what it makes the
 * module allocate.
 */
static void test_pins_charged_to_memcg(void)
{
	const char *dir = CGROUP "/fgtest";
	int status;
	pid_t pid;

	if (access(CGROUP "/cgroup.controllers", F_OK)) {
		CHECK(0, "no cgroup2 at %s", CGROUP);
		return;
	}
	t_dbg_write(CGROUP "/cgroup.subtree_control", "+memory");
	mkdir(dir, 0755);
	fflush(stdout);
	pid = fork();
	if (!pid)
		memcg_child(dir);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child status %#x", status);
	rmdir(dir);
}

int suite_host(void)
{
	static const struct t_case cases[] = {
		{ "status", test_status },
		{ "frame_ring_pinned_once", test_frame_ring },
		{ "memlock_accounting", test_memlock_accounting },
		{ "read_only_memory_refused", test_read_only_memory_refused },
		{ "pins_belong_to_their_file", test_pins_belong_to_their_file },
		{ "pins_charged_to_memcg", test_pins_charged_to_memcg },
	};

	return t_run("host", cases, ARRAY_SIZE(cases));
}
