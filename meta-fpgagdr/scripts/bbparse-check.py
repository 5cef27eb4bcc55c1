#!/usr/bin/env python3
"""Parse every .conf, .bb, .bbappend and .bbclass of meta-fpgagdr with bitbake's own parser.

Owns: the offline syntax check of the layer, with the `bb` library that the PyPI
package bitbake-setup ships (the same parser `bitbake -p` uses). Must not: stand in
for a parse against the real layers (scripts/dry-run.sh does that): classes and
configuration from other layers are not here, so every class the layer inherits
from elsewhere is an empty stand-in, and only the layer's own files are judged.

What it catches: syntax errors (unclosed functions, bad assignments, stray
text), python syntax in anonymous and python functions and in inline ${@...}
expressions, a `require` or `include` of a file that is not there, an `inherit`
of a class that is nowhere (neither in the layer nor in the list of classes the
upstream layers provide, KNOWN_CLASSES below), and a bbappend without a recipe
in the layer when it names one of ours.

    bbparse-check.py LAYER_DIR
"""

import re
import sys
import tempfile
import types
from pathlib import Path

# bitbake-setup ships bb without hashserv, which bb.siggen imports when bb.parse
# loads; parsing never calls it (only task signatures would), so an empty stand-in.
for _name in ("hashserv", "hashserv.client"):
    sys.modules.setdefault(_name, types.ModuleType(_name))

import bb  # noqa: E402  (after the stand-in)
import bb.data  # noqa: E402
import bb.parse  # noqa: E402

# Classes the layer may inherit from oe-core, meta-tegra, meta-rust-bin and meta-rauc
# (checked for real by scripts/dry-run.sh); here they are empty stand-ins.
KNOWN_CLASSES = {
    "allarch", "bundle", "cargo", "cargo_bin", "cmake", "core-image", "cuda", "image",
    "module", "systemd", "extrausers",
    "useradd", "update-rc.d", "features_check", "deploy", "kernel-module-split",
    "packagegroup", "pkgconfig", "rust_bin-common", "externalsrc", "l4t_version",
}
INHERIT_RE = re.compile(r"^\s*inherit(?:_defer)?\s+(.+)$")


def stand_ins(layer: Path, files: list[Path], where: Path) -> list[str]:
    """Write an empty class for every known class the layer inherits; return errors."""
    errors = []
    own = {p.stem for p in layer.rglob("*.bbclass")}
    (where / "classes").mkdir(parents=True, exist_ok=True)
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = INHERIT_RE.match(line)
            if not m:
                continue
            for cls in m.group(1).split():
                if "${" in cls or cls in own:
                    continue
                if cls not in KNOWN_CLASSES:
                    errors.append(f"{f}:{n}: inherits {cls}, which is neither in the layer nor a known upstream class")
                    continue
                (where / "classes" / f"{cls}.bbclass").write_text("")
    return errors


# Recipes choose files by the layers in the build (fpgagdrd: meta-rust-bin's toolchain
# or oe-core's); each recipe is parsed once per set, so every branch is read.
COLLECTIONS = ("core tegra rust-bin-layer rauc", "core tegra rauc")


def fresh(layer: Path, stubs: Path, fn: Path, collections: str) -> "bb.data_smart.DataSmart":
    """A datastore with what a recipe parse needs from bitbake.conf, minimally."""
    d = bb.data.init()
    d.setVar("BBFILE_COLLECTIONS", collections)
    d.setVar("BBPATH", f"{stubs}:{layer}")
    d.setVar("LAYERDIR", str(layer))
    d.setVar("TOPDIR", str(stubs))
    d.setVar("__bbclasstype", "recipe")
    if fn.suffix in (".bb", ".bbappend"):
        pn, pv, _ = bb.parse.vars_from_file(str(fn), d)
        d.setVar("PN", (pn or "").replace("%", ""))
        d.setVar("BPN", (pn or "").replace("%", ""))
        d.setVar("PV", pv or "1.0")
    for var, value in {
        "WORKDIR": "/work", "S": "/work/src", "B": "/work/build", "D": "/work/image",
        "bindir": "/usr/bin", "sbindir": "/usr/sbin", "libdir": "/usr/lib",
        "datadir": "/usr/share", "sysconfdir": "/etc", "localstatedir": "/var",
        "nonarch_base_libdir": "/usr/lib", "base_sbindir": "/usr/sbin",
        "systemd_system_unitdir": "/usr/lib/systemd/system", "MACHINEOVERRIDES": "",
        "OVERRIDES": "", "DISTRO_FEATURES": "systemd rauc", "PACKAGECONFIG": "",
    }.items():
        if d.getVar(var, False) is None:
            d.setVar(var, value)
    return d


def expand_all(d, fn: Path) -> list[str]:
    """Expand every variable; report python syntax errors in ${@...} expressions."""
    errors = []
    for key in list(d.keys()):
        if key.startswith("__"):
            continue
        try:
            d.getVar(key)
        except bb.data_smart.ExpansionError as e:
            if isinstance(getattr(e, "exception", None), SyntaxError) or "SyntaxError" in str(e):
                errors.append(f"{fn}: {key}: {e}")
        except SyntaxError as e:
            errors.append(f"{fn}: {key}: {e}")
    return errors


def main() -> int:
    layer = Path(sys.argv[1]).resolve()
    # .conf files count only under conf/ (a unit drop-in in files/ is not bitbake's).
    files = sorted(
        p for p in layer.rglob("*")
        if p.is_file() and (
            p.suffix in (".bb", ".bbappend", ".bbclass", ".inc")
            or (p.suffix == ".conf" and p.relative_to(layer).parts[0] == "conf")
        )
    )
    errors = []
    sig = bb.data.init()
    sig.setVar("BB_SIGNATURE_HANDLER", "noop")
    bb.parse.init_parser(sig)
    with tempfile.TemporaryDirectory(prefix="bbparse-") as tmp:
        stubs = Path(tmp)
        errors += stand_ins(layer, files, stubs)
        recipes = {p.name.split("_")[0]: p for p in files if p.suffix == ".bb"}
        parsed = 0
        for fn, collections in ((f, c) for f in files for c in COLLECTIONS):
            if fn.suffix == ".inc":
                continue  # parsed where a recipe requires it
            if fn.suffix != ".bb" and collections != COLLECTIONS[0]:
                continue  # only recipes choose by layer
            d = fresh(layer, stubs, fn, collections)
            try:
                if fn.suffix == ".conf":
                    bb.parse.handle(str(fn), d, True)
                elif fn.suffix == ".bbappend":
                    target = recipes.get(fn.name.split("_")[0].split(".")[0])
                    if target is not None:
                        d.setVar("__BBAPPEND", str(fn))
                        bb.parse.handle(str(target), d)
                    else:  # an append to an upstream recipe: parse it on its own
                        bb.parse.BBHandler.handle(str(fn), d, True)
                elif fn.suffix == ".bbclass":
                    bb.parse.handle(str(fn), d, True)
                else:
                    datastores = bb.parse.handle(str(fn), d)
                    d = datastores[""]
                errors += expand_all(d, fn)
                parsed += 1
            except Exception as e:  # every bitbake parse failure is reported, not raised
                errors.append(f"{fn}: {type(e).__name__}: {e}")
    for e in errors:
        print(f"bbparse: {e}", file=sys.stderr)
    print(f"bbparse: {parsed} files parsed with bitbake {bb.__version__}, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
