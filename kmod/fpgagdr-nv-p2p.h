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

/*
 * Persistent pins (no free callback), in the two forms NVIDIA's header has
 * had: nvidia_p2p_get_pages_persistent() since CUDA 12.2, which also
 * dropped nvidia_p2p_get_pages() with a NULL callback (it now fails
 * -EINVAL); before that, the NULL callback where the driver's
 * nvidia_p2p_cap_persistent_pages is set.
 */
#if defined(NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API)
static inline bool fpgagdr_nv_cap_persistent(void)
{
	return true;
}

static inline int fpgagdr_nv_get_persistent(u64 va, u64 len,
					    struct nvidia_p2p_page_table **pt)
{
	return nvidia_p2p_get_pages_persistent(va, len, pt,
					       NVIDIA_P2P_FLAGS_DEFAULT);
}

static inline int fpgagdr_nv_put_persistent(u64 va,
					    struct nvidia_p2p_page_table *pt)
{
	return nvidia_p2p_put_pages_persistent(va, pt, 0);
}
#else
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

static inline int fpgagdr_nv_get_persistent(u64 va, u64 len,
					    struct nvidia_p2p_page_table **pt)
{
	return nvidia_p2p_get_pages(0, 0, va, len, pt, NULL, NULL);
}

static inline int fpgagdr_nv_put_persistent(u64 va,
					    struct nvidia_p2p_page_table *pt)
{
	return nvidia_p2p_put_pages(0, 0, va, pt);
}
#endif

#endif /* FPGAGDR_NV_P2P_H */
