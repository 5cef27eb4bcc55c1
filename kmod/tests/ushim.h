/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-ins for the kernel types and helpers used by the pure
 * logic files, so that the unit tests compile the module's own sources.
 * Only what those files use is here; semantics follow the kernel's.
 */
#ifndef FPGAGDR_USHIM_H
#define FPGAGDR_USHIM_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned int __le32;

#define cpu_to_le32(x)	((__le32)htole32((u32)(x)))
#define le32_to_cpu(x)	((u32)le32toh((u32)(x)))

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define BIT(n)		(1UL << (n))
#define GENMASK(h, l)	((~0U << (l)) & (~0U >> (31 - (h))))
#define FIELD_PREP(mask, val)	\
	(((u32)(val) << __builtin_ctz(mask)) & (mask))
#define FIELD_GET(mask, reg)	\
	(((u32)(reg) & (mask)) >> __builtin_ctz(mask))

#define lower_32_bits(n)	((u32)((n) & 0xffffffffU))
#define upper_32_bits(n)	((u32)((u64)(n) >> 32))

#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)
static inline bool is_power_of_2(u64 n)
{
	return n && !(n & (n - 1));
}

#define IS_ALIGNED(x, a)	(((x) & ((u64)(a) - 1)) == 0)
#define round_down(x, y)	((x) & ~((u64)(y) - 1))
#define div64_u64(a, b)		((u64)(a) / (u64)(b))
static inline u64 div_u64_rem(u64 dividend, u32 divisor, u32 *remainder)
{
	*remainder = (u32)(dividend % divisor);
	return dividend / divisor;
}

static inline u64 fgu_div_round_up(u64 n, u64 d)
{
	return (n + d - 1) / d;
}

#define DIV_ROUND_UP(n, d)	fgu_div_round_up(n, d)

#define min(a, b)	({ typeof(a) _a = (a); typeof(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b)	({ typeof(a) _a = (a); typeof(b) _b = (b); _a > _b ? _a : _b; })
#define min_t(t, a, b)	({ t _x = (a), _y = (b); _x < _y ? _x : _y; })

#endif /* FPGAGDR_USHIM_H */
