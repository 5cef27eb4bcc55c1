/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the frame capture tests (t-frames.c, t-recovery.c): the
 * software card's TEST-ONLY sensor and its knobs, FRAME_INFO and
 * WAIT_FRAME, and a capture that DMAs each event's slot and checks the
 * frame in it (docs/frames.md).
 */
#ifndef FGT_TFRAMES_H
#define FGT_TFRAMES_H

#include "tlib.h"

#define DBG_FRAMES	"/sys/kernel/debug/fpgagdr/fpgagdr0/frames"
#define EVENTS_WAIT	"/sys/module/fpgagdr/parameters/events_wait_ms"
/* The software card's defaults (fpgagdr-testeng-sensor.c) */
#define SLOT_BASE	(256ULL << 20)
#define SLOT_SIZE	(1024U * 1024)
#define SLOTS		8
#define FRAME_LEN	(64 + 64 * 48)

/**
 * struct cap - a capture: the control node, a slot-sized pinned buffer
 * @fd: control node
 * @h: pin of @buf
 * @buf: one slot
 * @gran: transfer length granularity
 */
struct cap {
	int fd;
	__u32 h;
	unsigned char *buf;
	__u32 gran;
};

enum { FRAME_OK, FRAME_OVERRUN, FRAME_BROKEN, FRAME_BAD_CRC };

__u32 crc32(const void *p, size_t n);
__u32 le32(const unsigned char *p);
__u64 le64(const unsigned char *p);
void sensor(const char *knob, long long v);
long long sensor_stat(const char *key);
int frame_info(int fd, struct fpgagdr_frame_info *fi);
int wait_frame(int fd, __u32 timeout_ms, __u32 flags,
	       struct fpgagdr_wait_frame *w);
int abort_waits(int fd, __u32 dir, __u32 ch, __u32 flags);
void cap_open(struct cap *c);
void cap_close(struct cap *c);
int cap_read(struct cap *c, const struct fpgagdr_wait_frame *w);
int cap_check(struct cap *c, const struct fpgagdr_wait_frame *w);
int capture_on(void);
void sensor_defaults(void);
bool dmesg_has(const char *text);

#endif /* FGT_TFRAMES_H */
