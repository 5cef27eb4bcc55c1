// SPDX-License-Identifier: GPL-2.0
/*
 * The memory back-ends built into this module, by enum fpgagdr_mem_kind,
 * and what they make of the platform.
 */
#include <linux/of.h>

#include "fpgagdr-pinned.h"

static const struct fpgagdr_mem_ops *const fpgagdr_mems[] = {
	[FPGAGDR_MEM_HOST] = &fpgagdr_mem_host_ops,
	[FPGAGDR_MEM_NV_P2P] = FPGAGDR_NVP2P_OPS,
	[FPGAGDR_MEM_DMABUF] = &fpgagdr_mem_dmabuf_ops,
};

/**
 * fpgagdr_mem_ops() - the back-end for a memory kind
 * @kind: enum fpgagdr_mem_kind from user space, unchecked
 *
 * Context: any.
 * Return: the back-end, or NULL when it is not built in.
 */
const struct fpgagdr_mem_ops *fpgagdr_mem_ops(u32 kind)
{
	return kind < ARRAY_SIZE(fpgagdr_mems) ? fpgagdr_mems[kind] : NULL;
}

/**
 * fpgagdr_mem_kinds() - bit mask of the memory kinds built in
 *
 * Context: any.
 * Return: bit (1 << kind) set for each available back-end.
 */
u32 fpgagdr_mem_kinds(void)
{
	u32 kind, mask = 0;

	for (kind = 0; kind < ARRAY_SIZE(fpgagdr_mems); kind++)
		if (fpgagdr_mems[kind])
			mask |= BIT(kind);
	return mask;
}

/**
 * fpgagdr_mem_platform() - the platform, as GET_STATUS reports it
 *
 * Orin on a Tegra234 device tree, Thor on a Tegra264 one (the SoC
 * compatibles of the kernel's arch/arm64/boot/dts/nvidia/tegra234.dtsi and
 * tegra264.dtsi, which every Orin and Thor board's tree ends with); x86
 * with a discrete GPU when the nvidia_p2p back-end is built in; else none.
 *
 * Context: process context.
 * Return: enum fpgagdr_platform.
 */
u32 fpgagdr_mem_platform(void)
{
	if (IS_ENABLED(CONFIG_ARCH_TEGRA) &&
	    of_machine_is_compatible("nvidia,tegra234"))
		return FPGAGDR_PLATFORM_ORIN;
	if (IS_ENABLED(CONFIG_ARCH_TEGRA) &&
	    of_machine_is_compatible("nvidia,tegra264"))
		return FPGAGDR_PLATFORM_THOR;
	if (fpgagdr_mem_ops(FPGAGDR_MEM_NV_P2P))
		return FPGAGDR_PLATFORM_X86_DGPU;
	return FPGAGDR_PLATFORM_NONE;
}
