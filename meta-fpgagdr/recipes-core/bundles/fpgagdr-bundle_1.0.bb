SUMMARY = "fpgagdr OTA update bundle (RAUC) with the fpgagdr-image rootfs"
DESCRIPTION = "A signed RAUC bundle for the rootfs A/B slots of the appliance, with \
               the hooks that refuse a device without A/B and stage the bootloader \
               capsule when one is included."
HOMEPAGE = "https://example.invalid/fpgagdr"
LICENSE = "MIT"

inherit bundle fpgagdr_rauc

# Jetson machines only: the slots and boot control are meta-tegra's.
COMPATIBLE_MACHINE = "(tegra)"

SRC_URI = "file://fpgagdr-bundle-hooks.sh"

RAUC_BUNDLE_COMPATIBLE = "${FPGAGDR_RAUC_COMPATIBLE}"
RAUC_BUNDLE_VERSION = "${DISTRO_VERSION}"
RAUC_BUNDLE_DESCRIPTION = "fpgagdr appliance ${DISTRO_VERSION}"
# verity: RAUC checks every block as it reads it, and can stream the bundle (hawkBit).
# Needs dm-verity in the kernel (CONFIG_DM_VERITY; to be confirmed on the device).
RAUC_BUNDLE_FORMAT = "verity"

RAUC_BUNDLE_HOOKS[file] = "fpgagdr-bundle-hooks.sh"
RAUC_BUNDLE_HOOKS[hooks] = "install-check"

RAUC_BUNDLE_SLOTS = "rootfs"
RAUC_SLOT_rootfs = "fpgagdr-image"
RAUC_SLOT_rootfs[fstype] = "ext4"
RAUC_SLOT_rootfs[hooks] = "post-install"

# The bootloader capsule (meta-tegra's tegra-uefi-capsules, built with the image) rides
# along when FPGAGDR_BUNDLE_CAPSULE = "1"; the post-install hook stages it.
FPGAGDR_BUNDLE_CAPSULE ??= "0"
RAUC_BUNDLE_EXTRA_DEPENDS += "${@'tegra-uefi-capsules' if bb.utils.to_boolean(d.getVar('FPGAGDR_BUNDLE_CAPSULE')) else ''}"
RAUC_BUNDLE_EXTRA_FILES += "${@'tegra-bl.cap' if bb.utils.to_boolean(d.getVar('FPGAGDR_BUNDLE_CAPSULE')) else ''}"

RAUC_KEY_FILE = "${FPGAGDR_RAUC_KEY_DIR}/signing.key.pem"
RAUC_CERT_FILE = "${FPGAGDR_RAUC_KEY_DIR}/signing.cert.pem"
RAUC_KEYRING_FILE = "${FPGAGDR_RAUC_KEY_DIR}/ca.cert.pem"

# Development keys fail a release build here, before anything is signed.
FPGAGDR_RAUC_CERT_TO_CHECK = "${RAUC_CERT_FILE}"
do_bundle[prefuncs] += "fpgagdr_check_keys"
