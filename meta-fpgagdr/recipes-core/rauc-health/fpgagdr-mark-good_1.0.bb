SUMMARY = "Marks the booted RAUC slot good once fpgagdrd is healthy"
DESCRIPTION = "A systemd unit, ordered after fpgagdrd.service, that runs \
               fpgagdrd --mark-good-after-health on every boot: a new slot is \
               marked good when the service is healthy, bad (and the device \
               rebooted into the other slot) when it is not."
HOMEPAGE = "https://example.invalid/fpgagdr"
LICENSE = "MIT"
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302"

SRC_URI = "file://fpgagdr-mark-good.service"
S = "${FPGAGDR_UNPACKDIR}"

inherit systemd allarch

do_install() {
    install -d ${D}${systemd_system_unitdir}
    sed -e 's,@bindir@,${bindir},g' -e 's,@sysconfdir@,${sysconfdir},g' \
        ${FPGAGDR_UNPACKDIR}/fpgagdr-mark-good.service > ${D}${systemd_system_unitdir}/fpgagdr-mark-good.service
    chmod 0644 ${D}${systemd_system_unitdir}/fpgagdr-mark-good.service
}

SYSTEMD_SERVICE:${PN} = "fpgagdr-mark-good.service"
RDEPENDS:${PN} = "fpgagdrd rauc"
