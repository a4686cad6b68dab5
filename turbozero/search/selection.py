"""Selection at one node of one tree: the statistics of its K child slots and the PUCT scores.

Two formulas, chosen by passing an object (docs/search.md, "The tree kernel"):

* `SpecPUCT` — docs/search.md (PUCT with dynamic FPU and risk): `Q + c_puct * P * sqrt(N) / (1 + N_a + VL_a)`,
  dynamic FPU for unvisited children, entropic-risk Q `mean + beta/2 * var` (clamped; beta = 0
  is plain AlphaZero), virtual loss blended toward the parent's Q.
* `MctxPUCT` — `mctx.muzero_action_selection` with `qtransform_by_parent_and_siblings`
  (pb_c_init, pb_c_base, min-max normalised Q), so the kernel can be checked against mctx.

Q is always the component of the player to move at the node: values are per-player vectors.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from turbozero.search.fpu import FPU_BASE, first_play_urgency
from turbozero.search.tree import NO_ACTION, UNVISITED, Tree
from turbozero.validation import check_bounds, check_real


class NodeStats(NamedTuple):
    """The view of one node (one tree, unbatched) that selection needs."""

    valid: jax.Array  # bool[K] slot holds a legal action
    prior: jax.Array  # float32[K]
    visits: jax.Array  # int32[K] completed visits of each child (0 if no node yet)
    virtual_loss: jax.Array  # int32[K] selections in flight through each child
    q_mean: jax.Array  # float32[K] mover's mean return of each visited child (reward included)
    q_var: jax.Array  # float32[K] variance of the mover's return (>= 0)
    parent_visits: jax.Array  # int32[] visits of the node
    parent_value: jax.Array  # float32[] mover's mean value of the node


def node_stats(tree: Tree, node: jax.Array, discount: float = 1.0) -> NodeStats:
    """Gather the `[K]` child row of `node` in one unbatched tree (fields without batch axis).

    Q of a child is `reward + discount * mean value` (MuZero's Bellman form; the true-dynamics
    games use discount 1). O(K * P): the only per-simulation reads of the child arrays."""
    return row_stats(tree, node, tree.children_index[node], tree.children_action[node],
                     tree.children_prior[node], discount)


def row_stats(tree: Tree, node: jax.Array, index: jax.Array, action: jax.Array,
              prior: jax.Array, discount: float = 1.0) -> NodeStats:
    """`node_stats` from the node's child row already read: `index`, `action` (int32[K]) and
    `prior` (float32[K]) are `tree.children_index[node]`, `children_action[node]` and
    `children_prior[node]`."""
    mover = tree.player[node]
    safe = jnp.where(index != UNVISITED, index, 0)
    return gathered_stats(
        index, action, prior, tree.node_visits[safe], tree.virtual_loss[safe],
        tree.value_sum[safe, mover], tree.value_sq_sum[safe, mover], tree.reward[safe, mover],
        tree.node_visits[node], tree.value_sum[node, mover], discount)


def gathered_stats(index: jax.Array, action: jax.Array, prior: jax.Array, visits: jax.Array,
                   virtual_loss: jax.Array, value_sum: jax.Array, value_sq_sum: jax.Array,
                   reward: jax.Array, parent_visits: jax.Array, parent_value_sum: jax.Array,
                   discount: float = 1.0) -> NodeStats:
    """`NodeStats` of one node from its children's statistics as read (`[K]` each: the child
    slot's node `index`, its action and prior; the child node's visits, virtual loss, and the
    mover's value sum, value-squared sum and edge reward, read at node 0 where the slot has no
    node) and the node's own visits and mover's value sum. The one place these formulas are
    written: the kernel reads the same numbers from its packed node table
    (`turbozero.search.node_table`)."""
    exists = index != UNVISITED
    visits = jnp.where(exists, visits, 0)
    vl = jnp.where(exists, virtual_loss, 0)
    n = jnp.maximum(visits, 1).astype(jnp.float32)
    mean_v = value_sum / n
    mean_sq = value_sq_sum / n
    # the edge reward is the same on every visit, so it shifts the mean but not the variance
    q_mean = jnp.where(visits > 0, reward + discount * mean_v, 0.0)
    q_var = jnp.where(visits > 0, discount * discount * jnp.maximum(mean_sq - mean_v * mean_v,
                                                                  0.0), 0.0)
    parent_value = parent_value_sum / jnp.maximum(parent_visits, 1).astype(jnp.float32)
    return NodeStats(
        valid=action != NO_ACTION,
        prior=prior,
        visits=visits,
        virtual_loss=vl,
        q_mean=q_mean,
        q_var=q_var,
        parent_visits=parent_visits,
        parent_value=parent_value,
    )


@dataclasses.dataclass(frozen=True)
class SpecPUCT:
    """PUCT with dynamic FPU, entropic risk and virtual loss (docs/search.md), in the game's value units.

    c_puct: exploration constant (spec default 1.5).
    fpu_base: unvisited child without virtual loss scores `Q_parent - fpu_base * (1 - P)`
        (`turbozero.search.fpu`; default `FPU_BASE`).
    risk_beta: entropic-risk coefficient; visited Q is `mean + beta/2 * var`, clamped to
        `q_bounds`. beta = 0 skips both the variance and the clamp (exactly plain AlphaZero).
    q_bounds: the game's value range, the clamp of the risk Q (spec: [-1, 1]).
    Virtual loss VL of a child (L > 1 leaves per step): an unvisited child in flight scores
    `Q_parent`; a visited one `(N * Q + VL * Q_parent) / (N + VL)`; the exploration term
    divides by `1 + N + VL`.
    """

    c_puct: float = 1.5
    fpu_base: float = FPU_BASE
    risk_beta: float = 0.0
    q_bounds: tuple[float, float] = (-1.0, 1.0)

    def __post_init__(self) -> None:
        check_real("c_puct", self.c_puct, above=0)
        check_real("fpu_base", self.fpu_base, minimum=0)
        check_real("risk_beta", self.risk_beta)
        check_bounds("q_bounds", self.q_bounds)

    def scores(self, s: NodeStats, risk_beta=None) -> jax.Array:
        """float32[K] PUCT scores (padding slots are masked by the caller).

        risk_beta: float32[] beta of the player to move, given per search (per-game asymmetric
        risk, docs/search.md); None uses `self.risk_beta`. A traced beta of 0 gives exactly the
        beta-0 scores (0 * var adds nothing, and the clamp applies only where beta != 0)."""
        n = s.visits.astype(jnp.float32)
        vl = s.virtual_loss.astype(jnp.float32)
        q = s.q_mean
        if risk_beta is not None:
            q = q + 0.5 * risk_beta * s.q_var
        elif self.risk_beta != 0.0:
            q = q + 0.5 * self.risk_beta * s.q_var
        q_vl = (n * q + vl * s.parent_value) / jnp.maximum(n + vl, 1.0)
        if risk_beta is not None:
            q_vl = jnp.where(risk_beta != 0.0, jnp.clip(q_vl, *self.q_bounds), q_vl)
        elif self.risk_beta != 0.0:
            q_vl = jnp.clip(q_vl, *self.q_bounds)
        fpu = first_play_urgency(s.parent_value, s.prior, self.fpu_base)
        q_sel = jnp.where(s.visits > 0, q_vl, jnp.where(vl > 0, s.parent_value, fpu))
        u = self.c_puct * s.prior * jnp.sqrt(s.parent_visits.astype(jnp.float32)) / (1.0 + n + vl)
        return q_sel + u


@dataclasses.dataclass(frozen=True)
class MctxPUCT:
    """mctx's `muzero_action_selection` with `qtransform_by_parent_and_siblings`.

    Q of the visited children and of the node itself is min-max normalised (unvisited children
    completed by the minimum, so they score 0); exploration `sqrt(N) * pb_c * P / (N_a + 1)`
    with `pb_c = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`. Virtual loss counts as
    visits in the exploration term only (mctx has none).
    """

    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    epsilon: float = 1e-8  # mctx's guard of the min-max range

    def __post_init__(self) -> None:
        check_real("pb_c_init", self.pb_c_init, above=0)
        check_real("pb_c_base", self.pb_c_base, above=0)
        check_real("epsilon", self.epsilon, above=0)

    def scores(self, s: NodeStats, risk_beta=None) -> jax.Array:
        del risk_beta  # mctx's formula has no risk term
        visited = s.visits > 0
        safe_q = jnp.where(visited, s.q_mean, s.parent_value)
        lo = jnp.minimum(s.parent_value, jnp.min(safe_q))
        hi = jnp.maximum(s.parent_value, jnp.max(safe_q))
        completed = jnp.where(visited, s.q_mean, lo)
        q = (completed - lo) / jnp.maximum(hi - lo, self.epsilon)
        nv = s.parent_visits.astype(jnp.float32)
        pb_c = self.pb_c_init + jnp.log((nv + self.pb_c_base + 1.0) / self.pb_c_base)
        n = (s.visits + s.virtual_loss).astype(jnp.float32)
        return q + jnp.sqrt(nv) * pb_c * s.prior / (n + 1.0)


def masked_argmax(scores: jax.Array, valid: jax.Array) -> jax.Array:
    """int32[...]: the first valid slot of highest score over the last axis (ties go to the
    lowest action id); `jnp.argmax` of the masked scores, NaN included (the first NaN wins).

    Written as a max, then one min over slot numbers (NaN slots first, then the slots equal to
    the max): two plain reductions, which XLA's CPU backend runs about 3x faster than the
    (value, index) pair reduction of `jnp.argmax` (docs/benchmarks.md, "The tree kernel
    against its model floor")."""
    masked = jnp.where(valid, scores, -jnp.inf)
    k = masked.shape[-1]
    slots = jax.lax.broadcasted_iota(jnp.int32, masked.shape, masked.ndim - 1)
    top = jnp.max(masked, axis=-1, keepdims=True)
    rank = jnp.where(jnp.isnan(masked), slots, jnp.where(masked == top, slots + k, 2 * k))
    first = jnp.min(rank, axis=-1)
    return jnp.where(first < k, first, first - k)
