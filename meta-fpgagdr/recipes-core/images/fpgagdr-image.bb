SUMMARY = "fpgagdr appliance image for Jetson Orin"
DESCRIPTION = "The FPGA-capture-to-inference appliance: the fpgagdr module, the \
               fpgagdrd service with its dashboard and data, ONNX Runtime, RAUC for \
               A/B updates, the Tegra boot-control tools, and SSH for maintenance. \
               Nothing else."
LICENSE = "MIT"

# tegra-redundant-boot and the tegraflash image type exist only for Jetson machines.
COMPATIBLE_MACHINE = "(tegra)"

inherit core-image

# Maintenance access: key-only (no password is set anywhere in the image).
IMAGE_FEATURES += "ssh-server-openssh"

IMAGE_INSTALL = "\
    packagegroup-core-boot \
    fpgagdr-module \
    fpgagdrd \
    fpgagdr-data \
    fpgagdr-data-frames \
    rauc \
    rauc-service \
    fpgagdr-mark-good \
    rauc-hawkbit-updater \
    tegra-redundant-boot \
    ${CORE_IMAGE_EXTRA_INSTALL} \
"
# rauc-service: RAUC's D-Bus service, which fpgagdrd drives (packaged apart from rauc).
# fpgagdr-mark-good: marks a new slot good only after the service reports healthy, so
# meta-rauc's unconditional rauc-mark-good is kept out.
# rauc-hawkbit-updater: installed for fleets, disabled until configured (docs/ota.md).
BAD_RECOMMENDATIONS += "rauc-mark-good"
# tegra-redundant-boot: nvbootctrl and the boot-slot verifier (nv_update_verifier), the
# backend RAUC's Tegra boot-control script drives (issue 9).

IMAGE_LINGUAS = ""

# Public keys allowed to log in as root over SSH: a file on the build host, e.g. set in
# a kas local_conf_header. Without it the image has no way in but the serial console.
FPGAGDR_SSH_AUTHORIZED_KEYS ??= ""
ROOTFS_POSTPROCESS_COMMAND += "fpgagdr_authorized_keys"
fpgagdr_authorized_keys[doc] = "Installs FPGAGDR_SSH_AUTHORIZED_KEYS as root's authorized_keys"
fpgagdr_authorized_keys() {
    if [ -z "${FPGAGDR_SSH_AUTHORIZED_KEYS}" ]; then
        bbnote "FPGAGDR_SSH_AUTHORIZED_KEYS is empty: no SSH login into this image"
        return 0
    fi
    install -d -m 0700 ${IMAGE_ROOTFS}${ROOT_HOME}/.ssh
    install -m 0600 ${FPGAGDR_SSH_AUTHORIZED_KEYS} ${IMAGE_ROOTFS}${ROOT_HOME}/.ssh/authorized_keys
}
# Rebuild the rootfs when the key file changes.
do_rootfs[file-checksums] += "${@'${FPGAGDR_SSH_AUTHORIZED_KEYS}:True' if d.getVar('FPGAGDR_SSH_AUTHORIZED_KEYS') else ''}"
