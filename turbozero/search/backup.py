"""Backup of the leaves of one step into the batch of trees.

Each leaf adds its value vector to every node on its path to the root: the node's visit count,
per-player value sum and value-squared sum, and it takes back the virtual loss that selection
put on the path; with win/draw/loss sums (`Tree.wdl_sum`), the leaf's seat-ordered outcome
probabilities are added too. Going up one edge turns the return `G` into `reward + discount * G`. Leaves
of one step may share nodes (or be the same pending node twice): scatter-adds accumulate, so
each leaf counts once.

The statistics live in the kernel's packed node table during a search
(`turbozero.search.node_table`), so one level is one gather and one scatter-add. The loop
runs on the whole batch, one level per iteration, until every walk has passed its
root; a finished walk scatters out of range. It is not a `while_loop` vmapped over trees: with
a per-tree condition, vmap selects every carried array between old and new on every iteration,
which on CPU cost more than the scatter-adds (docs/benchmarks.md, "The tree kernel
against its model floor"). Since a
finished walk writes nothing, a trip may take several levels (`turbozero.search.loops`): on a
GPU each trip is a round trip to the host.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from turbozero.search.loops import batch_while
from turbozero.search.node_table import NodeColumns
from turbozero.search.tree import NO_PARENT


class _Up(NamedTuple):
    node: jax.Array  # int32[B, L] current node of each leaf's walk (NO_PARENT: finished)
    value: jax.Array  # float32[B, L, P] return from `node` on
    table: jax.Array  # float32[B, N, F] the packed node table being added to


def backup(table: jax.Array, cols: NodeColumns, leaves: jax.Array, active: jax.Array,
           discount: float = 1.0, virtual_loss: bool = True, unroll: int = 1
           ) -> tuple[jax.Array, jax.Array]:
    """Back up `leaves` (int32[B, L]) into the packed node table float32[B, N, F] of a batch of
    trees (`turbozero.search.node_table`, columns `cols`); inactive leaves (bool[L]) do
    nothing.

    A leaf's value is its `raw_value` (0 at a terminal node): a pending node's evaluation was
    written before the backup, and a terminal node revisited backs up 0 (its reward is on the
    edge above it). `virtual_loss=False`: selection put none on the paths (one leaf per step,
    `kernel._select_leaves`), so none is taken back. `unroll`: levels per loop trip. A level
    reads each walk's node row (one gather: its parent and edge reward) and adds to the
    table's first `cols.added` columns (one scatter-add: value sums, win/draw/loss sums, a
    visit, the virtual loss taken back). Returns (table, the loop's trips int32[])."""
    n = table.shape[1]
    p = cols.num_players
    rows = jnp.arange(table.shape[0])[:, None]  # [B, 1]
    leaf_rows = table[rows, jnp.maximum(leaves, 0)]  # [B, L, F]
    # what every level adds besides the value and its square: the seat-ordered win/draw/loss
    # probabilities (the same vector all the way up), a visit, the virtual loss taken back
    fixed = ([leaf_rows[..., cols.raw_wdl:cols.raw_wdl + 3]] if cols.with_wdl else []) + [
        jnp.ones(leaves.shape + (1,), jnp.float32),
        jnp.full(leaves.shape + (1,), -1.0 if virtual_loss else 0.0, jnp.float32)]
    start = _Up(node=jnp.where(active[None, :], leaves, NO_PARENT),
                value=leaf_rows[..., cols.raw_value:cols.raw_value + p], table=table)

    def cond(c: _Up):
        return jnp.any(c.node != NO_PARENT)

    def body(c: _Up) -> _Up:
        on = c.node != NO_PARENT
        idx = jnp.where(on, c.node, n)  # n: out of range, dropped by the scatter
        add = jnp.concatenate([c.value, c.value * c.value] + fixed, axis=-1)
        table = c.table.at[rows, idx, :cols.added].add(add, mode="drop")
        # the row read after the add, from the table it made: the add writes the first
        # `cols.added` columns, the row's parent and reward lie beyond them, so they read the
        # same; read before, the table had two readers and XLA copied it twice a level
        # (docs/benchmarks.md, "Fewer kernels in the loop body")
        row = table[rows, jnp.where(on, c.node, 0)]  # [B, L, F]
        return _Up(
            node=jnp.where(on, row[..., cols.parent].astype(jnp.int32), NO_PARENT),
            value=row[..., cols.reward:cols.reward + p] + discount * c.value,
            table=table,
        )

    end, trips = batch_while(cond, body, start, unroll)
    return end.table, trips
