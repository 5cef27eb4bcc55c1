// SPDX-License-Identifier: GPL-2.0
/*
 * Argument checks shared by the ioctls, the channel nodes and the unit
 * tests.  Each rule has its own errno, listed in uapi/linux/fpgagdr.h.
 */
#include "fpgagdr-pinmath.h"

/**
 * fpgagdr_pin_span() - check a buffer and find the pages that hold it
 * @addr: first byte of the buffer
 * @len: bytes in the buffer
 * @align: required alignment of @addr and @len, a power of 2
 * @page_size: page size of the memory, a power of 2 (4 KiB, 64 KiB)
 * @max_len: largest @len accepted
 * @span: result
 *
 * The span is rounded out to whole pages; @span->head keeps the buffer's
 * offset inside its first page so that the buffer, not the page, is what
 * the card is given.  Two 4 KiB buffers in one 64 KiB GPU page have the
 * same span but different heads.
 *
 * Context: any.
 * Return: 0; -EINVAL for a zero length, a misaligned @addr or @len, or a
 * parameter that is not a power of 2; -E2BIG if @len > @max_len;
 * -EOVERFLOW if the buffer or its span wraps around.
 */
int fpgagdr_pin_span(u64 addr, u64 len, u64 align, u64 page_size,
		     u64 max_len, struct fpgagdr_span *span)
{
	u64 end, end_up;

	if (!is_power_of_2(align) || !is_power_of_2(page_size))
		return -EINVAL;
	if (!len || !IS_ALIGNED(addr, align) || !IS_ALIGNED(len, align))
		return -EINVAL;
	if (len > max_len)
		return -E2BIG;
	if (check_add_overflow(addr, len, &end) ||
	    check_add_overflow(end, page_size - 1, &end_up))
		return -EOVERFLOW;

	span->start = round_down(addr, page_size);
	span->end = round_down(end_up, page_size);
	span->head = addr - span->start;
	span->npages = div64_u64(span->end - span->start, page_size);
	return 0;
}

/**
 * fpgagdr_xfer_check() - check one transfer's range
 * @r: the buffer and card limits
 * @offset: byte offset into the buffer
 * @card_addr: card address
 * @len: bytes
 *
 * Context: any.
 * Return: 0; -EINVAL for a zero length, a misaligned @offset, @card_addr
 * or @len, or rules that are not powers of 2; -EOVERFLOW if @offset +
 * @len wraps or passes the end of the buffer; -ERANGE if @card_addr +
 * @len wraps or passes the card size.
 */
int fpgagdr_xfer_check(const struct fpgagdr_xfer_rules *r, u64 offset,
		       u64 card_addr, u64 len)
{
	u64 end;

	if (!is_power_of_2(r->addr_align) || !is_power_of_2(r->len_gran))
		return -EINVAL;
	if (!len || !IS_ALIGNED(offset, r->addr_align) ||
	    !IS_ALIGNED(card_addr, r->addr_align) ||
	    !IS_ALIGNED(len, r->len_gran))
		return -EINVAL;
	if (check_add_overflow(offset, len, &end) || end > r->buf_len)
		return -EOVERFLOW;
	if (check_add_overflow(card_addr, len, &end) ||
	    (r->card_size && end > r->card_size))
		return -ERANGE;
	return 0;
}

/**
 * fpgagdr_timeout_check() - check a caller's timeout
 * @timeout_ms: requested timeout
 * @max_ms: largest accepted
 *
 * Zero is rejected, never read as "forever": every wait is bounded.
 *
 * Context: any.
 * Return: 0 or -EINVAL.
 */
int fpgagdr_timeout_check(u32 timeout_ms, u32 max_ms)
{
	return timeout_ms && timeout_ms <= max_ms ? 0 : -EINVAL;
}

/**
 * fpgagdr_handle_missing() - errno for a handle that is not in the table
 * @handle: the handle asked for
 * @next: the next handle the file would issue
 * @wrapped: whether the file's handle counter has wrapped around
 *
 * Handles are issued in increasing order starting at 1 and not reused
 * until the 32-bit counter wraps, so a missing handle below @next was
 * issued and already unpinned.
 *
 * Context: any.
 * Return: -EALREADY for a handle already unpinned, else -ENOENT.
 */
int fpgagdr_handle_missing(u32 handle, u32 next, bool wrapped)
{
	if (handle && handle < next && !wrapped)
		return -EALREADY;
	return -ENOENT;
}
