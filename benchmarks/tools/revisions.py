"""Code as it was at a git revision, loaded beside the current code in the same process, so
that a before/after measurement times both on the same inputs, interleaved (docs/benchmarks.md,
"Fair timing": comparisons in one process).

    old = module_at_revision("fe5f485", "envs/pyrat.py", "pyrat_reference")
    old.PyRat(...)  # the class as it was; it imports the current versions of other modules
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def module_at_revision(rev: str, path: str, name: str) -> ModuleType:
    """The file `path` (relative to the repository root) at git revision `rev`, imported as the
    module `name` (registered in sys.modules: dataclasses look their module up while a class is
    made). Its own imports resolve to the current tree."""
    proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise ValueError(f"no {path} at git revision {rev!r}: {proc.stderr.strip()}")
    file = os.path.join(tempfile.mkdtemp(), f"{name}.py")
    with open(file, "w", encoding="utf-8") as f:
        f.write(proc.stdout)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
