/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host's side of the frame-done record (docs/card-protocol.md): take
 * it from the card's user register block, check it against the protocol's
 * rules, acknowledge it, and decide what the caller does with it.  Pure
 * logic with a small interface: the register block's read and write
 * callbacks and this state go in, a decision and the event come out.  The
 * module's interrupt handler and poll worker (fpgagdr-frames.c) call it
 * with the card's accessors; the unit tests (tests/test-fdone.c) with a
 * model of the card's registers; a testbench may call it as its host.
 * Queuing, time stamps, waking and masking are the caller's.
 */
#ifndef FPGAGDR_FDONE_H
#define FPGAGDR_FDONE_H

#include "fpgagdr-pure.h"
#include "fpgagdr-frames-regs.h"

/*
 * Identical records taken in a row (the card raised frame-done again
 * after HOST_ACK without completing a frame) that make an interrupt storm:
 * the caller then masks the user interrupt and polls.
 */
#define FPGAGDR_FDONE_STORM_REPEATS	8

/**
 * struct fpgagdr_fdone_io - the card's user register block
 * @read: read the 32-bit register at byte offset @off of the block (may
 *	have side effects: DONE_SEQ_LO latches the record)
 * @write: write @val to the 32-bit register at @off
 * @ctx: their first argument
 */
struct fpgagdr_fdone_io {
	u32 (*read)(void *ctx, u32 off);
	void (*write)(void *ctx, u32 off, u32 val);
	void *ctx;
};

/* What fpgagdr_fdone_take() found, and what the caller does about it. */
enum fpgagdr_fdone_action {
	FPGAGDR_FDONE_NONE,	/* no frame pending: not a frame-done interrupt */
	FPGAGDR_FDONE_EVENT,	/* an event: hand it out (its rule may be broken) */
	FPGAGDR_FDONE_REPEAT,	/* the record taken last time, again: nothing new */
	FPGAGDR_FDONE_STORM,	/* too many repeats: mask the interrupt, poll */
	FPGAGDR_FDONE_GONE,	/* the block reads all ones: the card is gone */
	FPGAGDR_FDONE_BACK,	/* the card answers again after being gone */
};

/* Why an event broke the protocol (fpgagdr_fdone_ev.rule). */
enum {
	FPGAGDR_FRAMES_RULE_OK,
	FPGAGDR_FRAMES_RULE_SEQUENCE,	/* not above the previous one */
	FPGAGDR_FRAMES_RULE_SLOT,	/* slot != sequence mod slot_count */
	FPGAGDR_FRAMES_RULE_LENGTH,	/* < header or > slot size */
};

/**
 * struct fpgagdr_fdone_ev - one frame-done record as the host took it
 * @seq: sequence number (DONE_SEQ_HI:DONE_SEQ_LO)
 * @slot: DONE_SLOT
 * @len: DONE_LENGTH, bytes
 * @rule: FPGAGDR_FRAMES_RULE_OK, or the rule the record broke
 * @gap: frames the card completed since the last event in order that no
 *	event reported (0 when @fresh or the rule is broken)
 * @fresh: the first event since the baseline was dropped (attach, a reset,
 *	the card coming back): no gap can be known before it
 */
struct fpgagdr_fdone_ev {
	u64 seq;
	u32 slot;
	u32 len;
	u32 rule;
	u64 gap;
	bool fresh;
};

/**
 * struct fpgagdr_fdone - the host's state of one card's frame-done record
 * @slot_count: SLOT_COUNT, at least 1 (the caller checked the geometry)
 * @slot_size: SLOT_SIZE, bytes
 * @have_last: @last_seq is a baseline: the sequence of the last event
 *	that broke no rule
 * @last_seq: that sequence
 * @soft_rebase: the next record may start a new baseline if its sequence
 *	does not grow (after a PCIe error without a reset: the card may or
 *	may not have restarted its sequence)
 * @have_rec: @rec_* hold the last record taken (for repeats)
 * @rec_seq: its sequence
 * @rec_slot: its slot
 * @rec_len: its length
 * @repeats: identical records taken in a row since the last new one
 * @gone: the block read all ones and has not answered since
 * @events: events handed out (any rule)
 * @missed: the sum of the events' gaps
 * @protocol_errors: events that broke a rule
 * @repeated: records taken again without a new frame (storm or a late
 *	interrupt), never handed out
 * @storms: times @repeats reached FPGAGDR_FDONE_STORM_REPEATS
 * @gone_reads: times the card was found gone (each episode once)
 * @rebases: baselines dropped (attach not counted)
 */
struct fpgagdr_fdone {
	u32 slot_count;
	u32 slot_size;
	bool have_last;
	u64 last_seq;
	bool soft_rebase;
	bool have_rec;
	u64 rec_seq;
	u32 rec_slot;
	u32 rec_len;
	u32 repeats;
	bool gone;
	u64 events;
	u64 missed;
	u64 protocol_errors;
	u64 repeated;
	u64 storms;
	u64 gone_reads;
	u64 rebases;
};

void fpgagdr_fdone_init(struct fpgagdr_fdone *fd, u32 slot_count,
			u32 slot_size);
enum fpgagdr_fdone_action fpgagdr_fdone_take(struct fpgagdr_fdone *fd,
					     const struct fpgagdr_fdone_io *io,
					     struct fpgagdr_fdone_ev *ev);
void fpgagdr_fdone_rebase(struct fpgagdr_fdone *fd, bool soft);
bool fpgagdr_fdone_set_gone(struct fpgagdr_fdone *fd);
enum fpgagdr_fdone_action fpgagdr_fdone_probe(struct fpgagdr_fdone *fd,
					      const struct fpgagdr_fdone_io *io);

#endif /* FPGAGDR_FDONE_H */
