#!/usr/bin/env python3
"""Print what one kas target builds: its machine, distro, target and every repository
with its pinned commit and layers, as kas's own loader merges the file and its includes.

Owns: reading a kas file for scripts/dry-run.sh, which lays out bblayers.conf from it
so the dry run uses the layers `kas build` would. Must not: clone or check out
anything (kas-check.py validates the files; dry-run.sh checks the checkouts).

    kas-layers.py KAS_FILE

Output, one item a line, fields separated by one space:
    machine NAME | distro NAME | target NAME
    repo NAME COMMIT|- LAYER...   (LAYER "." is the repository itself; COMMIT "-"
                                   for the local repository, which has no URL)
"""

import os
import sys
import tempfile

from kas.context import create_global_context
from kas.includehandler import IncludeHandler
from kas.kas import kas_get_argparser


def main() -> int:
    kas_file = os.path.abspath(sys.argv[1])
    os.environ.setdefault("KAS_WORK_DIR", tempfile.mkdtemp(prefix="kas-layers-"))
    create_global_context(kas_get_argparser().parse_args(["dump", kas_file]))
    config, missing = IncludeHandler([kas_file], use_lock=False).get_config()
    if missing:
        print(f"kas-layers: includes from repositories that are not here: {missing}", file=sys.stderr)
        return 1
    for key in ("machine", "distro", "target"):
        value = config.get(key)
        print(key, " ".join(value) if isinstance(value, list) else value)
    for name, repo in (config.get("repos") or {}).items():
        repo = repo or {}
        layers = repo.get("layers")
        if layers is None:  # kas: no layers key means the repository is the layer
            paths = ["."]
        else:
            paths = [p for p, prop in layers.items() if prop not in ("disabled", "excluded")]
        commit = repo.get("commit", "-") if repo.get("url") else "-"
        print("repo", name, commit, *paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
