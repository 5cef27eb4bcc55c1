# fpgagdr's RAUC configuration, for DISTRO fpgagdr only: system.conf for meta-tegra's
# rootfs A/B layout, the keyring from FPGAGDR_RAUC_KEY_DIR (classes-recipe/fpgagdr_rauc,
# shared with fpgagdr-bundle), and the nvbootctrl boot-control backend. Replaces meta-rauc's
# example files.

FILESEXTRAPATHS:prepend:fpgagdr := "${THISDIR}/files:"

# The keyring comes from the key folder, never from a layer (meta-rauc's example).
# It is not a SRC_URI entry: bitbake would need the file to parse the layer, and the key
# folder is outside the layer (git-ignored dev keys, or production keys elsewhere). It is
# copied in do_install after fpgagdr_check_keys has checked it, and its checksum makes a
# changed keyring rebuild the recipe.
RAUC_KEYRING_FILE:fpgagdr = "ca.cert.pem"
RAUC_KEYRING_URI:fpgagdr = ""
do_install[file-checksums] += "${@'${FPGAGDR_RAUC_KEY_DIR}/ca.cert.pem:False' if 'fpgagdr' in d.getVar('DISTROOVERRIDES').split(':') else ''}"
SRC_URI:append:fpgagdr = " \
    file://rauc-nvbootctrl-backend.sh \
    file://50-fpgagdr-nv-boot-control.conf \
    file://system-boot-slots.conf \
"

# Development keys fail a release build before anything is installed.
do_install[prefuncs] += "${@'fpgagdr_check_keys' if 'fpgagdr' in d.getVar('DISTROOVERRIDES').split(':') else ''}"

do_install:prepend:fpgagdr() {
    # meta-rauc installs the keyring from the unpack directory (WORKDIR on scarthgap).
    install -m 0644 ${FPGAGDR_RAUC_KEY_DIR}/ca.cert.pem ${FPGAGDR_UNPACKDIR}/${RAUC_KEYRING_FILE}
}

do_install:append:fpgagdr() {
    # meta-rauc's master (for the Yocto release after scarthgap; the JetPack 7.2 target)
    # installs system.conf and the keyring in /usr/lib/rauc, scarthgap in /etc/rauc.
    # The appliance keeps both in /etc/rauc on every target: system.conf names the
    # keyring there, docs/ota.md and the update's hooks expect it there, and RAUC
    # (1.13 and later) reads /etc/rauc/system.conf before /usr/lib/rauc's.
    if [ -f ${D}${nonarch_libdir}/rauc/system.conf ]; then
        install -d ${D}${sysconfdir}/rauc
        mv ${D}${nonarch_libdir}/rauc/system.conf ${D}${nonarch_libdir}/rauc/${RAUC_KEYRING_FILE} \
            ${D}${sysconfdir}/rauc/
        rmdir ${D}${nonarch_libdir}/rauc
    fi
    # The kernel and kernel-dtb slots when bundles carry the boot chain (fpgagdr_rauc).
    if [ "${FPGAGDR_BOOT_CHAIN}" = 1 ]; then
        cat ${FPGAGDR_UNPACKDIR}/system-boot-slots.conf >> ${D}${sysconfdir}/rauc/system.conf
    fi
    sed -i -e 's,@COMPATIBLE@,${FPGAGDR_RAUC_COMPATIBLE},' \
        -e 's,@KEYRING@,${RAUC_KEYRING_FILE},' \
        -e 's,@STATUSFILE@,${FPGAGDR_RAUC_STATUSFILE},' \
        -e 's,@LIBEXECDIR@,${libexecdir},' \
        ${D}${sysconfdir}/rauc/system.conf
    install -D -m 0755 ${FPGAGDR_UNPACKDIR}/rauc-nvbootctrl-backend.sh \
        ${D}${libexecdir}/fpgagdr/rauc-nvbootctrl-backend
    # rauc.service after meta-tegra's setup-nv-boot-control.service (nvbootctrl's config).
    install -D -m 0644 ${FPGAGDR_UNPACKDIR}/50-fpgagdr-nv-boot-control.conf \
        ${D}${systemd_system_unitdir}/rauc.service.d/50-fpgagdr-nv-boot-control.conf
}

PACKAGE_ARCH:fpgagdr = "${MACHINE_ARCH}"
FILES:${PN}:append:fpgagdr = " ${libexecdir}/fpgagdr/rauc-nvbootctrl-backend ${systemd_system_unitdir}/rauc.service.d"
# nvbootctrl (tegra-redundant-boot-base); chattr (e2fsprogs) for the efivarfs variables.
RDEPENDS:${PN}:append:fpgagdr = " tegra-redundant-boot-base e2fsprogs"

# The shared knobs and key check (classes-recipe/fpgagdr_rauc.bbclass), DISTRO fpgagdr only.
# (Written without spaces so that the layer check reads it as one word.)
FPGAGDR_RAUC_CLASS:fpgagdr = "fpgagdr_rauc"
inherit_defer ${@d.getVar('FPGAGDR_RAUC_CLASS')or''}
