"""Searches behind one interface: mctx policies over the true dynamics of any turn-based env,
and Monte-Carlo graph search (`mcgs`) for simultaneous two-player games."""

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
    greedy_actions,
    random_actions,
    search,
)

__all__ = [
    "MCGSConfig", "MCGSOutput", "NetworkEvaluator", "SearchConfig", "SearchOutput",
    "greedy_actions", "make_mcgs_fn", "mcgs_search", "network_eval_fn", "random_actions",
    "search", "uniform_eval_fn",
]
