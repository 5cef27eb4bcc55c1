SUMMARY = "fpgagdr appliance service: capture, inference, metrics, REST API and dashboard"
DESCRIPTION = "fpgagdrd from the Cargo workspace (appliance/fpgagdrd and the crates it links: \
               fpgagdr, fpgagdr-sim, fpgagdr-infer, fpgagdr-telemetry, fpgagdr-ota, \
               fpgagdr-uapi), with the web \
               dashboard (webui/) embedded in the binary, its systemd unit and its user."
HOMEPAGE = "https://example.invalid/fpgagdr"
SECTION = "console/network"
# The workspace's licence; the crates linked in keep theirs (list: cargo metadata).
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/Apache-2.0;md5=89aea4e17d99a7cacdbeed46a0096b10"

require recipes-appliance/include/fpgagdr-source.inc
require fpgagdrd-crates.inc

SRC_URI += "\
    file://cargo-config.toml \
    file://fpgagdrd.service \
    file://fpgagdrd.default \
"

S = "${WORKDIR}/git"

inherit cargo_bin systemd useradd

# Only the service; --frozen: Cargo.lock as committed, no network (the crates come
# from do_fetch, see do_configure).
EXTRA_CARGO_FLAGS = "--frozen --package fpgagdrd --bin fpgagdrd"
# Build paths out of the binary and its debug info (crates, sources, OUT_DIR are all
# under WORKDIR), so the buildpaths QA check holds; it fails the build here, not warns.
EXTRA_RUSTFLAGS = "--remap-path-prefix=${WORKDIR}=${TARGET_DBGSRC_DIR}"
WARN_QA:remove = "buildpaths"
ERROR_QA:append = " buildpaths"

# The crate fetcher unpacks each crate into ${WORKDIR}/cargo_home/bitbake, which is
# ${CARGO_HOME}/bitbake with cargo_bin's CARGO_HOME: make it crates.io's replacement.
do_configure:append() {
    sed -e 's,@CARGO_HOME@,${CARGO_HOME},g' ${WORKDIR}/cargo-config.toml > ${CARGO_HOME}/config.toml
}

do_install() {
    install -D -m 0755 ${CARGO_BINDIR}/fpgagdrd ${D}${bindir}/fpgagdrd

    install -d ${D}${systemd_system_unitdir}
    sed -e 's,@bindir@,${bindir},g' -e 's,@libdir@,${libdir},g' \
        -e 's,@datadir@,${datadir},g' -e 's,@sysconfdir@,${sysconfdir},g' \
        ${WORKDIR}/fpgagdrd.service > ${D}${systemd_system_unitdir}/fpgagdrd.service
    chmod 0644 ${D}${systemd_system_unitdir}/fpgagdrd.service
    install -D -m 0644 ${WORKDIR}/fpgagdrd.default ${D}${sysconfdir}/default/fpgagdrd

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

VIRTUAL-RUNTIME_onnxruntime ??= "onnxruntime-bin"
# The model it loads by default, and the library it loads ONNX Runtime from.
RDEPENDS:${PN} += "${VIRTUAL-RUNTIME_onnxruntime} fpgagdr-data"
# The card's module and the demo frames of the simulated card.
RRECOMMENDS:${PN} += "fpgagdr-module fpgagdr-data-frames"
# On Jetson: libcuda (frame ring in GPU-visible memory), NVRTC (GPU preprocessing),
# and the udev rules that give the GPU nodes to group video.
RRECOMMENDS:${PN}:append:tegra = " tegra-libraries-cuda cuda-nvrtc tegra-configs-udev"
