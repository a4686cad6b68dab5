"""Backup of the leaves of one step into the batch of trees.

Each leaf adds its value vector to every node on its path to the root: the node's visit count,
per-player value sum and value-squared sum, and it takes back the virtual loss that selection
put on the path; with win/draw/loss sums (`Tree.wdl_sum`), the leaf's seat-ordered outcome
probabilities are added too. Going up one edge turns the return `G` into `reward + discount * G`. Leaves
of one step may share nodes (or be the same pending node twice): scatter-adds accumulate, so
each leaf counts once.

The loop runs on the whole batch, one level per iteration, until every walk has passed its
root; a finished walk scatters out of range. It is not a `while_loop` vmapped over trees: with
a per-tree condition, vmap selects every carried array between old and new on every iteration,
which on CPU cost more than the scatter-adds (docs/benchmarks.md, "The tree kernel
against its model floor"). Only the statistics it adds to travel in the loop's carry. Since a
finished walk writes nothing, a trip may take several levels (`turbozero.search.loops`): on a
GPU each trip is a round trip to the host.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from turbozero.search.loops import batch_while
from turbozero.search.tree import NO_PARENT, Tree


class _Up(NamedTuple):
    node: jax.Array  # int32[B, L] current node of each leaf's walk (NO_PARENT: finished)
    value: jax.Array  # float32[B, L, P] return from `node` on
    node_visits: jax.Array  # the tree's statistics being added to
    virtual_loss: jax.Array
    value_sum: jax.Array
    value_sq_sum: jax.Array
    wdl_sum: Any  # float32[B, N, 3] or None


def backup(tree: Tree, leaves: jax.Array, active: jax.Array, discount: float = 1.0,
           virtual_loss: bool = True, unroll: int = 1) -> tuple[Tree, jax.Array]:
    """Back up `leaves` (int32[B, L]) of a batch of trees; inactive leaves (bool[L]) do nothing.

    A leaf's value is its `raw_value` (0 at a terminal node): a pending node's evaluation was
    written before the backup, and a terminal node revisited backs up 0 (its reward is on the
    edge above it). `virtual_loss=False`: selection put none on the paths (one leaf per step,
    `kernel._select_leaves`), so none is taken back. `unroll`: levels per loop trip. Returns
    (tree, the loop's trips int32[])."""
    n = tree.num_nodes
    rows = jnp.arange(tree.batch_size)[:, None]  # [B, 1]
    safe = jnp.maximum(leaves, 0)
    wdl = None if tree.raw_wdl is None else tree.raw_wdl[rows, safe]  # [B, L, 3]
    start = _Up(
        node=jnp.where(active[None, :], leaves, NO_PARENT),
        value=tree.raw_value[rows, safe],  # [B, L, P]
        node_visits=tree.node_visits, virtual_loss=tree.virtual_loss,
        value_sum=tree.value_sum, value_sq_sum=tree.value_sq_sum, wdl_sum=tree.wdl_sum,
    )

    def cond(c: _Up):
        return jnp.any(c.node != NO_PARENT)

    def body(c: _Up) -> _Up:
        on = c.node != NO_PARENT
        idx = jnp.where(on, c.node, n)  # n: out of range, dropped by the scatters
        safe_idx = jnp.where(on, c.node, 0)
        wdl_sum = c.wdl_sum
        if wdl_sum is not None:  # seat-ordered probabilities: the same vector all the way up
            wdl_sum = wdl_sum.at[rows, idx].add(wdl, mode="drop")
        return _Up(
            node=jnp.where(on, tree.parent[rows, safe_idx], NO_PARENT),
            value=tree.reward[rows, safe_idx] + discount * c.value,
            node_visits=c.node_visits.at[rows, idx].add(1, mode="drop"),
            virtual_loss=(c.virtual_loss.at[rows, idx].add(-1, mode="drop") if virtual_loss
                          else c.virtual_loss),
            value_sum=c.value_sum.at[rows, idx].add(c.value, mode="drop"),
            value_sq_sum=c.value_sq_sum.at[rows, idx].add(c.value * c.value, mode="drop"),
            wdl_sum=wdl_sum,
        )

    end, trips = batch_while(cond, body, start, unroll)
    return tree._replace(node_visits=end.node_visits, virtual_loss=end.virtual_loss,
                         value_sum=end.value_sum, value_sq_sum=end.value_sq_sum,
                         wdl_sum=end.wdl_sum), trips
