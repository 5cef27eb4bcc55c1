// SPDX-License-Identifier: GPL-2.0
/*
 * The host's side of the frame-done record (pure logic, see
 * fpgagdr-fdone.h).
 *
 * The register sequence, docs/card-protocol.md "What the host does":
 * IRQ_STATUS; if FRAME_PENDING: DONE_SEQ_LO (which latches the record),
 * DONE_SEQ_HI, DONE_SLOT, DONE_LENGTH; HOST_ACK with the sequence's low
 * word; then IRQ_STATUS once more.  HOST_ACK is a posted write: the read
 * after it cannot pass it (PCIe ordering), so when this returns the card
 * has the acknowledge and a legacy interrupt has fallen.
 *
 * What a card on a bad day looks like, and what is decided here:
 *  - gone from the bus (surprise removal, link down): every read
 *    completes with all ones.  IRQ_STATUS's reserved bits, DONE_SLOT
 *    (< 1024) and DONE_LENGTH (<= SLOT_SIZE, a multiple of 4096) can never
 *    read 0xffffffff on a live card, so any of them doing so is "gone":
 *    nothing is acknowledged or kept.  While gone, MAGIC is read first;
 *    once it answers "FGDR" again the card is back and may have been reset
 *    meanwhile (a soft rebase, below);
 *  - a record that breaks a rule is handed out as broken and never
 *    becomes the baseline the next records are judged against (one
 *    garbage sequence would otherwise make every later one "not growing");
 *  - the record taken last time, again (a card that ignores HOST_ACK and
 *    raises frame-done again, or a late interrupt): no event;
 *    FPGAGDR_FDONE_STORM_REPEATS of them in a row are a storm;
 *  - a reset restarts the card's sequence at 0: the caller drops the
 *    baseline (hard: the function was reset; soft: a PCIe error without a
 *    reset, where the next record starts a new baseline only if its
 *    sequence does not grow).
 */
#include <uapi/linux/fpgagdr.h>

#include "fpgagdr-fdone.h"

#define FPGAGDR_FDONE_ALL_ONES	0xffffffffU

/**
 * fpgagdr_fdone_init() - state for a card whose geometry was checked
 * @fd: the state
 * @slot_count: SLOT_COUNT (at least 1)
 * @slot_size: SLOT_SIZE, bytes
 *
 * No baseline: the first record taken is a fresh one.
 */
void fpgagdr_fdone_init(struct fpgagdr_fdone *fd, u32 slot_count,
			u32 slot_size)
{
	*fd = (struct fpgagdr_fdone){ .slot_count = slot_count,
				      .slot_size = slot_size };
}

/* The rule @ev breaks against the baseline, or FPGAGDR_FRAMES_RULE_OK. */
static u32 fpgagdr_fdone_check(const struct fpgagdr_fdone *fd,
			       const struct fpgagdr_fdone_ev *ev)
{
	u32 slot;

	if (!ev->fresh && ev->seq <= fd->last_seq)
		return FPGAGDR_FRAMES_RULE_SEQUENCE;
	div_u64_rem(ev->seq, fd->slot_count, &slot);
	if (ev->slot != slot)
		return FPGAGDR_FRAMES_RULE_SLOT;
	if (ev->len < FPGAGDR_FRAME_HEADER_LEN || ev->len > fd->slot_size)
		return FPGAGDR_FRAMES_RULE_LENGTH;
	return FPGAGDR_FRAMES_RULE_OK;
}

/**
 * fpgagdr_fdone_set_gone() - the card reads all ones
 * @fd: the card's state
 *
 * For the caller that found it through other registers (the XDMA's own),
 * and for fpgagdr_fdone_take() and _probe().
 *
 * Return: true when this starts an episode (counted in @gone_reads; the
 * caller names it in the log), false when the card was gone already.
 */
bool fpgagdr_fdone_set_gone(struct fpgagdr_fdone *fd)
{
	if (fd->gone)
		return false;
	fd->gone = true;
	fd->gone_reads++;
	return true;
}

/*
 * While gone, MAGIC says whether the card answers again.  Back: it may
 * have been reset meanwhile, so the baseline goes (soft) and so does the
 * last record (a reset card's first record may equal it).
 */
static enum fpgagdr_fdone_action
fpgagdr_fdone_still_gone(struct fpgagdr_fdone *fd,
			 const struct fpgagdr_fdone_io *io)
{
	if (io->read(io->ctx, FPROTO_REG_MAGIC) != FPROTO_MAGIC_VALUE)
		return FPGAGDR_FDONE_GONE;
	fd->gone = false;
	fpgagdr_fdone_rebase(fd, true);
	return FPGAGDR_FDONE_BACK;
}

static bool fpgagdr_fdone_same(const struct fpgagdr_fdone *fd,
			       const struct fpgagdr_fdone_ev *ev)
{
	return fd->have_rec && ev->seq == fd->rec_seq &&
	       ev->slot == fd->rec_slot && ev->len == fd->rec_len;
}

/*
 * Judge a record taken and acknowledged: a repeat, or an event with its
 * rule and its gap.  Only an event that broke no rule moves the baseline.
 */
static enum fpgagdr_fdone_action
fpgagdr_fdone_judge(struct fpgagdr_fdone *fd, struct fpgagdr_fdone_ev *ev)
{
	if (fpgagdr_fdone_same(fd, ev)) {
		fd->repeated++;
		if (++fd->repeats < FPGAGDR_FDONE_STORM_REPEATS)
			return FPGAGDR_FDONE_REPEAT;
		fd->repeats = 0;
		fd->storms++;
		return FPGAGDR_FDONE_STORM;
	}
	fd->repeats = 0;
	fd->have_rec = true;
	fd->rec_seq = ev->seq;
	fd->rec_slot = ev->slot;
	fd->rec_len = ev->len;

	ev->fresh = !fd->have_last ||
		    (fd->soft_rebase && ev->seq <= fd->last_seq);
	ev->rule = fpgagdr_fdone_check(fd, ev);
	fd->events++;
	if (ev->rule) {
		fd->protocol_errors++;
		return FPGAGDR_FDONE_EVENT;
	}
	fd->soft_rebase = false;
	if (!ev->fresh) {
		ev->gap = ev->seq - fd->last_seq - 1;
		fd->missed += ev->gap;
	}
	fd->last_seq = ev->seq;
	fd->have_last = true;
	return FPGAGDR_FDONE_EVENT;
}

/**
 * fpgagdr_fdone_take() - take the frame-done record if one is pending
 * @fd: the card's state
 * @io: its user register block
 * @ev: the record, filled for FPGAGDR_FDONE_EVENT
 *
 * Reads IRQ_STATUS and, when FRAME_PENDING is set, the record (DONE_SEQ_LO
 * first: it latches the rest), acknowledges it with HOST_ACK and reads
 * IRQ_STATUS again to flush that write.  While the card is gone only
 * MAGIC is read.
 *
 * Context: the caller's; performs at most 7 register accesses and never
 * sleeps or loops (the caller bounds how often it calls this).
 * Return: FPGAGDR_FDONE_NONE (nothing pending), _EVENT (hand @ev out; its
 * rule may be broken), _REPEAT (the last record again: nothing to hand
 * out), _STORM (the repeat that makes a storm: mask the interrupt and
 * poll), _GONE (all ones: the card is gone; @gone_reads counts the first
 * of an episode), _BACK (it answers again: re-apply the card's settings,
 * it may have been reset, and take again).
 */
enum fpgagdr_fdone_action fpgagdr_fdone_take(struct fpgagdr_fdone *fd,
					     const struct fpgagdr_fdone_io *io,
					     struct fpgagdr_fdone_ev *ev)
{
	u32 status, lo, hi;

	if (fd->gone)
		return fpgagdr_fdone_still_gone(fd, io);
	status = io->read(io->ctx, FPROTO_REG_IRQ_STATUS);
	if (status == FPGAGDR_FDONE_ALL_ONES) {
		fpgagdr_fdone_set_gone(fd);
		return FPGAGDR_FDONE_GONE;
	}
	if (!(status & FPROTO_IRQ_STATUS_FRAME_PENDING))
		return FPGAGDR_FDONE_NONE;
	*ev = (struct fpgagdr_fdone_ev){ 0 };
	lo = io->read(io->ctx, FPROTO_REG_DONE_SEQ_LO);	/* latches */
	hi = io->read(io->ctx, FPROTO_REG_DONE_SEQ_HI);
	ev->slot = io->read(io->ctx, FPROTO_REG_DONE_SLOT);
	ev->len = io->read(io->ctx, FPROTO_REG_DONE_LENGTH);
	if (ev->slot == FPGAGDR_FDONE_ALL_ONES ||
	    ev->len == FPGAGDR_FDONE_ALL_ONES) {
		fpgagdr_fdone_set_gone(fd);
		return FPGAGDR_FDONE_GONE;
	}
	ev->seq = (u64)hi << 32 | lo;
	io->write(io->ctx, FPROTO_REG_HOST_ACK, lo);
	/* flush the posted acknowledge */
	io->read(io->ctx, FPROTO_REG_IRQ_STATUS);
	return fpgagdr_fdone_judge(fd, ev);
}

/**
 * fpgagdr_fdone_rebase() - drop the baseline (a reset, a PCIe error)
 * @fd: the card's state
 * @soft: false when the card was reset (its sequence restarted at 0):
 *	the next record is a fresh baseline; true when it may or may not
 *	have been: the next record is one if its sequence does not grow,
 *	else its gap is counted
 *
 * The last record is forgotten too, so the first record after a reset is
 * never taken for a repeat.
 */
void fpgagdr_fdone_rebase(struct fpgagdr_fdone *fd, bool soft)
{
	if (soft && fd->have_last)
		fd->soft_rebase = true;
	else
		fd->have_last = false;
	fd->have_rec = false;
	fd->repeats = 0;
	fd->rebases++;
}

/**
 * fpgagdr_fdone_probe() - look at the card once, without taking a record
 * @fd: the card's state
 * @io: its user register block
 *
 * For a wait that ended without an event: is the card gone?  One read of
 * IRQ_STATUS (MAGIC while it is gone).
 *
 * Return: FPGAGDR_FDONE_GONE, _BACK (it answers again, see
 * fpgagdr_fdone_take()) or _NONE.
 */
enum fpgagdr_fdone_action fpgagdr_fdone_probe(struct fpgagdr_fdone *fd,
					      const struct fpgagdr_fdone_io *io)
{
	if (fd->gone)
		return fpgagdr_fdone_still_gone(fd, io);
	if (io->read(io->ctx, FPROTO_REG_IRQ_STATUS) != FPGAGDR_FDONE_ALL_ONES)
		return FPGAGDR_FDONE_NONE;
	fpgagdr_fdone_set_gone(fd);
	return FPGAGDR_FDONE_GONE;
}
