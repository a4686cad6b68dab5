"""The graph family's own entry (`turbozero.search.mcgs.mcgs_search`, `make_mcgs_fn`) returns
`(SearchResult, Graph)`; the MCGS tests read its fields under the names below (`root_value`:
the root's Q per player, `SearchResult.root_values`; `action_q` from the stats)."""

from __future__ import annotations

import types

from turbozero.search.mcgs import MCGSConfig, make_mcgs_fn


def fields(out):
    """The (SearchResult, Graph) pair as one object of the fields the tests read."""
    result, graph = out
    return types.SimpleNamespace(
        action=result.action, policy=result.policy, root_value=result.root_values,
        action_q=result.stats["action_q"], graph=graph,
        stats={k: v for k, v in result.stats.items() if k != "action_q"})


def mcgs_fn(eval_fn, env, config=MCGSConfig()):
    """`make_mcgs_fn(eval_fn, env, config)` answering with `fields`."""
    fn = make_mcgs_fn(eval_fn, env, config)
    return lambda params, roots, key: fields(fn(params, roots, key))
