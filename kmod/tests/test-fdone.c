// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for fpgagdr-fdone.c, the host's side of the frame-done
 * record, against a TEST DOUBLE of the card's user register block: the
 * register side effects of docs/card-protocol.md (reading DONE_SEQ_LO
 * latches the record, HOST_ACK of the live sequence clears FRAME_PENDING,
 * a frame completing while one is pending only updates the live record),
 * and the faults a card shows on a bad day: gone from the bus (every read
 * all ones), an acknowledge it ignores (an interrupt storm), a garbage
 * record, a reset (the sequence back at 0).
 */
#include <string.h>

#include <uapi/linux/fpgagdr.h>

#include "check.h"
#include "../fpgagdr-fdone.h"

int test_failures;
int test_checks;

#define SLOTS		8
#define SLOT_SIZE	0x100000
#define LOG_MAX		64

/**
 * struct card - TEST DOUBLE of the user register block
 * @seq: sequence of the next frame
 * @live_seq: the latest completed frame
 * @live_slot: its slot
 * @live_len: its length
 * @done: a frame completed since reset
 * @pending: FRAME_PENDING
 * @lat: the latched record: seq, slot, length
 * @gone: every read returns all ones, writes are lost
 * @deaf: HOST_ACK is ignored (FRAME_PENDING stays set)
 * @vanish_at: the n-th read from now returns all ones (0: never)
 * @log: accesses in order: 'r' or 'w', and the offset
 * @nlog: entries in @log
 */
struct card {
	u64 seq;
	u64 live_seq;
	u32 live_slot;
	u32 live_len;
	bool done;
	bool pending;
	u64 lat_seq;
	u32 lat_slot;
	u32 lat_len;
	bool gone;
	bool deaf;
	u32 vanish_at;
	struct {
		char op;
		u32 off;
	} log[LOG_MAX];
	u32 nlog;
};

static void card_log(struct card *c, char op, u32 off)
{
	if (c->nlog < LOG_MAX) {
		c->log[c->nlog].op = op;
		c->log[c->nlog].off = off;
	}
	c->nlog++;
}

static u32 card_read(void *ctx, u32 off)
{
	struct card *c = ctx;

	card_log(c, 'r', off);
	if (c->gone || (c->vanish_at && !--c->vanish_at))
		return ~0U;
	switch (off) {
	case FPROTO_REG_MAGIC:
		return FPROTO_MAGIC_VALUE;
	case FPROTO_REG_IRQ_STATUS:
		return c->pending ? FPROTO_IRQ_STATUS_FRAME_PENDING : 0;
	case FPROTO_REG_DONE_SEQ_LO:
		c->lat_seq = c->live_seq;
		c->lat_slot = c->live_slot;
		c->lat_len = c->live_len;
		return lower_32_bits(c->lat_seq);
	case FPROTO_REG_DONE_SEQ_HI:
		return upper_32_bits(c->lat_seq);
	case FPROTO_REG_DONE_SLOT:
		return c->lat_slot;
	case FPROTO_REG_DONE_LENGTH:
		return c->lat_len;
	default:
		return 0;
	}
}

static void card_write(void *ctx, u32 off, u32 val)
{
	struct card *c = ctx;

	card_log(c, 'w', off);
	if (c->gone)
		return;
	if (off == FPROTO_REG_HOST_ACK && !c->deaf &&
	    val == lower_32_bits(c->live_seq))
		c->pending = false;
}

/* A frame completes: written into its slot, then the record. */
static void card_frame(struct card *c, u32 len)
{
	c->live_seq = c->seq++;
	c->live_slot = c->live_seq % SLOTS;
	c->live_len = len;
	c->done = true;
	c->pending = true;
}

/* A record the card sets up as it likes (a broken one). */
static void card_record(struct card *c, u64 seq, u32 slot, u32 len)
{
	c->live_seq = seq;
	c->live_slot = slot;
	c->live_len = len;
	c->pending = true;
}

/* The card's reset: the sequence starts again at 0. */
static void card_reset(struct card *c)
{
	memset(c, 0, sizeof(*c));
}

static struct card card;

static const struct fpgagdr_fdone_io io = {
	.read = card_read, .write = card_write, .ctx = &card,
};

static struct fpgagdr_fdone fd;
static struct fpgagdr_fdone_ev ev;

static void setup(void)
{
	card_reset(&card);
	fpgagdr_fdone_init(&fd, SLOTS, SLOT_SIZE);
	memset(&ev, 0, sizeof(ev));
}

static int take(void)
{
	return fpgagdr_fdone_take(&fd, &io, &ev);
}

/* Frames taken one by one: every event in order, acknowledged. */
static void test_frames_in_order(void)
{
	u32 i;

	setup();
	CHECK_EQ(take(), FPGAGDR_FDONE_NONE);
	for (i = 0; i < 3; i++) {
		card_frame(&card, 64 + i);
		CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
		CHECK_EQ(ev.seq, i);
		CHECK_EQ(ev.slot, i);
		CHECK_EQ(ev.len, 64 + i);
		CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
		CHECK_EQ(ev.gap, 0);
		CHECK_EQ(ev.fresh, i == 0);
		CHECK(!card.pending);
		CHECK_EQ(take(), FPGAGDR_FDONE_NONE);
	}
	CHECK_EQ(fd.events, 3);
	CHECK_EQ(fd.missed, 0);
	CHECK_EQ(fd.protocol_errors, 0);
}

/* Frames that complete while one is pending coalesce into a gap. */
static void test_coalesced_frames_are_a_gap(void)
{
	setup();
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	card_frame(&card, 100);
	card_frame(&card, 100);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 3);
	CHECK_EQ(ev.gap, 2);
	CHECK_EQ(fd.missed, 2);
	CHECK_EQ(fd.repeated, 0);
}

/*
 * The record is read DONE_SEQ_LO first (the latch), and HOST_ACK, a
 * posted write, is followed by a read of the block before the take
 * returns: the read cannot pass the write, so the card has seen the
 * acknowledge (and a legacy interrupt has fallen) when the handler
 * returns.
 */
static void test_ack_is_flushed_by_a_read(void)
{
	u32 i, ack = LOG_MAX;

	setup();
	card_frame(&card, 100);
	card.nlog = 0;
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(card.log[0].op, 'r');
	CHECK_EQ(card.log[0].off, FPROTO_REG_IRQ_STATUS);
	CHECK_EQ(card.log[1].off, FPROTO_REG_DONE_SEQ_LO);
	for (i = 0; i < card.nlog && i < LOG_MAX; i++)
		if (card.log[i].op == 'w' &&
		    card.log[i].off == FPROTO_REG_HOST_ACK)
			ack = i;
	CHECK(ack < card.nlog);
	/* something is read after the acknowledge, inside the block */
	CHECK(ack + 1 < card.nlog);
	if (ack + 1 < card.nlog && ack + 1 < LOG_MAX) {
		CHECK_EQ(card.log[ack + 1].op, 'r');
		CHECK(card.log[ack + 1].off < FPROTO_BLOCK_LEN);
	}
}

/*
 * A record that breaks a rule is handed out as such, and never becomes
 * the baseline: the frames after it are judged against the last good one.
 */
static void test_broken_record_is_never_the_baseline(void)
{
	setup();
	card.seq = 5;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 5);
	/* a garbage sequence with a wrong slot */
	card_record(&card, ~0ULL - 1, 3, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_SLOT);
	/* a sequence far ahead with a length past the slot */
	card_record(&card, 1000, 1000 % SLOTS, SLOT_SIZE + 1);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_LENGTH);
	/* the card carries on from 6: in order, the gap from 5 */
	card.seq = 6;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 6);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK_EQ(ev.gap, 0);
	card.seq = 9;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK_EQ(ev.gap, 2);
	CHECK_EQ(fd.protocol_errors, 2);
	CHECK_EQ(fd.missed, 2);
	/* a sequence that does not grow is refused, the baseline kept */
	card_record(&card, 3, 3, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_SEQUENCE);
	card.seq = 10;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK_EQ(ev.gap, 0);
}

/*
 * A card gone from the bus reads all ones: IRQ_STATUS's reserved bits,
 * DONE_SLOT and DONE_LENGTH can never be all ones on a live card.  It is
 * "gone", counted once per episode, nothing is acknowledged or taken as
 * a baseline; when MAGIC answers again the card is back and the next
 * records are taken (a sequence that restarted is a new baseline).
 */
static void test_all_ones_is_card_gone(void)
{
	u32 writes;

	setup();
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	card.gone = true;
	card.nlog = 0;
	CHECK_EQ(take(), FPGAGDR_FDONE_GONE);
	writes = 0;
	for (u32 i = 0; i < card.nlog && i < LOG_MAX; i++)
		writes += card.log[i].op == 'w';
	CHECK_EQ(writes, 0);
	CHECK_EQ(take(), FPGAGDR_FDONE_GONE);
	CHECK_EQ(fd.gone_reads, 1);
	CHECK_EQ(fd.events, 1);
	CHECK(fd.gone);
	/* back, reset meanwhile: sequence 0 again is a fresh start */
	card_reset(&card);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_BACK);
	CHECK(!fd.gone);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 0);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK(ev.fresh);
	CHECK_EQ(fd.protocol_errors, 0);

	/* the card goes between two reads of the record */
	card_frame(&card, 100);
	card.vanish_at = 4;		/* IRQ_STATUS, LO, HI fine; DONE_SLOT not */
	CHECK_EQ(take(), FPGAGDR_FDONE_GONE);
	CHECK_EQ(fd.gone_reads, 2);
	CHECK_EQ(fd.protocol_errors, 0);
	/* back without a reset: the sequence goes on, the gap is counted */
	card.vanish_at = 0;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_BACK);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 2);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK_EQ(ev.gap, 1);

	/* found gone by someone else (the XDMA's own registers) */
	CHECK(fpgagdr_fdone_set_gone(&fd));
	CHECK(!fpgagdr_fdone_set_gone(&fd));
	CHECK_EQ(fd.gone_reads, 3);
}

/* A wait that saw no event looks at the card once. */
static void test_probe(void)
{
	setup();
	CHECK_EQ(fpgagdr_fdone_probe(&fd, &io), FPGAGDR_FDONE_NONE);
	card.gone = true;
	CHECK_EQ(fpgagdr_fdone_probe(&fd, &io), FPGAGDR_FDONE_GONE);
	CHECK_EQ(fpgagdr_fdone_probe(&fd, &io), FPGAGDR_FDONE_GONE);
	CHECK_EQ(fd.gone_reads, 1);
	card.gone = false;
	CHECK_EQ(fpgagdr_fdone_probe(&fd, &io), FPGAGDR_FDONE_BACK);
	CHECK_EQ(fpgagdr_fdone_probe(&fd, &io), FPGAGDR_FDONE_NONE);
}

/*
 * A card that ignores HOST_ACK keeps FRAME_PENDING set and re-raises
 * frame-done: the same record again and again.  Repeats are not events
 * (no flood of refused events); the FPGAGDR_FDONE_STORM_REPEATS-th in a
 * row says storm, once; a new frame is an event again, its gap counted.
 */
static void test_storm(void)
{
	u32 i;

	setup();
	card.deaf = true;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	for (i = 1; i < FPGAGDR_FDONE_STORM_REPEATS; i++)
		CHECK_EQ(take(), FPGAGDR_FDONE_REPEAT);
	CHECK_EQ(take(), FPGAGDR_FDONE_STORM);
	CHECK_EQ(fd.storms, 1);
	CHECK_EQ(fd.repeated, FPGAGDR_FDONE_STORM_REPEATS);
	CHECK_EQ(fd.events, 1);
	CHECK_EQ(fd.protocol_errors, 0);
	for (i = 0; i < 3; i++)
		CHECK(take() == FPGAGDR_FDONE_REPEAT);
	/* frames still complete: taken by polling, counted exactly */
	card_frame(&card, 100);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 2);
	CHECK_EQ(ev.gap, 1);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK_EQ(take(), FPGAGDR_FDONE_REPEAT);
	CHECK_EQ(fd.storms, 1);
}

/*
 * After a reset the card's sequence starts at 0.  A hard rebase (the
 * function was reset) takes the next record as a fresh baseline; a soft
 * one (a PCIe error without a reset) counts the gap when the sequence
 * went on and starts afresh when it did not.
 */
static void test_rebase(void)
{
	setup();
	card.seq = 40;
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	card_reset(&card);
	fpgagdr_fdone_rebase(&fd, false);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 0);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK(ev.fresh);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK(!ev.fresh);

	/* soft: the card went on */
	fpgagdr_fdone_rebase(&fd, true);
	card_frame(&card, 100);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 3);
	CHECK_EQ(ev.gap, 1);
	CHECK(!ev.fresh);
	/* soft: the card had restarted */
	fpgagdr_fdone_rebase(&fd, true);
	card_reset(&card);
	card_frame(&card, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.seq, 0);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_OK);
	CHECK(ev.fresh);
	CHECK_EQ(fd.protocol_errors, 0);
	CHECK_EQ(fd.rebases, 3);
	/* only the next record: then the sequence must grow again */
	card_record(&card, 0, 0, 100);
	CHECK_EQ(take(), FPGAGDR_FDONE_REPEAT);
	card_record(&card, 0, 0, 200);
	CHECK_EQ(take(), FPGAGDR_FDONE_EVENT);
	CHECK_EQ(ev.rule, FPGAGDR_FRAMES_RULE_SEQUENCE);
}

int main(void)
{
	RUN(test_frames_in_order);
	RUN(test_coalesced_frames_are_a_gap);
	RUN(test_ack_is_flushed_by_a_read);
	RUN(test_broken_record_is_never_the_baseline);
	RUN(test_all_ones_is_card_gone);
	RUN(test_probe);
	RUN(test_storm);
	RUN(test_rebase);
	return test_summary();
}
