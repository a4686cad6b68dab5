"""Match play: the match equity table (MET), cubeless match winning chance, eq <-> MWC.

The table is Kazaross-XG2 (25 points), copied from the XML file that ships with gnubg into
`equity/data/kazaross_xg2.json` (regenerate with `python -m equity.data.build_met`).

Conventions
-----------
* A score is `(my_score, opp_score, match_length)`; "away" is `match_length - score`.
* `pre_crawford[i, j]`: my match winning chance (MWC) when I am `i + 1` away and the opponent
  `j + 1` away. Where one side is 1 away the entry is the value of the Crawford game.
* `post_crawford[j]`: the MWC of the trailer, `j + 1` away, against a leader 1 away in a
  post-Crawford game. (gnubg keeps one such list per player; Kazaross-XG2 gives one for both.)
* After a game played at a score where someone was already 1 away (the Crawford game or a
  post-Crawford game), every later game is post-Crawford; after a game where nobody was 1 away,
  a side that reaches 1 away plays the Crawford game next. So the post-game table follows from
  the pre-game score alone, as in gnubg's `getME`, and no Crawford flag is needed.
* Reaching 0 away (or less) wins the match: MWC 1 (0 for the other side).

Traced inputs (under `jit`/`vmap`) cannot be checked. Then: `match_length` is clipped to
[1, 25], each score to [0, match_length - 1], aways in `met_lookup` to at most 25 (at most 0
means that side has won), and `cube_value` is used as given.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from equity import _checks
from equity.value import OUTCOME_POINTS, money_equity, outcome_probabilities

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kazaross_xg2.json")


class MatchEquityTable(NamedTuple):
    """A match equity table; see the module docstring for the layout."""

    name: str
    source: str
    max_length: int
    pre_crawford: np.ndarray  # float64 [max_length, max_length]
    post_crawford: np.ndarray  # float64 [max_length]


@functools.lru_cache(maxsize=1)
def _load() -> MatchEquityTable:
    with open(_DATA) as f:
        raw = json.load(f)
    n = int(raw["length"])
    pre = np.asarray(raw["pre_crawford"], dtype=np.float64)
    post = np.asarray(raw["post_crawford"], dtype=np.float64)
    if pre.shape != (n, n) or post.shape != (n,):
        raise ValueError(f"{_DATA}: tables of shape {pre.shape}, {post.shape}, length {n}")
    pre.setflags(write=False)
    post.setflags(write=False)
    return MatchEquityTable(raw["name"], raw["source"], n, pre, post)


MAX_MATCH_LENGTH: int = 25  # checked against the data file in `match_equity_table`


def match_equity_table(max_length: int = MAX_MATCH_LENGTH) -> MatchEquityTable:
    """The Kazaross-XG2 table cut to `max_length` points (copies, safe to modify)."""
    table = _load()
    n = _checks.integer_values("max_length", max_length)
    if n is None or n.shape != () or not 1 <= int(n) <= table.max_length:
        raise ValueError(f"max_length must be an int in [1, {table.max_length}], "
                         f"got {max_length!r}")
    n = int(n)
    return MatchEquityTable(table.name, table.source, n,
                            table.pre_crawford[:n, :n].copy(), table.post_crawford[:n].copy())


def _mwc_at(my_away: jax.Array, opp_away: jax.Array, post_crawford: jax.Array,
            dtype: jnp.dtype) -> jax.Array:
    """MWC at an away score (arrays, broadcast together), 1 or 0 when a side has won."""
    table = _load()
    n = table.max_length
    pre = jnp.asarray(table.pre_crawford, dtype=dtype)
    post = jnp.asarray(table.post_crawford, dtype=dtype)
    mi = jnp.clip(my_away, 1, n) - 1
    oi = jnp.clip(opp_away, 1, n) - 1
    pre_value = pre[mi, oi]
    # post[0] = 0.5 so 1-away/1-away gives 0.5 on either branch.
    post_value = jnp.where(my_away == 1, 1.0 - post[oi], post[mi])
    someone_one_away = (my_away == 1) | (opp_away == 1)
    value = jnp.where(post_crawford & someone_one_away, post_value, pre_value)
    return jnp.where(my_away <= 0, 1.0, jnp.where(opp_away <= 0, 0.0, value)).astype(dtype)


def met_lookup(my_away: Any, opp_away: Any, post_crawford: Any = False) -> jax.Array:
    """My match winning chance before a game at `my_away`-away, `opp_away`-away.

    `post_crawford=True` when one side is 1 away and the Crawford game has already been played;
    `False` means the game at this score is the Crawford game (or nobody is 1 away). An away of
    0 means that side has already won (1.0 or 0.0). Arguments may be ints or integer arrays
    (broadcast together), traced ones included. Concrete aways outside [0, 25], both 0, or
    `post_crawford=True` with nobody 1 away raise `ValueError`.
    """
    n = _load().max_length
    mine = _checks.integer_values("my_away", my_away)
    theirs = _checks.integer_values("opp_away", opp_away)
    for name, v in (("my_away", mine), ("opp_away", theirs)):
        if v is not None and np.any((v < 0) | (v > n)):
            raise ValueError(f"{name} must be in [0, {n}], got {v}")
    if mine is not None and theirs is not None and np.any((mine == 0) & (theirs == 0)):
        raise ValueError(f"my_away and opp_away cannot both be 0, got {mine}, {theirs}")
    pc = _checks.concrete(post_crawford)
    if pc is not None and mine is not None and theirs is not None:
        if np.any(pc.astype(bool) & (mine != 1) & (theirs != 1)):
            raise ValueError(f"post_crawford=True needs one side 1 away, got my_away={mine}, "
                             f"opp_away={theirs}")
    dtype = jnp.float32
    return _mwc_at(jnp.asarray(my_away), jnp.asarray(opp_away),
                   jnp.asarray(post_crawford, dtype=bool), dtype)


def _parse_score(match_score: Sequence[Any]) -> tuple[jax.Array, jax.Array]:
    """Check a `(my_score, opp_score, match_length)` triple; return (my_away, opp_away)."""
    if isinstance(match_score, (str, bytes)) or not hasattr(match_score, "__len__") \
            or len(match_score) != 3:
        raise ValueError("match_score must be (my_score, opp_score, match_length), "
                         f"got {match_score!r}")
    n = _load().max_length
    my_score, opp_score, length = match_score
    mine = _checks.integer_values("my_score", my_score)
    theirs = _checks.integer_values("opp_score", opp_score)
    ln = _checks.integer_values("match_length", length)
    if ln is not None and np.any((ln < 1) | (ln > n)):
        raise ValueError(f"match_length must be in [1, {n}] (the table's size), got {ln}")
    for name, v in (("my_score", mine), ("opp_score", theirs)):
        if v is not None and np.any(v < 0):
            raise ValueError(f"{name} must be >= 0, got {v}")
        if v is not None and ln is not None and np.any(v >= ln):
            raise ValueError(f"{name} must be below match_length {ln} (the match is over at "
                             f"match_length), got {v}")
    length = jnp.clip(jnp.asarray(length, dtype=jnp.int32), 1, n)
    my_score = jnp.clip(jnp.asarray(my_score, dtype=jnp.int32), 0, length - 1)
    opp_score = jnp.clip(jnp.asarray(opp_score, dtype=jnp.int32), 0, length - 1)
    return length - my_score, length - opp_score


def _cube(cube_value: Any) -> jax.Array:
    v = _checks.integer_values("cube_value", cube_value)
    if v is not None and np.any(v < 1):
        raise ValueError(f"cube_value must be a positive integer, got {v}")
    return jnp.asarray(cube_value, dtype=jnp.int32)


def outcome_match_winning_chances(match_score: Sequence[Any], cube_value: Any = 1,
                                  dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """MWC after each of the six outcomes `(+1, +2, +3, -1, -2, -3) x cube_value`, `(..., 6)`.

    `...` is the broadcast shape of the score entries and `cube_value`. This is the vector a
    search can compute once per score and dot with `outcome_probabilities` at every node.
    """
    my_away, opp_away = _parse_score(match_score)
    cube = _cube(cube_value)
    shape = jnp.broadcast_shapes(my_away.shape, opp_away.shape, cube.shape)
    my_away, opp_away, cube = (jnp.broadcast_to(x, shape)[..., None]
                               for x in (my_away, opp_away, cube))
    post_next = (my_away == 1) | (opp_away == 1)
    points = jnp.asarray(OUTCOME_POINTS, dtype=jnp.int32) * cube
    won = points > 0
    my_after = jnp.where(won, my_away - points, my_away)
    opp_after = jnp.where(won, opp_away, opp_away + points)
    return _mwc_at(my_after, opp_after, post_next, dtype)


def match_winning_chance(value_probs: jax.Array, match_score: Sequence[Any],
                         cube_value: Any = 1) -> jax.Array:
    """Match winning chance after this game, from 4-way outputs `(..., 4)`.

    `sum_k P(outcome k) * MET(score after outcome k)`; cubeless for `cube_value=1` (the value
    `value_outputs_to_equity(value_probs, match_score)` returns), otherwise every outcome is worth
    `cube_value` times its points (a dead cube of that value, as gnubg's cubeless MWC with a
    cube). Result in [0, 1] for probabilities in [0, 1].
    """
    probs = outcome_probabilities(value_probs)
    mwc = outcome_match_winning_chances(match_score, cube_value, probs.dtype)
    return jnp.sum(probs * mwc, axis=-1)


# here, not in value.py, which the MET needs: value.py importing it back was a circle
def value_outputs_to_equity(value_probs: jax.Array, match_score=None) -> jax.Array:
    """4-way outputs `(..., 4)` to equity, shape `(...)`.

    `match_score=None`: cubeless money equity in points, in [-3, 3].
    `match_score=(my_score, opp_score, match_length)`: cubeless match winning chance in [0, 1]
    after this game, sum over the six outcomes of P(outcome) x MET(score after it), see
    `equity.match_winning_chance`. The three entries may be Python ints (checked) or integer
    arrays, also traced ones, broadcastable against the batch shape `value_probs.shape[:-1]`.

    A last axis other than 4 raises `ValueError` (also under `jit`: shapes are static); concrete
    probabilities outside [0, 1] raise `ValueError`; traced ones are used as they are (no clip,
    so gradients stay exact).
    """
    if match_score is None:
        return money_equity(value_probs)
    return match_winning_chance(value_probs, match_score)


def _win_lose_mwc(match_score: Sequence[Any], cube_value: Any,
                  dtype: jnp.dtype) -> tuple[jax.Array, jax.Array]:
    mwc = outcome_match_winning_chances(match_score, cube_value, dtype)
    return mwc[..., 0], mwc[..., 3]


def money_equity_to_mwc(equity: jax.Array, match_score: Sequence[Any],
                        cube_value: Any = 1) -> jax.Array:
    """Equity in units of the cube (+1 = win `cube_value` points) to MWC, as gnubg's `eq2mwc`.

    Linear between the MWC after losing (`equity=-1`) and after winning (`equity=+1`)
    `cube_value` points at this score: `mwc_lose + (mwc_win - mwc_lose) * (equity + 1) / 2`.
    """
    equity = jnp.asarray(equity)
    dtype = _float_dtype(equity)
    win, lose = _win_lose_mwc(match_score, cube_value, dtype)
    return lose + (win - lose) * (equity + 1.0) / 2.0


def mwc_to_money_equity(mwc: jax.Array, match_score: Sequence[Any],
                        cube_value: Any = 1) -> jax.Array:
    """Inverse of `money_equity_to_mwc`, as gnubg's `mwc2eq`:
    `2 * (mwc - mwc_lose) / (mwc_win - mwc_lose) - 1` (winning always beats losing in the
    table, so the denominator is positive)."""
    mwc = jnp.asarray(mwc)
    dtype = _float_dtype(mwc)
    win, lose = _win_lose_mwc(match_score, cube_value, dtype)
    return 2.0 * (mwc - lose) / (win - lose) - 1.0


def _float_dtype(x: jax.Array) -> jnp.dtype:
    return x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.float32
