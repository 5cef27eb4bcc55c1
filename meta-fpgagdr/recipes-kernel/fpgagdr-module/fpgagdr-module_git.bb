SUMMARY = "fpgagdr kernel module: XDMA scatter-gather DMA into pinned GPU memory"
DESCRIPTION = "fpgagdr.ko drives a Xilinx XDMA PCIe core and DMAs frames into \
               memory the GPU uses in place; its ioctl ABI is \
               kmod/include/uapi/linux/fpgagdr.h. Also installs the udev rule that \
               gives /dev/fpgagdr* to the fpgagdr group."
HOMEPAGE = "https://example.invalid/fpgagdr"
SECTION = "kernel"
LICENSE = "GPL-2.0-only"
# The SPDX line of the module's entry file (kmod/ has no separate licence file).
LIC_FILES_CHKSUM = "file://fpgagdr-main.c;beginline=1;endline=1;md5=50d2ba0afecd20f74c12a4bdbcfcfe61"

require recipes-appliance/include/fpgagdr-source.inc

inherit module useradd

S = "${FPGAGDR_UNPACKDIR}/${BP}/kmod"

# Which back-ends are built in is kmod/Makefile's FPGAGDR_NVP2P (the host and dma-buf
# back-ends always are). The recipe sets it, never the build host ("auto" would look for
# nv-p2p.h under the build host's /usr/src). Every Jetson gets "n": the GPU path is the
# host back-end (cudaHostAlloc memory, pinned by the module with pin_user_pages), so the
# module needs no NVIDIA symbol and builds against either kernel (5.15 on JetPack 6,
# 6.8 on JetPack 7.2; kmod/compat.h probes the API differences). Anything else is
# refused per SoC below, with the reason (docs/kernel-module.md, "Pin methods by
# platform").
FPGAGDR_NVP2P ??= "n"
EXTRA_OEMAKE += "FPGAGDR_NVP2P=${FPGAGDR_NVP2P} NVIDIA_SRC="

# An anonymous function, because the refusal has to stop the parse (before any task)
# and say why; it reads two variables, nothing expensive.
# nooelint: oelint.task.noanonpython
python () {
    nvp2p = d.getVar('FPGAGDR_NVP2P')
    if nvp2p == 'n':
        return
    machine = d.getVar('MACHINE')
    overrides = (d.getVar('MACHINEOVERRIDES') or '').split(':')
    if 'tegra264' in overrides:
        why = ('Jetson Thor (%s) has no nvidia_p2p: NVIDIA\'s GPUDirect RDMA guide has '
               'Thor use the upstream kernel APIs (pin_user_pages) only' % machine)
    elif 'tegra' in overrides:
        why = ('on Jetson (%s) the module\'s nvidia_p2p back-end is the discrete-GPU '
               'driver\'s API (nvidia.ko\'s nv-p2p.h); L4T\'s own nvidia-p2p module has '
               'another one, which the module does not implement, and the host back-end '
               'is the GPU path' % machine)
    else:
        why = ('%s is not a Jetson; this layer builds the module for Jetson only, '
               'where the host back-end is the GPU path' % machine)
    bb.fatal('fpgagdr-module: FPGAGDR_NVP2P = "%s" refused (rule: FPGAGDR_NVP2P is "n" '
             'on every machine this layer builds for): %s' % (nvp2p, why))
}

# Loaded at boot, before the service starts (/etc/modules-load.d/fpgagdr.conf).
KERNEL_MODULE_AUTOLOAD += "fpgagdr"

do_install:append() {
    install -D -m 0644 ${S}/udev/99-fpgagdr.rules \
        ${D}${nonarch_base_libdir}/udev/rules.d/99-fpgagdr.rules
}

# The module class leaves ${PN} empty (the modules go to kernel-module-fpgagdr-*);
# the rule and the group belong to ${PN}, which depends on the module package.
FILES:${PN} += "${nonarch_base_libdir}/udev/rules.d/99-fpgagdr.rules"
USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "--system fpgagdr"
