// SPDX-License-Identifier: GPL-2.0
/* Compiles when class_create() takes only a name (6.4 and later). */
#include <linux/device.h>
#include <linux/module.h>

struct class *fpgagdr_probe(void);

struct class *fpgagdr_probe(void)
{
	return class_create("fpgagdr-probe");
}
