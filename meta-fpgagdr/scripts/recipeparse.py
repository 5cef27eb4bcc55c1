"""Parses one of the layer's recipes with bitbake's own parser (the `bb` library of
bitbake-setup, as bbparse-check.py does) as a given machine, without the other layers:
the machine overrides meta-tegra sets are given by the caller, and the classes of other
layers are empty stand-ins. Shared by the layer's offline per-machine tests
(module-nvp2p-test.py, cudarc-version-test.py)."""

import logging
import sys
import types
from pathlib import Path

for _name in ("hashserv", "hashserv.client"):
    sys.modules.setdefault(_name, types.ModuleType(_name))

import bb  # noqa: E402
import bb.data  # noqa: E402
import bb.parse  # noqa: E402


class Said(logging.Handler):
    """Keeps what bitbake logs (bb.fatal logs its message, then raises)."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def init():
    """Sets up bitbake's parser once per process."""
    sig = bb.data.init()
    sig.setVar("BB_SIGNATURE_HANDLER", "noop")
    bb.parse.init_parser(sig)


def stub_classes(stubs: Path, names):
    """Writes empty classes `names` under `stubs`/classes (other layers' classes)."""
    (stubs / "classes").mkdir(exist_ok=True)
    for cls in names:
        (stubs / "classes" / f"{cls}.bbclass").write_text("")


def parse(layer: Path, stubs: Path, recipe: str, machine: str, overrides: str, sets: dict):
    """('ok', datastore) or ('fatal', message) for `recipe` (relative to `layer`) parsed
    as `machine` with MACHINEOVERRIDES `overrides` and the variables `sets` (as a site
    or kas file would set them)."""
    d = bb.data.init()
    d.setVar("BBPATH", f"{stubs}:{layer}")
    d.setVar("TOPDIR", str(stubs))
    d.setVar("__bbclasstype", "recipe")
    d.setVar("FPGAGDR_TOPDIR", str(layer.parent))
    d.setVar("FPGAGDR_UNPACKDIR", "/work/sources")
    d.setVar("MACHINE", machine)
    d.setVar("MACHINEOVERRIDES", overrides)
    d.setVar("OVERRIDES", overrides)
    d.setVar("nonarch_base_libdir", "/usr/lib")
    for name, value in sets.items():
        d.setVar(name, value)
    return attempt(lambda: bb.parse.handle(str(layer / recipe), d)[""])


def attempt(step):
    """('ok', step()) or ('fatal', what bitbake said) when the step stops with bb.fatal
    (in a parse, or in an inline Python expansion that runs only when a variable is
    read)."""
    said = Said()
    log = logging.getLogger("BitBake")
    log.addHandler(said)
    propagate, log.propagate = log.propagate, False  # expected refusals: not printed as errors
    try:
        return "ok", step()
    except bb.BBHandledException:
        return "fatal", " ".join(said.lines)
    finally:
        log.removeHandler(said)
        log.propagate = propagate
