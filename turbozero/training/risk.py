"""Self-play risk (docs/training.md, "Risk"): the entropic-risk
beta of each seat of each self-play game.

* `RiskSchedule` — beta over training: `start` for the first `warmup_iterations`, then a
  straight line to `final` over `ramp_iterations`, then `final`.
* `SelfPlayRisk` — per game: every seat at the scheduled beta, or, with `opponent_range`, one
  seat drawn at random at the scheduled beta and every other seat at a beta drawn uniformly
  from the range (seats assigned at random per game, so that no seat is always the
  risk-taker).

Risk is a search-time knob only: targets stay the game's outcome, so one network can
be searched at any beta afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class RiskSchedule:
    start: float = 0.0
    final: Optional[float] = None  # None: stays at `start`
    warmup_iterations: int = 0
    ramp_iterations: int = 0

    def __post_init__(self) -> None:
        if self.warmup_iterations < 0:
            raise ValueError(f"risk schedule: warmup_iterations must be >= 0, got "
                             f"{self.warmup_iterations}")
        if self.ramp_iterations < 0:
            raise ValueError(f"risk schedule: ramp_iterations must be >= 0, got "
                             f"{self.ramp_iterations}")

    def beta(self, iteration) -> jax.Array:
        """float32[]: beta at `iteration` (iterations completed; traced or concrete)."""
        final = self.start if self.final is None else self.final
        it = jnp.asarray(iteration, jnp.float32)
        frac = (it - self.warmup_iterations) / max(self.ramp_iterations, 1)
        frac = jnp.clip(frac, 0.0, 1.0)
        if self.ramp_iterations == 0:  # a step from start to final after the warm-up
            frac = (it >= self.warmup_iterations).astype(jnp.float32)
        return (self.start + (final - self.start) * frac).astype(jnp.float32)


@dataclasses.dataclass(frozen=True)
class SelfPlayRisk:
    """schedule: the beta of the risk-taking seat; opponent_range: (min, max) of the other
    seats' betas, drawn per game (None: every seat at the scheduled beta)."""

    schedule: RiskSchedule = RiskSchedule()
    opponent_range: Optional[tuple[float, float]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.schedule, RiskSchedule):
            raise ValueError(f"risk: schedule must be a RiskSchedule, got {self.schedule!r}")
        r = self.opponent_range
        if r is not None and (len(r) != 2 or not r[0] <= r[1]):
            raise ValueError(f"risk: opponent_range must be (min, max) with min <= max, got {r!r}")

    def draw(self, key: jax.Array, iteration, num_games: int, num_players: int) -> jax.Array:
        """float32[num_games, num_players]: each seat's beta in new games."""
        beta = self.schedule.beta(iteration)
        if self.opponent_range is None:
            return jnp.full((num_games, num_players), beta, jnp.float32)
        k_seat, k_beta = jax.random.split(key)
        taker = jax.random.randint(k_seat, (num_games,), 0, num_players)
        low, high = self.opponent_range
        others = jax.random.uniform(k_beta, (num_games, num_players), jnp.float32, low, high)
        seats = jnp.arange(num_players)[None]
        return jnp.where(seats == taker[:, None], beta, others).astype(jnp.float32)
