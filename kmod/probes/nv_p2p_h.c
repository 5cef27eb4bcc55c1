// SPDX-License-Identifier: GPL-2.0
/* Compiles when NVIDIA's nv-p2p.h is on the include path (NVIDIA_SRC). */
#include <linux/types.h>
#include <nv-p2p.h>

int fpgagdr_probe(void);

int fpgagdr_probe(void)
{
	return NVIDIA_P2P_PAGE_SIZE_64KB;
}
