"""Searches behind one interface: mctx policies over the true dynamics of any turn-based env."""

from turbozero.search.mctx_policies import (
    NetworkEvaluator,
    SearchConfig,
    SearchOutput,
    greedy_actions,
    random_actions,
    search,
)

__all__ = [
    "NetworkEvaluator", "SearchConfig", "SearchOutput", "greedy_actions", "random_actions",
    "search",
]
