"""Run a benchmark script against another source tree (e.g. an old commit), for before/after
measurements:

    git archive <commit> | tar -x -C /tmp/old
    python benchmarks/tools/run_in_tree.py /tmp/old benchmarks/throughput/backgammon_env.py --batches 1024

The editable install (`pip install -e .`) adds import finders that map `envs` and `turbozero`
to this checkout whatever `sys.path` says, so putting the old tree first on `sys.path` alone
measures this checkout twice. This drops those finders, puts the tree first and runs the script.

Used for the before/after tables of docs/benchmarks.md, "Env protocol, second version".
"""

from __future__ import annotations

import os
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: run_in_tree.py TREE SCRIPT [ARGS...]")
    tree, script = os.path.abspath(sys.argv[1]), sys.argv[2]
    if not os.path.isdir(os.path.join(tree, "envs")):
        raise SystemExit(f"{tree} has no envs/ package: not a source tree of this library")
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, tree)
    sys.argv = [script] + sys.argv[3:]
    runpy.run_path(script, run_name="__main__")
    import envs  # already imported by the script: say which tree it came from

    print(f"(envs imported from {os.path.dirname(os.path.dirname(envs.__file__))})")


if __name__ == "__main__":
    main()
