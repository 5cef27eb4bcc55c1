/* SPDX-License-Identifier: GPL-2.0 */
/* User-space stand-in for <linux/workqueue.h>: see ../kshim.h. */
#include "../kshim.h"
