"""Batch-wide `while_loop`s that take several steps per trip, and count their trips.

The searches walk trees and graphs level by level: one loop for the whole batch, running until
every game's walk is done. On a GPU each trip of a `while_loop` whose stop depends on the data
costs a round trip to the host (XLA copies the predicate back and waits for the stream before
it launches the next trip), so a walk of depth d pays d + 1 of them per simulation however
cheap its steps are. Taking `unroll` steps per trip divides the round trips by `unroll`; the
extra steps of the last trip must then change nothing, which is what the searches' walks
already guarantee (a finished walk keeps its node and writes out of range).

On CPU a trip costs no round trip, and a step past the end is wasted work, so the searches take
one step per trip there (`default_unroll`; docs/benchmarks.md, "Trips and kernels per
simulation", has the measurements behind the GPU figure).
"""

from __future__ import annotations

from typing import Callable, Optional, TypeVar

import jax
import jax.numpy as jnp

C = TypeVar("C")

# The tree kernel's levels per trip on accelerators (GPU/TPU), where each trip costs a host
# round trip. Measured on an H200 at 512 games x 64 simulations against 1 level a trip (docs/
# benchmarks.md, "Trips and kernels per simulation"): chess 1.66x, backgammon 1.41x, Paco Ŝako
# 1.33x, gomoku 1.05x the simulations/s. The graph search keeps 1: its descent steps the env
# at every level, and 4 levels a trip made it 0.89-0.95x as fast.
ACCELERATOR_UNROLL = 4


def default_unroll(unroll: Optional[int], accelerator: int = ACCELERATOR_UNROLL) -> int:
    """`unroll` as given, or the backend's default when None: 1 on CPU (a trip is free there,
    an extra step is not), `accelerator` elsewhere. Read when the search is traced."""
    if unroll is not None:
        return int(unroll)
    return 1 if jax.default_backend() == "cpu" else accelerator


def batch_while(cond: Callable[[C], jax.Array], body: Callable[[C], C], init: C,
                unroll: int = 1) -> tuple[C, jax.Array]:
    """`lax.while_loop(cond, body, init)` taking `unroll` steps per trip: (carry, trips int32[]).

    `body` must leave a carry for which `cond` is False unchanged in every field the caller
    reads (the walks mask finished games), so that the steps of the last trip past the end
    change nothing. With `unroll == 1` this is exactly `lax.while_loop` plus the count."""
    if unroll < 1:
        raise ValueError(f"unroll must be >= 1, got {unroll}")

    def trip(c):
        carry, trips = c
        for _ in range(unroll):
            carry = body(carry)
        return carry, trips + 1

    return jax.lax.while_loop(lambda c: cond(c[0]), trip, (init, jnp.zeros((), jnp.int32)))
