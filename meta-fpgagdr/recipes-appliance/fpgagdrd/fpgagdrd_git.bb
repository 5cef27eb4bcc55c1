SUMMARY = "fpgagdr appliance service: capture, inference, metrics, REST API and dashboard"
DESCRIPTION = "fpgagdrd from the Cargo workspace (appliance/fpgagdrd and the crates it links: \
               fpgagdr, fpgagdr-sim, fpgagdr-infer, fpgagdr-telemetry, fpgagdr-ota, \
               fpgagdr-uapi), with the web \
               dashboard (webui/) embedded in the binary, its systemd unit and its user."
HOMEPAGE = "https://example.invalid/fpgagdr"
SECTION = "console/network"
# The workspace's licence (Apache-2.0, the root LICENSE) and those of the crates linked
# in: LICENSE and LIC_FILES_CHKSUM, generated from Cargo.lock by
# scripts/crate-licenses.py, which also writes appliance/crate-licenses.txt (installed
# below). scripts/check.sh fails while they are not current.
require fpgagdrd-licenses.inc

require recipes-appliance/include/fpgagdr-source.inc
require recipes-appliance/include/fpgagdr-cudarc.inc
require fpgagdrd-crates.inc

SRC_URI += "\
    file://fpgagdrd.service \
    file://fpgagdrd.default \
"

inherit systemd useradd

# The Rust toolchain and cargo class: meta-rust-bin's prebuilt toolchain (pinned to the
# workspace's rust-version in the distro) where that layer is in the build, which is
# the scarthgap target (oe-core scarthgap's own Rust is 1.75); oe-core's Rust and cargo
# class otherwise (1.97 on oe-core master, the JetPack 7.2 target). Both take the crates
# from do_fetch (fpgagdrd-crates.inc) and build with --frozen, without the network.
FPGAGDR_RUST ?= "${@'rust-bin' if 'rust-bin-layer' in (d.getVar('BBFILE_COLLECTIONS') or '').split() else 'oe'}"
# nooelint: oelint.file.requirenotfound - the name is chosen at parse time; both files are here (bbparse-check.py parses both)
require fpgagdrd-${FPGAGDR_RUST}.inc

# Build paths out of the binary and its debug info (crates, sources, OUT_DIR are all
# under WORKDIR), so the buildpaths QA check holds; it fails the build here, not warns.
WARN_QA:remove = "buildpaths"
ERROR_QA:append = " buildpaths"

do_install() {
    install -D -m 0755 ${FPGAGDR_CARGO_OUT}/fpgagdrd ${D}${bindir}/fpgagdrd

    install -d ${D}${systemd_system_unitdir}
    sed -e 's,@bindir@,${bindir},g' -e 's,@libdir@,${libdir},g' \
        -e 's,@datadir@,${datadir},g' -e 's,@sysconfdir@,${sysconfdir},g' \
        ${FPGAGDR_UNPACKDIR}/fpgagdrd.service > ${D}${systemd_system_unitdir}/fpgagdrd.service
    chmod 0644 ${D}${systemd_system_unitdir}/fpgagdrd.service
    install -D -m 0644 ${FPGAGDR_UNPACKDIR}/fpgagdrd.default ${D}${sysconfdir}/default/fpgagdrd
    # The licences: the workspace's and the list of the crates linked in.
    install -D -m 0644 ${S}/LICENSE ${S}/appliance/crate-licenses.txt -t ${D}${datadir}/licenses/${BPN}/

    # config.json and the API token are written here by the service (atomic rename).
    install -d -m 0750 ${D}${sysconfdir}/fpgagdr
    chown fpgagdr:fpgagdr ${D}${sysconfdir}/fpgagdr
}

SYSTEMD_SERVICE:${PN} = "fpgagdrd.service"

USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "--system fpgagdr"
USERADD_PARAM:${PN} = "--system --gid fpgagdr --home-dir ${localstatedir}/lib/fpgagdr \
                       --no-create-home --shell ${base_sbindir}/nologin fpgagdr"

CONFFILES:${PN} = "${sysconfdir}/default/fpgagdrd"
# The licence list ships with the binary, not in a -doc package nobody installs.
FILES:${PN} += "${datadir}/licenses/${BPN}"

VIRTUAL-RUNTIME_onnxruntime ??= "onnxruntime"
# The model it loads by default, and the library it loads ONNX Runtime from.
RDEPENDS:${PN} += "${VIRTUAL-RUNTIME_onnxruntime} fpgagdr-data"
# The card's module and the demo frames of the simulated card.
RRECOMMENDS:${PN} += "fpgagdr-module fpgagdr-data-frames"
# On Jetson: libcuda (frame ring in GPU-visible memory), NVRTC (GPU preprocessing),
# and the udev rules that give the GPU nodes to group video. cuda-nvrtc installs
# libnvrtc in /usr/local/cuda-<version>/lib, which only cuda-cudart's
# /etc/ld.so.conf.d/cuda-<version>.conf puts on the loader's path: without it the
# service's dlopen of libnvrtc fails and preprocessing falls back to the CPU
# (docs/yocto.md, "NVRTC on the loader's path"; scripts/dry-run.sh checks it).
RRECOMMENDS:${PN}:append:tegra = " tegra-libraries-cuda cuda-nvrtc cuda-cudart tegra-configs-udev"
