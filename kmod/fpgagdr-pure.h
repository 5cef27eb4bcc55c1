/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers for the pure logic files (fpgagdr-desc.c, fpgagdr-sg.c,
 * fpgagdr-pinmath.c, fpgagdr-link.c).  They are built into the module and,
 * unchanged, into the user-space unit tests in tests/, which provide
 * tests/ushim.h with the few kernel types and helpers these files use.
 */
#ifndef FPGAGDR_PURE_H
#define FPGAGDR_PURE_H

#ifdef __KERNEL__
#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/types.h>
#include <asm/byteorder.h>
#else
#include "tests/ushim.h"
#endif

#endif /* FPGAGDR_PURE_H */
