#!/usr/bin/env python3
"""Write the licences of the crates linked into the image's Rust binaries.

Owns: turning Cargo.lock (through `cargo metadata --locked --offline`, which reads each
crate's `license` field from the crate's own manifest in cargo's registry cache) into
  - appliance/crate-licenses.txt: every crate linked into fpgagdrd or libfpgagdr on
    aarch64 Linux, its version, its SPDX licence expression and which binary links it;
    the recipes install it beside the binaries (/usr/share/licenses/<recipe>/);
  - recipes-appliance/fpgagdrd/fpgagdrd-licenses.inc and
    recipes-appliance/libfpgagdr/libfpgagdr-licenses.inc: the recipe's LICENSE, the AND
    of every distinct crate expression (SPDX OR -> bitbake |, AND -> &), and the
    LIC_FILES_CHKSUM of the repository's LICENSE and of the list above.
"Linked" means reached from the binary's crate through normal dependencies for
aarch64-unknown-linux-gnu (cargo metadata --filter-platform), proc-macro crates left out
(they run in the compiler, nothing of them is in the binary); build scripts likewise.
Must not: guess a licence. A crate without a `license` field (only `license-file`) stops
the script with its name.

    crate-licenses.py            regenerate the three files
    crate-licenses.py --check    exit 1 (naming the file) when any is not current;
                                 scripts/check.sh runs this, so test.sh fails until the
                                 files are regenerated after a change to Cargo.lock
"""

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAYER = HERE.parent
ROOT = LAYER.parent
LIST = ROOT / "appliance/crate-licenses.txt"
TARGET = "aarch64-unknown-linux-gnu"
# binary (the recipe's name) -> the workspace crate it is built from
BINARIES = {"fpgagdrd": "fpgagdrd", "libfpgagdr": "fpgagdr-capi"}
INC = {
    "fpgagdrd": LAYER / "recipes-appliance/fpgagdrd/fpgagdrd-licenses.inc",
    "libfpgagdr": LAYER / "recipes-appliance/libfpgagdr/libfpgagdr-licenses.inc",
}
# SPDX "X WITH exception" -> the name oe-core's common-licenses gives it.
WITH = {("Apache-2.0", "LLVM-exception"): "Apache-2.0-with-LLVM-exception"}


def metadata() -> dict:
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--offline",
         "--filter-platform", TARGET],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def linked(meta: dict, crate: str) -> set[str]:
    """Package ids reached from `crate` through normal dependencies, proc-macros out."""
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = next(p["id"] for p in meta["packages"] if p["name"] == crate and p["source"] is None)
    seen, stack = set(), [root]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    return {
        pid for pid in seen
        if not any("proc-macro" in t["kind"] for t in packages[pid]["targets"])
    }


def tokens(spdx: str) -> list[str]:
    # Old crates write "MIT/Apache-2.0" for "MIT OR Apache-2.0".
    return re.findall(r"\(|\)|[A-Za-z0-9.+\-]+", spdx.replace("/", " OR "))


def to_bitbake(spdx: str) -> str:
    """An SPDX expression in bitbake's LICENSE syntax, each OR group's names sorted so
    that equal choices read the same ("MIT OR Apache-2.0" = "Apache-2.0 | MIT")."""
    toks = tokens(spdx)
    pos = 0

    def expr() -> str:
        nonlocal pos
        terms = [term()]
        while pos < len(toks) and toks[pos] == "OR":
            pos += 1
            terms.append(term())
        terms = sorted(set(terms))
        return terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"

    def term() -> str:
        nonlocal pos
        factors = [factor()]
        while pos < len(toks) and toks[pos] == "AND":
            pos += 1
            factors.append(factor())
        factors = sorted(set(factors))
        return factors[0] if len(factors) == 1 else "(" + " & ".join(factors) + ")"

    def factor() -> str:
        nonlocal pos
        if pos >= len(toks):
            raise SystemExit(f"crate-licenses: {spdx!r}: expression ends too early")
        tok = toks[pos]
        pos += 1
        if tok == "(":
            inner = expr()
            if pos >= len(toks) or toks[pos] != ")":
                raise SystemExit(f"crate-licenses: {spdx!r}: unbalanced parentheses")
            pos += 1
            return inner
        if pos < len(toks) and toks[pos] == "WITH":
            exc = toks[pos + 1]
            pos += 2
            if (tok, exc) not in WITH:
                raise SystemExit(f"crate-licenses: {spdx!r}: no bitbake name for {tok} WITH {exc}")
            return WITH[(tok, exc)]
        if tok in ("AND", "OR", "WITH", ")"):
            raise SystemExit(f"crate-licenses: {spdx!r}: unexpected {tok}")
        return tok

    out = expr()
    if pos != len(toks):
        raise SystemExit(f"crate-licenses: {spdx!r}: trailing {toks[pos:]}")
    return out


def render() -> dict[Path, str]:
    meta = metadata()
    packages = {p["id"]: p for p in meta["packages"]}
    users: dict[str, set[str]] = {}
    for binary, crate in BINARIES.items():
        for pid in linked(meta, crate):
            users.setdefault(pid, set()).add(binary)
    rows = []
    for pid, used_by in users.items():
        p = packages[pid]
        if not p.get("license"):
            raise SystemExit(f"crate-licenses: {p['name']} {p['version']} declares no SPDX "
                             "licence (only a license-file): read it and list it by hand")
        rows.append((p["name"], p["version"], p["license"], " ".join(sorted(used_by)),
                     p["source"] is None))
    rows.sort()
    width = max(len(f"{r[0]} {r[1]}") for r in rows)
    lines = [
        "# The crates linked into the image's Rust binaries (fpgagdrd, libfpgagdr) on",
        f"# {TARGET}: name version, SPDX licence, binaries. Generated from Cargo.lock by",
        "# meta-fpgagdr/scripts/crate-licenses.py (cargo metadata); do not edit. The crates'",
        "# licence texts are in their source archives (crates.io, pinned in Cargo.lock).",
        "",
    ]
    for name, version, lic, used_by, _own in rows:
        lines.append(f"{f'{name} {version}':<{width}}  {lic}  [{used_by}]")
    listing = "\n".join(lines) + "\n"
    list_md5 = hashlib.md5(listing.encode()).hexdigest()
    root_md5 = hashlib.md5((ROOT / "LICENSE").read_bytes()).hexdigest()
    files = {LIST: listing}
    layer_conf = LAYER / "conf/layer.conf"
    conf = layer_conf.read_text()
    files[layer_conf] = re.sub(r'(FPGAGDR_LICENSE_CHKSUM = "file://\$\{FPGAGDR_TOPDIR\}/LICENSE;md5=)[0-9a-f]*"',
                               lambda m: m.group(1) + root_md5 + '"', conf)
    for binary in BINARIES:
        exprs = sorted({to_bitbake(r[2]) for r in rows if binary in r[3].split()})
        crates = sum(1 for r in rows if binary in r[3].split())
        files[INC[binary]] = "\n".join([
            "# Generated by meta-fpgagdr/scripts/crate-licenses.py from Cargo.lock; do not edit,",
            "# regenerate (meta-fpgagdr/scripts/check.sh fails until this is current).",
            f"# {binary}: {crates} crates linked in (appliance/crate-licenses.txt lists them);",
            "# LICENSE is every distinct crate licence expression, ANDed.",
            "LICENSE = \"" + " & ".join(exprs) + "\"",
            "LIC_FILES_CHKSUM = \"file://LICENSE;md5=" + root_md5
            + " file://appliance/crate-licenses.txt;md5=" + list_md5 + "\"",
            "",
        ])
    return files


def self_test() -> None:
    cases = {
        "MIT OR Apache-2.0": "(Apache-2.0 | MIT)",
        "Apache-2.0/MIT": "(Apache-2.0 | MIT)",
        "(MIT OR Apache-2.0) AND Unicode-3.0": "((Apache-2.0 | MIT) & Unicode-3.0)",
        "Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT":
            "(Apache-2.0 | Apache-2.0-with-LLVM-exception | MIT)",
        "ISC": "ISC",
    }
    for spdx, want in cases.items():
        got = to_bitbake(spdx)
        if got != want:
            raise SystemExit(f"crate-licenses: self-test: {spdx!r} -> {got!r}, want {want!r}")
    for bad in ("MIT OR", "(MIT", "GPL-2.0 WITH Classpath-exception-2.0"):
        try:
            to_bitbake(bad)
        except SystemExit:
            continue
        raise SystemExit(f"crate-licenses: self-test: {bad!r} was accepted")


def main() -> int:
    self_test()
    files = render()
    if sys.argv[1:] == ["--check"]:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text() != text]
        for p in stale:
            print(f"crate-licenses: {p.relative_to(ROOT)} is not current: run "
                  "meta-fpgagdr/scripts/crate-licenses.py", file=sys.stderr)
        return 1 if stale else 0
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    for p, text in files.items():
        p.write_text(text)
        print(f"crate-licenses: wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
