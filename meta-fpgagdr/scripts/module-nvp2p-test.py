#!/usr/bin/env python3
"""Tests fpgagdr-module's choice of the nvidia_p2p back-end per machine, as bitbake parses
the recipe (recipes-kernel/fpgagdr-module/fpgagdr-module_git.bb): FPGAGDR_NVP2P reaches
kmod/Makefile as "n" on Jetson Orin (tegra234) and Jetson Thor (tegra264), and any other
value (y, compat, auto) stops the parse with the rule and the SoC's reason (Thor: no
nvidia_p2p at all; Orin: L4T's nvidia_p2p is another API than the module's back-end).

The recipe is parsed with bitbake's own parser (the `bb` library of bitbake-setup, as
bbparse-check.py does), with the machine overrides meta-tegra sets (`cuda:tegra:` and the
SoC family) and empty stand-ins for the classes of other layers (module, useradd).

    module-nvp2p-test.py LAYER_DIR      (check.sh runs it)
"""

import sys
import tempfile
from pathlib import Path

import recipeparse

RECIPE = "recipes-kernel/fpgagdr-module/fpgagdr-module_git.bb"

# (machine, MACHINEOVERRIDES as meta-tegra's machine files make them)
MACHINES = {
    "jetson-agx-orin-devkit": "cuda:tegra:tegra234:jetson-agx-orin-devkit",
    "jetson-agx-thor-devkit": "cuda:tegra:tegra264:jetson-agx-thor-devkit",
}


def parse(layer: Path, stubs: Path, machine: str, nvp2p):
    """('ok', EXTRA_OEMAKE) or ('fatal', message) for one machine and FPGAGDR_NVP2P."""
    sets = {"EXTRA_OEMAKE": ""}
    if nvp2p is not None:  # as a site or kas file sets it (local.conf)
        sets["FPGAGDR_NVP2P"] = nvp2p
    got, d = recipeparse.parse(layer, stubs, RECIPE, machine, MACHINES[machine], sets)
    return (got, d.getVar("EXTRA_OEMAKE")) if got == "ok" else (got, d)


def main() -> int:
    layer = Path(sys.argv[1]).resolve()
    recipeparse.init()
    failures = []
    with tempfile.TemporaryDirectory(prefix="nvp2p-") as tmp:
        stubs = Path(tmp)
        recipeparse.stub_classes(stubs, ("module", "useradd"))
        cases = [
            # machine, FPGAGDR_NVP2P set by the site, expected outcome, words it must say
            ("jetson-agx-orin-devkit", None, "ok", ["FPGAGDR_NVP2P=n"]),
            ("jetson-agx-thor-devkit", None, "ok", ["FPGAGDR_NVP2P=n"]),
            ("jetson-agx-thor-devkit", "y", "fatal", ["FPGAGDR_NVP2P", "Thor", "rule"]),
            ("jetson-agx-thor-devkit", "compat", "fatal", ["Thor", "pin_user_pages"]),
            ("jetson-agx-orin-devkit", "y", "fatal", ["FPGAGDR_NVP2P", "Jetson", "nvidia-p2p"]),
            ("jetson-agx-orin-devkit", "auto", "fatal", ["rule", "host back-end"]),
        ]
        for machine, nvp2p, expect, words in cases:
            got, text = parse(layer, stubs, machine, nvp2p)
            missing = [w for w in words if w not in text]
            good = got == expect and not missing
            setting = "unset" if nvp2p is None else f'"{nvp2p}"'
            print(f"module nvp2p: {machine}, FPGAGDR_NVP2P {setting}: {got} "
                  f"(expected {expect}) {'ok' if good else 'FAILED'}")
            if got == "fatal" and nvp2p == "y":
                print(f"module nvp2p:   {text}")
            if not good:
                failures.append(f"{machine} with {setting}: {got}, expected {expect}"
                                f"{', missing ' + str(missing) if missing else ''}: {text}")
    for f in failures:
        print(f"module nvp2p: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
