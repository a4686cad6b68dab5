"""The CPU search path: the tree, node pool and evaluation queue in the bundled C++ extension
`turbozero._search_cpp`, the rules and the network in JAX (docs/cpu_search.md).

Importing this package never needs the extension; constructing anything that does raises
`CPUSearchUnavailable` with the fix when it is not built.

It registers the `cpu` search family (`CPUSearchConfig` through `turbozero.search.search`,
`turbozero.search.cpu.search.cpu_search`): host-side, not jittable, per-seat risk betas taken.
Importing `CPUSearchConfig` imports this package first, so a config that exists has its family.
"""

from turbozero.search.cpu._ext import (
    CPUSearchUnavailable,
    cpu_search_available,
    load_extension,
    require_extension,
)
from turbozero.search.cpu.tree import (
    MAX_ABS_VALUE,
    NEW_GAME,
    NO_ACTION,
    NO_STATE_SLOT,
    CPUSearchConfig,
    Evaluation,
    RootStats,
    SearchTree,
    checked_evaluation,
)
from turbozero.search.api import register_family
from turbozero.search.cpu.search import cpu_search

register_family("cpu", CPUSearchConfig, cpu_search, jittable=False, risk_beta=True)

__all__ = [
    "CPUSearchConfig", "CPUSearchUnavailable", "Evaluation", "MAX_ABS_VALUE", "NEW_GAME", "NO_ACTION",
    "NO_STATE_SLOT", "RootStats", "SearchTree", "checked_evaluation", "cpu_search_available",
    "cpu_search", "load_extension", "require_extension",
]
