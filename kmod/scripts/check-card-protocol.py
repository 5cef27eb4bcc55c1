#!/usr/bin/env python3
"""The frame protocol's register map has one source: the tables of
docs/card-protocol.md.  This script keeps every copy of it in step:

* kmod/fpgagdr-frames-regs.h (hand-written kernel header, the module and the
  software card are built from it) is *checked*: every register row (offset,
  name) has FPROTO_REG_<NAME> with that offset and vice versa; the reset values
  of MAGIC and VERSION equal FPROTO_MAGIC_VALUE and FPROTO_VERSION_VALUE; every
  bit-field row has FPROTO_<REGISTER>_<NAME> = BIT(n) and vice versa; the
  SLOT_COUNT range equals FPROTO_SLOT_COUNT_MIN..FPROTO_SLOT_COUNT_MAX;
* hdl/rtl/fgdr_regs_pkg.sv (the RTL's package) and hdl/tb/fgdr_regs.py (the
  testbench's constants) are *generated*: checked to be exactly what the
  tables generate, rewritten with --write.

Usage: check-card-protocol.py [--write | --self-test] [DOC [HEADER]]; exit
status 1 on drift, with one line per difference.  --self-test changes each copy
in turn (in a temporary directory) and proves the drift is reported.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SV_PKG = ROOT / "hdl/rtl/fgdr_regs_pkg.sv"
PY_CONST = ROOT / "hdl/tb/fgdr_regs.py"
ACCESS = ("RO", "RW", "WO", "RL")


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


def reset_value(text):
    """The reset column as a number, or None for "design", "-" and the like."""
    return int(text, 16) if re.fullmatch(r"0x[0-9a-fA-F]+", text) else None


def parse(doc_text, drift):
    """(registers, bits, slot count range) from the document's tables.

    registers: [(name, offset, access, reset text)]; bits: [(register, bit, name)].
    """
    regs = []
    for off, name, access, reset, _ in table_rows(
            doc_text, ["offset", "name", "access", "reset", "meaning"]):
        if access not in ACCESS:
            drift.append(f"{name}: access {access!r} is none of {' '.join(ACCESS)}")
        regs.append((name, int(off, 16), access, reset))
    names = [r[0] for r in regs]
    bits = []
    for reg, bit, name, _ in table_rows(doc_text, ["register", "bit", "name", "meaning"]):
        if reg not in names:
            drift.append(f"bit {name} of unknown register {reg}")
        bits.append((reg, int(bit), name))
    count_row = next((r for r in table_rows(
        doc_text, ["offset", "name", "access", "reset", "meaning"]) if r[1] == "SLOT_COUNT"), None)
    m = re.search(r"(\d+)\.\.(\d+)", count_row[4]) if count_row else None
    slot_range = (int(m.group(1)), int(m.group(2))) if m else None
    if not slot_range:
        drift.append("the SLOT_COUNT row names no range MIN..MAX")
    return regs, bits, slot_range


def check_header(regs, bits, slot_range, defs, hdr_name, drift):
    doc_regs = {name: (off, reset) for name, off, _, reset in regs}
    hdr_regs = {k[len("FPROTO_REG_"):]: int(v, 0)
                for k, v in defs.items() if k.startswith("FPROTO_REG_")}
    for name, (off, _) in doc_regs.items():
        if name not in hdr_regs:
            drift.append(f"register {name} ({off:#05x}) is in the document, "
                         f"not in {hdr_name} (FPROTO_REG_{name})")
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
    if slot_range:
        for value, define in zip(slot_range, ("FPROTO_SLOT_COUNT_MIN", "FPROTO_SLOT_COUNT_MAX")):
            got = defs.get(define)
            if got is None or int(got, 0) != value:
                drift.append(f"SLOT_COUNT range: document {value}, header {define} = {got}")

    doc_bits = {f"FPROTO_{reg}_{name}": bit for reg, bit, name in bits}
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


GENERATED = "Generated from the tables of docs/card-protocol.md by " \
            "kmod/scripts/check-card-protocol.py --write; do not edit."


def sv_package(regs, bits, slot_range):
    out = [f"// {GENERATED}", "// The user register block of the frame protocol (offsets, fixed values, bits).",
           "/* verilator lint_off UNUSEDPARAM */", "package fgdr_regs_pkg;"]
    for name, off, access, reset in regs:
        out.append(f"  localparam logic [11:0] FGDR_REG_{name} = 12'h{off:03x};  // {access}")
    for name, _, _, reset in regs:
        if name in ("MAGIC", "VERSION"):
            out.append(f"  localparam logic [31:0] FGDR_{name}_VALUE = 32'h{reset_value(reset):08x};")
    for reg, bit, name in bits:
        out.append(f"  localparam int FGDR_{reg}_{name} = {bit};")
    out.append(f"  localparam int FGDR_SLOT_COUNT_MIN = {slot_range[0]};")
    out.append(f"  localparam int FGDR_SLOT_COUNT_MAX = {slot_range[1]};")
    out += ["endpackage", "/* verilator lint_on UNUSEDPARAM */", ""]
    return "\n".join(out)


def py_constants(regs, bits, slot_range):
    out = [f'"""{GENERATED}', "", "The user register block of the frame protocol: REGS maps a name to",
           "(offset, access, reset value or None where the design sets it), BITS a",
           '(register, field) to its bit."""', "", "REGS = {"]
    for name, off, access, reset in regs:
        value = reset_value(reset)
        out.append(f'    "{name}": (0x{off:03x}, "{access}", '
                   f'{"None" if value is None else f"0x{value:08x}"}),')
    out += ["}", "", "BITS = {"]
    for reg, bit, name in bits:
        out.append(f'    ("{reg}", "{name}"): {bit},')
    out += ["}", "", f"SLOT_COUNT_MIN = {slot_range[0]}", f"SLOT_COUNT_MAX = {slot_range[1]}", ""]
    out += [f"{name} = 0x{off:03x}" for name, off, _, _ in regs]
    out.append("")
    return "\n".join(out)


def check(doc, hdr, sv_pkg, py_const, write=False):
    """Differences between the document and its copies (list of lines); with write,
    the generated copies are rewritten first."""
    drift = []
    regs, bits, slot_range = parse(doc.read_text(), drift)
    check_header(regs, bits, slot_range, header_defines(hdr.read_text()), hdr.name, drift)
    if slot_range:
        for path, text in ((sv_pkg, sv_package(regs, bits, slot_range)),
                           (py_const, py_constants(regs, bits, slot_range))):
            if write:
                path.write_text(text)
            elif not path.exists() or path.read_text() != text:
                drift.append(f"{path.name} is not what the document generates "
                             f"(kmod/scripts/check-card-protocol.py --write)")
    return drift, len(regs), len(bits)


def self_test(doc, hdr):
    """Proves the check still catches drift: each copy changed in turn must be
    reported."""
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = [tmp / "doc.md", tmp / "regs.h", tmp / "pkg.sv", tmp / "regs.py"]
        cases = [
            ("nothing changed", None, None, None),
            ("an offset in the document", 0, "| 0x040 | EPOCH |", "| 0x04c | EPOCH |"),
            ("a register left out of the header", 1, "#define FPROTO_REG_DROPPED", "#define FPROTO_XREG_DROPPED"),
            ("a bit in the header", 1, "FPROTO_CONTROL_IRQ_EN\t\tBIT(1)", "FPROTO_CONTROL_IRQ_EN\t\tBIT(2)"),
            ("VERSION in the header", 1, "0x00010001", "0x00010000"),
            ("the SLOT_COUNT range", 1, "FPROTO_SLOT_COUNT_MIN\t\t2", "FPROTO_SLOT_COUNT_MIN\t\t1"),
            ("the RTL package edited", 2, "12'h048", "12'h04c"),
            ("the testbench constants edited", 3, "LIVE_SEQ_LO = 0x048", "LIVE_SEQ_LO = 0x04c"),
        ]
        failed = []
        for what, idx, old, new in cases:
            shutil.copy(doc, files[0])
            shutil.copy(hdr, files[1])
            check(files[0], files[1], files[2], files[3], write=True)
            if idx is not None:
                text = files[idx].read_text()
                if old not in text:
                    failed.append(f"{what}: {old!r} not found to change")
                    continue
                files[idx].write_text(text.replace(old, new, 1))
            drift = check(*files)[0]
            if bool(drift) != (idx is not None):
                failed.append(f"{what}: drift {drift or 'not seen'}")
        if failed:
            print("check-card-protocol.py --self-test failed:")
            for line in failed:
                print("  " + line)
            return 1
    print(f"check-card-protocol.py --self-test: {len(cases) - 1} kinds of drift caught")
    return 0


def main():
    args = sys.argv[1:]
    write = "--write" in args
    test = "--self-test" in args
    args = [a for a in args if a not in ("--write", "--self-test")]
    doc = Path(args[0]) if args else ROOT / "docs/card-protocol.md"
    hdr = Path(args[1]) if len(args) > 1 else ROOT / "kmod/fpgagdr-frames-regs.h"
    if test:
        return self_test(doc, hdr)
    drift, nregs, nbits = check(doc, hdr, SV_PKG, PY_CONST, write)
    if drift:
        print(f"{doc} and its copies differ:")
        for line in drift:
            print("  " + line)
        return 1
    print(f"card protocol: {nregs} registers, {nbits} bits agree between "
          f"{doc.name}, {hdr.name}, {SV_PKG.name} and {PY_CONST.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
