// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the frame capture tests: see tframes.h.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tframes.h"

/* CRC-32 (IEEE), as docs/frames.md uses it */
__u32 crc32(const void *p, size_t n)
{
	static __u32 table[256];
	const unsigned char *b = p;
	__u32 c = ~0U;
	int i, k;

	if (!table[1])
		for (i = 0; i < 256; i++) {
			c = i;
			for (k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	c = ~0U;
	while (n--)
		c = table[(c ^ *b++) & 0xff] ^ (c >> 8);
	return ~c;
}

__u32 le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (__u32)p[3] << 24;
}

__u64 le64(const unsigned char *p)
{
	return le32(p) | (__u64)le32(p + 4) << 32;
}

void sensor(const char *knob, long long v)
{
	char path[128], val[32];

	snprintf(path, sizeof(path), DBG_TE "sensor_%s", knob);
	snprintf(val, sizeof(val), "%lld", v);
	CHECK_OK(t_dbg_write(path, val));
}

/* A value of the sensor's counter line ("fpgagdr0 produced N ..."). */
long long sensor_stat(const char *key)
{
	char buf[1024], *p;

	if (t_read_file(DBG_TE "sensor", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key) + 1, NULL, 0) : -1;
}

int frame_info(int fd, struct fpgagdr_frame_info *fi)
{
	memset(fi, 0, sizeof(*fi));
	fi->abi_version = FPGAGDR_ABI_VERSION;
	return ioctl(fd, FPGAGDR_IOC_FRAME_INFO, fi) ? -errno : 0;
}

int wait_frame(int fd, __u32 timeout_ms, __u32 flags,
	       struct fpgagdr_wait_frame *w)
{
	memset(w, 0, sizeof(*w));
	w->abi_version = FPGAGDR_ABI_VERSION;
	w->timeout_ms = timeout_ms;
	w->flags = flags;
	return ioctl(fd, FPGAGDR_IOC_WAIT_FRAME, w) ? -errno : 0;
}

int abort_waits(int fd, __u32 dir, __u32 ch, __u32 flags)
{
	struct fpgagdr_abort a = { .abi_version = FPGAGDR_ABI_VERSION,
				   .direction = dir, .channel = ch,
				   .flags = flags };

	return ioctl(fd, FPGAGDR_IOC_ABORT, &a) ? -errno : 0;
}

void cap_open(struct cap *c)
{
	struct fpgagdr_status st;

	c->fd = t_open();
	c->buf = t_alloc(SLOT_SIZE);
	CHECK_OK(t_status(c->fd, &st));
	c->gran = st.len_granularity ? st.len_granularity : 1;
	CHECK_OK(t_pin(c->fd, FPGAGDR_MEM_HOST, (unsigned long)c->buf,
		       SLOT_SIZE, &c->h));
}

void cap_close(struct cap *c)
{
	close(c->fd);
	t_free(c->buf, SLOT_SIZE);
}

/*
 * DMA the event's slot (C2H) and check the frame in it: header magic and
 * CRC, geometry against the length, payload CRC, the sequence in the
 * header and, for the test pattern, in the first payload bytes.  A later
 * sequence is an overrun: the card overwrote the slot first.
 */
int cap_read(struct cap *c, const struct fpgagdr_wait_frame *w)
{
	__u64 len = (w->length + c->gran - 1) / c->gran * c->gran;
	int ret;

	memset(c->buf, 0xee, SLOT_SIZE);
	ret = t_xfer(c->fd, FPGAGDR_DIR_C2H, 0, c->h, 0,
		     SLOT_BASE + (__u64)w->slot * SLOT_SIZE, len, 5000);
	if (ret)
		t_fail(__FILE__, __LINE__, "DMA of slot %u: %s", w->slot,
		       t_errname(-ret));
	return ret;
}

int cap_check(struct cap *c, const struct fpgagdr_wait_frame *w)
{
	unsigned char *h = c->buf;
	__u64 seq;

	if (cap_read(c, w))
		return FRAME_BROKEN;
	if (memcmp(h, "FGDRFRM1", 8) || le32(h + 60) != crc32(h, 60) ||
	    (h[10] | h[11] << 8) != 64 || 64 + le32(h + 28) != w->length)
		return FRAME_BROKEN;
	seq = le64(h + 32);
	if (le32(h + 48) != crc32(h + 64, le32(h + 28)))
		return FRAME_BAD_CRC;
	if (seq > w->sequence && (seq - w->sequence) % SLOTS == 0)
		return FRAME_OVERRUN;
	if (seq != w->sequence)
		return FRAME_BROKEN;
	/* the test pattern carries its sequence in the payload, too */
	return le64(h + 64) == seq ? FRAME_OK : FRAME_BROKEN;
}

/* CONTROL while someone listens: CAPTURE, and IRQ_EN unless polled */
int capture_on(void)
{
	return t_dbg(DBG_FRAMES, "polled") == 1 ? 1 : 3;
}

void sensor_defaults(void)
{
	sensor("fps", 50);
	sensor("stall", 0);
	sensor("width", 64);
	sensor("height", 48);
	sensor("format", 1);
	sensor("bad_crc", 0);
	sensor("bad_event", 0);
	sensor("drop", 0);
	sensor("tear", 0);
	CHECK_OK(t_dbg_write(DBG_TE "sensor_frames_clear", "1"));
	CHECK_OK(t_dbg_write(DBG_TE "card_gone", "0"));
	CHECK_OK(t_dbg_write(DBG_TE "irq_storm", "0"));
}

bool dmesg_has(const char *text)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "dmesg | grep -qF '%s'", text);
	return system(cmd) == 0;
}
