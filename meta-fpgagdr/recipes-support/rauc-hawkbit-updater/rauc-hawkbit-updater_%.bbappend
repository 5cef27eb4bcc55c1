# fpgagdr (DISTRO fpgagdr only): the hawkBit client installed with a documented config
# (files/config.conf), but off by default (docs/ota.md, "Fleet updates with hawkBit").

FILESEXTRAPATHS:prepend:fpgagdr := "${THISDIR}/files:"
SRC_URI:append:fpgagdr = " file://config.conf"

# Installed, not enabled: a fleet operator enables it after filling in config.conf.
SYSTEMD_AUTO_ENABLE:${PN}:fpgagdr = "disable"

do_install:append:fpgagdr() {
    # Replaces meta-rauc's example; it holds the device's hawkBit token.
    install -m 0600 ${FPGAGDR_UNPACKDIR}/config.conf ${D}${sysconfdir}/${PN}/config.conf
    chown rauc-hawkbit ${D}${sysconfdir}/${PN}/config.conf
}
