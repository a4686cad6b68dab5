"""Work that a batch of games rarely needs, paid for only when some game does.

Under `vmap` a `lax.cond` becomes a `select`: both branches run for every game of the batch,
so a rule that is rarely needed (the ranking of a finished game, the view centre's fallback)
costs as much as if it ran on every move. `when` keeps the `cond` at the level of the whole
batch (`custom_vmap`): the branch runs, for every game, only when at least one game of the
batch needs it, and the result of each game is the one its own `cond` would give.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax import custom_batching

Array = jax.Array


def when(pred: Array, fn: Callable, otherwise: Callable, *args: Array):
    """`lax.cond(pred, fn, otherwise, *args)` for one game; under `vmap`, `fn` runs (for the
    whole batch, each game then taking its own branch's result) only if some `pred` is set.

    `fn` and `otherwise` take `args` (arrays) and return the same structure of arrays; they
    must not close over traced values (pass those in `args`)."""

    # jitted, so that constants the branches make (a table of rewards) stay inside their own
    # jaxprs: a custom_vmap body may not close over constants, which a surrounding vmapped
    # `cond` (the protocol's absorb-or-advance) would batch
    @jax.jit
    def one(p, *a):
        return jax.lax.cond(p, fn, otherwise, *a)

    otherwise_jit = jax.jit(otherwise)

    @custom_batching.custom_vmap
    def lazily(p, *a):
        return one(p, *a)

    @lazily.def_vmap
    def _batched(axis_size, in_batched, p, *a):
        p, *a = (x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))
                 for x, b in zip((p,) + a, in_batched))
        out = jax.lax.cond(jnp.any(p), lambda: jax.vmap(one)(p, *a),
                           lambda: jax.vmap(otherwise_jit)(*a))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return lazily(pred, *args)


def materialised(x: Array) -> Array:
    """`x` (leading axis: the batch, inside a batched rule), as an array XLA computes once and
    reads, instead of recomputing it for every element of the fused loops that use it.

    XLA fuses cheap producers into their consumers and recomputes them per output element:
    the start of each game's slice in a gather of B x 1,415 cells was recomputed, from the
    action through a floor division, for every one of those cells. A scatter of the whole
    batch (one row per game) is not fused into its consumers, so its result is materialised:
    that gather at batch 256 ran in 0.065 ms instead of 0.245 ms (measured on the shared
    2-core CPU, 2026-11-27; a scatter into a one-element axis is simplified away by XLA)."""
    return jnp.zeros_like(x).at[jnp.arange(x.shape[0])].set(
        x, unique_indices=True, indices_are_sorted=True)


@custom_batching.custom_vmap
def computed_once(x: Array) -> Array:
    """`materialised` for per-game code: `x` itself for one game; under `vmap`, the batch's
    values computed once (a batch-wide scatter) for the fused loops that read them."""
    return x


@computed_once.def_vmap
def _computed_once_batched(axis_size, in_batched, x):
    return (materialised(x), True) if in_batched[0] else (x, False)
