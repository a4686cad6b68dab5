"""Code as it was at a git revision, loaded beside the current code in the same process, so
that a before/after measurement times both on the same inputs, interleaved (docs/benchmarks.md,
"Fair timing": comparisons in one process).

    old = module_at_revision("355861f", "turbozero/search/mcgs.py", "mcgs_at_revision")
    old.MCGSConfig(...)  # as it was; it imports the current versions of other modules
    old = game_at_revision("fe5f485", "pyrat")
    old.PyRat(...)  # the game's whole package as it was; it shares the current `envs.core`
"""

from __future__ import annotations

import importlib.util
import os
import re
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


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def game_at_revision(rev: str, game: str) -> ModuleType:
    """The env package `envs/<game>/` at git revision `rev`, imported as a separate package
    `<game>_at_<rev>` (its public module and every module beside it as of `rev`; the shared
    `envs.core` and the rest resolve to the current tree). Revisions before the games became
    packages kept the public module in `envs/<game>.py` and the rest in `envs/_src/<game>/`;
    both layouts load."""
    package = f"{game}_at_{rev}"
    try:
        files = _git("ls-tree", "--name-only", rev, f"envs/{game}/").split()
    except subprocess.CalledProcessError as e:
        raise ValueError(f"no git revision {rev!r}: {e.stderr.strip()}") from None
    if f"envs/{game}/__init__.py" in files:
        sources = {os.path.basename(f): f for f in files if f.endswith(".py")}
    else:  # the layout before packages
        old = _git("ls-tree", "--name-only", rev, f"envs/_src/{game}/").split()
        sources = {os.path.basename(f): f for f in old if f.endswith(".py")}
        sources["__init__.py"] = f"envs/{game}.py"
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, package))
    # `envs._src.<game>` and `envs.<game>` (word-bounded) both name the package itself
    own = re.compile(rf"\benvs\.(_src\.)?{game}\b")
    for name, path in sources.items():
        with open(os.path.join(root, package, name), "w", encoding="utf-8") as f:
            f.write(own.sub(package, _git("show", f"{rev}:{path}")))
    sys.path.insert(0, root)
    return importlib.import_module(package)
