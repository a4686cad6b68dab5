"""Backup of the leaves of one step into one tree (unbatched; the kernel vmaps it).

Each leaf adds its value vector to every node on its path to the root: the node's visit count,
per-player value sum and value-squared sum, and it takes back the virtual loss that selection
put on the path; with win/draw/loss sums (`Tree.wdl_sum`), the leaf's seat-ordered outcome
probabilities are added too. Going up one edge turns the return `G` into `reward + discount * G`. Leaves
of one step may share nodes (or be the same pending node twice): scatter-adds accumulate, so
each leaf counts once.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from turbozero.search.tree import NO_PARENT, Tree


class _Up(NamedTuple):
    node: jax.Array  # int32[L] current node of each leaf's walk (NO_PARENT: finished)
    value: jax.Array  # float32[L, P] return from `node` on
    tree: Tree


def backup(tree: Tree, leaves: jax.Array, active: jax.Array, discount: float = 1.0) -> Tree:
    """Back up `leaves` (int32[L]) of one tree; inactive leaves (bool[L]) do nothing.

    A leaf's value is its `raw_value` (0 at a terminal node): a pending node's evaluation was
    written before the backup, and a terminal node revisited backs up 0 (its reward is on the
    edge above it)."""
    n = tree.num_nodes
    safe = jnp.maximum(leaves, 0)
    wdl = None if tree.raw_wdl is None else tree.raw_wdl[safe]  # [L, 3]
    start = _Up(
        node=jnp.where(active, leaves, NO_PARENT),
        value=tree.raw_value[safe],  # [L, P]
        tree=tree,
    )

    def cond(c: _Up):
        return jnp.any(c.node != NO_PARENT)

    def body(c: _Up) -> _Up:
        on = c.node != NO_PARENT
        idx = jnp.where(on, c.node, n)  # n: out of range, dropped by the scatters
        safe_idx = jnp.where(on, c.node, 0)
        t = c.tree
        t = t._replace(
            node_visits=t.node_visits.at[idx].add(1, mode="drop"),
            virtual_loss=t.virtual_loss.at[idx].add(-1, mode="drop"),
            value_sum=t.value_sum.at[idx].add(c.value, mode="drop"),
            value_sq_sum=t.value_sq_sum.at[idx].add(c.value * c.value, mode="drop"),
        )
        if t.wdl_sum is not None:  # seat-ordered probabilities: the same vector all the way up
            t = t._replace(wdl_sum=t.wdl_sum.at[idx].add(wdl, mode="drop"))
        value = t.reward[safe_idx] + discount * c.value
        parent = jnp.where(on, t.parent[safe_idx], NO_PARENT)
        return _Up(node=parent, value=value, tree=t)

    return jax.lax.while_loop(cond, body, start).tree
