// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for fpgagdr-testeng-walk.c, the descriptor walker of the test
 * doubles: a chain runs to its stop descriptor, a broken one is refused,
 * and a run halted while a descriptor is being fetched is cancelled, not
 * taken for a broken chain.
 */
#include <string.h>

#include "check.h"
#include "../fpgagdr-testeng-walk.h"

int test_failures;
int test_checks;

#define BASE	0x1000ULL
#define NDESC	4

/**
 * struct mem - descriptor memory as the card reads it
 * @d: descriptors at bus address BASE
 * @fetches: fetches so far
 * @halt_at: the fetch during which the run is halted (0: never)
 * @halted: the run was halted
 */
struct mem {
	struct xdma_desc d[NDESC];
	int fetches;
	int halt_at;
	bool halted;
};

static bool m_fetch(void *ctx, u64 bus, struct xdma_desc *d)
{
	struct mem *m = ctx;
	u64 i = (bus - BASE) / sizeof(*d);

	if (++m->fetches == m->halt_at)
		m->halted = true;
	if (m->halted) {
		/* as the software card: a halted run fetches nothing */
		memset(d, 0, sizeof(*d));
		return true;
	}
	if (bus < BASE || i >= NDESC)
		return false;
	*d = m->d[i];
	return true;
}

/* Bytes are not this test's concern: every move succeeds. */
static u32 m_move(void *ctx, u64 host, u64 card, u32 len, bool c2h)
{
	(void)ctx;
	(void)host;
	(void)card;
	(void)len;
	(void)c2h;
	return 0;
}

static bool m_stopped(void *ctx)
{
	return ((struct mem *)ctx)->halted;
}

static const struct fpgagdr_walk_ops m_ops = {
	.fetch = m_fetch,
	.move = m_move,
	.stopped = m_stopped,
};

/* A chain of @n single-descriptor bursts, 4 KiB each, stop on the last. */
static void chain(struct mem *m, int n)
{
	int i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < n; i++) {
		u64 next = i + 1 < n ? BASE + (i + 1) * sizeof(m->d[0]) : 0;

		m->d[i].control = cpu_to_le32(FIELD_PREP(XDMA_DESC_MAGIC,
							 XDMA_DESC_MAGIC_VALUE) |
					      (i + 1 == n ? XDMA_DESC_STOP : 0));
		m->d[i].len = cpu_to_le32(4096);
		m->d[i].src_lo = cpu_to_le32(0x100000 + i * 4096);
		m->d[i].next_lo = cpu_to_le32((u32)next);
	}
}

static void test_chain_runs_to_its_stop(void)
{
	struct fpgagdr_walk w;
	struct mem m;

	chain(&m, 3);
	CHECK_EQ(fpgagdr_walk_chain(&m_ops, &m, BASE, 0, true, 16, &w), 0);
	CHECK_EQ(w.completed, 3);
	CHECK_EQ(w.bytes, 3 * 4096);
	CHECK(!w.why);
	CHECK(w.status & XDMA_CHAN_DESC_STOPPED);
}

static void test_bad_magic_is_refused(void)
{
	struct fpgagdr_walk w;
	struct mem m;

	chain(&m, 3);
	m.d[1].control = cpu_to_le32(XDMA_DESC_STOP);
	CHECK_EQ(fpgagdr_walk_chain(&m_ops, &m, BASE, 0, true, 16, &w), -EIO);
	CHECK(w.why);
	CHECK_EQ(w.where, BASE + sizeof(m.d[0]));
	CHECK_EQ(w.completed, 1);
}

/*
 * The driver stops the run between the walker's look at "stopped" and its
 * fetch of the next descriptor: what the fetch returned is not the
 * chain's, so the run is cancelled with no rule broken (it was reported as
 * "descriptor magic is not 0xad4b" once, failing the QEMU stress test).
 */
static void test_halt_during_a_fetch_cancels(void)
{
	struct fpgagdr_walk w;
	struct mem m;
	int at;

	for (at = 1; at <= 3; at++) {
		chain(&m, 3);
		m.halt_at = at;
		CHECK_EQ(fpgagdr_walk_chain(&m_ops, &m, BASE, 0, true, 16, &w),
			 -ECANCELED);
		CHECK(!w.why);
		CHECK_EQ(w.status, 0);
		CHECK_EQ(w.completed, at - 1);
	}
}

int main(void)
{
	RUN(test_chain_runs_to_its_stop);
	RUN(test_bad_magic_is_refused);
	RUN(test_halt_during_a_fetch_cancels);
	return test_summary();
}
