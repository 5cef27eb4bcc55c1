/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pick NVIDIA's nv-p2p.h when the build found it (FPGAGDR_HAVE_NV_P2P_H,
 * set by probes/nv_p2p_h.c), else our compat declarations.
 */
#ifndef FPGAGDR_NV_P2P_H
#define FPGAGDR_NV_P2P_H

#include "fpgagdr-features.h"

#ifdef FPGAGDR_HAVE_NV_P2P_H
#include <nv-p2p.h>
#else
#include "fpgagdr-nv-p2p-compat.h"
#endif

/*
 * A structure the driver filled in is usable when its major version equals
 * the one we were built with and its minor version is not older.
 */
static inline bool fpgagdr_nv_version_ok(u32 have, u32 built)
{
	return (have >> 16) == (built >> 16) &&
	       (have & 0xffff) >= (built & 0xffff);
}

#ifdef NVIDIA_P2P_CAP_PERSISTENT_PAGES
static inline bool fpgagdr_nv_cap_persistent(void)
{
	return nvidia_p2p_cap_persistent_pages;
}
#else
static inline bool fpgagdr_nv_cap_persistent(void)
{
	return false;
}
#endif

#endif /* FPGAGDR_NV_P2P_H */
