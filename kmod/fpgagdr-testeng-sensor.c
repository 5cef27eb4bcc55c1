// SPDX-License-Identifier: GPL-2.0
/*
 * TEST-ONLY frame sensor of the software card (issue 15).  Compiled in only
 * with FPGAGDR_TEST_ENGINE=y, never part of a product build.
 *
 * It is the card side of docs/card-protocol.md, built from the same
 * register definitions (fpgagdr-frames-regs.h, which
 * scripts/check-card-protocol.py compares with the document):
 *
 *  - the user register block is one page of memory (mmap() of
 *    fpgagdrN_user maps it), with the protocol's side effects on the
 *    accessors the module uses: reading DONE_SEQ_LO latches the record,
 *    writing CONTROL starts or stops capture (CAPTURE 0->1 clears a stale
 *    FRAME_PENDING), HOST_ACK clears FRAME_PENDING only for the latest
 *    sequence and re-raises otherwise; protocol 1.1's EPOCH (a new value,
 *    never 0, for every card and every reset of it), DROPPED and
 *    LIVE_SEQ_LO (the live sequence, no latch); with test_user_version of
 *    minor 0 the card is a 1.0 card and those read 0.  A write takes effect
 *    only as a whole 32-bit word (the accessors are 32-bit).  Offsets 0x100
 *    up to the end of the page are scratch registers (read/write), as a
 *    design's own registers would be;
 *  - while CONTROL.CAPTURE is set, a worker writes one real frame per
 *    period of sensor_fps into slot (sequence mod SLOT_COUNT) of the card's
 *    memory: the 64-byte header of docs/frames.md (magic, geometry,
 *    sequence, capture time, payload CRC-32, header CRC-32) and a test
 *    pattern (a diagonal gradient moving one pixel per frame, the sequence
 *    in the first 8 payload bytes), or the frames user space pushed
 *    through debugfs (in a loop; sequence, time and header CRC rewritten),
 *    payload first and the header last, as protocol 1.1 says, then updates
 *    the frame-done record, sets FRAME_PENDING and raises the user
 *    interrupt (through edu's interrupt) if IRQ_EN and the emulated XDMA
 *    user interrupt mask allow it.  A frame that completes while one is
 *    pending only updates the record (coalesced), as the protocol says;
 *  - a reset of the card (AER slot reset, or sensor_reset) resets the block
 *    as axi_aresetn does on an FPGA: a new EPOCH, sequence, record,
 *    DROPPED, CONTROL and FRAME_PENDING back to 0; a frame being written
 *    is abandoned, never announced.
 *
 * debugfs fpgagdr/testeng/: sensor_fps, sensor_width, sensor_height,
 * sensor_format (1 mono8, 2 rgb8); faults: sensor_stall (1: no frames
 * until 0), sensor_burst (N: the next tick produces N frames back to back),
 * sensor_overrun (1: the next tick produces a frame, waits up to a second
 * for the host to latch its record, then produces SLOT_COUNT more, so the
 * first one's slot is overwritten after the host was told of it),
 * sensor_bad_crc (N: the next N frames
 * carry a wrong payload CRC), sensor_bad_event (1: the next record the
 * host latches has its sequence back at 0, 2: a wrong slot, 3: a length
 * past the slot); sensor_drop (N: the next N frames are dropped whole
 * after their payload was written, as card memory that cannot keep up
 * makes an FPGA drop them: no sequence consumed, DROPPED counts them);
 * sensor_tear (S + 1: frame S, once its payload is in its slot, waits with
 * its header unwritten until sensor_tear is written 0, at most 2 s: the
 * slot holds the old header and the new payload meanwhile, what a C2H copy
 * overlapping the card's write reads); sensor_reset (1: reset the card's
 * register block); sensor_raise (K: raise user interrupt K once); sensor_frames
 * (write one whole frame per open/close to push it), sensor_frames_clear;
 * sensor (counters).  The card's registers come from module parameters
 * test_user_bar, test_user_magic, test_user_version, test_slot_base,
 * test_slot_size, test_slot_count, test_user_irq.
 */
#include <linux/crc32.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "fpgagdr-testeng-sensor.h"

static bool fpgagdr_ts_user_bar = true;
module_param_named(test_user_bar, fpgagdr_ts_user_bar, bool, 0444);
MODULE_PARM_DESC(test_user_bar, "TEST ONLY: the software card has a user register block (default 1)");

static unsigned int fpgagdr_ts_magic = FPROTO_MAGIC_VALUE;
module_param_named(test_user_magic, fpgagdr_ts_magic, uint, 0444);
MODULE_PARM_DESC(test_user_magic, "TEST ONLY: the software card's MAGIC register (default 0x52444746)");

static unsigned int fpgagdr_ts_version = FPROTO_VERSION_VALUE;
module_param_named(test_user_version, fpgagdr_ts_version, uint, 0444);
MODULE_PARM_DESC(test_user_version, "TEST ONLY: the software card's VERSION register (default 0x10000)");

static unsigned long long fpgagdr_ts_slot_base = 256ULL << 20;
module_param_named(test_slot_base, fpgagdr_ts_slot_base, ullong, 0444);
MODULE_PARM_DESC(test_slot_base, "TEST ONLY: the software card's SLOT_BASE (default 256 MiB)");

static unsigned int fpgagdr_ts_slot_size = 1U << 20;
module_param_named(test_slot_size, fpgagdr_ts_slot_size, uint, 0444);
MODULE_PARM_DESC(test_slot_size, "TEST ONLY: the software card's SLOT_SIZE (default 1 MiB)");

static unsigned int fpgagdr_ts_slot_count = 8;
module_param_named(test_slot_count, fpgagdr_ts_slot_count, uint, 0444);
MODULE_PARM_DESC(test_slot_count, "TEST ONLY: the software card's SLOT_COUNT (default 8)");

static unsigned int fpgagdr_ts_user_irq;
module_param_named(test_user_irq, fpgagdr_ts_user_irq, uint, 0444);
MODULE_PARM_DESC(test_user_irq, "TEST ONLY: the software card's USER_IRQ (default 0)");

/* Largest frame the sensor renders or accepts: what a slot may hold */
#define FPGAGDR_TS_FRAME_MAX	(64U << 20)
/* Frames user space may push */
#define FPGAGDR_TS_PUSH_MAX	16
/* The first scratch register */
#define FPGAGDR_TS_SCRATCH	0x100

enum {
	FPGAGDR_TS_BAD_NONE,
	FPGAGDR_TS_BAD_SEQUENCE,
	FPGAGDR_TS_BAD_SLOT,
	FPGAGDR_TS_BAD_LENGTH,
};

/**
 * struct fpgagdr_ts_frame - a frame user space pushed
 * @len: bytes
 * @data: header and payload
 */
struct fpgagdr_ts_frame {
	size_t len;
	u8 *data;
};

/**
 * struct fpgagdr_ts_knobs - debugfs knobs, shared by every sensor
 * @fps: frames per second (0: none)
 * @width: test pattern width, pixels
 * @height: test pattern height, pixels
 * @format: 1 mono8, 2 rgb8
 * @stall: no frames while set
 * @burst: frames the next tick produces
 * @overrun: the next tick produces a frame, waits for its record to be
 *	latched, then produces SLOT_COUNT more
 * @bad_crc: frames left that carry a wrong payload CRC
 * @bad_event: FPGAGDR_TS_BAD_* for the next record
 * @drop: frames left to drop whole
 * @tear: 0, or 1 + the sequence of the frame that holds its header back
 * @push_lock: protects @push and @npush
 * @push: pushed frames, used in a loop
 * @npush: entries in @push
 * @push_refused: pushed frames refused (bad header, too many, too long)
 * @dbg: the debugfs directory
 */
struct fpgagdr_ts_knobs {
	u32 fps;
	u32 width;
	u32 height;
	u32 format;
	u32 stall;
	atomic_t burst;
	atomic_t overrun;
	atomic_t bad_crc;
	atomic_t bad_event;
	atomic_t drop;
	u64 tear;
	struct mutex push_lock;	/* push, npush */
	struct fpgagdr_ts_frame push[FPGAGDR_TS_PUSH_MAX];
	u32 npush;
	atomic64_t push_refused;
	struct dentry *dbg;
};

static struct fpgagdr_ts_knobs fpgagdr_ts = {
	.fps = 30,
	.width = 64,
	.height = 48,
	.format = 1,
	.push_lock = __MUTEX_INITIALIZER(fpgagdr_ts.push_lock),
};

/* the last EPOCH given to a card (fpgagdr_ts_new_epoch()) */
static atomic_t fpgagdr_ts_epochs;

/* every sensor, for debugfs and sensor_raise; under fpgagdr_ts_list_lock */
static LIST_HEAD(fpgagdr_ts_list);
static DEFINE_MUTEX(fpgagdr_ts_list_lock);

/**
 * struct fpgagdr_te_sensor - one software card's register block and sensor
 * @ops: the card's calls
 * @card: their argument
 * @name: the card's name, for debugfs
 * @node: in fpgagdr_ts_list
 * @lock: the registers and the record (taken inside fpgagdr-frames.c's
 *	lock, never around it)
 * @page: the register page
 * @regs: its words
 * @irq_mask: the emulated XDMA user interrupt enable mask
 * @pending: FRAME_PENDING
 * @seq: sequence of the next frame (= frames produced)
 * @gen: resets so far; a frame begun before one is abandoned
 * @epoch: EPOCH
 * @dropped: DROPPED
 * @tearing: a frame holds its header back (sensor_tear)
 * @live_seq: the latest completed frame's record, as reported
 * @live_slot: its slot
 * @live_len: its length
 * @latched_seq: the live sequence when the host last latched the record
 *	(before any sensor_bad_event fault), U64_MAX before the first latch
 * @buf: the frame being rendered, one slot long
 * @push_next: the pushed frame to use next
 * @raised: interrupts raised
 * @coalesced: frames completed while one was pending
 * @acks: HOST_ACK writes
 * @stop: the sensor is going away
 * @work: the sensor's ticks
 */
struct fpgagdr_te_sensor {
	const struct fpgagdr_te_card_ops *ops;
	void *card;
	char name[16];
	struct list_head node;
	spinlock_t lock;	/* registers, record */
	struct page *page;
	u32 *regs;
	u32 irq_mask;
	bool pending;
	u64 seq;
	u32 gen;
	u32 epoch;
	u32 dropped;
	bool tearing;
	u64 live_seq;
	u32 live_slot;
	u32 live_len;
	u64 latched_seq;
	u8 *buf;
	u32 push_next;
	u64 raised;
	u64 coalesced;
	u64 acks;
	bool stop;
	struct delayed_work work;
};

/* A frame (rendered or pushed) is at most a slot long. */
static size_t fpgagdr_ts_push_room(void)
{
	return min(max(fpgagdr_ts_slot_size, 1U), FPGAGDR_TS_FRAME_MAX);
}

static u32 fpgagdr_ts_reg(struct fpgagdr_te_sensor *s, u32 off)
{
	return s->regs[off / 4];
}

/* Should the user interrupt be raised now?  @lock held. */
static bool fpgagdr_ts_irq_wanted(struct fpgagdr_te_sensor *s)
{
	u32 irq = fpgagdr_ts_reg(s, FPROTO_REG_USER_IRQ);

	return s->pending && irq < FPROTO_USER_IRQS &&
	       (fpgagdr_ts_reg(s, FPROTO_REG_CONTROL) & FPROTO_CONTROL_IRQ_EN) &&
	       (s->irq_mask & BIT(irq));
}

static void fpgagdr_ts_raise(struct fpgagdr_te_sensor *s)
{
	s->raised++;
	s->ops->raise(s->card, fpgagdr_ts_reg(s, FPROTO_REG_USER_IRQ));
}

/*
 * Copy the live record into the latched one; a sensor_bad_event fault
 * breaks the first record latched after it was set.  @lock held.
 */
static void fpgagdr_ts_latch(struct fpgagdr_te_sensor *s)
{
	u32 count = max(fpgagdr_ts_reg(s, FPROTO_REG_SLOT_COUNT), 1U);
	u64 seq = s->live_seq;
	u32 slot = s->live_slot, len = s->live_len;

	s->latched_seq = seq;
	switch (atomic_xchg(&fpgagdr_ts.bad_event, FPGAGDR_TS_BAD_NONE)) {
	case FPGAGDR_TS_BAD_SEQUENCE:
		seq = 0;	/* back to the start: never above */
		break;
	case FPGAGDR_TS_BAD_SLOT:
		slot = (slot + 1) % count;
		break;
	case FPGAGDR_TS_BAD_LENGTH:
		len = fpgagdr_ts_reg(s, FPROTO_REG_SLOT_SIZE) +
		      FPGAGDR_FRAME_HEADER_LEN;
		break;
	}
	s->regs[FPROTO_REG_DONE_SEQ_LO / 4] = lower_32_bits(seq);
	s->regs[FPROTO_REG_DONE_SEQ_HI / 4] = upper_32_bits(seq);
	s->regs[FPROTO_REG_DONE_SLOT / 4] = slot;
	s->regs[FPROTO_REG_DONE_LENGTH / 4] = len;
}

/* A card of protocol 1.1 or later (EPOCH, DROPPED, LIVE_SEQ_LO) */
static bool fpgagdr_ts_v11(struct fpgagdr_te_sensor *s)
{
	return FIELD_GET(FPROTO_VERSION_MINOR,
			 fpgagdr_ts_reg(s, FPROTO_REG_VERSION)) >= 1;
}

static u32 fpgagdr_ts_read(void *ctx, u32 off)
{
	struct fpgagdr_te_sensor *s = ctx;
	unsigned long flags;
	u32 v;

	spin_lock_irqsave(&s->lock, flags);
	switch (off) {
	case FPROTO_REG_EPOCH:
		v = fpgagdr_ts_v11(s) ? s->epoch : 0;
		break;
	case FPROTO_REG_DROPPED:
		v = fpgagdr_ts_v11(s) ? s->dropped : 0;
		break;
	case FPROTO_REG_LIVE_SEQ_LO:
		/* no latch: what the host's torn-frame check reads */
		v = fpgagdr_ts_v11(s) ? lower_32_bits(s->live_seq) : 0;
		break;
	case FPROTO_REG_DONE_SEQ_LO:
		/* the latch: the rest of the record is this record */
		fpgagdr_ts_latch(s);
		v = s->regs[FPROTO_REG_DONE_SEQ_LO / 4];
		break;
	case FPROTO_REG_HOST_ACK:
		v = 0;		/* write-only */
		break;
	case FPROTO_REG_IRQ_STATUS:
		v = s->pending ? FPROTO_IRQ_STATUS_FRAME_PENDING : 0;
		break;
	default:
		v = fpgagdr_ts_reg(s, off);
		break;
	}
	spin_unlock_irqrestore(&s->lock, flags);
	return v;
}

static void fpgagdr_ts_write(void *ctx, u32 off, u32 val)
{
	struct fpgagdr_te_sensor *s = ctx;
	bool raise = false, was;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	switch (off) {
	case FPROTO_REG_CONTROL:
		was = fpgagdr_ts_irq_wanted(s);
		/* CAPTURE 0->1: no event from before the restart */
		if ((val & FPROTO_CONTROL_CAPTURE) &&
		    !(fpgagdr_ts_reg(s, off) & FPROTO_CONTROL_CAPTURE))
			s->pending = false;
		s->regs[off / 4] = val & (FPROTO_CONTROL_CAPTURE |
					  FPROTO_CONTROL_IRQ_EN);
		raise = !was && fpgagdr_ts_irq_wanted(s);
		break;
	case FPROTO_REG_HOST_ACK:
		s->acks++;
		if (!s->pending)
			break;		/* nothing to acknowledge */
		if (val == lower_32_bits(s->live_seq))
			s->pending = false;
		else
			raise = fpgagdr_ts_irq_wanted(s);	/* newer frame */
		break;
	default:
		if (off >= FPGAGDR_TS_SCRATCH)
			s->regs[off / 4] = val;
		break;	/* the protocol's other registers are read-only */
	}
	if (raise)
		fpgagdr_ts_raise(s);
	spin_unlock_irqrestore(&s->lock, flags);
	if (off == FPROTO_REG_CONTROL && (val & FPROTO_CONTROL_CAPTURE))
		mod_delayed_work(system_unbound_wq, &s->work, 0);
}

static void fpgagdr_ts_irq_enable(void *ctx, u32 mask, bool on)
{
	struct fpgagdr_te_sensor *s = ctx;
	unsigned long flags;
	bool was;

	spin_lock_irqsave(&s->lock, flags);
	was = fpgagdr_ts_irq_wanted(s);
	if (on)
		s->irq_mask |= mask;
	else
		s->irq_mask &= ~mask;
	/* a request held while masked goes out when unmasked */
	if (!was && fpgagdr_ts_irq_wanted(s))
		fpgagdr_ts_raise(s);
	spin_unlock_irqrestore(&s->lock, flags);
}

static int fpgagdr_ts_pfn(void *ctx, unsigned long pgoff, unsigned long *pfn,
			  bool *io)
{
	struct fpgagdr_te_sensor *s = ctx;

	if (pgoff)
		return -EINVAL;
	*pfn = page_to_pfn(s->page);
	return 0;
}

const struct fpgagdr_user_ops fpgagdr_te_sensor_user_ops = {
	.read = fpgagdr_ts_read,
	.write = fpgagdr_ts_write,
	.irq_enable = fpgagdr_ts_irq_enable,
	.pfn = fpgagdr_ts_pfn,
};

/* Little-endian stores at aligned offsets of a frame (kvmalloc'd) */
static void fpgagdr_ts_le16(u16 v, u8 *p)
{
	*(__le16 *)p = cpu_to_le16(v);
}

static void fpgagdr_ts_le32(u32 v, u8 *p)
{
	*(__le32 *)p = cpu_to_le32(v);
}

static void fpgagdr_ts_le64(u64 v, u8 *p)
{
	*(__le64 *)p = cpu_to_le64(v);
}

static u32 fpgagdr_ts_get32(const u8 *p)
{
	return le32_to_cpu(*(const __le32 *)p);
}

static u32 fpgagdr_ts_crc(const void *p, size_t len)
{
	return ~crc32_le(~0U, p, len);
}

/* The header of docs/frames.md; the payload CRC is the caller's. */
static void fpgagdr_ts_header(u8 *h, u32 format, u32 width, u32 height,
			      u32 stride, u64 seq, u32 payload_crc)
{
	memset(h, 0, FPGAGDR_FRAME_HEADER_LEN);
	memcpy(h, "FGDRFRM1", 8);
	fpgagdr_ts_le16(1, h + 8);
	fpgagdr_ts_le16(FPGAGDR_FRAME_HEADER_LEN, h + 10);
	fpgagdr_ts_le16(format, h + 12);
	fpgagdr_ts_le32(width, h + 16);
	fpgagdr_ts_le32(height, h + 20);
	fpgagdr_ts_le32(stride, h + 24);
	fpgagdr_ts_le32(stride * height, h + 28);
	fpgagdr_ts_le64(seq, h + 32);
	fpgagdr_ts_le64(ktime_get_ns(), h + 40);
	fpgagdr_ts_le32(payload_crc, h + 48);
	fpgagdr_ts_le32(fpgagdr_ts_crc(h, 60), h + 60);
}

/* Render the test pattern of frame @seq into @s->buf; its length or 0. */
static u32 fpgagdr_ts_render(struct fpgagdr_te_sensor *s, u64 seq, u32 room)
{
	u32 format = READ_ONCE(fpgagdr_ts.format) == 2 ? 2 : 1;
	u32 w = READ_ONCE(fpgagdr_ts.width), h = READ_ONCE(fpgagdr_ts.height);
	u32 bpp = format == 2 ? 3 : 1, stride, x, y, c;
	u8 *p = s->buf + FPGAGDR_FRAME_HEADER_LEN;
	u64 len;

	stride = w * bpp;
	len = (u64)stride * h + FPGAGDR_FRAME_HEADER_LEN;
	if (!w || !h || len > room)
		return 0;
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++)
			for (c = 0; c < bpp; c++)
				p[y * stride + x * bpp + c] =
					(u8)(x + y + seq + 85 * c);
	if ((u64)stride * h >= 8)
		fpgagdr_ts_le64(seq, p);
	fpgagdr_ts_header(s->buf, format, w, h, stride, seq,
			  fpgagdr_ts_crc(p, (size_t)stride * h));
	return len;
}

/* The next pushed frame, as frame @seq, into @s->buf; its length or 0. */
static u32 fpgagdr_ts_pushed(struct fpgagdr_te_sensor *s, u64 seq, u32 room)
{
	struct fpgagdr_ts_frame *f;
	u32 len = 0;

	mutex_lock(&fpgagdr_ts.push_lock);
	if (fpgagdr_ts.npush) {
		f = &fpgagdr_ts.push[s->push_next++ % fpgagdr_ts.npush];
		if (f->len <= room) {
			memcpy(s->buf, f->data, f->len);
			len = f->len;
		}
	}
	mutex_unlock(&fpgagdr_ts.push_lock);
	if (len) {
		fpgagdr_ts_le64(seq, s->buf + 32);
		fpgagdr_ts_le64(ktime_get_ns(), s->buf + 40);
		fpgagdr_ts_le32(fpgagdr_ts_crc(s->buf, 60), s->buf + 60);
	}
	return len;
}

/*
 * sensor_tear: frame @seq holds its header back until the knob is cleared
 * (at most 2 s), its payload already in the slot.
 */
static void fpgagdr_ts_tear_wait(struct fpgagdr_te_sensor *s, u64 seq)
{
	unsigned long end = jiffies + 2 * HZ, flags;

	if (READ_ONCE(fpgagdr_ts.tear) != seq + 1)
		return;
	spin_lock_irqsave(&s->lock, flags);
	s->tearing = true;
	spin_unlock_irqrestore(&s->lock, flags);
	while (READ_ONCE(fpgagdr_ts.tear) == seq + 1 && !READ_ONCE(s->stop) &&
	       time_before(jiffies, end))
		usleep_range(500, 1000);
	WRITE_ONCE(fpgagdr_ts.tear, 0);
	spin_lock_irqsave(&s->lock, flags);
	s->tearing = false;
	spin_unlock_irqrestore(&s->lock, flags);
}

/*
 * Write one frame into its slot and report it, as the card would: the
 * payload first, the header (which carries the payload CRC) last, then
 * the record (docs/card-protocol.md, "Write order").
 */
static void fpgagdr_ts_produce(struct fpgagdr_te_sensor *s)
{
	u32 count = fpgagdr_ts_reg(s, FPROTO_REG_SLOT_COUNT);
	u32 size = fpgagdr_ts_reg(s, FPROTO_REG_SLOT_SIZE);
	u64 base = (u64)fpgagdr_ts_reg(s, FPROTO_REG_SLOT_BASE_HI) << 32 |
		   fpgagdr_ts_reg(s, FPROTO_REG_SLOT_BASE_LO);
	u32 room = min(size, FPGAGDR_TS_FRAME_MAX), len, slot, crc, gen;
	bool raise = false;
	unsigned long flags;
	u64 seq, addr;

	spin_lock_irqsave(&s->lock, flags);
	seq = s->seq;
	gen = s->gen;
	spin_unlock_irqrestore(&s->lock, flags);

	div_u64_rem(seq, count, &slot);
	len = fpgagdr_ts_pushed(s, seq, room);
	if (!len)
		len = fpgagdr_ts_render(s, seq, room);
	if (!len)
		return;		/* the frame does not fit: nothing produced */
	if (atomic_add_unless(&fpgagdr_ts.bad_crc, -1, 0)) {
		crc = fpgagdr_ts_get32(s->buf + 48) ^ 0x1;
		fpgagdr_ts_le32(crc, s->buf + 48);
		fpgagdr_ts_le32(fpgagdr_ts_crc(s->buf, 60), s->buf + 60);
	}
	addr = base + (u64)slot * size;
	if (s->ops->write_card(s->card, addr + FPGAGDR_FRAME_HEADER_LEN,
			       s->buf + FPGAGDR_FRAME_HEADER_LEN,
			       len - FPGAGDR_FRAME_HEADER_LEN))
		return;
	if (atomic_add_unless(&fpgagdr_ts.drop, -1, 0)) {
		/* dropped whole: its header is never written, its sequence
		 * is the next frame's
		 */
		spin_lock_irqsave(&s->lock, flags);
		if (gen == s->gen)
			s->dropped++;
		spin_unlock_irqrestore(&s->lock, flags);
		return;
	}
	fpgagdr_ts_tear_wait(s, seq);
	if (s->ops->write_card(s->card, addr, s->buf, FPGAGDR_FRAME_HEADER_LEN))
		return;

	spin_lock_irqsave(&s->lock, flags);
	if (gen != s->gen) {
		/* the card was reset while this frame was written */
		spin_unlock_irqrestore(&s->lock, flags);
		return;
	}
	s->seq = seq + 1;
	s->live_seq = seq;
	s->live_slot = slot;
	s->live_len = len;
	if (s->pending) {
		s->coalesced++;
	} else {
		s->pending = true;
		raise = fpgagdr_ts_irq_wanted(s);
	}
	if (raise)
		fpgagdr_ts_raise(s);
	spin_unlock_irqrestore(&s->lock, flags);
}

/*
 * Wait (at most a second) until the host latched the record of frame @seq
 * or a later one.  Without it the overrun fault would depend on how soon
 * the host takes the interrupt: one taken after the whole burst latches
 * only the last frame (the rest coalesced, counted missed), and nothing is
 * overwritten under the host's feet.
 */
static void fpgagdr_ts_await_latch(struct fpgagdr_te_sensor *s, u64 seq)
{
	unsigned long end = jiffies + HZ, flags;
	bool done;

	for (;;) {
		spin_lock_irqsave(&s->lock, flags);
		done = s->latched_seq != U64_MAX && s->latched_seq >= seq;
		spin_unlock_irqrestore(&s->lock, flags);
		if (done || READ_ONCE(s->stop) || time_after(jiffies, end))
			return;
		usleep_range(200, 500);
	}
}

static void fpgagdr_ts_tick(struct work_struct *work)
{
	struct fpgagdr_te_sensor *s = container_of(to_delayed_work(work),
						   struct fpgagdr_te_sensor,
						   work);
	u32 fps = READ_ONCE(fpgagdr_ts.fps), n = 1, burst;
	unsigned long flags;
	bool capture;

	spin_lock_irqsave(&s->lock, flags);
	capture = fpgagdr_ts_reg(s, FPROTO_REG_CONTROL) & FPROTO_CONTROL_CAPTURE;
	spin_unlock_irqrestore(&s->lock, flags);
	if (READ_ONCE(s->stop) || !capture)
		return;		/* CONTROL.CAPTURE starts it again */
	if (fps && !READ_ONCE(fpgagdr_ts.stall)) {
		burst = atomic_xchg(&fpgagdr_ts.burst, 0);
		if (burst)
			n = burst;
		if (atomic_xchg(&fpgagdr_ts.overrun, 0)) {
			fpgagdr_ts_produce(s);
			fpgagdr_ts_await_latch(s, s->seq - 1);
			n = fpgagdr_ts_reg(s, FPROTO_REG_SLOT_COUNT);
		}
		while (n-- && !READ_ONCE(s->stop))
			fpgagdr_ts_produce(s);
	}
	if (!READ_ONCE(s->stop))
		queue_delayed_work(system_unbound_wq, &s->work,
				   fps ? max(usecs_to_jiffies(USEC_PER_SEC / fps), 1UL) :
				   msecs_to_jiffies(20));
}

/* A new reset epoch: never 0, different from the last one given. */
static u32 fpgagdr_ts_new_epoch(void)
{
	u32 e = atomic_inc_return(&fpgagdr_ts_epochs);

	return e ? e : atomic_inc_return(&fpgagdr_ts_epochs);
}

/**
 * fpgagdr_te_sensor_new() - a software card's user register block
 * @ops: the card's calls
 * @card: their argument
 * @name: the card's name ("fpgagdrN"), for debugfs
 *
 * The registers take the test_* module parameters' values.  The sensor
 * ticks once fpgagdr_te_sensor_start() was called and CONTROL.CAPTURE is
 * set.
 *
 * Context: process context.
 * Return: the sensor, or NULL when out of memory.
 */
struct fpgagdr_te_sensor *
fpgagdr_te_sensor_new(const struct fpgagdr_te_card_ops *ops, void *card,
		      const char *name)
{
	struct fpgagdr_te_sensor *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return NULL;
	s->page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	s->buf = kvmalloc(fpgagdr_ts_push_room(), GFP_KERNEL);
	if (!s->page || !s->buf) {
		if (s->page)
			__free_page(s->page);
		kvfree(s->buf);
		kfree(s);
		return NULL;
	}
	s->regs = page_address(s->page);
	s->ops = ops;
	s->card = card;
	strscpy(s->name, name, sizeof(s->name));
	spin_lock_init(&s->lock);
	s->latched_seq = U64_MAX;
	s->epoch = fpgagdr_ts_new_epoch();
	INIT_DELAYED_WORK(&s->work, fpgagdr_ts_tick);
	s->regs[FPROTO_REG_MAGIC / 4] = fpgagdr_ts_magic;
	s->regs[FPROTO_REG_VERSION / 4] = fpgagdr_ts_version;
	s->regs[FPROTO_REG_SLOT_BASE_LO / 4] = lower_32_bits(fpgagdr_ts_slot_base);
	s->regs[FPROTO_REG_SLOT_BASE_HI / 4] = upper_32_bits(fpgagdr_ts_slot_base);
	s->regs[FPROTO_REG_SLOT_SIZE / 4] = fpgagdr_ts_slot_size;
	/* a card of no slots still needs a divisor */
	s->regs[FPROTO_REG_SLOT_COUNT / 4] = fpgagdr_ts_slot_count;
	s->regs[FPROTO_REG_USER_IRQ / 4] = fpgagdr_ts_user_irq;
	if (!fpgagdr_ts_slot_count)
		s->stop = true;
	mutex_lock(&fpgagdr_ts_list_lock);
	list_add_tail(&s->node, &fpgagdr_ts_list);
	mutex_unlock(&fpgagdr_ts_list_lock);
	return s;
}

/**
 * fpgagdr_te_sensor_len() - bytes of the user register block
 * @s: the sensor
 *
 * Context: any.
 * Return: a page, or 0 when test_user_bar=0 (the card has none).
 */
u32 fpgagdr_te_sensor_len(const struct fpgagdr_te_sensor *s)
{
	return fpgagdr_ts_user_bar ? PAGE_SIZE : 0;
}

/**
 * fpgagdr_te_sensor_start() - let the sensor tick
 * @s: the sensor, attached to its card
 *
 * Context: process context.
 */
void fpgagdr_te_sensor_start(struct fpgagdr_te_sensor *s)
{
	queue_delayed_work(system_unbound_wq, &s->work, 0);
}

/**
 * fpgagdr_te_sensor_reset() - the card's reset (axi_aresetn on an FPGA:
 * link reset, hot reset, FLR)
 * @s: the sensor
 *
 * As the block's reset does (docs/card-protocol.md): a new EPOCH; a frame
 * being written is abandoned (never announced); CONTROL, FRAME_PENDING,
 * the sequence, the record, DROPPED and the emulated XDMA user interrupt
 * mask back to 0.  The fixed registers keep their values.  The sensor
 * ticks again once CONTROL.CAPTURE is set.
 *
 * Context: process context (debugfs, the software card's
 * slot_reset/reset_done).
 */
void fpgagdr_te_sensor_reset(struct fpgagdr_te_sensor *s)
{
	unsigned long flags;

	cancel_delayed_work_sync(&s->work);
	spin_lock_irqsave(&s->lock, flags);
	s->gen++;
	s->epoch = fpgagdr_ts_new_epoch();
	s->regs[FPROTO_REG_CONTROL / 4] = 0;
	s->regs[FPROTO_REG_DONE_SEQ_LO / 4] = 0;
	s->regs[FPROTO_REG_DONE_SEQ_HI / 4] = 0;
	s->regs[FPROTO_REG_DONE_SLOT / 4] = 0;
	s->regs[FPROTO_REG_DONE_LENGTH / 4] = 0;
	s->pending = false;
	s->irq_mask = 0;
	s->seq = 0;
	s->live_seq = 0;
	s->live_slot = 0;
	s->live_len = 0;
	s->latched_seq = U64_MAX;
	s->dropped = 0;
	spin_unlock_irqrestore(&s->lock, flags);
}

/**
 * fpgagdr_te_sensor_free() - stop the sensor and free it
 * @s: the sensor, or NULL; the card's frames are detached
 *
 * Context: process context.
 */
void fpgagdr_te_sensor_free(struct fpgagdr_te_sensor *s)
{
	if (!s)
		return;
	mutex_lock(&fpgagdr_ts_list_lock);
	list_del(&s->node);
	mutex_unlock(&fpgagdr_ts_list_lock);
	WRITE_ONCE(s->stop, true);
	cancel_delayed_work_sync(&s->work);
	__free_page(s->page);
	kvfree(s->buf);
	kfree(s);
}

static int fpgagdr_ts_stats_show(struct seq_file *m, void *unused)
{
	struct fpgagdr_te_sensor *s;
	unsigned long flags;

	mutex_lock(&fpgagdr_ts_list_lock);
	list_for_each_entry(s, &fpgagdr_ts_list, node) {
		spin_lock_irqsave(&s->lock, flags);
		seq_printf(m, "%s produced %llu raised %llu coalesced %llu acks %llu pending %d control %#x irq_mask %#x epoch %u dropped %u tearing %d\n",
			   s->name, s->seq, s->raised, s->coalesced, s->acks,
			   s->pending, fpgagdr_ts_reg(s, FPROTO_REG_CONTROL),
			   s->irq_mask, s->epoch, s->dropped, s->tearing);
		spin_unlock_irqrestore(&s->lock, flags);
	}
	mutex_unlock(&fpgagdr_ts_list_lock);
	mutex_lock(&fpgagdr_ts.push_lock);
	seq_printf(m, "pushed %u\n", fpgagdr_ts.npush);
	mutex_unlock(&fpgagdr_ts.push_lock);
	seq_printf(m, "push_refused %lld\n",
		   atomic64_read(&fpgagdr_ts.push_refused));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fpgagdr_ts_stats);

/* sensor_raise: write K to raise user interrupt K once (if unmasked). */
static int fpgagdr_ts_raise_set(void *data, u64 val)
{
	struct fpgagdr_te_sensor *s;
	unsigned long flags;

	if (val >= FPROTO_USER_IRQS)
		return -EINVAL;
	mutex_lock(&fpgagdr_ts_list_lock);
	list_for_each_entry(s, &fpgagdr_ts_list, node) {
		spin_lock_irqsave(&s->lock, flags);
		if (s->irq_mask & BIT(val)) {
			s->raised++;
			s->ops->raise(s->card, val);
		}
		spin_unlock_irqrestore(&s->lock, flags);
	}
	mutex_unlock(&fpgagdr_ts_list_lock);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(fpgagdr_ts_raise_fops, NULL, fpgagdr_ts_raise_set,
			 "%llu\n");

/* sensor_reset: write 1 to reset every card's register block. */
static int fpgagdr_ts_reset_set(void *data, u64 val)
{
	struct fpgagdr_te_sensor *s;

	if (val != 1)
		return -EINVAL;
	mutex_lock(&fpgagdr_ts_list_lock);
	list_for_each_entry(s, &fpgagdr_ts_list, node)
		fpgagdr_te_sensor_reset(s);
	mutex_unlock(&fpgagdr_ts_list_lock);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(fpgagdr_ts_reset_fops, NULL, fpgagdr_ts_reset_set,
			 "%llu\n");

/*
 * sensor_frames: one open-write-close pushes one frame.  It must be a
 * whole frame of docs/frames.md: magic, header length 64, and header +
 * payload length bytes.
 */
static int fpgagdr_ts_push_open(struct inode *inode, struct file *file)
{
	struct fpgagdr_ts_frame *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->data = kvmalloc(fpgagdr_ts_push_room(), GFP_KERNEL);
	if (!f->data) {
		kfree(f);
		return -ENOMEM;
	}
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static ssize_t fpgagdr_ts_push_write(struct file *file, const char __user *buf,
				     size_t count, loff_t *ppos)
{
	struct fpgagdr_ts_frame *f = file->private_data;

	if (count > fpgagdr_ts_push_room() - f->len)
		return -EFBIG;
	if (copy_from_user(f->data + f->len, buf, count))
		return -EFAULT;
	f->len += count;
	return count;
}

static const char *fpgagdr_ts_push_check(const struct fpgagdr_ts_frame *f)
{
	if (f->len < FPGAGDR_FRAME_HEADER_LEN || memcmp(f->data, "FGDRFRM1", 8))
		return "no frame header (magic FGDRFRM1)";
	if (le16_to_cpu(*(const __le16 *)(f->data + 10)) != FPGAGDR_FRAME_HEADER_LEN)
		return "header length is not 64";
	if ((u64)fpgagdr_ts_get32(f->data + 28) + FPGAGDR_FRAME_HEADER_LEN !=
	    f->len)
		return "64 + payload length is not the bytes written";
	if (f->len > fpgagdr_ts_slot_size)
		return "longer than a slot";
	return NULL;
}

static int fpgagdr_ts_push_release(struct inode *inode, struct file *file)
{
	struct fpgagdr_ts_frame *f = file->private_data;
	const char *why = f->len ? fpgagdr_ts_push_check(f) : NULL;
	u8 *copy = NULL;

	if (f->len && !why) {
		copy = kvmalloc(f->len, GFP_KERNEL);
		if (copy)
			memcpy(copy, f->data, f->len);
		else
			why = "out of memory";
	}
	if (copy) {
		mutex_lock(&fpgagdr_ts.push_lock);
		if (fpgagdr_ts.npush < FPGAGDR_TS_PUSH_MAX) {
			fpgagdr_ts.push[fpgagdr_ts.npush].data = copy;
			fpgagdr_ts.push[fpgagdr_ts.npush].len = f->len;
			fpgagdr_ts.npush++;
			copy = NULL;
		} else {
			why = "16 frames are pushed already";
		}
		mutex_unlock(&fpgagdr_ts.push_lock);
		kvfree(copy);
	}
	if (why) {
		atomic64_inc(&fpgagdr_ts.push_refused);
		pr_warn("fpgagdr: TEST ENGINE: pushed frame refused: %s\n", why);
	}
	kvfree(f->data);
	kfree(f);
	return 0;
}

static const struct file_operations fpgagdr_ts_push_fops = {
	.owner = THIS_MODULE,
	.open = fpgagdr_ts_push_open,
	.write = fpgagdr_ts_push_write,
	.release = fpgagdr_ts_push_release,
};

static void fpgagdr_ts_push_clear(void)
{
	u32 i;

	mutex_lock(&fpgagdr_ts.push_lock);
	for (i = 0; i < fpgagdr_ts.npush; i++)
		kvfree(fpgagdr_ts.push[i].data);
	fpgagdr_ts.npush = 0;
	mutex_unlock(&fpgagdr_ts.push_lock);
}

static int fpgagdr_ts_clear_set(void *data, u64 val)
{
	fpgagdr_ts_push_clear();
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(fpgagdr_ts_clear_fops, NULL, fpgagdr_ts_clear_set,
			 "%llu\n");

/**
 * fpgagdr_te_sensor_debugfs() - the sensor's knobs in the software card's
 *	debugfs directory
 * @dir: fpgagdr/testeng
 *
 * Context: module init.
 */
void fpgagdr_te_sensor_debugfs(struct dentry *dir)
{
	struct fpgagdr_ts_knobs *k = &fpgagdr_ts;

	debugfs_create_u32("sensor_fps", 0600, dir, &k->fps);
	debugfs_create_u32("sensor_width", 0600, dir, &k->width);
	debugfs_create_u32("sensor_height", 0600, dir, &k->height);
	debugfs_create_u32("sensor_format", 0600, dir, &k->format);
	debugfs_create_u32("sensor_stall", 0600, dir, &k->stall);
	debugfs_create_atomic_t("sensor_burst", 0600, dir, &k->burst);
	debugfs_create_atomic_t("sensor_overrun", 0600, dir, &k->overrun);
	debugfs_create_atomic_t("sensor_bad_crc", 0600, dir, &k->bad_crc);
	debugfs_create_atomic_t("sensor_bad_event", 0600, dir, &k->bad_event);
	debugfs_create_atomic_t("sensor_drop", 0600, dir, &k->drop);
	debugfs_create_u64("sensor_tear", 0600, dir, &k->tear);
	debugfs_create_file("sensor_reset", 0200, dir, NULL,
			    &fpgagdr_ts_reset_fops);
	debugfs_create_file("sensor_raise", 0200, dir, NULL,
			    &fpgagdr_ts_raise_fops);
	debugfs_create_file("sensor_frames", 0200, dir, NULL,
			    &fpgagdr_ts_push_fops);
	debugfs_create_file("sensor_frames_clear", 0200, dir, NULL,
			    &fpgagdr_ts_clear_fops);
	debugfs_create_file("sensor", 0444, dir, NULL, &fpgagdr_ts_stats_fops);
}

/**
 * fpgagdr_te_sensor_exit() - free the pushed frames
 *
 * Context: module exit, every sensor freed.
 */
void fpgagdr_te_sensor_exit(void)
{
	fpgagdr_ts_push_clear();
}
