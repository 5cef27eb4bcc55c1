/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-in for <linux/types.h>: the system's uapi types, then
 * the kernel-internal ones of ../kshim.h.
 */
#ifndef FPGAGDR_KSHIM_LINUX_TYPES_H
#define FPGAGDR_KSHIM_LINUX_TYPES_H

#include_next <linux/types.h>
#include "../kshim.h"

#endif
