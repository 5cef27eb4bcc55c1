SUMMARY = "Marks the booted RAUC slot good once fpgagdrd is healthy"
DESCRIPTION = "A systemd unit, ordered after fpgagdrd.service, that runs \
               fpgagdrd --mark-good-after-health on every boot: a new slot is \
               marked good when the service is healthy, bad (and the device \
               rebooted into the other slot) when it is not and the other slot \
               is good; and a drop-in that runs NVIDIA's nvbootctrl verify only \
               after that verdict."
HOMEPAGE = "https://example.invalid/fpgagdr"
# The repository's licence (its root LICENSE).
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "${FPGAGDR_LICENSE_CHKSUM}"

SRC_URI = "\
    file://fpgagdr-mark-good.service \
    file://50-fpgagdr-health-gate.conf \
"
S = "${FPGAGDR_UNPACKDIR}"

inherit systemd allarch

do_install() {
    install -d ${D}${systemd_system_unitdir}
    sed -e 's,@bindir@,${bindir},g' -e 's,@sysconfdir@,${sysconfdir},g' \
        ${FPGAGDR_UNPACKDIR}/fpgagdr-mark-good.service > ${D}${systemd_system_unitdir}/fpgagdr-mark-good.service
    chmod 0644 ${D}${systemd_system_unitdir}/fpgagdr-mark-good.service
    # nvbootctrl verify (meta-tegra's nv_update_verifier.service) after the health gate.
    install -D -m 0644 ${FPGAGDR_UNPACKDIR}/50-fpgagdr-health-gate.conf \
        ${D}${systemd_system_unitdir}/nv_update_verifier.service.d/50-fpgagdr-health-gate.conf
}

SYSTEMD_SERVICE:${PN} = "fpgagdr-mark-good.service"
FILES:${PN} += "${systemd_system_unitdir}/nv_update_verifier.service.d"
RDEPENDS:${PN} = "fpgagdrd rauc"
