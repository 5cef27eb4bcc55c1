#!/usr/bin/env python3
"""Tests the release build's development-key check (classes-recipe/fpgagdr_rauc.bbclass,
fpgagdr_rauc_check_cert) as bitbake runs it: the class is parsed with bitbake's own parser
(the `bb` library of bitbake-setup, as bbparse-check.py does) and its function is called
with keyrings made here by openssl: the development keys of images/rauc/make-dev-keys.sh
and a release CA without the marker, alone and together in one keyring file, in both
orders (a rotation keyring holds the old CA and the new one). And the same rule for UEFI
capsules (fpgagdr_check_capsule_certs): EDK2's test certificates, found where meta-tegra
takes them from (BaseTools' Pkcs7Sign folder) or by their subject (a certificate made
here with EDK2's test subject, O=TianoCore OU=EDKII CN=TestRoot), fail a release build
and warn in a development one; a release certificate passes.

    dev-key-check-test.py LAYER_DIR      (needs openssl; check.sh runs it)
"""

import subprocess
import sys
import tempfile
import types
from pathlib import Path

for _name in ("hashserv", "hashserv.client"):
    sys.modules.setdefault(_name, types.ModuleType(_name))

import bb  # noqa: E402
import bb.data  # noqa: E402
import bb.parse  # noqa: E402
import bb.utils  # noqa: E402


class Fatal(Exception):
    """bb.fatal was called."""


def check_function(layer: Path, where: Path):
    """fpgagdr_rauc_check_cert as bitbake defines it when it parses the class."""
    sig = bb.data.init()
    sig.setVar("BB_SIGNATURE_HANDLER", "noop")
    bb.parse.init_parser(sig)
    d = bb.data.init()
    d.setVar("BBPATH", f"{where}:{layer}")
    d.setVar("FPGAGDR_TOPDIR", str(layer.parent))
    d.setVar("localstatedir", "/var")
    d.setVar("__bbclasstype", "recipe")
    bb.parse.handle(str(layer / "classes-recipe/fpgagdr_rauc.bbclass"), d, True)
    return d, bb.utils._context["fpgagdr_rauc_check_cert"]


def run(func, d, path: Path, release: str):
    """('fatal'|'warn'|'ok', message) of one check of `path` with FPGAGDR_RELEASE."""
    said = []

    def fatal(*msg):
        said.append(" ".join(map(str, msg)))
        raise Fatal()

    def warn(*msg):
        said.append(" ".join(map(str, msg)))

    d.setVar("FPGAGDR_RELEASE", release)
    old = (bb.fatal, bb.warn)
    bb.fatal, bb.warn = fatal, warn
    try:
        func(d, str(path), "RAUC keyring")
        return ("warn" if said else "ok"), " ".join(said)
    except Fatal:
        return "fatal", " ".join(said)
    finally:
        bb.fatal, bb.warn = old


def release_ca(out: Path) -> Path:
    """A CA without the development marker, as a product's offline CA would be."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
         "-subj", "/O=Example Products/CN=fpgagdr release CA",
         "-keyout", str(out / "release.key.pem"), "-out", str(out / "release.cert.pem")],
        check=True, capture_output=True)
    return out / "release.cert.pem"


def capsule_check(d, certs: dict, release: str):
    """('fatal'|'warn'|'ok', message) of fpgagdr_check_capsule_certs with `certs`
    (UEFI_CAPSULE_* variable -> path) and FPGAGDR_RELEASE."""
    said = []

    def fatal(*msg):
        said.append(" ".join(map(str, msg)))
        raise Fatal()

    def warn(*msg):
        said.append(" ".join(map(str, msg)))

    for var, path in certs.items():
        d.setVar(var, str(path))
    d.setVar("FPGAGDR_RELEASE", release)
    body = d.getVar("fpgagdr_check_capsule_certs", False)
    scope = {"bb": bb, "d": d, **bb.utils._context}
    exec("def _task(d):\n" + "".join("    " + line + "\n" for line in body.splitlines()), scope)
    old = (bb.fatal, bb.warn)
    bb.fatal, bb.warn = fatal, warn
    try:
        scope["_task"](d)
        return ("warn" if said else "ok"), " ".join(said)
    except Fatal:
        return "fatal", " ".join(said)
    finally:
        bb.fatal, bb.warn = old


def edk2_like_cert(out: Path, name: str) -> Path:
    """A certificate with EDK2's test subject, made here (never EDK2's own file)."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
         "-subj", f"/C=CN/ST=SH/L=SH/O=TianoCore/OU=EDKII/CN={name}",
         "-keyout", str(out / f"{name}.key"), "-out", str(out / f"{name}.pem")],
        check=True, capture_output=True)
    return out / f"{name}.pem"


def main() -> int:
    layer = Path(sys.argv[1]).resolve()
    failures = []
    with tempfile.TemporaryDirectory(prefix="devkey-") as tmp:
        t = Path(tmp)
        subprocess.run([str(layer.parent / "images/rauc/make-dev-keys.sh"), str(t / "dev")],
                       check=True, capture_output=True)
        dev = (t / "dev/ca.cert.pem").read_text()
        rel = release_ca(t).read_text()
        cases = {
            "release CA alone": (rel, "ok"),
            "development CA alone": (dev, "fatal"),
            "release CA, then development CA (rotation keyring)": (rel + dev, "fatal"),
            "development CA, then release CA": (dev + rel, "fatal"),
            "no certificate at all": ("not a certificate\n", "fatal"),
        }
        d, func = check_function(layer, t)
        for name, (text, expect) in cases.items():
            path = t / "keyring.pem"
            path.write_text(text)
            got, msg = run(func, d, path, "1")
            status = "ok" if got == expect else "FAILED"
            print(f"dev-key check: release build, {name}: {got} (expected {expect}) {status}")
            if got != expect:
                failures.append(f"{name}: {got}, expected {expect}: {msg}")
        # Not a release: a development key is fine, with a warning.
        path = t / "keyring.pem"
        path.write_text(rel + dev)
        got, msg = run(func, d, path, "0")
        print(f"dev-key check: development build, rotation keyring: {got} (expected warn)")
        if got != "warn":
            failures.append(f"development build: {got}, expected warn: {msg}")

        # UEFI capsule certificates.
        rel_cert = t / "release.cert.pem"
        where_meta_tegra_has_them = t / "edk2-BaseTools/Source/Python/Pkcs7Sign"
        where_meta_tegra_has_them.mkdir(parents=True)
        for n in ("TestCert.pem", "TestSub.pub.pem", "TestRoot.pub.pem"):
            (where_meta_tegra_has_them / n).write_text("stands in for EDK2's file\n")
        copied = edk2_like_cert(t, "TestRoot")
        vars3 = ("UEFI_CAPSULE_SIGNER_PRIVATE_CERT", "UEFI_CAPSULE_OTHER_PUBLIC_CERT",
                 "UEFI_CAPSULE_TRUSTED_PUBLIC_CERT")
        meta_tegra_default = dict(zip(vars3, (where_meta_tegra_has_them / n for n in
                                              ("TestCert.pem", "TestSub.pub.pem", "TestRoot.pub.pem"))))
        capsule_cases = {
            "capsule, meta-tegra's default (EDK2's test certificates)": (meta_tegra_default, "1", "fatal"),
            "capsule, release certificates": (dict.fromkeys(vars3, rel_cert), "1", "ok"),
            "capsule, EDK2's test root copied elsewhere": (
                {**dict.fromkeys(vars3, rel_cert), vars3[2]: copied}, "1", "fatal"),
            "capsule, development build with the test certificates": (meta_tegra_default, "0", "warn"),
        }
        for name, (certs, release, expect) in capsule_cases.items():
            got, msg = capsule_check(d, certs, release)
            status = "ok" if got == expect else "FAILED"
            print(f"dev-key check: {name}: {got} (expected {expect}) {status}")
            if got != expect:
                failures.append(f"{name}: {got}, expected {expect}: {msg}")
    for f in failures:
        print(f"dev-key check: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
