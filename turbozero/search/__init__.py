"""Searches behind one contract (`turbozero.search.api`): `search(env, evaluator, variables,
states, key, config)` runs the family the config names and returns a `SearchResult`.

Families: the library's tree kernel (`TreeSearchConfig`), mctx (`MctxConfig`), Monte-Carlo
graph search for simultaneous games (`MCGSConfig`), one ply (`OnePlyConfig`), complete-move
players (`AfterstatePlayerConfig`) and the C++ tree on the host (`CPUSearchConfig`, not
jittable; importing it never needs the built extension); `available_families()` lists what is
registered (docs/search.md)."""

from turbozero.search.api import (
    Family,
    NetworkEvaluator,
    SearchOutput,
    SearchResult,
    available_families,
    family_of,
    register_family,
    search,
)
from turbozero.search.mcgs import (
    MCGSConfig,
    MCGSOutput,
    make_mcgs_fn,
    mcgs_search,
    network_eval_fn,
    uniform_eval_fn,
)
from turbozero.search.mctx_policies import MctxConfig, SearchConfig, random_actions
from turbozero.search.one_ply import OnePlyConfig, greedy_actions, one_ply_search
from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.search.cpu import CPUSearchConfig
from turbozero.search.kernel import TreeSearchConfig, tree_search
from turbozero.search.model import EnvModel, ModelOutput
from turbozero.search.reuse import reuse_subtree
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT

__all__ = [
    "AfterstatePlayerConfig", "CPUSearchConfig", "EnvModel", "Family", "GumbelRoot",
    "MctxConfig", "MctxPUCT",
    "ModelOutput", "OnePlyConfig", "PUCTRoot", "SpecPUCT", "TreeSearchConfig", "reuse_subtree",
    "tree_search", "MCGSConfig", "MCGSOutput", "NetworkEvaluator", "SearchConfig",
    "SearchOutput", "SearchResult", "available_families", "family_of", "greedy_actions",
    "make_mcgs_fn", "mcgs_search", "network_eval_fn", "one_ply_search", "random_actions",
    "register_family", "search", "uniform_eval_fn",
]
