"""Searches behind one contract (`turbozero.search.api`): `search(env, evaluator, variables,
states, key, config)` runs the family the config names and returns a `SearchResult`, the one
result type of every family.

Families: the library's tree kernel (`TreeSearchConfig`), mctx (`MctxConfig`), Monte-Carlo
graph search for simultaneous games (`MCGSConfig`), one ply (`OnePlyConfig`), complete-move
players (`AfterstatePlayerConfig`), a learned model searched by the kernel
(`LearnedModelSearch`, MuZero's) and the C++ tree on the host (`CPUSearchConfig`, not
jittable; importing it never needs the built extension); `available_families()` lists what is
registered (docs/search.md). A family's own entry point (`kernel.tree_search`,
`mcgs.mcgs_search`, `one_ply.one_ply_search`, `afterstate.afterstate_search`) is its module's:
it may return more (the tree, the graph) for inspection, and nothing in training calls it."""

from turbozero.search.api import (
    Family,
    NetworkEvaluator,
    SearchResult,
    available_families,
    family_of,
    register_family,
    search,
)
from turbozero.search.mcgs import MCGSConfig, network_eval_fn, uniform_eval_fn
from turbozero.search.mctx_policies import MctxConfig, random_actions
from turbozero.search.one_ply import OnePlyConfig, greedy_actions
from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.search.cpu import CPUSearchConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.learned import LearnedModelSearch
from turbozero.search.model import EnvModel, ModelOutput
from turbozero.search.reuse import reuse_subtree
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT

__all__ = [
    "AfterstatePlayerConfig", "CPUSearchConfig", "EnvModel", "Family", "GumbelRoot",
    "LearnedModelSearch", "MctxConfig", "MctxPUCT", "ModelOutput", "OnePlyConfig", "PUCTRoot",
    "SpecPUCT", "TreeSearchConfig", "reuse_subtree", "MCGSConfig", "NetworkEvaluator",
    "SearchResult", "available_families", "family_of", "greedy_actions",
    "network_eval_fn", "random_actions", "register_family", "search", "uniform_eval_fn",
]
