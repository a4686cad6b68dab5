"""What a complete-move player maximises in a match: match winning chances instead of points.

    from equity import MatchObjective
    AfterstatePlayerConfig(objective=MatchObjective((2, 4, 7)))   # 2-4 in a 7-point match

`turbozero.search.afterstate` values states for the player to move there and negates the
value for the other player, so the objective gives `2 * MWC - 1` (in [-1, 1]): the other
player's MWC is one minus this one's, so the negation is exact. The score is the root mover's;
at a state where the other player is to move it is read the other way round.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from equity.met import match_winning_chance, outcome_match_winning_chances
from equity.value import OUTCOME_POINTS


@dataclasses.dataclass(frozen=True)
class MatchObjective:
    """Cubeless match winning chances at `score = (mover's score, opponent's score, length)`
    (checked by equity's MET functions: `ValueError` for a score that is not a match)."""

    score: tuple

    def __post_init__(self) -> None:
        if not isinstance(self.score, (tuple, list)) or len(self.score) != 3:
            raise ValueError(f"score must be (my score, opponent's score, match length), got "
                             f"{self.score!r}")
        object.__setattr__(self, "score", tuple(int(x) for x in self.score))
        outcome_match_winning_chances(self.score)  # ValueError for an impossible score

    def _score_for(self, is_root_mover: jax.Array):
        my, opp, length = self.score
        return (jnp.where(is_root_mover, my, opp), jnp.where(is_root_mover, opp, my), length)

    def values(self, value_out: jax.Array, is_root_mover: jax.Array) -> jax.Array:
        """float32[...]: 2 MWC - 1 for the player to move, from the 4-way logits [..., 4]."""
        mwc = match_winning_chance(jax.nn.sigmoid(value_out), self._score_for(is_root_mover))
        return 2.0 * mwc - 1.0

    def terminal(self, points: jax.Array, is_root_mover: jax.Array) -> jax.Array:
        """float32[...]: 2 MWC - 1 after a finished game scoring `points` (±1..3) for the
        player the value is for."""
        mwc = outcome_match_winning_chances(self._score_for(is_root_mover))  # [..., 6]
        idx = jnp.argmax(jnp.asarray(points)[..., None] == jnp.asarray(OUTCOME_POINTS), axis=-1)
        return 2.0 * jnp.take_along_axis(mwc, idx[..., None], axis=-1)[..., 0] - 1.0


__all__ = ["MatchObjective"]
