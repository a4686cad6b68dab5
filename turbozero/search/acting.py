"""Acting on a search's result: which move is played, given the root's visit weights.

The one definition (docs/search.md, "Formulas, once") of

* `random_argmax` — the highest score among the valid slots, exact ties drawn uniformly at
  random. With few simulations ties are the rule (8 simulations over ~20 Paco Sako moves tied
  in 440 of 640 positions), and always taking the lowest action id biased self-play and
  evaluation (issue 18; docs/benchmarks.md, "Paco Ŝako on the kernel").
* `act` — a move drawn with probability `w ** (1 / tau)` over the valid slots of positive
  weight, or at `tau = 0` the `random_argmax` of the weights.
* `TemperatureSchedule` — AlphaZero's self-play acting (docs/training.md): `tau` for a game's
  first T moves, then `tau = 0`; built on `act`.

The tree kernel (`kernel._act`), the mctx family (PUCT roots), the graph search and the
training collector act through these; the C++ self-play draws the same distribution with its
own generator (`cpp/search.hpp`, `choose_child`).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp

from turbozero.validation import check_int, check_real

# the smallest temperature sampled from: below it `log(w) / tau` overflows float32
_MIN_TEMPERATURE = 1e-6


def random_argmax(key: jax.Array, score: jax.Array, valid: jax.Array) -> jax.Array:
    """int32[...]: a slot of highest `score` (float32[..., K]) among the `valid` ones
    (bool[..., K]), exact ties drawn uniformly at random; where no slot is valid, slot 0."""
    best = jnp.max(jnp.where(valid, score, -jnp.inf), axis=-1, keepdims=True)
    tied = valid & (score == best)
    pick = jax.random.categorical(key, jnp.where(tied, 0.0, -jnp.inf), axis=-1)
    first = jnp.argmax(jnp.where(valid, score, -jnp.inf), axis=-1)
    return jnp.where(jnp.any(tied, axis=-1), pick, first).astype(jnp.int32)


def act(key: jax.Array, weights: jax.Array, valid: jax.Array, temperature) -> jax.Array:
    """int32[...]: the move played from the root weights (visit counts or their distribution).

    weights: float32[..., K] >= 0; valid: bool[..., K] the legal slots. temperature: a float or
    an array that broadcasts against the leading axes `weights.shape[:-1]` (one tau per row,
    leading-axis aligned: [B] for weights [B, P, K] is fine). tau > 0: a slot drawn with
    probability `w ** (1 / tau)` over the valid slots of positive weight; tau = 0: the
    `random_argmax` of the weights over the valid slots (the most visited, ties at random;
    all valid slots tie when none has weight).

    Keys: the draw at tau > 0 uses `key`, the tie-break `fold_in(key, 1)`, so a static 0 and
    a traced 0 play the same move."""
    greedy = random_argmax(jax.random.fold_in(key, 1), weights, valid)
    if isinstance(temperature, (int, float)) and temperature == 0:
        return greedy
    t = jnp.asarray(temperature, jnp.float32)
    t = t.reshape(t.shape + (1,) * (greedy.ndim - t.ndim))  # leading axes of the rows
    positive = valid & (weights > 0)
    logits = jnp.where(positive, jnp.log(jnp.maximum(weights, 1e-30))
                       / jnp.maximum(t, _MIN_TEMPERATURE)[..., None], -jnp.inf)
    sampled = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
    return jnp.where(t > 0, sampled, greedy)


@dataclasses.dataclass(frozen=True)
class TemperatureSchedule:
    """Acting temperature over a game: `temperature` for the first `moves` steps of each game
    (the env's `step_count`: a game whose player moves several times in a row counts each),
    then argmax. `moves=None` samples at `temperature` for the whole game; `temperature=0` is
    argmax throughout. The C++ self-play follows the same schedule (its move number since the
    game's start; `turbozero.training.cpu_alphazero`).
    """

    temperature: float = 1.0
    moves: Optional[int] = 30

    def __post_init__(self) -> None:
        check_real("temperature_schedule.temperature", self.temperature, minimum=0)
        check_int("temperature_schedule.moves", self.moves, minimum=0, optional=True)

    def temperatures(self, step_count: jax.Array) -> jax.Array:
        """float32 tau per game (the shape of `step_count`): `temperature` before `moves`, 0
        after."""
        tau = jnp.full(step_count.shape, self.temperature, jnp.float32)
        if self.moves is None:
            return tau
        return jnp.where(step_count < self.moves, tau, 0.0)

    def act(self, key: jax.Array, policy: jax.Array, step_count: jax.Array) -> jax.Array:
        """Actions int32[B] (or [B, P] for a [B, P, A] policy) from visit distributions:
        `act(key, policy, policy > 0, tau)` with each game's tau.

        policy: float32[B, A] or [B, P, A], zero on illegal actions. step_count: int32[B].
        """
        if self.temperature == 0 or self.moves == 0:
            return act(key, policy, policy > 0, 0.0)
        return act(key, policy, policy > 0, self.temperatures(step_count))


# acting by the search's recommendation alone: the most visited move from the first move
ARGMAX = TemperatureSchedule(temperature=0.0, moves=0)
