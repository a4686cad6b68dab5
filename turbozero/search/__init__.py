"""Searches behind one interface: the library's tree kernel (`TreeSearchConfig`) or mctx
policies (`SearchConfig`) over the true dynamics of any turn-based env, and Monte-Carlo graph
search (`mcgs`) for simultaneous two-player games."""

from turbozero.search.mcgs import (
    MCGSConfig,
    MCGSOutput,
    make_mcgs_fn,
    mcgs_search,
    network_eval_fn,
    uniform_eval_fn,
)
from turbozero.search.mctx_policies import (
    NetworkEvaluator,
    SearchConfig,
    SearchOutput,
    random_actions,
    search,
)
from turbozero.search.one_ply import OnePlyConfig, greedy_actions, one_ply_search
from turbozero.search.kernel import TreeSearchConfig, TreeSearchResult, tree_search
from turbozero.search.model import EnvModel, ModelOutput
from turbozero.search.reuse import reuse_subtree
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT

__all__ = [
    "EnvModel", "GumbelRoot", "MctxPUCT", "ModelOutput", "OnePlyConfig", "PUCTRoot", "SpecPUCT",
    "TreeSearchConfig", "TreeSearchResult", "reuse_subtree", "tree_search",
    "MCGSConfig", "MCGSOutput", "NetworkEvaluator", "SearchConfig", "SearchOutput",
    "greedy_actions", "make_mcgs_fn", "mcgs_search", "network_eval_fn", "one_ply_search", "random_actions",
    "search", "uniform_eval_fn",
]
