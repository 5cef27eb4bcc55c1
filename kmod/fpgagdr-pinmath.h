/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Argument arithmetic for PIN, TRANSFER and UNPIN: alignment, overflow,
 * ranges, page spans.  Pure logic, also built in user space.
 */
#ifndef FPGAGDR_PINMATH_H
#define FPGAGDR_PINMATH_H

#include "fpgagdr-pure.h"

/**
 * struct fpgagdr_span - the whole pages that hold a buffer
 * @start: first byte of the first page
 * @end: first byte after the last page
 * @head: offset of the buffer inside its first page
 * @npages: pages from @start to @end
 */
struct fpgagdr_span {
	u64 start;
	u64 end;
	u64 head;
	u64 npages;
};

/**
 * struct fpgagdr_xfer_rules - what a transfer range is checked against
 * @buf_len: bytes in the pinned buffer (or the user buffer)
 * @card_size: bytes of card address space, 0 when unknown
 * @addr_align: offset and card address alignment, a power of 2
 * @len_gran: length granularity, a power of 2
 */
struct fpgagdr_xfer_rules {
	u64 buf_len;
	u64 card_size;
	u32 addr_align;
	u32 len_gran;
};

int fpgagdr_pin_span(u64 addr, u64 len, u64 align, u64 page_size,
		     u64 max_len, struct fpgagdr_span *span);
int fpgagdr_xfer_check(const struct fpgagdr_xfer_rules *r, u64 offset,
		       u64 card_addr, u64 len);
int fpgagdr_timeout_check(u32 timeout_ms, u32 max_ms);
int fpgagdr_handle_missing(u32 handle, u32 next, bool wrapped);

#endif /* FPGAGDR_PINMATH_H */
