// SPDX-License-Identifier: GPL-2.0
/*
 * The x86 dGPU back-end (nvidia_p2p) against the TEST DOUBLE
 * fpgagdr-test-nvp2p.ko: "GPU memory" is the double's, any 64 KiB-aligned
 * GPU address, read and written through its debugfs file as cudaMemcpy()
 * would.  Pins of 64 KiB pages with the buffer's offset kept; persistent
 * pins (the default, as on a current driver) and their fallback to a free
 * callback where persistent pins are refused (MIG, vGPU); the free
 * callback (cudaFree) with and without a transfer in flight, during a pin,
 * racing an unpin, and in the order that lets NVIDIA free the table under
 * the unpin's unmap.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tlib.h"

#define GPU_BASE	0x7e0000000000ULL
#define GPU_VA(n)	(GPU_BASE + (__u64)(n) * 16 * MIB)

static void nv_pattern(__u64 va, __u64 len, __u64 seed, unsigned char *out)
{
	t_pattern(out, len, seed);
	CHECK_OK(t_nv_rw(va, out, len, true));
}

static void nv_expect(__u64 va, const void *want, __u64 len, const char *w)
{
	unsigned char *got = malloc(len);

	CHECK_OK(t_nv_rw(va, got, len, false));
	t_same(got, want, len, w);
	free(got);
}

/* As on a MIG-enabled GPU: persistent pins refused, pins take a callback. */
static void nv_callback_pins(bool on)
{
	CHECK_OK(t_dbg_write(NV_PARAM_PERSISTENT, on ? "0" : "1"));
}

static void nv_all_released(void)
{
	CHECK(t_dbg(DBG_NV "stats", "tables") == 0, "%lld page tables live",
	      t_dbg(DBG_NV "stats", "tables"));
	CHECK(t_dbg(DBG_NV "stats", "mappings") == 0, "%lld mappings live",
	      t_dbg(DBG_NV "stats", "mappings"));
	CHECK(t_dbg(DBG_NV "stats", "freed_written") == 0,
	      "%lld freed GPU pages were written (DMA after free)",
	      t_dbg(DBG_NV "stats", "freed_written"));
	CHECK(t_dbg(DBG_NV "stats", "misuse") == 0, "%lld misuses",
	      t_dbg(DBG_NV "stats", "misuse"));
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "%lld pins live",
	      t_dbg(DBG_COUNTERS, "pins"));
}

static void test_status(void)
{
	struct fpgagdr_status s;
	int fd = t_open();

	CHECK_OK(t_status(fd, &s));
	CHECK(s.platform == FPGAGDR_PLATFORM_X86_DGPU, "platform %u",
	      s.platform);
	CHECK(s.default_kind == FPGAGDR_MEM_NV_P2P, "kind %u", s.default_kind);
	CHECK(s.gpu_page_size == 65536, "gpu page %u", s.gpu_page_size);
	CHECK(s.caps & FPGAGDR_CAP_NV_PERSISTENT, "no persistent pins: caps %#x",
	      s.caps);
	close(fd);
}

static void test_gpu_round_trip(void)
{
	const __u64 len = MIB, a = GPU_VA(1), b = GPU_VA(2);
	unsigned char *want = malloc(len);
	struct fpgagdr_pin p = {
		.abi_version = FPGAGDR_ABI_VERSION, .kind = FPGAGDR_MEM_NV_P2P,
		.addr = a, .length = len, .dmabuf_fd = -1,
	};
	int fd = t_open();
	__u32 hb;

	CHECK_OK(t_nv_alloc(a, len));
	CHECK_OK(t_nv_alloc(b, len));
	nv_pattern(a, len, 41, want);
	CHECK(ioctl(fd, FPGAGDR_IOC_PIN, &p) == 0, "pin GPU memory: %s",
	      strerror(errno));
	CHECK(p.page_size == 65536, "page_size %u", p.page_size);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, b, len, &hb));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, p.handle, 0, 0x50000000, len,
			10000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 1, hb, 0, 0x50000000, len,
			10000));
	nv_expect(b, want, len, "GPU -> card -> GPU");
	CHECK_OK(t_unpin(fd, p.handle));
	CHECK_OK(t_unpin(fd, hb));
	close(fd);
	CHECK_OK(t_nv_free(a, len));
	CHECK_OK(t_nv_free(b, len));
	nv_all_released();
	free(want);
}

/* The card must never be given the neighbour's bytes in a 64 KiB page. */
static void test_two_4k_buffers_in_one_gpu_page(void)
{
	const __u64 page = GPU_VA(3), len = 4 * KIB;
	unsigned char *img = malloc(64 * KIB), *p1 = malloc(len);
	unsigned char *p2 = malloc(len), *host = t_alloc(len);
	__u32 ha, hb, hh;
	int fd = t_open();

	memset(img, 0xee, 64 * KIB);
	CHECK_OK(t_nv_alloc(page, 64 * KIB));
	CHECK_OK(t_nv_rw(page, img, 64 * KIB, true));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, page + 0x1000, len, &ha));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, page + 0x2000, len, &hb));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)host, len, &hh));

	t_pattern(p1, len, 51);
	memcpy(host, p1, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, hh, 0, 0x51000000, len, 5000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, ha, 0, 0x51000000, len, 5000));
	memcpy(img + 0x1000, p1, len);
	nv_expect(page, img, 64 * KIB, "after C2H into buffer A");

	t_pattern(p2, len, 52);
	memcpy(host, p2, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 0, hh, 0, 0x51001000, len, 5000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 2, hb, 0, 0x51001000, len, 5000));
	memcpy(img + 0x2000, p2, len);
	nv_expect(page, img, 64 * KIB, "after C2H into buffer B");

	/* and H2C reads exactly buffer B */
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 1, hb, 0, 0x51002000, len, 5000));
	memset(host, 0, len);
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 1, hh, 0, 0x51002000, len, 5000));
	t_same(host, p2, len, "H2C from buffer B");
	close(fd);
	CHECK_OK(t_nv_free(page, 64 * KIB));
	nv_all_released();
	free(img);
	free(p1);
	free(p2);
	t_free(host, len);
}

/* A buffer that starts and ends inside GPU pages. */
static void test_buffer_inside_pages(void)
{
	const __u64 va = GPU_VA(4), off = 0x3000, len = 0x1f000;
	const __u64 span = 0x30000;
	unsigned char *img = malloc(span), *data = malloc(len);
	unsigned char *host = t_alloc(len);
	__u32 h, hh;
	int fd = t_open();

	memset(img, 0x11, span);
	CHECK_OK(t_nv_alloc(va, span));
	CHECK_OK(t_nv_rw(va, img, span, true));
	t_pattern(data, len, 61);
	memcpy(host, data, len);
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)host, len, &hh));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va + off, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_H2C, 3, hh, 0, 0x52000000, len, 5000));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 3, h, 0, 0x52000000, len, 5000));
	memcpy(img + off, data, len);
	nv_expect(va, img, span, "buffer from 0x3000 to 0x22000 of 3 pages");
	close(fd);
	CHECK_OK(t_nv_free(va, span));
	nv_all_released();
	free(img);
	free(data);
	t_free(host, len);
}

static void test_free_callback_then_estale(void)
{
	const __u64 va = GPU_VA(5), len = 256 * KIB;
	long long cb = t_dbg(DBG_NV "stats", "callbacks");
	int fd = t_open();
	__u32 h;

	nv_callback_pins(true);
	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, len, 5000));
	CHECK_OK(t_nv_free(va, len));
	CHECK(t_dbg(DBG_NV "stats", "callbacks") == cb + 1, "no callback");
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, len, 5000), ESTALE);
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_H2C, 0, h, 0, 0, len, 5000), ESTALE);
	CHECK_OK(t_unpin(fd, h));
	close(fd);
	nv_all_released();
	nv_callback_pins(false);
}

static void test_free_callback_during_transfer(void)
{
	const __u64 va = GPU_VA(6), len = 256 * KIB;
	struct t_bg b = { .dir = FPGAGDR_DIR_C2H, .len = len };
	int fd = t_open();
	double t0;

	nv_callback_pins(true);
	b.fd = fd;
	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &b.handle));
	t_bg_start_hung(&b);
	t0 = t_now();
	CHECK_OK(t_nv_free(va, len));
	CHECK(t_now() - t0 < 5, "callback took %.1f s", t_now() - t0);
	CHECK_ERR(t_bg_join(&b), ECANCELED);
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 0, b.handle, 0, 0, len, 5000),
		  ESTALE);
	CHECK_OK(t_unpin(fd, b.handle));
	/* the engine and the back-end still work */
	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &b.handle));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, b.handle, 0, 0, len, 5000));
	close(fd);
	CHECK_OK(t_nv_free(va, len));
	nv_all_released();
	nv_callback_pins(false);
}

/* cudaFree while the pin is being made: after get_pages, after dma_map. */
static void test_free_callback_while_pinning(void)
{
	static const char * const when[] = { "revoke_in_get", "revoke_in_map" };
	const __u64 va = GPU_VA(7), len = 128 * KIB;
	char path[128];
	int fd = t_open();
	unsigned int i;
	__u32 h;

	nv_callback_pins(true);
	CHECK_OK(t_nv_alloc(va, len));
	for (i = 0; i < ARRAY_SIZE(when); i++) {
		long long cb = t_dbg(DBG_NV "stats", "callbacks");

		snprintf(path, sizeof(path), DBG_NV "%s", when[i]);
		CHECK_OK(t_dbg_write(path, "1"));
		CHECK_ERR(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h), ESTALE);
		CHECK(t_dbg(DBG_NV "stats", "callbacks") == cb + 1,
		      "%s: no callback", when[i]);
		nv_all_released();
		CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
		CHECK_OK(t_unpin(fd, h));
	}
	close(fd);
	CHECK_OK(t_nv_free(va, len));
	nv_all_released();
	nv_callback_pins(false);
}

/*
 * The callback starts (on another CPU) once unpin has claimed the pin and
 * is about to unmap: NVIDIA frees the table when the callback returns, so
 * the callback must not return before the unmap.  The double gives it
 * 200 ms, then unmaps; a mapping it has already freed is a misuse.
 */
static void test_callback_starting_under_unpin(void)
{
	const __u64 va = GPU_VA(14), len = 256 * KIB;
	long long cb = t_dbg(DBG_NV "stats", "callbacks");
	int fd = t_open();
	__u32 h;

	nv_callback_pins(true);
	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, len, 5000));
	CHECK_OK(t_dbg_write(DBG_NV "revoke_in_unmap", "1"));
	CHECK_OK(t_unpin(fd, h));
	CHECK(t_dbg(DBG_NV "stats", "callbacks") == cb + 1, "no callback");
	nv_all_released();
	/* the engine and the back-end still work */
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 1, h, 0, 0, len, 5000));
	CHECK_OK(t_unpin(fd, h));
	close(fd);
	CHECK_OK(t_nv_free(va, len));
	nv_all_released();
	nv_callback_pins(false);
}

/**
 * struct race - unpin and cudaFree started together
 * @fd: control node
 * @handle: the pin
 * @va: its GPU address
 * @len: its length
 * @bar: lines the threads up
 * @unpin_ret: UNPIN's result
 * @free_ret: the free's result
 */
struct race {
	int fd;
	__u32 handle;
	__u64 va;
	__u64 len;
	pthread_barrier_t bar;
	int unpin_ret;
	int free_ret;
};

static void *race_unpin(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(&r->bar);
	r->unpin_ret = t_unpin(r->fd, r->handle);
	return NULL;
}

static void *race_free(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(&r->bar);
	r->free_ret = t_nv_free(r->va, r->len);
	return NULL;
}

static void test_unpin_races_free_callback(void)
{
	struct race r = { .va = GPU_VA(8), .len = 128 * KIB };
	pthread_t a, b;
	int i;

	nv_callback_pins(true);
	r.fd = t_open();
	for (i = 0; i < 40; i++) {
		CHECK_OK(t_nv_alloc(r.va, r.len));
		CHECK_OK(t_pin(r.fd, FPGAGDR_MEM_NV_P2P, r.va, r.len,
			       &r.handle));
		pthread_barrier_init(&r.bar, NULL, 2);
		pthread_create(&a, NULL, race_unpin, &r);
		pthread_create(&b, NULL, race_free, &r);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		pthread_barrier_destroy(&r.bar);
		CHECK(r.unpin_ret == 0, "round %d: unpin %s", i,
		      t_errname(-r.unpin_ret));
		CHECK(r.free_ret == 0, "round %d: free %d", i, r.free_ret);
	}
	close(r.fd);
	nv_all_released();
	nv_callback_pins(false);
}

static void test_persistent_pages(void)
{
	const __u64 va = GPU_VA(9), len = 256 * KIB;
	long long cb = t_dbg(DBG_NV "stats", "callbacks");
	int fd = t_open();
	__u32 h;

	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
	CHECK_OK(t_nv_free(va, len));
	CHECK(t_dbg(DBG_NV "stats", "callbacks") == cb,
	      "persistent pages got a free callback");
	/* the pages stay until unpinned */
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, len, 5000));
	CHECK(t_dbg(DBG_NV "stats", "gpu_pages") >= 4, "pages gone");
	CHECK_OK(t_unpin(fd, h));
	close(fd);
	nv_all_released();
}

/* Persistent pins refused (MIG, vGPU): the pin takes a free callback. */
static void test_refused_persistent_falls_back_to_callback(void)
{
	const __u64 va = GPU_VA(15), len = 128 * KIB;
	long long cb = t_dbg(DBG_NV "stats", "callbacks");
	int fd = t_open();
	__u32 h;

	nv_callback_pins(true);
	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
	CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, len, 5000));
	CHECK_OK(t_nv_free(va, len));
	CHECK(t_dbg(DBG_NV "stats", "callbacks") == cb + 1, "no callback");
	CHECK_ERR(t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, len, 5000), ESTALE);
	CHECK_OK(t_unpin(fd, h));
	close(fd);
	nv_all_released();
	nv_callback_pins(false);
}

static void test_close_releases_gpu_pins(void)
{
	int fd = t_open(), i;
	__u32 h;

	for (i = 0; i < 3; i++) {
		CHECK_OK(t_nv_alloc(GPU_VA(10 + i), MIB));
		CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, GPU_VA(10 + i), MIB, &h));
	}
	CHECK(t_dbg(DBG_NV "stats", "tables") == 3, "tables %lld",
	      t_dbg(DBG_NV "stats", "tables"));
	close(fd);
	nv_all_released();
	for (i = 0; i < 3; i++)
		CHECK_OK(t_nv_free(GPU_VA(10 + i), MIB));
	CHECK(t_dbg(DBG_NV "stats", "gpu_pages") == 0, "%lld GPU pages left",
	      t_dbg(DBG_NV "stats", "gpu_pages"));
}

/*
 * Host memory given to the GPU path: NVIDIA's driver refuses an address
 * that is not GPU memory (-EINVAL); PIN answers EOPNOTSUPP ("refused by
 * its back-end"), and does not retry it as a callback pin.
 */
static void test_host_memory_refused(void)
{
	unsigned char *host = t_alloc(128 * KIB);
	unsigned long a = ((unsigned long)host + 64 * KIB - 1) & ~(64 * KIB - 1);
	long long calls = t_dbg(DBG_NV "stats", "get_pages_callback");
	int fd = t_open();
	__u32 h;

	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_NV_P2P, a, 64 * KIB, &h), EOPNOTSUPP);
	CHECK(t_dbg(DBG_NV "stats", "get_pages_callback") == calls,
	      "a refused persistent pin was retried with a callback");
	close(fd);
	nv_all_released();
	t_free(host, 128 * KIB);
}

/*
 * A persistent pin that fails for a reason other than "not supported"
 * (MIG, vGPU) fails the PIN with that reason; only "not supported" falls
 * back to a callback pin.
 */
static void test_persistent_error_does_not_fall_back(void)
{
	const __u64 va = GPU_VA(16), len = 128 * KIB;
	long long calls = t_dbg(DBG_NV "stats", "get_pages_callback");
	int fd = t_open();
	__u32 h;

	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_dbg_write(DBG_NV "persistent_error", "12"));	/* ENOMEM */
	CHECK_ERR(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h), ENOMEM);
	CHECK(t_dbg(DBG_NV "stats", "get_pages_callback") == calls,
	      "ENOMEM from the persistent pin fell back to a callback pin");
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &h));
	CHECK_OK(t_unpin(fd, h));
	close(fd);
	CHECK_OK(t_nv_free(va, len));
	nv_all_released();
}

/*
 * cudaFree while a transfer on the pin waits for its (busy) engine: the
 * free callback returns at once, the waiting transfer ends ECANCELED and
 * never runs into the freed GPU memory (the double's poison stays intact).
 */
static void test_free_callback_while_waiting_for_engine(void)
{
	const __u64 va = GPU_VA(17), len = 256 * KIB;
	unsigned char *host = t_alloc(64 * KIB);
	struct t_bg hung = { .dir = FPGAGDR_DIR_C2H, .ch = 2, .len = 64 * KIB };
	struct t_bg wait = { .dir = FPGAGDR_DIR_C2H, .ch = 2, .len = len };
	int fd = t_open();
	double dt;

	nv_callback_pins(true);
	hung.fd = fd;
	wait.fd = fd;
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)host, 64 * KIB,
		       &hung.handle));
	CHECK_OK(t_nv_alloc(va, len));
	CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P, va, len, &wait.handle));
	t_bg_start_hung(&hung);
	t_bg_start(&wait);
	usleep(200 * 1000);	/* it waits for the engine */
	dt = t_now();
	CHECK_OK(t_nv_free(va, len));
	dt = t_now() - dt;
	CHECK(dt < 1, "the free callback took %.1f s (NVIDIA's lock held)", dt);
	CHECK_OK(t_abort(fd, FPGAGDR_DIR_C2H, 2));
	CHECK_ERR(t_bg_join(&hung), ECANCELED);
	CHECK_ERR(t_bg_join(&wait), ECANCELED);
	usleep(50 * 1000);
	CHECK_OK(t_unpin(fd, wait.handle));
	close(fd);
	nv_all_released();
	nv_callback_pins(false);
	t_free(host, 64 * KIB);
}

int suite_nvp2p(void)
{
	static const struct t_case cases[] = {
		{ "status_x86_dgpu", test_status },
		{ "gpu_round_trip", test_gpu_round_trip },
		{ "two_4k_buffers_in_one_gpu_page",
		  test_two_4k_buffers_in_one_gpu_page },
		{ "buffer_inside_pages", test_buffer_inside_pages },
		{ "free_callback_then_estale", test_free_callback_then_estale },
		{ "free_callback_during_transfer",
		  test_free_callback_during_transfer },
		{ "free_callback_while_pinning",
		  test_free_callback_while_pinning },
		{ "unpin_races_free_callback", test_unpin_races_free_callback },
		{ "callback_starting_under_unpin",
		  test_callback_starting_under_unpin },
		{ "persistent_pages", test_persistent_pages },
		{ "refused_persistent_falls_back_to_callback",
		  test_refused_persistent_falls_back_to_callback },
		{ "close_releases_gpu_pins", test_close_releases_gpu_pins },
		{ "host_memory_refused", test_host_memory_refused },
		{ "persistent_error_does_not_fall_back",
		  test_persistent_error_does_not_fall_back },
		{ "free_callback_while_waiting_for_engine",
		  test_free_callback_while_waiting_for_engine },
	};

	if (!t_nv_present()) {
		printf("nvp2p: fpgagdr-test-nvp2p.ko is not loaded\n");
		return 1;
	}
	return t_run("nvp2p", cases, ARRAY_SIZE(cases));
}
