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

# No nvidia_p2p back-end on any Jetson: the GPU path is the host back-end
# (cudaHostAlloc memory, pinned by the module with pin_user_pages), the only method
# Thor supports (NVIDIA's GPUDirect RDMA guide: upstream kernel APIs only) and the
# default on Orin. So the module needs no NVIDIA symbol and builds against either
# kernel (5.15 on scarthgap, 6.8 on JetPack 7.2; kmod/compat.h probes the API
# differences). "auto" would look for nv-p2p.h under the build host's /usr/src.
EXTRA_OEMAKE += "FPGAGDR_NVP2P=n NVIDIA_SRC="

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
