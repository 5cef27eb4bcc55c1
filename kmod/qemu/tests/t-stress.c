// SPDX-License-Identifier: GPL-2.0
/*
 * Races without hook points: thousands of rounds of a GPU pin with a free
 * callback, then UNPIN, cudaFree (the free callback) and a TRANSFER on it
 * started together from three threads, while a fourth thread pins,
 * transfers and unpins other GPU memory and host memory on another file.
 * Nothing is timed or forced: whatever order the scheduler picks, every
 * call has one of its documented answers, and the nvidia_p2p double's
 * misuse detector (a WARN, which fails the run) sees no call on a released
 * or freed object and no DMA into freed GPU memory.
 *
 * A cudaFree racing the PIN of the same buffer is left out: that window is
 * in NVIDIA's API, not in the module (docs/kernel-module.md).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlib.h"

#define SGPU		0x7d0000000000ULL
#define SLEN		(128 * KIB)

/**
 * struct stress - the state the racing threads share
 * @fd: control node of the racing pins
 * @handle: this round's pin
 * @va: this round's GPU address
 * @bar: lines the three racers up, twice per round
 * @rounds: rounds to run
 * @stop: the background thread ends
 * @bad: answers outside the documented ones
 * @seen: how often each transfer answer was seen (index: errno)
 */
struct stress {
	int fd;
	__u32 handle;
	__u64 va;
	pthread_barrier_t bar;
	int rounds;
	bool stop;
	int bad;
	int seen[256];
};

static void stress_bad(struct stress *s, const char *what, int ret)
{
	__atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED);
	printf("    %s: %s\n", what, t_errname(-ret));
}

static void *racer(void *arg)
{
	struct stress *s = ((struct stress **)arg)[0];
	long role = (long)((void **)arg)[1];
	int i, ret;

	for (i = 0; i < s->rounds; i++) {
		pthread_barrier_wait(&s->bar);
		if (role == 0) {
			ret = t_unpin(s->fd, s->handle);
			if (ret)
				stress_bad(s, "UNPIN", ret);
		} else if (role == 1) {
			ret = t_nv_free(s->va, SLEN);
			if (ret)
				stress_bad(s, "cudaFree", ret);
		} else {
			ret = t_xfer(s->fd, FPGAGDR_DIR_C2H, i % 4, s->handle,
				     0, 0, SLEN, 5000);
			if (ret && ret != -ECANCELED && ret != -ESTALE &&
			    ret != -ENOENT)
				stress_bad(s, "TRANSFER", ret);
			__atomic_add_fetch(&s->seen[-ret & 255], 1,
					   __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(&s->bar);
	}
	return NULL;
}

/* Pins, transfers and unpins of other memory meanwhile. */
static void *background(void *arg)
{
	struct stress *s = arg;
	unsigned char *host = t_alloc(SLEN);
	const __u64 va = SGPU + 64 * MIB;
	int fd = t_open(), ret;
	__u32 h;

	CHECK_OK(t_nv_alloc(va, SLEN));
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		ret = t_pin(fd, FPGAGDR_MEM_NV_P2P, va, SLEN, &h);
		if (!ret) {
			ret = t_xfer(fd, FPGAGDR_DIR_H2C, 3, h, 0, 0, SLEN, 5000);
			if (ret)
				stress_bad(s, "other GPU memory: TRANSFER", ret);
			CHECK_OK(t_unpin(fd, h));
		} else {
			stress_bad(s, "other GPU memory: PIN", ret);
		}
		ret = t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)host, SLEN, &h);
		if (!ret)
			CHECK_OK(t_unpin(fd, h));
		else
			stress_bad(s, "host memory: PIN", ret);
	}
	close(fd);
	CHECK_OK(t_nv_free(va, SLEN));
	t_free(host, SLEN);
	return NULL;
}

static void test_pin_free_unpin_race(void)
{
	struct stress s = { .va = SGPU };
	void *args[3][2];
	pthread_t th[3], bg;
	const char *env = getenv("FPGAGDR_STRESS_ROUNDS");
	int i, ret;
	double t0 = t_now();

	s.rounds = env ? atoi(env) : 2000;
	CHECK_OK(t_dbg_write(NV_PARAM_PERSISTENT, "0"));	/* callback pins */
	s.fd = t_open();
	pthread_barrier_init(&s.bar, NULL, 4);
	for (i = 0; i < 3; i++) {
		args[i][0] = &s;
		args[i][1] = (void *)(long)i;
		pthread_create(&th[i], NULL, racer, args[i]);
	}
	pthread_create(&bg, NULL, background, &s);
	for (i = 0; i < s.rounds; i++) {
		ret = t_nv_alloc(s.va, SLEN);
		if (!ret)
			ret = t_pin(s.fd, FPGAGDR_MEM_NV_P2P, s.va, SLEN,
				    &s.handle);
		if (ret) {
			stress_bad(&s, "round setup", ret);
			s.rounds = i;	/* the racers stop at their next wait */
		}
		pthread_barrier_wait(&s.bar);
		pthread_barrier_wait(&s.bar);
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&s.stop, true, __ATOMIC_RELEASE);
	pthread_join(bg, NULL);
	close(s.fd);
	pthread_barrier_destroy(&s.bar);
	CHECK_OK(t_dbg_write(NV_PARAM_PERSISTENT, "1"));
	printf("    %d rounds in %.1f s; TRANSFER: %d done, %d ECANCELED, %d ESTALE, %d ENOENT\n",
	       s.rounds, t_now() - t0, s.seen[0], s.seen[ECANCELED],
	       s.seen[ESTALE], s.seen[ENOENT]);
	CHECK(!s.bad, "%d answers outside the documented ones", s.bad);
	CHECK(t_dbg(DBG_NV "stats", "misuse") == 0, "%lld misuses of nvidia_p2p",
	      t_dbg(DBG_NV "stats", "misuse"));
	CHECK(t_dbg(DBG_NV "stats", "freed_written") == 0,
	      "%lld freed GPU pages written", t_dbg(DBG_NV "stats", "freed_written"));
	CHECK(t_dbg(DBG_NV "stats", "tables") == 0, "%lld page tables left",
	      t_dbg(DBG_NV "stats", "tables"));
	CHECK(t_dbg(DBG_NV "stats", "mappings") == 0, "%lld mappings left",
	      t_dbg(DBG_NV "stats", "mappings"));
	CHECK(t_dbg(DBG_COUNTERS, "pins") == 0, "%lld pins left",
	      t_dbg(DBG_COUNTERS, "pins"));
}

int suite_stress(void)
{
	static const struct t_case cases[] = {
		{ "pin_free_unpin_race", test_pin_free_unpin_race },
	};

	if (!t_nv_present()) {
		printf("stress: fpgagdr-test-nvp2p.ko is not loaded\n");
		return 1;
	}
	return t_run("stress", cases, ARRAY_SIZE(cases));
}
