#!/usr/bin/env python3
"""Tests the CUDA version the Rust recipes hand cudarc's build script, per machine, as
bitbake parses them (recipes-appliance/include/fpgagdr-cudarc.inc, required by
fpgagdrd_git.bb and libfpgagdr_git.bb): CUDARC_CUDA_VERSION is exported, is the
machine's CUDA_VERSION as MAJOR0MINOR0 on Jetson (12.6 on JetPack 6 -> 12060, 13.2 on
JetPack 7.2 -> 13020, so the service dlopens the libnvrtc.so.<major> the image has),
12060 elsewhere, and a CUDA_VERSION that is not MAJOR.MINOR stops the parse with the
rule.

Both recipes are parsed with bitbake's own parser (recipeparse.py), with the machine
overrides meta-tegra sets and empty stand-ins for the classes of other layers.

    cudarc-version-test.py LAYER_DIR      (check.sh runs it)
"""

import sys
import tempfile
from pathlib import Path

import recipeparse

RECIPES = [
    "recipes-appliance/fpgagdrd/fpgagdrd_git.bb",
    "recipes-appliance/libfpgagdr/libfpgagdr_git.bb",
]

ORIN = ("jetson-agx-orin-devkit", "cuda:tegra:tegra234:jetson-agx-orin-devkit")
THOR = ("jetson-agx-thor-devkit", "cuda:tegra:tegra264:jetson-agx-thor-devkit")
X86 = ("genericx86-64", "x86-64:genericx86-64")

# machine, CUDA_VERSION as the machine configuration sets it (None: unset), expected
# outcome, the value or the words the refusal must say
CASES = [
    (ORIN, "12.6", "ok", "12060"),  # JetPack 6, meta-tegra scarthgap
    (ORIN, "13.2", "ok", "13020"),  # JetPack 7.2, meta-tegra master
    (THOR, "13.2", "ok", "13020"),
    (X86, None, "ok", "12060"),
    (THOR, None, "ok", "12060"),  # no machine configuration: the workspace's default
    (THOR, "13", "fatal", ["rule cudarc-cuda-version", "MAJOR.MINOR"]),
]


def main() -> int:
    layer = Path(sys.argv[1]).resolve()
    recipeparse.init()
    failures = []
    with tempfile.TemporaryDirectory(prefix="cudarc-") as tmp:
        stubs = Path(tmp)
        recipeparse.stub_classes(stubs, ("systemd", "useradd", "cargo", "cargo_bin"))
        for recipe in RECIPES:
            name = Path(recipe).name
            for (machine, overrides), cuda, expect, want in CASES:
                sets = {} if cuda is None else {"CUDA_VERSION": cuda}
                got, d = recipeparse.parse(layer, stubs, recipe, machine, overrides, sets)
                # the value's inline Python runs when it is read: a refusal comes then
                got, out = (recipeparse.attempt(lambda: d.getVar("CUDARC_CUDA_VERSION"))
                            if got == "ok" else (got, d))
                if got == "ok":
                    exported = bool(d.getVarFlag("CUDARC_CUDA_VERSION", "export"))
                    good = expect == "ok" and out == want and exported
                    said = f"CUDARC_CUDA_VERSION={out}{'' if exported else ' (not exported)'}"
                else:
                    good = expect == "fatal" and all(w in out for w in want)
                    said = out
                setting = "unset" if cuda is None else f'"{cuda}"'
                print(f"cudarc version: {name}, {machine}, CUDA_VERSION {setting}: {said} "
                      f"{'ok' if good else 'FAILED'}")
                if not good:
                    failures.append(f"{name} on {machine} with CUDA_VERSION {setting}: "
                                    f"{said}, expected {expect} {want}")
    for f in failures:
        print(f"cudarc version: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
