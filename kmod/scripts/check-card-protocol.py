#!/usr/bin/env python3
"""Compare the frame protocol's register table in docs/card-protocol.md with
kmod/fpgagdr-frames-regs.h, so the document an FPGA engineer implements and
the module (and the software card, which uses the same header) cannot drift.

Checked: every register row (offset, name) has FPROTO_REG_<NAME> with that
offset and vice versa; the reset values of MAGIC and VERSION equal
FPROTO_MAGIC_VALUE and FPROTO_VERSION_VALUE; every bit-field row has
FPROTO_<REGISTER>_<NAME> = BIT(n) and vice versa.

Usage: check-card-protocol.py [DOC [HEADER]]; exit status 1 on drift, with
one line per difference.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def table_rows(text, head):
    """Rows (lists of stripped cells) of the markdown table whose header
    row's cells are `head`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells == head:
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise SystemExit(f"table with columns {head} not found")


def header_defines(text):
    """#define NAME VALUE -> {NAME: VALUE as text}."""
    out = {}
    for m in re.finditer(r"^#define\s+(FPROTO_\w+)\s+([^/\n]+)", text, re.M):
        out[m.group(1)] = m.group(2).strip()
    return out


def main():
    doc = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/card-protocol.md"
    hdr = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "kmod/fpgagdr-frames-regs.h"
    text, defs = doc.read_text(), header_defines(hdr.read_text())
    drift = []

    regs = table_rows(text, ["offset", "name", "access", "reset", "meaning"])
    doc_regs = {}
    for off, name, access, reset, _ in regs:
        if access not in ("RO", "RW", "WO", "RL"):
            drift.append(f"{name}: access {access!r} is none of RO RW WO RL")
        doc_regs[name] = (int(off, 16), reset)
    hdr_regs = {k[len("FPROTO_REG_"):]: int(v, 0)
                for k, v in defs.items() if k.startswith("FPROTO_REG_")}
    for name, (off, _) in doc_regs.items():
        if name not in hdr_regs:
            drift.append(f"register {name} ({off:#05x}) is in the document, "
                         f"not in {hdr.name} (FPROTO_REG_{name})")
        elif hdr_regs[name] != off:
            drift.append(f"register {name}: document {off:#05x}, header {hdr_regs[name]:#05x}")
    for name, off in hdr_regs.items():
        if name not in doc_regs:
            drift.append(f"FPROTO_REG_{name} ({off:#05x}) is not in the document's table")
    for name, define in (("MAGIC", "FPROTO_MAGIC_VALUE"), ("VERSION", "FPROTO_VERSION_VALUE")):
        want = doc_regs.get(name, (0, "?"))[1]
        got = defs.get(define)
        if got is None or int(got, 0) != int(want, 0):
            drift.append(f"{name} reset value: document {want}, header {define} = {got}")

    bits = table_rows(text, ["register", "bit", "name", "meaning"])
    doc_bits = {f"FPROTO_{reg}_{name}": int(bit) for reg, bit, name, _ in bits}
    for reg, _, name, _ in bits:
        if reg not in doc_regs:
            drift.append(f"bit {name} of unknown register {reg}")
    reg_names = tuple(f"FPROTO_{r}_" for r in doc_regs)
    hdr_bits = {}
    for k, v in defs.items():
        m = re.fullmatch(r"BIT\((\d+)\)", v)
        if m and k.startswith(reg_names):
            hdr_bits[k] = int(m.group(1))
    for k, bit in doc_bits.items():
        if hdr_bits.get(k) != bit:
            drift.append(f"{k}: document bit {bit}, header {hdr_bits.get(k)}")
    for k, bit in hdr_bits.items():
        if k not in doc_bits:
            drift.append(f"{k} = BIT({bit}) is not in the document's bit table")

    if drift:
        print(f"{doc} and {hdr} differ:")
        for line in drift:
            print("  " + line)
        return 1
    print(f"card protocol: {len(doc_regs)} registers, {len(doc_bits)} bits agree "
          f"between {doc.name} and {hdr.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
