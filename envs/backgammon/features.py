"""Backgammon's observation encodings, chosen by name (`envs.make("backgammon", features=...)`).

* ``"raw"`` (the default): 203 units, TD-Gammon's board encoding (`raw`).
* ``"gnubg-lite"``: the raw 203 units followed by 15 hand-made ones in the spirit of gnubg's
  inputs (`hand_made`): for each side (the player the observation is for first, then the
  other) pip count, blots, shots at its blots, escapes of its rearmost checker, longest prime,
  home-board points, bear-off progress; then a contact flag. docs/backgammon.md,
  "Observation encodings", lists them unit by unit.

Every function takes the board from the side of the player the observation is for (the layout
of `rules`), so the units say "mine" and "theirs" the same way whoever is to move.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.backgammon import rules

Array = jax.Array

# the six die values, and the 21 rolls as indices into them with their weight out of 36
_DICE = np.arange(1, 7)
_ROLL_A, _ROLL_B = rules.ROLLS[:, 0] - 1, rules.ROLLS[:, 1] - 1
_ROLL_W = np.where(_ROLL_A == _ROLL_B, 1.0, 2.0).astype(np.float32)


def raw(board: Array, remaining: Array, is_chance: Array) -> Array:
    """float32[203]: per point 4 TD-Gammon style units for each side, bars, borne off, the
    dice left and the chance flag (all from the side of `board`)."""
    pts = board[:24]
    mine = jnp.maximum(pts, 0).astype(jnp.float32)
    theirs = jnp.maximum(-pts, 0).astype(jnp.float32)

    def units(n):
        return jnp.stack(
            [n >= 1, n >= 2, n >= 3, jnp.maximum(n - 3.0, 0.0) / 2.0], axis=-1
        ).astype(jnp.float32).reshape(-1)

    extra = jnp.stack(
        [
            board[rules.BAR] / 2.0,
            -board[rules.OPP_BAR] / 2.0,
            board[rules.OFF] / 15.0,
            -board[rules.OPP_OFF] / 15.0,
        ]
    ).astype(jnp.float32)
    return jnp.concatenate(
        [units(mine), units(theirs), extra, remaining.astype(jnp.float32) / 4.0,
         is_chance.astype(jnp.float32)[None]]
    )


def roll_reach(src: Array, target: Array, open_: Array) -> Array:
    """float32: the share of the 36 rolls with which some checker at a `src` position reaches
    a `target` position, moving up the path by one die, by both dice of a roll in either
    order through an `open_` middle point, or by 2-4 steps of a double through `open_` points.

    Positions are along the moving side's path: 0 its bar, 1..24 its points from the far end
    (bool[25] each; moves past 24 bear off and reach nothing). The rule that a checker on the
    bar must enter before others move is not applied.

    The 25 positions are the bits of one int32 per array, so that a path is a few shifts and
    ands: the encoding runs on every afterstate slot, and the first version (an indexed gather
    per roll and step) made a `td` iteration ~12x slower, a second (shifted slices of bool
    arrays) an afterstate listing ~30x."""
    bits = jnp.asarray(1 << np.arange(25), jnp.int32)
    s_, t_, o_ = (jnp.sum(jnp.where(x, bits, 0)) for x in (src, target, open_))
    die = jnp.asarray(_DICE, jnp.int32)
    o1, o2, o3 = o_ >> die, o_ >> (2 * die), o_ >> (3 * die)
    direct = (s_ & (t_ >> die)) != 0  # [6]
    two = (s_ & o1[:, None] & (t_ >> (die[:, None] + die[None, :]))) != 0  # [6 first, 6 then]
    three = (s_ & o1 & o2 & (t_ >> (3 * die))) != 0  # doubles
    four = (s_ & o1 & o2 & o3 & (t_ >> (4 * die))) != 0
    a, b = _ROLL_A, _ROLL_B
    double = (direct[a] | two[a, a] | three[a] | four[a])
    mixed = direct[a] | direct[b] | two[a, b] | two[b, a]
    hit = jnp.where(a == b, double, mixed)
    return jnp.sum(jnp.where(hit, _ROLL_W, 0.0)) / 36.0


def _side(board: Array) -> Array:
    """float32[7]: the units of the side `board` is seen from (its own positive counts) with
    the other side's checkers as obstacles: pip count / 100, blots / 15, shots at its blots,
    escapes of its rearmost checker, longest prime / 6, home-board points / 6, bear-off
    progress."""
    pts = board[:24]
    mine = jnp.maximum(pts, 0)
    theirs = jnp.maximum(-pts, 0)
    bar, opp_bar, off = board[rules.BAR], -board[rules.OPP_BAR], board[rules.OFF]
    idx = jnp.arange(24)
    pips = jnp.sum(mine * (idx + 1)) + 25 * bar
    blot = mine == 1
    made, their_made = mine >= 2, theirs >= 2

    # shots: the other side moves up my indices (its bar enters at index die - 1), path
    # position = index + 1; my made points stop its middle steps, my blots are the targets
    their_src = jnp.concatenate([(opp_bar > 0)[None], theirs > 0])
    my_blots = jnp.concatenate([jnp.zeros(1, jnp.bool_), blot])
    my_open = jnp.concatenate([jnp.ones(1, jnp.bool_), ~made])
    shots = roll_reach(their_src, my_blots, my_open)

    # escapes: my rearmost checker (the bar counts as index 24) passes every made point of
    # theirs among the 12 indices in front of it; path position = 24 - index
    occupied = jnp.concatenate([mine > 0, (bar > 0)[None]])  # index 0..24
    rear = jnp.max(jnp.where(occupied, jnp.arange(25), -1))
    ahead = their_made & (idx < rear) & (idx >= rear - 12)
    block = jnp.min(jnp.where(ahead, idx, 24))  # the furthest of them from the checker
    pos_index = 24 - jnp.arange(25)  # path position p is index 24 - p (p = 0: the bar)
    src = pos_index == rear
    target = (pos_index < block) & (pos_index >= 0)
    open_ = jnp.concatenate([jnp.ones(1, jnp.bool_), ~their_made[::-1]])
    escapes = jnp.where(jnp.any(ahead), roll_reach(src, target & open_, open_), 1.0)
    escapes = jnp.where(rear < 0, 1.0, escapes)  # every checker borne off

    # longest run of consecutive made points: each index's distance from the last unmade one
    last_gap = jax.lax.cummax(jnp.where(made, -1, idx))
    prime = jnp.max(idx - last_gap)
    home_points = jnp.sum(made[:6])
    progress = (off + jnp.sum(mine[:6])) / 15.0
    return jnp.stack([pips / 100.0, jnp.sum(blot) / 15.0, shots, escapes,
                      jnp.minimum(prime, 6) / 6.0, home_points / 6.0,
                      progress]).astype(jnp.float32)


def contact(board: Array) -> Array:
    """bool: some checker of one side still has to pass one of the other's (the mover's
    rearmost, bar = index 24, above the other side's rearmost, its bar = index -1)."""
    mine = jnp.concatenate([board[:24] > 0, (board[rules.BAR] > 0)[None]])
    theirs = jnp.concatenate([(board[rules.OPP_BAR] < 0)[None], board[:24] < 0])
    my_rear = jnp.max(jnp.where(mine, jnp.arange(25), -1))
    their_rear = jnp.min(jnp.where(theirs, jnp.arange(-1, 24), 25))
    return my_rear > their_rear


def hand_made(board: Array) -> Array:
    """float32[15]: `_side` of `board`'s side, of the other side (the board flipped), and the
    contact flag."""
    return jnp.concatenate([_side(board), _side(rules.flip(board)),
                            contact(board).astype(jnp.float32)[None]])


def gnubg_lite(board: Array, remaining: Array, is_chance: Array) -> Array:
    """float32[218]: `raw` then `hand_made`."""
    return jnp.concatenate([raw(board, remaining, is_chance), hand_made(board)])


class Encoding(NamedTuple):
    encode: Callable[[Array, Array, Array], Array]  # (board, remaining, is_chance) -> float32[n]
    size: int
    # the unit that is 1 in contact and 0 in a race (a network's phase split reads it); None
    # where the encoding has no such unit
    phase_unit: int | None = None


ENCODINGS = {
    "raw": Encoding(raw, 24 * 4 * 2 + 4 + 6 + 1),
    "gnubg-lite": Encoding(gnubg_lite, 24 * 4 * 2 + 4 + 6 + 1 + 15, phase_unit=217),
}


def encoding(name: object) -> Encoding:
    """The encoding called `name`; a one-line ValueError naming the choices otherwise."""
    if not isinstance(name, str) or name not in ENCODINGS:
        raise ValueError(f"backgammon: unknown features {name!r}; choose one of "
                         f"{', '.join(repr(n) for n in ENCODINGS)}")
    return ENCODINGS[name]


__all__ = ["ENCODINGS", "Encoding", "contact", "encoding", "gnubg_lite", "hand_made", "raw",
           "roll_reach"]
