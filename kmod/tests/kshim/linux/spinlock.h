/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for <linux/spinlock.h>: see ../kshim.h. */
#include "../kshim.h"
