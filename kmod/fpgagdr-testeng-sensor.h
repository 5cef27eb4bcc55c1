/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST-ONLY: the software card's user register block and frame sensor
 * (fpgagdr-testeng-sensor.c), built only with FPGAGDR_TEST_ENGINE=y.
 */
#ifndef FPGAGDR_TESTENG_SENSOR_H
#define FPGAGDR_TESTENG_SENSOR_H

#include <linux/types.h>

#include "fpgagdr-frames.h"

struct dentry;
struct fpgagdr_te_sensor;

/**
 * struct fpgagdr_te_card_ops - what the sensor needs of its software card
 * @write_card: write @len bytes of @buf at card address @addr into the
 *	card's memory; 0 or -ENOMEM/-ERANGE.  Process context.
 * @raise: raise the card's interrupt for user interrupt @irq.  Any context.
 */
struct fpgagdr_te_card_ops {
	int (*write_card)(void *card, u64 addr, const void *buf, size_t len);
	void (*raise)(void *card, u32 irq);
};

extern const struct fpgagdr_user_ops fpgagdr_te_sensor_user_ops;

struct fpgagdr_te_sensor *
fpgagdr_te_sensor_new(const struct fpgagdr_te_card_ops *ops, void *card,
		      const char *name);
u32 fpgagdr_te_sensor_len(const struct fpgagdr_te_sensor *s);
void fpgagdr_te_sensor_start(struct fpgagdr_te_sensor *s);
void fpgagdr_te_sensor_reset(struct fpgagdr_te_sensor *s);
void fpgagdr_te_sensor_free(struct fpgagdr_te_sensor *s);
void fpgagdr_te_sensor_debugfs(struct dentry *dir);
void fpgagdr_te_sensor_exit(void);

#endif /* FPGAGDR_TESTENG_SENSOR_H */
