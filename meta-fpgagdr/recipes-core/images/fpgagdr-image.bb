SUMMARY = "fpgagdr appliance image for Jetson Orin"
DESCRIPTION = "The FPGA-capture-to-inference appliance: the fpgagdr module, the \
               fpgagdrd service with its dashboard and data, ONNX Runtime, RAUC for \
               A/B updates, the Tegra boot-control tools, and an admin user for \
               maintenance (serial console, SSH with keys). Nothing else."
# The repository's licence (its root LICENSE); each package keeps its own.
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "${FPGAGDR_LICENSE_CHKSUM}"

# tegra-redundant-boot and the tegraflash image type exist only for Jetson machines.
COMPATIBLE_MACHINE = "(tegra)"

inherit core-image extrausers

# Maintenance access: user admin (below), over SSH with keys only (fpgagdr-admin's sshd
# drop-in) and on the serial console with a password.
IMAGE_FEATURES += "ssh-server-openssh"

IMAGE_INSTALL = "\
    packagegroup-core-boot \
    fpgagdr-module \
    fpgagdrd \
    libfpgagdr \
    fpgagdr-data \
    fpgagdr-data-frames \
    rauc \
    rauc-service \
    fpgagdr-mark-good \
    rauc-hawkbit-updater \
    tegra-redundant-boot \
    fpgagdr-admin \
    ${CORE_IMAGE_EXTRA_INSTALL} \
"
# libfpgagdr: the C API's shared library, for capture programs deployed on the
# appliance (its header and .pc are in libfpgagdr-dev, for the SDK).
# rauc-service: RAUC's D-Bus service, which fpgagdrd drives (packaged apart from rauc).
# fpgagdr-mark-good: marks a new slot good only after the service reports healthy, so
# meta-rauc's unconditional rauc-mark-good is kept out.
# rauc-hawkbit-updater: installed for fleets, disabled until configured (docs/ota.md).
BAD_RECOMMENDATIONS += "rauc-mark-good"
# tegra-redundant-boot: nvbootctrl and the boot-slot verifier (nv_update_verifier), the
# backend RAUC's Tegra boot-control script drives.

IMAGE_LINGUAS = ""

# fpgagdr-admin: sudo for user admin, and SSH with keys only, never as root.

# The way in on a freshly flashed device, without a rebuild (docs/yocto.md, First boot):
# user admin, in groups fpgagdr (the card's nodes, /etc/fpgagdr) and systemd-journal
# (the service's log), administering with sudo (the API token: sudo cat
# /etc/fpgagdr/token). Its initial password is expired, so the first login (serial
# console, or SSH with a key) must change it. The default hash is that of "fpgagdr"
# (documented; check.sh checks the two agree); a product sets its own, as poky
# documents for EXTRA_USERS_PARAMS ($ written \$). root keeps no password (locked).
FPGAGDR_ADMIN_PASSWORD_HASH ??= "\$6\$fpgagdr0initial\$txLIuiA0auBsDbJtmFw/Bb7Q/GAWnyY6gDNtBk7/ML3oPFtp5Ygcqi3bT0nzepABMkUwgwsEuF1SzpRO66tiy."
EXTRA_USERS_PARAMS = "\
    useradd -m -d /home/admin -s /bin/sh -G fpgagdr,systemd-journal -p '${FPGAGDR_ADMIN_PASSWORD_HASH}' admin; \
    passwd-expire admin; \
"

# Public SSH keys of the admin user: a file on the build host (one key a line), from the
# environment through kas (conf/kas/include/base.yml forwards it) or a local.conf line.
# images/flash.sh --ssh-key adds keys at flash time instead, without a rebuild.
FPGAGDR_SSH_AUTHORIZED_KEYS ??= ""
# After extrausers' set_user_group (also an :append, parsed before): admin exists then.
ROOTFS_POSTPROCESS_COMMAND:append = " fpgagdr_admin_keys"
fpgagdr_admin_keys[doc] = "Installs FPGAGDR_SSH_AUTHORIZED_KEYS as the admin user's authorized_keys"
fpgagdr_admin_keys() {
    keys="${FPGAGDR_SSH_AUTHORIZED_KEYS}"
    if [ -z "$keys" ]; then
        bbnote "FPGAGDR_SSH_AUTHORIZED_KEYS is empty: admin logs in on the serial console, or add a key with images/flash.sh --ssh-key"
        return 0
    fi
    [ -f "$keys" ] || bbfatal "FPGAGDR_SSH_AUTHORIZED_KEYS = $keys: no such file (give an absolute path to a .pub file)"
    if grep -q 'PRIVATE KEY' "$keys"; then
        bbfatal "FPGAGDR_SSH_AUTHORIZED_KEYS = $keys is a private key: give the public key (.pub)"
    fi
    grep -Eq '(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+|sk-[a-z0-9-]+@openssh\.com) [A-Za-z0-9+/]+' "$keys" ||
        bbfatal "FPGAGDR_SSH_AUTHORIZED_KEYS = $keys holds no SSH public key"
    ids=$(awk -F: '$1 == "admin" { print $3 ":" $4 }' ${IMAGE_ROOTFS}${sysconfdir}/passwd)
    [ -n "$ids" ] || bbfatal "user admin is not in the image's ${sysconfdir}/passwd"
    install -d -m 0700 ${IMAGE_ROOTFS}/home/admin/.ssh
    install -m 0600 "$keys" ${IMAGE_ROOTFS}/home/admin/.ssh/authorized_keys
    chown -R "$ids" ${IMAGE_ROOTFS}/home/admin/.ssh
}
# Rebuild the rootfs when the key file changes.
do_rootfs[file-checksums] += "${@'${FPGAGDR_SSH_AUTHORIZED_KEYS}:True' if d.getVar('FPGAGDR_SSH_AUTHORIZED_KEYS') else ''}"
