SUMMARY = "libfpgagdr: the C API of the fpgagdr library"
DESCRIPTION = "The C ABI of the fpgagdr Rust library (appliance/fpgagdr-capi): open a card \
               (the kernel module's /dev/fpgagdrN or the simulated card), pin GPU or host \
               memory once, C2H/H2C transfers, the legacy memory-mapped calls routed into \
               registered GPU buffers, the frame wait. The shared library is in \
               libfpgagdr; its generated header fpgagdr.h, libfpgagdr.so and fpgagdr.pc \
               in libfpgagdr-dev; libfpgagdr.a in libfpgagdr-staticdev."
HOMEPAGE = "https://example.invalid/fpgagdr"
SECTION = "libs"
# The workspace's licence and those of the crates linked in (scripts/crate-licenses.py,
# from Cargo.lock; the list appliance/crate-licenses.txt is installed below).
require libfpgagdr-licenses.inc

require recipes-appliance/include/fpgagdr-source.inc
require recipes-appliance/include/fpgagdr-cudarc.inc
# The same Cargo.lock as the service: the same crates (cbindgen among them, for the
# header, built for the build host by cargo).
require recipes-appliance/fpgagdrd/fpgagdrd-crates.inc

# The toolchain choice of fpgagdrd_git.bb: meta-rust-bin where it is in the build
# (scarthgap), oe-core's Rust otherwise.
FPGAGDR_RUST ?= "${@'rust-bin' if 'rust-bin-layer' in (d.getVar('BBFILE_COLLECTIONS') or '').split() else 'oe'}"
# nooelint: oelint.file.requirenotfound - the name is chosen at parse time; both files are here (bbparse-check.py parses both)
require libfpgagdr-${FPGAGDR_RUST}.inc

WARN_QA:remove = "buildpaths"
ERROR_QA:append = " buildpaths"

# install.sh does what cargo-c would: libfpgagdr.so.1 (the soname build.rs sets) and the
# development link, libfpgagdr.a, the header cbindgen wrote in the build script's
# OUT_DIR, and fpgagdr.pc. The default FILES split them: the .so.1 into ${PN}, header,
# .so link and .pc into ${PN}-dev, the .a into ${PN}-staticdev.
do_install() {
    DESTDIR=${D} LIBDIR=${libdir} ${S}/appliance/fpgagdr-capi/install.sh \
        --out ${FPGAGDR_CARGO_OUT} ${prefix}
    install -D -m 0644 ${S}/LICENSE ${S}/appliance/crate-licenses.txt -t ${D}${datadir}/licenses/${BPN}/
}
FILES:${PN} += "${datadir}/licenses/${BPN}"
