"""Material adjudication of chess self-play games cut by the ply cap (docs/chess.md, "Capped
games").

A game cut by `max_plies` is a draw by the env's rules, and so it stays in evaluation. In
self-play, `TrainConfig.truncated_games = MaterialAdjudication(margin)` scores such a game for
the training targets only: a side ahead by at least `margin` pawns of material (pawn 1, knight
and bishop 3, rook 5, queen 9) at the cap wins it, otherwise it stays a draw. The spec plays
512 plies and learns from results alone (docs/chess.md, "Training settings and where they come from"); on a 2-core machine games
are capped at 100 plies and few end in mate, so the value head sees almost only draws and
learns nothing about material (docs/learning.md, "Chess `tiny` against random and the
material-greedy player"). Adjudication is the usual remedy of engine matches (a lost position
is scored before mate), here with the crudest evaluation there is.

`MaterialScore(scale)` scores a cut game by degree instead: tanh(lead / scale) to White and the
negation to Black, so a 1-pawn lead is a small edge and a queen up is nearly a win (the WDL
loss reads such a return as a soft target, `outcome_to_wdl`). The chess `small` preset scores
its self-play games, cut at 40 plies, with `MaterialScore(3.0)`; measured in docs/learning.md
("Chess: what wins against random at this budget", "Chess, `small` preset").
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from envs.chess.material import material


@dataclasses.dataclass(frozen=True)
class MaterialAdjudication:
    """Extra rewards for self-play games cut by the cap: +1 / -1 to the side ahead / behind by at
    least `margin` pawns of material, nothing when closer (the draw stands)."""

    margin: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.margin, int) or self.margin < 1:
            raise ValueError(f"MaterialAdjudication margin must be an int >= 1 (pawns), got "
                             f"{self.margin!r}")

    def rewards(self, env, states) -> jax.Array:
        """float32[B, 2] in seat order (seat = colour: White 0, Black 1) for a batch of chess
        states; the collector adds them to games that were truncated, not terminated."""
        del env
        balance = jax.vmap(material)(states.board)  # int32[B, 2] White, Black
        lead = balance[:, 0] - balance[:, 1]
        white = jnp.where(lead >= self.margin, 1.0, jnp.where(lead <= -self.margin, -1.0, 0.0))
        return jnp.stack([white, -white], axis=-1).astype(jnp.float32)


@dataclasses.dataclass(frozen=True)
class MaterialScore:
    """Extra rewards for self-play games cut by the cap, graded: tanh(lead / `scale`) to White,
    its negation to Black (lead = White's material minus Black's, in pawns)."""

    scale: float = 3.0

    def __post_init__(self) -> None:
        if not isinstance(self.scale, (int, float)) or not self.scale > 0:
            raise ValueError(f"MaterialScore scale must be a number > 0 (pawns), got "
                             f"{self.scale!r}")

    def rewards(self, env, states) -> jax.Array:
        """float32[B, 2] in seat order (White 0, Black 1), as `MaterialAdjudication.rewards`."""
        del env
        balance = jax.vmap(material)(states.board)  # int32[B, 2] White, Black
        white = jnp.tanh((balance[:, 0] - balance[:, 1]).astype(jnp.float32) / self.scale)
        return jnp.stack([white, -white], axis=-1)
