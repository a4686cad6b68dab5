"""The 4-way conditional value format: training targets, outcome probabilities, money equity.

Format (docs/equity.md), last axis of size 4, each entry a sigmoid output:

    [win, gam_win_cond, gam_loss_cond, bg_rate]
    win            P(the player to move wins)
    gam_win_cond   P(gammon or backgammon | win)
    gam_loss_cond  P(gammon or backgammon | loss)
    bg_rate        P(backgammon | gammon), shared by wins and losses

The six game outcomes, in the order used throughout the package (points from the point of view
of the player the value belongs to): `OUTCOME_POINTS = (+1, +2, +3, -1, -2, -3)`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from equity import _checks

OUTCOME_POINTS: tuple[int, ...] = (1, 2, 3, -1, -2, -3)
_VALID_REWARDS = np.array(OUTCOME_POINTS)


def _float_dtype(x: jax.Array) -> jnp.dtype:
    return x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.float32


def reward_to_value_targets(reward: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Game reward (any shape, values in {±1, ±2, ±3}) to 4-way targets and masks.

    Returns `(targets, masks)`, each of shape `reward.shape + (4,)`:
    targets `[won, gammon & won, gammon & lost, backgammon]` and masks
    `[1, won, lost, gammon]` (a conditional output is trained only where its condition holds).

    Concrete rewards outside {±1, ±2, ±3} raise `ValueError`. Traced rewards cannot be checked:
    they are read by sign and size as in the spec (`> 0` a win, `|r| >= 2` a gammon,
    `|r| >= 3` a backgammon), so 0 counts as a single loss and 5 as a backgammon win.
    """
    values = _checks.integer_values("reward", reward)
    if values is not None:
        bad = ~np.isin(values, _VALID_REWARDS)
        if np.any(bad):
            raise ValueError(f"reward must be one of {OUTCOME_POINTS}, got {values[bad][:4]}")
    reward = jnp.asarray(reward)
    dtype = _float_dtype(reward)
    did_win = reward > 0
    was_gammon = jnp.abs(reward) >= 2
    was_bg = jnp.abs(reward) >= 3

    targets = jnp.stack(
        [did_win, was_gammon & did_win, was_gammon & ~did_win, was_bg], axis=-1).astype(dtype)
    masks = jnp.stack(
        [jnp.ones_like(did_win), did_win, ~did_win, was_gammon], axis=-1).astype(dtype)
    return targets, masks


def outcome_probabilities(value_probs: jax.Array) -> jax.Array:
    """4-way outputs `(..., 4)` to the probabilities of the six outcomes, `(..., 6)`.

    Order `OUTCOME_POINTS = (+1, +2, +3, -1, -2, -3)`: single win, gammon win (not backgammon),
    backgammon win, then the same three losses. For inputs in [0, 1] they are non-negative and
    sum to 1.
    """
    _checks.last_axis_4("value_probs", value_probs)
    _checks.probabilities("value_probs", value_probs)
    value_probs = jnp.asarray(value_probs)
    win = value_probs[..., 0]
    gam_win_cond = value_probs[..., 1]
    gam_loss_cond = value_probs[..., 2]
    bg_rate = value_probs[..., 3]
    loss = 1.0 - win
    gam_win = win * gam_win_cond
    gam_loss = loss * gam_loss_cond
    bg_win = gam_win * bg_rate
    bg_loss = gam_loss * bg_rate
    # win - gam_win is written as win * (1 - cond) so that it cannot go below 0 by rounding.
    return jnp.stack([
        win * (1.0 - gam_win_cond), gam_win * (1.0 - bg_rate), bg_win,
        loss * (1.0 - gam_loss_cond), gam_loss * (1.0 - bg_rate), bg_loss,
    ], axis=-1)


def money_equity(value_probs: jax.Array) -> jax.Array:
    """Cubeless money equity in points, in [-3, 3]: sum over outcomes of P(outcome) x points."""
    probs = outcome_probabilities(value_probs)
    points = jnp.asarray(OUTCOME_POINTS, dtype=probs.dtype)
    return jnp.sum(probs * points, axis=-1)


def equity_to_normalized(equity: jax.Array) -> jax.Array:
    """Money equity in [-3, 3] to [0, 1]: `(equity + 3) / 6` (no clip)."""
    return (jnp.asarray(equity) + 3.0) / 6.0


def normalized_to_equity(normalized: jax.Array) -> jax.Array:
    """Inverse of `equity_to_normalized`: `normalized * 6 - 3` (no clip)."""
    return jnp.asarray(normalized) * 6.0 - 3.0


def value_outputs_to_gnubg(value_probs: jax.Array) -> jax.Array:
    """4-way outputs to gnubg's five cumulative outputs `(..., 5)`.

    gnubg order: `[win, win_gammon, win_backgammon, lose_gammon, lose_backgammon]`, where
    `win_gammon` includes backgammons (as `gnubg.evaluate` returns them).
    """
    _checks.last_axis_4("value_probs", value_probs)
    _checks.probabilities("value_probs", value_probs)
    v = jnp.asarray(value_probs)
    win, gwc, glc, bg = v[..., 0], v[..., 1], v[..., 2], v[..., 3]
    loss = 1.0 - win
    return jnp.stack([win, win * gwc, win * gwc * bg, loss * glc, loss * glc * bg], axis=-1)


def gnubg_to_value_outputs(gnubg_probs: jax.Array) -> jax.Array:
    """gnubg's five cumulative outputs `(..., 5)` to the 4-way format `(..., 4)`.

    Exact when gnubg's backgammon rates for wins and losses are equal; otherwise `bg_rate` is
    their pooled rate `(win_bg + lose_bg) / (win_gammon + lose_gammon)`, because the 4-way head
    shares one rate. A condition of probability 0 gets the conditional value 0.
    """
    shape = np.shape(gnubg_probs)
    if len(shape) == 0 or shape[-1] != 5:
        raise ValueError(f"gnubg_probs must have shape (..., 5), got shape {tuple(shape)}")
    _checks.probabilities("gnubg_probs", gnubg_probs)
    g = jnp.asarray(gnubg_probs)
    win, wg, wbg, lg, lbg = (g[..., i] for i in range(5))
    loss = 1.0 - win

    def ratio(num, den):
        # Double `where` keeps the gradient finite where the denominator is 0.
        safe = jnp.where(den > 0, den, 1.0)
        return jnp.where(den > 0, num / safe, 0.0)

    return jnp.stack([win, ratio(wg, win), ratio(lg, loss), ratio(wbg + lbg, wg + lg)], axis=-1)
