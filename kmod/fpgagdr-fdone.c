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
 * has the acknowledge (a legacy interrupt falls later still: after the
 * card's request, the XDMA's Deassert_INTx message).
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
 *  - a reset restarts the card's sequence at 0 and, on a protocol 1.1
 *    card, changes its EPOCH.  EPOCH is read at attach, whenever a
 *    record's sequence does not grow, and when the caller asks
 *    (fpgagdr_fdone_epoch(): after a PCIe error, when capture starts, when
 *    a wait saw no frame); a changed EPOCH drops the baseline for good
 *    (hard) and the caller drops the events still queued.  Without EPOCH
 *    (a 1.0 card) the caller drops the baseline itself: hard when the
 *    function was reset, soft after a PCIe error without a reset, where
 *    the next record starts a new baseline only if its sequence does not
 *    grow;
 *  - the torn-frame check after the host's copy of a slot
 *    (fpgagdr_fdone_torn()) and the card's DROPPED count
 *    (fpgagdr_fdone_dropped()) read protocol 1.1's LIVE_SEQ_LO and DROPPED.
 */
#include <uapi/linux/fpgagdr.h>

#include "fpgagdr-fdone.h"

#define FPGAGDR_FDONE_ALL_ONES	0xffffffffU

/**
 * fpgagdr_fdone_init() - state for a card whose geometry was checked
 * @fd: the state
 * @slot_count: SLOT_COUNT (at least FPROTO_SLOT_COUNT_MIN: the caller
 *	checked the geometry)
 * @slot_size: SLOT_SIZE, bytes
 * @version: VERSION
 * @io: its user register block
 *
 * No baseline: the first record taken is a fresh one.  On a protocol 1.1
 * card EPOCH and DROPPED are read (two register reads): EPOCH is the
 * epoch the next records belong to (a card whose EPOCH reads 0, which 1.1
 * forbids, is judged by its sequence alone: @has_epoch stays false), and
 * DROPPED is counted from here.
 */
void fpgagdr_fdone_init(struct fpgagdr_fdone *fd, u32 slot_count,
			u32 slot_size, u32 version,
			const struct fpgagdr_fdone_io *io)
{
	*fd = (struct fpgagdr_fdone){
		.slot_count = slot_count,
		.slot_size = slot_size,
		.v11 = FIELD_GET(FPROTO_VERSION_MINOR, version) >= 1,
	};
	if (!fd->v11)
		return;
	fd->epoch = io->read(io->ctx, FPROTO_REG_EPOCH);
	fd->has_epoch = fd->epoch && fd->epoch != FPGAGDR_FDONE_ALL_ONES;
	fd->dropped_reg = io->read(io->ctx, FPROTO_REG_DROPPED);
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
 * have been reset meanwhile.  With EPOCH that is known: a new one drops
 * the baseline (hard), the same keeps it (the sequence went on; its gap
 * counts).  Without, the baseline goes softly and so does the last record
 * (a reset card's first record may equal it).
 */
static enum fpgagdr_fdone_action
fpgagdr_fdone_still_gone(struct fpgagdr_fdone *fd,
			 const struct fpgagdr_fdone_io *io)
{
	enum fpgagdr_fdone_action act;

	if (io->read(io->ctx, FPROTO_REG_MAGIC) != FPROTO_MAGIC_VALUE)
		return FPGAGDR_FDONE_GONE;
	fd->gone = false;
	if (!fd->has_epoch) {
		fpgagdr_fdone_rebase(fd, true);
		return FPGAGDR_FDONE_BACK;
	}
	act = fpgagdr_fdone_epoch(fd, io);
	if (act == FPGAGDR_FDONE_GONE || act == FPGAGDR_FDONE_EPOCH)
		return act;
	return FPGAGDR_FDONE_BACK;
}

/**
 * fpgagdr_fdone_epoch() - read EPOCH: was the card reset?
 * @fd: the card's state
 * @io: its user register block
 *
 * For the moments a reset may have passed unseen: after a PCIe error,
 * when capture starts, when a wait saw no frame, and (inside
 * fpgagdr_fdone_take()) when a record's sequence does not grow.  A
 * changed EPOCH means the card was reset: the sequence restarted at 0,
 * the slots were rewritten, DROPPED restarted.  The baseline and the last
 * record are dropped (counted in @rebases when there was one), so the next
 * record is a fresh start; the caller drops the events still queued.
 *
 * Context: the caller's; one register read on a card with EPOCH, none
 * otherwise (and none while the card is gone).
 * Return: FPGAGDR_FDONE_EPOCH (changed, counted in @epoch_changes),
 * _GONE (all ones) or _NONE (the same, or no EPOCH to read).
 */
enum fpgagdr_fdone_action fpgagdr_fdone_epoch(struct fpgagdr_fdone *fd,
					      const struct fpgagdr_fdone_io *io)
{
	u32 epoch;

	if (!fd->has_epoch || fd->gone)
		return FPGAGDR_FDONE_NONE;
	epoch = io->read(io->ctx, FPROTO_REG_EPOCH);
	if (epoch == FPGAGDR_FDONE_ALL_ONES) {
		fpgagdr_fdone_set_gone(fd);
		return FPGAGDR_FDONE_GONE;
	}
	if (epoch == fd->epoch)
		return FPGAGDR_FDONE_NONE;
	fd->epoch = epoch;
	fd->epoch_changes++;
	fd->dropped_reg = 0;		/* DROPPED restarted with the reset */
	if (fd->have_last || fd->have_rec)
		fpgagdr_fdone_rebase(fd, false);
	fd->soft_rebase = false;
	return FPGAGDR_FDONE_EPOCH;
}

static bool fpgagdr_fdone_same(const struct fpgagdr_fdone *fd,
			       const struct fpgagdr_fdone_ev *ev)
{
	return fd->have_rec && ev->seq == fd->rec_seq &&
	       ev->slot == fd->rec_slot && ev->len == fd->rec_len;
}

/* The record's sequence does not grow past what was taken before. */
static bool fpgagdr_fdone_stalls(const struct fpgagdr_fdone *fd,
				 const struct fpgagdr_fdone_ev *ev)
{
	return (fd->have_rec && ev->seq <= fd->rec_seq) ||
	       (fd->have_last && ev->seq <= fd->last_seq);
}

/*
 * Judge a record taken and acknowledged: a repeat, or an event with its
 * rule and its gap.  Only an event that broke no rule moves the baseline.
 * A sequence that does not grow is first looked at against EPOCH: a card
 * that was reset starts again at 0, which is a new run, not a broken
 * rule (nor a repeat of the last record).
 */
static enum fpgagdr_fdone_action
fpgagdr_fdone_judge(struct fpgagdr_fdone *fd,
		    const struct fpgagdr_fdone_io *io,
		    struct fpgagdr_fdone_ev *ev)
{
	if (fpgagdr_fdone_stalls(fd, ev)) {
		switch (fpgagdr_fdone_epoch(fd, io)) {
		case FPGAGDR_FDONE_GONE:
			return FPGAGDR_FDONE_GONE;
		case FPGAGDR_FDONE_EPOCH:
			ev->new_epoch = true;
			break;
		default:
			break;
		}
	}
	ev->epoch = fd->epoch;
	if (fpgagdr_fdone_same(fd, ev)) {
		fd->repeated++;
		/* once declared, a storm lasts until the caller ends it */
		if (++fd->repeats < FPGAGDR_FDONE_STORM_REPEATS || fd->stormed)
			return FPGAGDR_FDONE_REPEAT;
		fd->repeats = 0;
		fd->storms++;
		fd->stormed = true;
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
 * IRQ_STATUS again to flush that write; when the record's sequence does
 * not grow, EPOCH too (fpgagdr_fdone_epoch()).  While the card is gone
 * only MAGIC is read (and EPOCH when it answers).
 *
 * Context: the caller's; performs at most 8 register accesses and never
 * sleeps or loops (the caller bounds how often it calls this).
 * Return: FPGAGDR_FDONE_NONE (nothing pending), _EVENT (hand @ev out; its
 * rule may be broken; @ev->new_epoch: drop the events queued before it),
 * _REPEAT (the last record again: nothing to hand out), _STORM (the
 * repeat that makes a storm: mask the interrupt and poll), _GONE (all
 * ones: the card is gone; @gone_reads counts the first of an episode),
 * _BACK (it answers again: re-apply the card's settings, it may have been
 * reset, and take again), _EPOCH (it answers again with a new EPOCH: it
 * was reset; as _BACK, and drop the events still queued).
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
	return fpgagdr_fdone_judge(fd, io, ev);
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
 * fpgagdr_fdone_storm_over() - the caller ended a storm
 * @fd: the card's state
 *
 * After FPGAGDR_FDONE_STORM the caller polls, and a card that ignores
 * HOST_ACK keeps showing the same record until its next frame: those
 * repeats are the same storm, not new ones.  When the caller lets
 * interrupts back (capture restarted, the card reset), repeats count
 * towards a new storm again.
 */
void fpgagdr_fdone_storm_over(struct fpgagdr_fdone *fd)
{
	fd->stormed = false;
	fd->repeats = 0;
}

/**
 * fpgagdr_fdone_probe() - look at the card once, without taking a record
 * @fd: the card's state
 * @io: its user register block
 *
 * For a wait that ended without an event: is the card gone, or was it
 * reset (a reset clears CONTROL: the card stops producing frames until
 * the host sets it again)?  One read of IRQ_STATUS and, on a card with
 * EPOCH, one of EPOCH (MAGIC while it is gone).
 *
 * Return: FPGAGDR_FDONE_GONE, _BACK (it answers again, see
 * fpgagdr_fdone_take()), _EPOCH (a new EPOCH: as
 * fpgagdr_fdone_epoch()) or _NONE.
 */
enum fpgagdr_fdone_action fpgagdr_fdone_probe(struct fpgagdr_fdone *fd,
					      const struct fpgagdr_fdone_io *io)
{
	if (fd->gone)
		return fpgagdr_fdone_still_gone(fd, io);
	if (io->read(io->ctx, FPROTO_REG_IRQ_STATUS) == FPGAGDR_FDONE_ALL_ONES) {
		fpgagdr_fdone_set_gone(fd);
		return FPGAGDR_FDONE_GONE;
	}
	return fpgagdr_fdone_epoch(fd, io);
}

/*
 * A register that may legitimately read all ones (DROPPED, LIVE_SEQ_LO)
 * did: IRQ_STATUS, whose reserved bits read 0 on a live card, tells
 * whether the card is gone.
 */
static bool fpgagdr_fdone_gone_now(struct fpgagdr_fdone *fd,
				   const struct fpgagdr_fdone_io *io)
{
	if (io->read(io->ctx, FPROTO_REG_IRQ_STATUS) != FPGAGDR_FDONE_ALL_ONES)
		return false;
	fpgagdr_fdone_set_gone(fd);
	return true;
}

/**
 * fpgagdr_fdone_dropped() - the frames the card dropped whole, read now
 * @fd: the card's state
 * @io: its user register block
 *
 * Reads DROPPED (32 bits, wrapping, 0 at every reset of the card) and adds
 * what it grew by since the last read to @dropped.  Call
 * fpgagdr_fdone_epoch() before, so that a reset since the last read is
 * seen (DROPPED restarted: what it counted after that read is lost).
 *
 * Context: the caller's; one register read (two when it reads all ones)
 * on a protocol 1.1 card that is not gone, none otherwise.
 * Return: @dropped.
 */
u64 fpgagdr_fdone_dropped(struct fpgagdr_fdone *fd,
			  const struct fpgagdr_fdone_io *io)
{
	u32 v;

	if (!fd->v11 || fd->gone)
		return fd->dropped;
	v = io->read(io->ctx, FPROTO_REG_DROPPED);
	if (v == FPGAGDR_FDONE_ALL_ONES && fpgagdr_fdone_gone_now(fd, io))
		return fd->dropped;
	fd->dropped += (u32)(v - fd->dropped_reg);
	fd->dropped_reg = v;
	return fd->dropped;
}

/**
 * fpgagdr_fdone_torn() - the torn-frame check after a copy of a slot
 * @fd: the card's state
 * @io: its user register block
 * @seq: the frame's sequence (its event's)
 * @epoch: the event's epoch (struct fpgagdr_fdone_ev.epoch)
 *
 * docs/card-protocol.md, "Write order and the torn-frame check": the card
 * starts writing frame @seq + N into the frame's slot only after frame
 * @seq + N - 1 completed, so once the copy has finished, LIVE_SEQ_LO -
 * @seq (modulo 2^32, against @seq's low word) below N - 1 proves the copy
 * whole.  A frame of an epoch the host has seen the card leave is not
 * vouched for (its slot was rewritten by the reset's new run), nor is one
 * of a card that reads all ones.
 *
 * Context: the caller's, after the copy completed; one register read on
 * a protocol 1.1 card (two when it reads all ones), none otherwise.
 * Return: FPGAGDR_FRAME_CHECK_WHOLE, _TORN (counted in @torn) or
 * _UNCHECKED (a protocol 1.0 card: no LIVE_SEQ_LO).
 */
u32 fpgagdr_fdone_torn(struct fpgagdr_fdone *fd,
		       const struct fpgagdr_fdone_io *io, u64 seq, u32 epoch)
{
	u32 live;

	if (!fd->v11)
		return FPGAGDR_FRAME_CHECK_UNCHECKED;
	if (fd->gone || epoch != fd->epoch)
		goto torn;
	live = io->read(io->ctx, FPROTO_REG_LIVE_SEQ_LO);
	if (live == FPGAGDR_FDONE_ALL_ONES && fpgagdr_fdone_gone_now(fd, io))
		goto torn;
	if ((u32)(live - lower_32_bits(seq)) < fd->slot_count - 1)
		return FPGAGDR_FRAME_CHECK_WHOLE;
torn:
	fd->torn++;
	return FPGAGDR_FRAME_CHECK_TORN;
}
