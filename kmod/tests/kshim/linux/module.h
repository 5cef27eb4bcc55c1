/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for <linux/module.h>: see ../kshim.h. */
#include "../kshim.h"
