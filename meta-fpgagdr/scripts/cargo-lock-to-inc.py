#!/usr/bin/env python3
"""Write fpgagdrd-crates.inc from Cargo.lock, or check that it matches.

Owns: turning every crates.io package of the workspace's Cargo.lock into a
`crate://crates.io/<name>/<version>` SRC_URI entry and its
`SRC_URI[<name>-<version>.sha256sum]`, the checksum Cargo.lock records. bitbake's
crate fetcher downloads them in do_fetch and unpacks them into
${CARGO_HOME}/bitbake, which the recipe's cargo config names as the replacement
for crates.io; cargo then builds --frozen and offline.
Must not: guess. A git or other non-registry source in Cargo.lock is an error,
as is a crates.io package without a checksum.

    cargo-lock-to-inc.py [--check] [--lock Cargo.lock] [--inc path/to/fpgagdrd-crates.inc]

--check exits 1 (and says how to fix it) when the .inc differs from what
Cargo.lock gives. Run it after every change to Cargo.lock.
"""

import argparse
import difflib
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"
HEADER = """\
# Generated from Cargo.lock by meta-fpgagdr/scripts/cargo-lock-to-inc.py; do not edit.
# Every crates.io package in Cargo.lock, fetched in do_fetch and checked against the
# checksum Cargo.lock records (meta-fpgagdr/scripts/check.sh checks this file is current).
"""


def render(lock_path: Path) -> str:
    """The .inc text for the lock file at lock_path."""
    with lock_path.open("rb") as f:
        lock = tomllib.load(f)
    crates = []
    for pkg in lock.get("package", []):
        source = pkg.get("source")
        if source is None:  # a workspace member or path dependency: part of the sources
            continue
        where = f"{pkg['name']} {pkg['version']}"
        if source != CRATES_IO:
            sys.exit(f"cargo-lock-to-inc: {where} comes from {source}: only crates.io is supported")
        if "checksum" not in pkg:
            sys.exit(f"cargo-lock-to-inc: {where} has no checksum in {lock_path}")
        crates.append((pkg["name"], pkg["version"], pkg["checksum"]))
    crates.sort()
    lines = [HEADER, 'SRC_URI += "\\']
    lines += [f"    crate://crates.io/{n}/{v} \\" for n, v, _ in crates]
    lines.append('"\n')
    lines += [f'SRC_URI[{n}-{v}.sha256sum] = "{c}"' for n, v, c in crates]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lock", type=Path, default=ROOT / "Cargo.lock")
    ap.add_argument(
        "--inc",
        type=Path,
        default=ROOT / "meta-fpgagdr/recipes-appliance/fpgagdrd/fpgagdrd-crates.inc",
    )
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    want = render(args.lock)
    if not args.check:
        args.inc.write_text(want)
        return 0
    have = args.inc.read_text() if args.inc.exists() else ""
    if have == want:
        return 0
    diff = difflib.unified_diff(
        have.splitlines(), want.splitlines(), str(args.inc), "from Cargo.lock", lineterm="", n=0
    )
    print("\n".join(list(diff)[:40]), file=sys.stderr)
    print(
        f"cargo-lock-to-inc: {args.inc} does not match {args.lock}; "
        "run meta-fpgagdr/scripts/cargo-lock-to-inc.py",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
