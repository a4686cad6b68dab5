"""How training batches are drawn from the replay (`TrainConfig.replay_sampling`).

`UniformSampling()` (the default): every position whose game has ended is equally likely, drawn
with replacement. `OutcomeStratified(win, draw, loss)`: stratified buffers that route samples
by game outcome for balanced sampling (a design note's section 8.1; docs/training.md): each
position falls in one stratum by the result of its game for the player to move there (the
return to the end, read as the design's WDL target reads it: above 0.5 a win, below -0.5 a loss,
otherwise a draw); a draw picks a stratum with probability proportional to its weight among the
strata that hold a position, then a position of it uniformly. Equal weights make decisive and
drawn positions equally common in a batch whatever share of the games are drawn (in games
whose self-play mostly draws, most of them).

A sampling is static (a field of the buffer that is no array): `slots(buffer, key, batch_size)`
returns `(env_index int32[B], column int32[B])` of the buffer's `[E, T]` slots. It reads only
`has_target`, `returns` and `current_player`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from turbozero.validation import check_real

# a WDL target from a scalar result (the design notes' §8.2): > 0.5 a win,
# < -0.5 a loss, between them a draw
WIN_ABOVE = 0.5
STRATA = ("win", "draw", "loss")


@dataclasses.dataclass(frozen=True)
class UniformSampling:
    """Uniform with replacement among the slots that have a target."""

    def slots(self, buffer: Any, key: jax.Array, batch_size: int
              ) -> tuple[jax.Array, jax.Array]:
        # With no such slot yet, the sample is uniform over all slots (the caller should not
        # train before `num_samples(buffer) > 0`; the trainer checks this).
        flat_ok = buffer.has_target.reshape(-1)
        logits = jnp.where(flat_ok, 0.0, -jnp.inf)
        logits = jnp.where(jnp.any(flat_ok), logits, jnp.zeros_like(logits))
        idx = jax.random.categorical(key, logits, shape=(batch_size,))
        capacity = buffer.has_target.shape[1]
        return (idx // capacity).astype(jnp.int32), (idx % capacity).astype(jnp.int32)


def outcome_strata(buffer: Any) -> jax.Array:
    """int32[E, T]: 0 win, 1 draw, 2 loss, for the player to move at each slot."""
    mover = buffer.current_player[..., None].astype(jnp.int32)
    result = jnp.take_along_axis(buffer.returns, mover, axis=-1)[..., 0]
    return jnp.where(result > WIN_ABOVE, 0, jnp.where(result < -WIN_ABOVE, 2, 1)).astype(
        jnp.int32)


@dataclasses.dataclass(frozen=True)
class OutcomeStratified:
    """Balanced by the game's result for the mover (module docstring); weights per stratum."""

    win: float = 1.0
    draw: float = 1.0
    loss: float = 1.0

    def __post_init__(self):
        for name in STRATA:  # the library's one rule (turbozero/validation.py)
            check_real(f"OutcomeStratified.{name}", getattr(self, name), minimum=0)
        if self.win + self.draw + self.loss <= 0:
            raise ValueError("OutcomeStratified needs a weight above 0 (win, draw or loss)")

    def slots(self, buffer: Any, key: jax.Array, batch_size: int
              ) -> tuple[jax.Array, jax.Array]:
        ok = buffer.has_target.reshape(-1)
        stratum = outcome_strata(buffer).reshape(-1)
        member = ok[None, :] & (stratum[None, :] == jnp.arange(3)[:, None])  # [3, N]
        # inverse CDF within a stratum: O(N + B log N), where a categorical over the slots
        # would draw B x N Gumbel numbers
        ranks = jnp.cumsum(member, axis=1, dtype=jnp.int32)  # [3, N]
        counts = ranks[:, -1]
        weights = jnp.asarray([self.win, self.draw, self.loss], jnp.float32)
        weights = jnp.where(counts > 0, weights, 0.0)
        # no finished position (or none in a weighted stratum): uniform over every slot, as
        # UniformSampling does before the first game ends
        fallback = jnp.sum(weights) <= 0
        k_stratum, k_rank = jax.random.split(key)
        chosen = jax.random.categorical(
            k_stratum, jnp.where(weights > 0, jnp.log(jnp.maximum(weights, 1e-30)), -jnp.inf),
            shape=(batch_size,))
        chosen = jnp.where(fallback, 0, chosen)
        size = jnp.where(fallback, ok.shape[0], counts[chosen])
        rank = jnp.minimum(
            jnp.floor(jax.random.uniform(k_rank, (batch_size,)) * size).astype(jnp.int32),
            size - 1)
        found = jax.vmap(lambda s, r: jnp.searchsorted(ranks[s], r, side="right"))(chosen, rank)
        idx = jnp.where(fallback, rank, found).astype(jnp.int32)
        capacity = buffer.has_target.shape[1]
        return idx // capacity, idx % capacity


def check_sampling(sampling: Any) -> None:
    if not callable(getattr(sampling, "slots", None)):
        raise ValueError("replay_sampling must be UniformSampling() or OutcomeStratified(...) "
                         "(turbozero.training.replay_sampling; an object with "
                         f"slots(buffer, key, batch_size)), got {sampling!r}")


def with_sampling(buffer: Any, sampling: Any) -> Any:
    """`buffer` drawing its batches with `sampling`. A replay of another kind (afterstate TD's
    own replay) takes the default only: anything else is one ValueError naming the setting."""
    if hasattr(buffer, "sampling"):
        return buffer.replace(sampling=sampling)
    if sampling != UniformSampling():
        raise ValueError(f"replay_sampling={sampling!r}: this algorithm's replay "
                         f"({type(buffer).__name__}) samples its own way; leave "
                         "replay_sampling at UniformSampling()")
    return buffer
