SUMMARY = "The fpgagdr appliance's admin access: sudo for user admin, SSH with keys only"
DESCRIPTION = "Lets the admin user of fpgagdr-image (created there with an initial \
               password that must be changed at the first login) administer the \
               device with sudo, and keeps SSH to keys and away from root."
HOMEPAGE = "https://example.invalid/fpgagdr"
# The repository's licence (its root LICENSE).
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "${FPGAGDR_LICENSE_CHKSUM}"

SRC_URI = "\
    file://50-fpgagdr-admin.sudoers \
    file://50-fpgagdr.sshd.conf \
"
S = "${FPGAGDR_UNPACKDIR}"

inherit allarch

do_install() {
    install -D -m 0440 ${FPGAGDR_UNPACKDIR}/50-fpgagdr-admin.sudoers ${D}${sysconfdir}/sudoers.d/50-fpgagdr-admin
    install -D -m 0644 ${FPGAGDR_UNPACKDIR}/50-fpgagdr.sshd.conf ${D}${sysconfdir}/ssh/sshd_config.d/50-fpgagdr.conf
}

FILES:${PN} += "${sysconfdir}/sudoers.d ${sysconfdir}/ssh/sshd_config.d"
RDEPENDS:${PN} = "sudo"
