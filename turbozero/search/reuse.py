"""Tree reuse: after a move, the chosen child's subtree becomes the next search's root.

`reuse_subtree(tree, action)` keeps the nodes under the root's child `action`, renumbers them
from 0 (the child becomes `ROOT_INDEX`) in their old order, so parents still come before their
children, and frees the rest. A game whose child was never expanded, or whose subtree would not
leave room for the next search's `num_simulations` new nodes, gets an empty row
(`next_node == 0`); `tree_search(..., tree=...)` starts those games from a fresh root.

Why the result is exact: in a tree search the statistics of a subtree depend only on the
visits that entered it, and a fresh search from the child with the same formulas (no root noise)
makes those same visits in the same order; so reusing N_c visits and searching S more equals a
fresh search of N_c - 1 + S simulations (tests/search/test_search_kernel.py). Root noise or a Gumbel
root at the new root changes this, as it should.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from turbozero.search.tree import NO_ACTION, NO_PARENT, ROOT_INDEX, UNVISITED, Tree


def _subtree_of_one(tree: Tree, action: jax.Array, room: int) -> Tree:
    """One unbatched tree (embedding included)."""
    n = tree.num_nodes
    match = tree.children_action[ROOT_INDEX] == action  # [K]
    child = jnp.max(jnp.where(match, tree.children_index[ROOT_INDEX], UNVISITED))
    ids = jnp.arange(n)

    # keep[m]: m is `child` or below it. Parents come before children, so one pass in index
    # order settles every node (N steps of O(1) work, once per move).
    def mark(m, keep):
        p = tree.parent[m]
        return keep.at[m].set((m == child) | ((p != NO_PARENT) & keep[jnp.maximum(p, 0)]))

    keep = jax.lax.fori_loop(0, n, mark, jnp.zeros((n,), jnp.bool_))
    keep = keep & (child != UNVISITED) & (ids < tree.next_node)
    count = keep.sum()
    keep = keep & (count <= room)  # too big to leave room for the next search: start afresh
    new_index = jnp.where(keep, jnp.cumsum(keep) - 1, n)  # [N]; n: dropped
    safe_new = jnp.append(new_index, n)  # lookup with UNVISITED/NO_PARENT mapped to n

    def move(x, fill):
        out = jnp.full_like(x, fill)
        return out.at[new_index].set(x, mode="drop")

    parent = jnp.where(tree.parent == NO_PARENT, n, tree.parent)
    parent = jnp.where(ids == child, n, safe_new[parent])
    parent = jnp.where(parent >= n, NO_PARENT, parent)
    kids = tree.children_index
    kids = jnp.where(kids == UNVISITED, UNVISITED, safe_new[jnp.where(kids == UNVISITED, n, kids)])
    root_depth = tree.depth[jnp.maximum(child, 0)]
    at_child = (ids == child)[:, None]
    return Tree(
        node_visits=move(tree.node_visits, 0),
        virtual_loss=move(tree.virtual_loss, 0),
        value_sum=move(tree.value_sum, 0.0),
        value_sq_sum=move(tree.value_sq_sum, 0.0),
        raw_value=move(tree.raw_value, 0.0),
        reward=move(jnp.where(at_child, 0.0, tree.reward), 0.0),
        player=move(tree.player, 0),
        terminal=move(tree.terminal, False),
        parent=move(parent, NO_PARENT),
        action=move(jnp.where(ids == child, NO_ACTION, tree.action), NO_ACTION),
        depth=move(tree.depth - root_depth, 0),
        children_action=move(tree.children_action, NO_ACTION),
        children_index=move(kids, UNVISITED),
        children_prior=move(tree.children_prior, 0.0),
        embedding=jax.tree_util.tree_map(lambda x: move(x, 0), tree.embedding),
        next_node=count * keep.any(),
        raw_wdl=None if tree.raw_wdl is None else move(tree.raw_wdl, 0.0),
        wdl_sum=None if tree.wdl_sum is None else move(tree.wdl_sum, 0.0),
        chance=None if tree.chance is None else move(tree.chance, False),
    )


def reuse_subtree(tree: Tree, action: jax.Array, num_simulations: int) -> Tree:
    """The subtrees of the root children `action` (int32[B]), as the trees of the next search
    of `num_simulations` simulations (same capacity; see the module docstring)."""
    room = tree.num_nodes - num_simulations
    return jax.vmap(_subtree_of_one, in_axes=(0, 0, None))(tree, action, room)
