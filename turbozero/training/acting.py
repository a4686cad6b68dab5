"""Self-play acting: which move a game plays, given the search's policy target.

As in AlphaZero self-play (docs/training.md): for a game's first T moves the move is sampled from the visit
distribution at temperature tau, afterwards the most visited move is played. The policy target
written to replay is the visit distribution itself in both phases; only acting changes.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp

from turbozero.validation import check_int, check_real


@dataclasses.dataclass(frozen=True)
class TemperatureSchedule:
    """Acting temperature over a game: `temperature` for the first `moves` steps of each game
    (the env's `step_count`: a game whose player moves several times in a row counts each), then argmax. `moves=None`
    samples at `temperature` for the whole game; `temperature=0` is argmax throughout.
    """

    temperature: float = 1.0
    moves: Optional[int] = 30

    def __post_init__(self) -> None:
        check_real("temperature_schedule.temperature", self.temperature, minimum=0)
        check_int("temperature_schedule.moves", self.moves, minimum=0, optional=True)

    def act(self, key: jax.Array, policy: jax.Array, step_count: jax.Array) -> jax.Array:
        """Actions int32[B] (or [B, P] for a [B, P, A] policy) from visit distributions.

        policy: float32[B, A] or [B, P, A], zero on illegal actions. step_count: int32[B].
        Ties of the argmax are broken at random: with few simulations several moves often share
        the top count, and always taking the lowest index would bias self-play.
        """
        k_sample, k_tie = jax.random.split(key)
        legal = policy > 0
        best = legal & (policy >= policy.max(-1, keepdims=True))
        greedy = jax.random.categorical(k_tie, jnp.where(best, 0.0, -jnp.inf), axis=-1)
        if self.temperature == 0 or self.moves == 0:
            return greedy.astype(jnp.int32)
        logits = jnp.where(legal, jnp.log(jnp.where(legal, policy, 1.0)) / self.temperature,
                           -jnp.inf)
        sampled = jax.random.categorical(k_sample, logits, axis=-1)
        if self.moves is None:
            return sampled.astype(jnp.int32)
        early = (step_count < self.moves).reshape(step_count.shape + (1,) * (sampled.ndim - 1))
        return jnp.where(early, sampled, greedy).astype(jnp.int32)
