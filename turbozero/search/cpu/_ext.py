"""Loading the bundled C++ extension `turbozero._search_cpp` (docs/cpu_search.md, "Build").

The extension is built by `pip install -e .` (scikit-build-core + nanobind). When it is missing
(a build without a compiler, a source tree used without installing) the pure-JAX library works
as before and only asking for the CPU path raises `CPUSearchUnavailable`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

_MODULE = "turbozero._search_cpp"


class CPUSearchUnavailable(ImportError):
    """The C++ CPU search path was asked for but `turbozero._search_cpp` cannot be imported."""


def load_extension() -> Optional[ModuleType]:
    """The extension module, or None when it cannot be imported."""
    try:
        return importlib.import_module(_MODULE)
    except ImportError:
        return None


def require_extension() -> ModuleType:
    """The extension module; `CPUSearchUnavailable` with the cause and the fix when missing."""
    try:
        return importlib.import_module(_MODULE)
    except ImportError as err:
        raise CPUSearchUnavailable(
            f"the CPU search path needs the C++ extension {_MODULE}, which is not built here "
            f"({err}). Reinstall with `pip install -e .` (it compiles with CMake, nanobind and a "
            "C++17 compiler); the JAX searches (turbozero.search.tree_search, search) need "
            "none of it.") from err


def cpu_search_available() -> bool:
    """True when the C++ extension imports."""
    return load_extension() is not None
