"""The arrays of the batched search tree (docs/search.md, "The tree kernel").

One tree per game of the batch, `N` nodes of fixed capacity, children stored only for the legal
actions of a node: up to `K` slots per node holding an action id, the index of the child node
(or `UNVISITED`) and the prior. Per-child statistics live on the child node, so selection at a
node gathers one `[K]` row and never touches the `[B, N, K]` arrays as a whole.

Values are vectors over the players, in seat order: `value_sum[b, n, p]` is the sum over the
visits of node `n` of player `p`'s return from that node on, `reward[b, n, p]` the reward of the
transition into `n`. A parent's Q of child `c` for player `p` is `reward[c, p] + mean[c, p]`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

ROOT_INDEX = 0
NO_PARENT = -1  # parent of the root
UNVISITED = -1  # children_index of a slot whose child node does not exist yet
NO_ACTION = -1  # children_action of a padding slot (fewer legal actions than K)


class Tree(NamedTuple):
    """A batch of B trees with N nodes, K child slots per node and P players."""

    node_visits: jax.Array  # int32[B, N] completed visits (0: allocated, evaluation pending)
    virtual_loss: jax.Array  # int32[B, N] selections in flight through the node
    value_sum: jax.Array  # float32[B, N, P] sum of returns from the node, per player
    value_sq_sum: jax.Array  # float32[B, N, P] sum of squared returns (entropic-risk variance)
    raw_value: jax.Array  # float32[B, N, P] the model's value at expansion (0 when terminal)
    reward: jax.Array  # float32[B, N, P] reward of the edge into the node
    player: jax.Array  # int32[B, N] player to move at the node
    terminal: jax.Array  # bool[B, N] the game is over at the node
    parent: jax.Array  # int32[B, N] parent node (NO_PARENT at the root)
    action: jax.Array  # int32[B, N] action from the parent into the node (NO_ACTION at root)
    depth: jax.Array  # int32[B, N] edges from the root
    children_action: jax.Array  # int32[B, N, K] legal action ids in increasing order, NO_ACTION pad
    children_index: jax.Array  # int32[B, N, K] child node of each slot, or UNVISITED
    children_prior: jax.Array  # float32[B, N, K] prior probability of each slot (0 on padding)
    embedding: Any  # pytree, leaves [B, N, ...]: the model's state of each node
    next_node: jax.Array  # int32[B] first free node index (= nodes used)
    # Two-player models whose value head has a draw class (`ModelOutput.wdl`), else None:
    # outcome probabilities in seat order [P(seat 0 wins), P(draw), P(seat 1 wins)], so that
    # backup adds the same vector at every node of a path (no W/L swap per ply).
    raw_wdl: Any = None  # float32[B, N, 3] the node's own evaluation (terminal: its outcome)
    wdl_sum: Any = None  # float32[B, N, 3] sum over the node's visits of the leaves' raw_wdl
    # models with chance events, else None: the node waits for a chance outcome; its slots
    # hold outcome ids with their probabilities as priors
    chance: Any = None  # bool[B, N]

    @property
    def batch_size(self) -> int:
        return self.node_visits.shape[0]

    @property
    def num_nodes(self) -> int:
        return self.node_visits.shape[-1]  # also on one unbatched tree

    @property
    def max_children(self) -> int:
        return self.children_action.shape[-1]

    @property
    def num_players(self) -> int:
        return self.value_sum.shape[-1]


def empty_tree(
    batch_size: int, num_nodes: int, max_children: int, num_players: int, embedding_like: Any,
    with_wdl: bool = False, with_chance: bool = False,
) -> Tree:
    """A tree with every node free; `embedding_like` is one node's embedding batch `[B, ...]`;
    `with_wdl` allocates the win/draw/loss sums (two-player models with a draw class),
    `with_chance` the chance-node flags (models with chance events)."""
    b, n, k, p = batch_size, num_nodes, max_children, num_players
    emb = jax.tree_util.tree_map(
        lambda x: jnp.zeros((b, n) + x.shape[1:], x.dtype), embedding_like)
    return Tree(
        node_visits=jnp.zeros((b, n), jnp.int32),
        virtual_loss=jnp.zeros((b, n), jnp.int32),
        value_sum=jnp.zeros((b, n, p), jnp.float32),
        value_sq_sum=jnp.zeros((b, n, p), jnp.float32),
        raw_value=jnp.zeros((b, n, p), jnp.float32),
        reward=jnp.zeros((b, n, p), jnp.float32),
        player=jnp.zeros((b, n), jnp.int32),
        terminal=jnp.zeros((b, n), jnp.bool_),
        parent=jnp.full((b, n), NO_PARENT, jnp.int32),
        action=jnp.full((b, n), NO_ACTION, jnp.int32),
        depth=jnp.zeros((b, n), jnp.int32),
        children_action=jnp.full((b, n, k), NO_ACTION, jnp.int32),
        children_index=jnp.full((b, n, k), UNVISITED, jnp.int32),
        children_prior=jnp.zeros((b, n, k), jnp.float32),
        embedding=emb,
        next_node=jnp.zeros((b,), jnp.int32),
        raw_wdl=jnp.zeros((b, n, 3), jnp.float32) if with_wdl else None,
        wdl_sum=jnp.zeros((b, n, 3), jnp.float32) if with_wdl else None,
        chance=jnp.zeros((b, n), jnp.bool_) if with_chance else None,
    )


# Action spaces up to this many ids count their kept actions with one matrix product against a
# triangle of ones; larger ones in blocks of about sqrt(A) (`running_count`).
ONE_PRODUCT_LIMIT = 512


def running_count(keep: jax.Array) -> jax.Array:
    """int32[M, A]: the number of True entries of `keep` bool[M, A] up to and including each.

    Matrix products against triangles of ones (exact: 0/1 entries and counts below 2**24 are
    exact in float32 at any matmul precision, and so are their sums): two or three kernels
    where a log-depth scan of adds launched about 19 for 156 ids, and on a GPU each kernel
    costs a launch whatever it does (docs/benchmarks.md, "Fewer kernels in the loop body", has
    the games measured). On CPU the products measured as fast as that scan in the same process
    (0.98x-1.16x, medians of 15 interleaved searches of the suite's games), so every backend
    takes them; `jnp.cumsum` is a reduce-window there, O(A^2) adds a row. Up to
    `ONE_PRODUCT_LIMIT` ids one product; beyond, blocks of about sqrt(A) ids (the counts within
    each block, then the blocks' totals before it), O(A^1.5) a row."""
    m, a = keep.shape
    f32, hi = jnp.float32, jax.lax.Precision.HIGHEST
    x = keep.astype(f32)
    if a <= ONE_PRODUCT_LIMIT:
        tri = jnp.triu(jnp.ones((a, a), f32))  # tri[i, j] = 1 where i <= j
        return jnp.dot(x, tri, precision=hi).astype(jnp.int32)
    size = int(np.ceil(np.sqrt(a)))
    blocks = -(-a // size)
    x = jnp.pad(x, ((0, 0), (0, blocks * size - a))).reshape(m, blocks, size)
    within = jnp.einsum("mbi,ij->mbj", x, jnp.triu(jnp.ones((size, size), f32)),
                        precision=hi)  # [M, blocks, size]
    before = jnp.einsum("mb,bc->mc", within[..., -1],
                        jnp.triu(jnp.ones((blocks, blocks), f32), 1), precision=hi)
    return (within + before[..., None]).reshape(m, -1)[:, :a].astype(jnp.int32)


def pack_actions(keep: jax.Array, width: int, values: Optional[jax.Array] = None,
                 count: Optional[jax.Array] = None):
    """int32[M, K]: the ids of the True entries of `keep` bool[M, A], in increasing order, in
    K = `width` slots padded with NO_ACTION (entries beyond the first K are dropped).

    `values` (float32[M, A]): also the values of the kept entries, float32[M, K] (0 on
    padding), moved by the same scatter as the ids: (ids, values). `count`: `keep`'s
    `running_count` when the caller has it."""
    m, a = keep.shape
    pos = (running_count(keep) if count is None else count) - 1  # [M, A] slot of a kept id
    slot = jnp.where(keep & (pos < width), pos, width)  # width: dropped
    rows = jnp.broadcast_to(jnp.arange(m)[:, None], (m, a))
    ids = jnp.broadcast_to(jnp.arange(a, dtype=jnp.int32)[None], (m, a))
    if values is None:
        return jnp.full((m, width), NO_ACTION, jnp.int32).at[rows, slot].set(ids, mode="drop")
    both = jnp.stack([ids, jax.lax.bitcast_convert_type(values, jnp.int32)], axis=-1)
    init = jnp.broadcast_to(jnp.array([NO_ACTION, 0], jnp.int32), (m, width, 2))
    packed = init.at[rows, slot].set(both, mode="drop")  # [M, K, 2]
    return packed[..., 0], jax.lax.bitcast_convert_type(packed[..., 1], jnp.float32)


def compact_children(
    legal: jax.Array, logits: jax.Array, max_children: int
) -> tuple[jax.Array, jax.Array]:
    """(int32[M, K] action ids, float32[M, K] priors) of the legal actions of M nodes.

    legal: bool[M, A]; logits: float32[M, A]. Slots hold the legal ids in increasing order (so
    ties in selection go to the lowest action id, as in mctx), padded with NO_ACTION and prior 0;
    the prior is the softmax of the logits over the kept actions.

    More legal actions than K (possible only when K is set below the game's bound): the K with
    the highest logits are kept (ties: the lowest ids) and the prior is renormalised over them.
    The top-k runs only when some node of the batch overflows (`lax.cond` on the whole batch),
    because a top-k over thousands of action ids costs more than the rest of an expansion; with
    K slots for every action id (K >= A) none can, and there is no `cond`.
    """
    k = max_children
    count = running_count(legal)  # [M, A]; its last column: the legal actions of each node
    keep = legal

    def keep_top_k(_):
        masked = jnp.where(legal, logits, -jnp.inf)
        kth = jax.lax.top_k(masked, k)[0][:, -1:]  # [M, 1] K-th largest logit
        top = legal & (masked >= kth)
        return top, running_count(top)

    if k < legal.shape[-1]:
        keep, count = jax.lax.cond(jnp.any(count[:, -1] > k), keep_top_k,
                                   lambda _: (legal, count), None)  # [M, A] each
    # the kept logits move with their ids (one scatter, no gather after it)
    actions, kept_logits = pack_actions(keep, k, logits, count)
    valid = actions != NO_ACTION  # [M, K]
    kept_logits = jnp.where(valid, kept_logits, -jnp.inf)
    top = jnp.max(kept_logits, axis=-1, keepdims=True)
    e = jnp.where(valid, jnp.exp(kept_logits - jnp.where(jnp.isfinite(top), top, 0.0)), 0.0)
    prior = e / jnp.maximum(e.sum(-1, keepdims=True), jnp.finfo(e.dtype).tiny)
    return actions, prior
