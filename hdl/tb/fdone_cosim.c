// SPDX-License-Identifier: GPL-2.0
/*
 * The module's own frame-done code (kmod/fpgagdr-fdone.c, built unchanged
 * against the same user-space shim as its unit test) as a shared library
 * the cocotb testbench loads with ctypes (host.py, CHandler): the card's
 * user register block is reached through the two callbacks the testbench
 * gives, each access a real AXI4-Lite transaction on the RTL.
 *
 * This file only flattens the module's structures into plain arguments
 * for ctypes; every decision is fpgagdr-fdone.c's.
 */
#include <stdlib.h>

#include <uapi/linux/fpgagdr.h>

#include "fpgagdr-fdone.h"

/* the testbench's register accessors (ctypes callbacks) */
typedef u32 (*cosim_read_fn)(void *ctx, u32 off);
typedef void (*cosim_write_fn)(void *ctx, u32 off, u32 val);

/* one card's state, as fpgagdr-frames.c keeps it next to its accessors */
struct cosim_card {
	struct fpgagdr_fdone fd;
	struct fpgagdr_fdone_io io;
};

/* struct fpgagdr_fdone_ev with fixed-width fields only (ctypes mirrors it) */
struct cosim_ev {
	u64 seq;
	u64 gap;
	u32 slot;
	u32 len;
	u32 rule;
	u32 epoch;
	u32 fresh;
	u32 new_epoch;
};

/* the counters of struct fpgagdr_fdone, in this order (host.py, C_COUNTERS) */
enum { COSIM_COUNTERS = 12 };

struct cosim_card *cosim_new(cosim_read_fn rd, cosim_write_fn wr)
{
	struct cosim_card *c = calloc(1, sizeof(*c));

	if (c) {
		c->io.read = rd;
		c->io.write = wr;
	}
	return c;
}

void cosim_free(struct cosim_card *c)
{
	free(c);
}

void cosim_init(struct cosim_card *c, u32 slot_count, u32 slot_size, u32 version)
{
	fpgagdr_fdone_init(&c->fd, slot_count, slot_size, version, &c->io);
}

int cosim_take(struct cosim_card *c, struct cosim_ev *out)
{
	struct fpgagdr_fdone_ev ev = { 0 };
	enum fpgagdr_fdone_action act = fpgagdr_fdone_take(&c->fd, &c->io, &ev);

	*out = (struct cosim_ev){
		.seq = ev.seq, .gap = ev.gap, .slot = ev.slot, .len = ev.len,
		.rule = ev.rule, .epoch = ev.epoch, .fresh = ev.fresh,
		.new_epoch = ev.new_epoch,
	};
	return act;
}

int cosim_epoch(struct cosim_card *c)
{
	return fpgagdr_fdone_epoch(&c->fd, &c->io);
}

u32 cosim_torn(struct cosim_card *c, u64 seq, u32 epoch)
{
	return fpgagdr_fdone_torn(&c->fd, &c->io, seq, epoch);
}

u64 cosim_dropped(struct cosim_card *c)
{
	return fpgagdr_fdone_dropped(&c->fd, &c->io);
}

void cosim_storm_over(struct cosim_card *c)
{
	fpgagdr_fdone_storm_over(&c->fd);
}

void cosim_counters(const struct cosim_card *c, u64 *out)
{
	const struct fpgagdr_fdone *fd = &c->fd;
	const u64 v[COSIM_COUNTERS] = {
		fd->events, fd->missed, fd->protocol_errors, fd->repeated,
		fd->storms, fd->gone_reads, fd->rebases, fd->epoch_changes,
		fd->dropped, fd->torn, fd->epoch, fd->stormed,
	};
	size_t i;

	for (i = 0; i < COSIM_COUNTERS; i++)
		out[i] = v[i];
}
