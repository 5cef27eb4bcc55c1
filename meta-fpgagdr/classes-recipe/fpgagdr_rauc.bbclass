# fpgagdr_rauc: shared by rauc-conf.bbappend (what the device trusts) and
# fpgagdr-bundle (what the build signs): the compatible string, where the keys are, and
# the check that keeps development keys out of a release.
#
# Keys: FPGAGDR_RAUC_KEY_DIR holds ca.cert.pem (the keyring installed on the device),
# signing.cert.pem and signing.key.pem (used to sign bundles). The default is the
# git-ignored development folder that images/rauc/make-dev-keys.sh fills; a product
# sets it (kas local_conf_header / site.conf) to a folder outside the repository, or
# sets RAUC_KEY_FILE to a PKCS#11 URI (an HSM). See docs/ota.md.

# One compatible per machine: a bundle built for the Orin Nano refuses to install on
# the AGX Orin and the other way round (RAUC compares it before writing anything).
FPGAGDR_RAUC_COMPATIBLE ??= "fpgagdr-${MACHINE}"
FPGAGDR_RAUC_KEY_DIR ??= "${FPGAGDR_TOPDIR}/images/rauc/dev-keys"
# "1" for a release build: development keys (their subject carries the marker
# below, written by make-dev-keys.sh) then fail the build instead of warning.
FPGAGDR_RELEASE ??= "0"
FPGAGDR_DEV_KEY_MARKER = "fpgagdr-development-key"
# The boot chain in every bundle (fpgagdr-bundle_1.0.bb: UEFI capsule, L4TLauncher, the
# slot's kernel and kernel-dtb partitions; docs/ota.md, "Bootloader capsule"), and the
# kernel and dtb slots in system.conf (rauc-conf.bbappend). On by default on Orin
# (tegra234, JetPack 6 and 7.2); Thor's capsule path is not looked at yet. Written, not
# run: no Jetson here.
FPGAGDR_BUNDLE_CAPSULE ??= "${@'1' if 'tegra234' in (d.getVar('MACHINEOVERRIDES') or '').split(':') else '0'}"
FPGAGDR_BOOT_CHAIN = "${@'1' if bb.utils.to_boolean(d.getVar('FPGAGDR_BUNDLE_CAPSULE')) else ''}"
# RAUC's central slot status file (rauc-conf.bbappend). Inside the rootfs by default, so
# each slot keeps its own history; a product with a data partition points it there.
FPGAGDR_RAUC_STATUSFILE ??= "${localstatedir}/lib/rauc/central.raucs"

def fpgagdr_rauc_check_cert(d, path, what):
    """Fails the build when `path` is missing or holds no PEM certificate, or when any
    of its certificates is a development one while FPGAGDR_RELEASE = "1"; warns about a
    development certificate otherwise. Each certificate is decoded on its own: a keyring
    may hold several (the rotation layout of docs/ota.md: old CA, then new CA)."""
    import base64
    import binascii
    import os
    import re
    if not path or path.startswith("pkcs11:"):
        return
    if not os.path.isfile(path):
        bb.fatal("%s %s does not exist: run images/rauc/make-dev-keys.sh for development "
                 "keys, or set FPGAGDR_RAUC_KEY_DIR to your release keys (docs/ota.md)" % (what, path))
    with open(path) as f:
        text = f.read()
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", text, re.S)
    if not blocks:
        bb.fatal("%s %s holds no PEM certificate" % (what, path))
    marker = d.getVar("FPGAGDR_DEV_KEY_MARKER").encode()
    dev = []
    for n, body in enumerate(blocks, 1):
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except (binascii.Error, ValueError) as e:
            bb.fatal("%s %s: certificate %d of %d is not valid base64 (%s)" % (what, path, n, len(blocks), e))
        if marker in der:
            dev.append(str(n))
    if dev:
        which = "%s %s (certificate %s of %d)" % (what, path, ", ".join(dev), len(blocks))
        if bb.utils.to_boolean(d.getVar("FPGAGDR_RELEASE")):
            bb.fatal("%s is a development certificate and FPGAGDR_RELEASE = \"1\": "
                     "a release is never signed with, or trusts, development keys" % which)
        bb.warn("%s is a development certificate: fine for development, never for a release" % which)

python fpgagdr_check_keys() {
    fpgagdr_rauc_check_cert(d, d.getVar("FPGAGDR_RAUC_CERT_TO_CHECK"), "RAUC signing certificate")
    fpgagdr_rauc_check_cert(d, d.expand("${FPGAGDR_RAUC_KEY_DIR}/ca.cert.pem"), "RAUC keyring")
}
fpgagdr_check_keys[doc] = "Fails when a key file is missing, or is a development key in a release (FPGAGDR_RELEASE)"
# The signing certificate to check as well (the bundle sets it; empty: keyring only).
FPGAGDR_RAUC_CERT_TO_CHECK ??= ""

# UEFI capsules (meta-tegra's tegra-uefi-capsules) are signed with UEFI_CAPSULE_SIGNER_
# PRIVATE_CERT, UEFI_CAPSULE_OTHER_PUBLIC_CERT and UEFI_CAPSULE_TRUSTED_PUBLIC_CERT,
# which meta-tegra's tegra-uefi-capsule-signing class defaults to EDK2's test
# certificates (edk2 BaseTools/Source/Python/Pkcs7Sign: TestCert.pem, TestSub.pub.pem,
# TestRoot.pub.pem; subject O=TianoCore, OU=EDKII, CN=TestRoot/TestSub/TestCert). A
# release never signs a capsule with them: anyone can, and a device whose firmware
# trusts them takes any capsule. FPGAGDR_RELEASE = "1" fails the build on any of the
# three, by where it lies and by what it is (a copy elsewhere is found by its subject);
# a development build warns.
FPGAGDR_EDK2_TEST_CERT_NAMES = "TestCert.pem TestSub.pub.pem TestRoot.pub.pem"

def fpgagdr_edk2_test_cert(path, names):
    """Why `path` is one of EDK2's test certificates, or None."""
    import base64
    import binascii
    import os
    import re
    if os.path.basename(path) in names.split() and os.path.basename(os.path.dirname(path)) == "Pkcs7Sign":
        return "it is EDK2's %s (BaseTools Pkcs7Sign)" % os.path.basename(path)
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    for body in re.findall(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", text, re.S):
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            continue
        if b"TianoCore" in der and b"EDKII" in der and re.search(rb"Test(Root|Sub|Cert)", der):
            return "it holds a certificate of EDK2's test chain (O=TianoCore, OU=EDKII)"
    return None

python fpgagdr_check_capsule_certs() {
    names = d.getVar("FPGAGDR_EDK2_TEST_CERT_NAMES")
    found = []
    for var in ("UEFI_CAPSULE_SIGNER_PRIVATE_CERT", "UEFI_CAPSULE_OTHER_PUBLIC_CERT",
                "UEFI_CAPSULE_TRUSTED_PUBLIC_CERT"):
        path = d.getVar(var) or ""
        why = fpgagdr_edk2_test_cert(path, names)
        if why:
            found.append("%s = %s: %s" % (var, path, why))
    if not found:
        return
    if bb.utils.to_boolean(d.getVar("FPGAGDR_RELEASE")):
        bb.fatal("UEFI capsule signed with EDK2's test certificates and FPGAGDR_RELEASE = \"1\" "
                 "(a release never signs a capsule with, or trusts, test keys; set the three "
                 "UEFI_CAPSULE_* variables to the release's, docs/ota.md): " + "; ".join(found))
    bb.warn("UEFI capsule signed with EDK2's test certificates: fine for development, never for "
            "a release (" + "; ".join(found) + ")")
}
fpgagdr_check_capsule_certs[doc] = "Fails a release build whose UEFI capsule would be signed with EDK2's test certificates"
