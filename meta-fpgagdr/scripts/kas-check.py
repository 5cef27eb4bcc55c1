#!/usr/bin/env python3
"""Load and validate every kas file of the project with kas's own config loader.

Owns: for each conf/kas/**/*.yml, kas's IncludeHandler (the code `kas build` runs:
YAML, the kas JSON schema, the file-format version, includes); then, for each
machine file, the project's rules on the merged result: every repository with a
URL pinned by a full commit id (and a branch that kas checks contains it), the
project repository (no URL) providing meta-fpgagdr, the distro set and present in
the layer, a machine and a target set. The pinned commits must also appear in
docs/yocto.md, where the dry run against them is recorded.
Must not: clone anything (the check is offline).

    kas-check.py REPO_ROOT
"""

import os
import re
import sys
import tempfile
from pathlib import Path

from kas.context import create_global_context
from kas.includehandler import IncludeHandler
from kas.kas import kas_get_argparser

COMMIT = re.compile(r"^[0-9a-f]{40}$")


def check_machine(root: Path, top: Path, config: dict) -> list[str]:
    errors = []
    where = top.relative_to(root)
    for key in ("machine", "distro", "target"):
        if not config.get(key):
            errors.append(f"{where}: no {key}")
    distro = config.get("distro")
    if distro and not (root / "meta-fpgagdr/conf/distro" / f"{distro}.conf").is_file():
        errors.append(f"{where}: distro {distro} is not in meta-fpgagdr/conf/distro")
    docs = (root / "docs/yocto.md").read_text() if (root / "docs/yocto.md").is_file() else ""
    local = []
    for name, repo in (config.get("repos") or {}).items():
        repo = repo or {}
        if not repo.get("url"):
            local.append(name)
            for layer in repo.get("layers") or {}:
                if not (root / layer / "conf/layer.conf").is_file():
                    errors.append(f"{where}: repo {name}: layer {layer} has no conf/layer.conf")
            continue
        commit = repo.get("commit", "")
        if not COMMIT.match(commit):
            errors.append(f"{where}: repo {name} is not pinned by a full commit id ({commit or 'none'})")
        elif commit not in docs:
            errors.append(f"{where}: repo {name} commit {commit} is not the one recorded in docs/yocto.md")
        if not repo.get("branch"):
            errors.append(f"{where}: repo {name} names no branch for kas to check the commit against")
        if repo.get("tag") or repo.get("refspec"):
            errors.append(f"{where}: repo {name}: pin by commit, not by tag or refspec")
    if local != ["fpgagdr"]:
        errors.append(f"{where}: expected exactly one local repository, fpgagdr, got {local}")
    return errors


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    # kas runs git through its global context; give it a work directory of its own.
    os.environ["KAS_WORK_DIR"] = tempfile.mkdtemp(prefix="kas-check-")
    create_global_context(kas_get_argparser().parse_args(["dump", str(root / "conf/kas")]))
    files = sorted((root / "conf/kas").rglob("*.yml"))
    errors, machines = [], 0
    for f in files:
        is_machine = "include" not in f.relative_to(root / "conf/kas").parts
        machines += is_machine
        try:
            config, missing = IncludeHandler([str(f)], use_lock=False).get_config()
        except Exception as e:  # kas's own validation errors
            errors.append(f"{f.relative_to(root)}: {e}")
            continue
        if missing:
            errors.append(f"{f.relative_to(root)}: includes from repositories that are not here: {missing}")
        if is_machine:
            errors += check_machine(root, f, config)
    for e in errors:
        print(f"kas: {e}", file=sys.stderr)
    print(f"kas: {len(files)} files loaded and validated ({machines} machines), {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
