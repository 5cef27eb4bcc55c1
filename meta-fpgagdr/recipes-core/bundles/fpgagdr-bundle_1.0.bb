SUMMARY = "fpgagdr OTA update bundle (RAUC) with the fpgagdr-image rootfs"
DESCRIPTION = "A signed RAUC bundle for the rootfs A/B slots of the appliance, with \
               the hooks that refuse a device without A/B and stage the bootloader \
               capsule when one is included."
HOMEPAGE = "https://example.invalid/fpgagdr"
# The repository's licence (its root LICENSE); the images inside keep theirs.
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "${FPGAGDR_LICENSE_CHKSUM}"

# l4t_version (meta-tegra): L4T_VERSION, which the capsule's version is made of.
inherit bundle fpgagdr_rauc l4t_version

# Jetson machines only: the slots and boot control are meta-tegra's.
COMPATIBLE_MACHINE = "(tegra)"

# mtools: the L4TLauncher is read out of meta-tegra's ESP image (do_configure below).
DEPENDS += "${@'mtools-native' if d.getVar('FPGAGDR_BOOT_CHAIN') else ''}"

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

# The boot chain rides along when FPGAGDR_BUNDLE_CAPSULE = "1" (docs/ota.md,
# "Bootloader capsule"), so an update to a new L4T release updates the QSPI firmware
# with it:
#   tegra-bl.cap         meta-tegra's UEFI capsule (tegra-uefi-capsules), signed with
#                        UEFI_CAPSULE_* (a release build refuses EDK2's test
#                        certificates: tegra-uefi-capsules_%.bbappend)
#   BOOTAA64.efi         the L4TLauncher of the same release, from meta-tegra's ESP image
#   fpgagdr-boot.conf    the capsule's firmware version (TEGRA_UEFI_FW_VERSION): the
#                        post-install hook stages the capsule only for a boot chain that
#                        does not hold that version, and install-check refuses one below
#                        the firmware's lowest supported version (no downgrade)
#   kernel, dtb images   the slot's A_/B_kernel and A_/B_kernel-dtb partitions, RAUC child
#                        slots of the rootfs slot (system.conf), written with it
# FPGAGDR_BUNDLE_CAPSULE and FPGAGDR_BOOT_CHAIN: classes-recipe/fpgagdr_rauc.bbclass
# (rauc-conf's system.conf has the kernel and dtb slots exactly when bundles carry them).
RAUC_BUNDLE_EXTRA_DEPENDS += "${@'tegra-uefi-capsules tegra-espimage:do_image_complete' if d.getVar('FPGAGDR_BOOT_CHAIN') else ''}"
RAUC_BUNDLE_EXTRA_FILES += "${@'tegra-bl.cap' if d.getVar('FPGAGDR_BOOT_CHAIN') else ''}"

# The kernel partition's image as meta-tegra's tegraflash writes it (the boot image of
# the kernel and, unless bundled, the initramfs: image_types_tegra's tegra_kernel_image)
# and the deployed device tree (DTBFILE, meta-tegra's devicetree/ of virtual/dtb).
def fpgagdr_kernel_partition(d):
    if d.getVar('INITRAMFS_IMAGE'):
        if bb.utils.to_boolean(d.getVar('INITRAMFS_IMAGE_BUNDLE')):
            return ('${KERNEL_IMAGETYPE}-${INITRAMFS_LINK_NAME}.cboot', 'virtual/kernel:do_deploy')
        return ('${INITRAMFS_IMAGE}-${MACHINE}.cboot', '${INITRAMFS_IMAGE}:do_image_complete')
    return ('${KERNEL_IMAGETYPE}-${MACHINE}.cboot', 'virtual/kernel:do_deploy')

FPGAGDR_DTBFILE ?= "${@os.path.basename((d.getVar('KERNEL_DEVICETREE') or 'none').split()[0])}"
RAUC_BUNDLE_SLOTS += "${@'kernel dtb' if d.getVar('FPGAGDR_BOOT_CHAIN') else ''}"
RAUC_SLOT_kernel = "virtual/kernel"
RAUC_SLOT_kernel[type] = "file"
RAUC_SLOT_kernel[file] = "${@fpgagdr_kernel_partition(d)[0]}"
RAUC_SLOT_kernel[depends] = "${@fpgagdr_kernel_partition(d)[1]}"
RAUC_SLOT_dtb = "virtual/dtb"
RAUC_SLOT_dtb[type] = "file"
RAUC_SLOT_dtb[file] = "devicetree/${FPGAGDR_DTBFILE}"
RAUC_SLOT_dtb[depends] = "virtual/dtb:do_deploy"

# The launcher out of meta-tegra's ESP image (a FAT image: mtools reads it without a
# mount), and the version file, into the bundle before it is signed.
python do_configure:append() {
    if not d.getVar('FPGAGDR_BOOT_CHAIN'):
        return
    import subprocess
    bundle = d.getVar('BUNDLE_DIR')
    esp = d.expand('${DEPLOY_DIR_IMAGE}/tegra-espimage-${MACHINE}.esp')
    subprocess.run(['mcopy', '-n', '-i', esp, '::/EFI/BOOT/BOOTAA64.efi',
                    os.path.join(bundle, 'BOOTAA64.efi')], check=True)
    with open(os.path.join(bundle, 'fpgagdr-boot.conf'), 'w') as f:
        f.write('bootloader_version=%s\nl4t_version=%s\n'
                % (d.getVar('TEGRA_UEFI_FW_VERSION'), d.getVar('L4T_VERSION')))
}
do_configure[vardeps] += "TEGRA_UEFI_FW_VERSION L4T_VERSION FPGAGDR_BOOT_CHAIN"

RAUC_KEY_FILE = "${FPGAGDR_RAUC_KEY_DIR}/signing.key.pem"
RAUC_CERT_FILE = "${FPGAGDR_RAUC_KEY_DIR}/signing.cert.pem"
RAUC_KEYRING_FILE = "${FPGAGDR_RAUC_KEY_DIR}/ca.cert.pem"

# Development keys fail a release build here, before anything is signed.
FPGAGDR_RAUC_CERT_TO_CHECK = "${RAUC_CERT_FILE}"
do_bundle[prefuncs] += "fpgagdr_check_keys"
