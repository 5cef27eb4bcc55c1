// SPDX-License-Identifier: GPL-2.0
/*
 * DMA segment list arithmetic.  Pure logic: no allocation, no locking, no
 * kernel state; tests/ builds this file unchanged in user space.
 */
#include "fpgagdr-sg.h"

/**
 * fpgagdr_sg_merge() - merge bus-contiguous neighbours in place
 * @segs: segment list, in buffer order
 * @n: number of entries in @segs
 * @max_len: longest segment a merge may make (the device's maximum DMA
 *	segment size); longer input segments are kept as they are
 *
 * Two neighbours merge when the first ends at the bus address where the
 * second starts and the sum is at most @max_len.  Empty segments are
 * dropped.  The descriptor builder still splits at its own limit.
 *
 * Context: any.
 * Return: the number of segments left at the start of @segs.
 */
u32 fpgagdr_sg_merge(struct fpgagdr_seg *segs, u32 n, u64 max_len)
{
	u32 in, out = 0;
	u64 end;

	for (in = 0; in < n; in++) {
		if (!segs[in].len)
			continue;
		if (out && !check_add_overflow(segs[out - 1].addr,
					       segs[out - 1].len, &end) &&
		    end == segs[in].addr &&
		    segs[out - 1].len <= max_len &&
		    segs[in].len <= max_len - segs[out - 1].len) {
			segs[out - 1].len += segs[in].len;
			continue;
		}
		segs[out++] = segs[in];
	}
	return out;
}

/**
 * fpgagdr_sg_clip() - keep exactly @len bytes starting @head bytes in
 * @segs: segment list covering whole pages, clipped in place
 * @n: number of entries in @segs
 * @head: bytes to drop at the front (the buffer's offset in its first page)
 * @len: bytes to keep (the buffer's length)
 * @out_n: number of segments left, set on success
 *
 * Memory is pinned in whole pages (64 KiB for GPU memory), but the card
 * must never be given bytes outside the buffer, even where a neighbour
 * shares the page.  After clipping, the list covers [head, head + len)
 * of the original list and nothing else.
 *
 * Context: any.
 * Return: 0, -EINVAL if @len is 0, -EOVERFLOW if the list is shorter than
 * @head + @len (the list is then left unchanged).
 */
int fpgagdr_sg_clip(struct fpgagdr_seg *segs, u32 n, u64 head, u64 len,
		    u32 *out_n)
{
	u32 i = 0, out = 0;
	u64 end, take;

	if (!len)
		return -EINVAL;
	if (check_add_overflow(head, len, &end) ||
	    end > fpgagdr_sg_total(segs, n))
		return -EOVERFLOW;

	while (i < n && head >= segs[i].len) {
		head -= segs[i].len;
		i++;
	}
	for (; i < n && len; i++) {
		take = min(segs[i].len - head, len);
		segs[out].addr = segs[i].addr + head;
		segs[out].len = take;
		out++;
		len -= take;
		head = 0;
	}
	if (len)
		return -EOVERFLOW;
	*out_n = out;
	return 0;
}

/**
 * fpgagdr_sg_total() - bytes covered by a segment list
 * @segs: segment list
 * @n: number of entries in @segs
 *
 * Context: any.
 * Return: the sum of the lengths.
 */
u64 fpgagdr_sg_total(const struct fpgagdr_seg *segs, u32 n)
{
	u64 sum = 0;
	u32 i;

	for (i = 0; i < n; i++)
		sum += segs[i].len;
	return sum;
}
