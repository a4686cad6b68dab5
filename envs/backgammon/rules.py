"""Backgammon rules as pure jax functions over a 28-int board seen from the player to move.

Board layout (int32[28]), always from the point of view of the player to move ("mover"):

* ``board[i]`` for ``i in 0..23`` is the mover's point ``i + 1`` (gnubg's numbering for the
  player on roll): the mover runs from index 23 down to 0 and bears off below index 0; its home
  board is indices 0..5. A positive count is the mover's checkers, a negative count the
  opponent's (the opponent runs from index 0 upwards; its home board is indices 18..23).
* ``board[24]`` mover's bar (>= 0), ``board[25]`` opponent's bar (<= 0),
  ``board[26]`` mover's borne-off checkers (>= 0), ``board[27]`` opponent's (<= 0).

Micro-actions (156, pgx's layout): ``action = src * 6 + (die - 1)`` with ``src`` 0 = no-op
(only action 0 is ever legal, as the pass of a player with no legal move), ``src`` 1 = the
bar, ``src`` 2..25 = board index ``src - 2``.

``remaining`` (int32[6]) counts the unplayed dice of each value (4 of one value for doubles).

Forced-move rule: for doubles every single-die move can be extended to a sequence using the
largest possible number of dice (moving a checker never removes another checker's move: it
cannot block its own side, and it only moves checkers towards home, which can only enable
bear-offs), so the legal first steps are simply the playable ones. For a non-double roll the
first step must be followable by the other die when some first step is; otherwise only the
larger die may be played if it can be. `roll_mask` implements this with a one-step look-ahead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

NUM_ACTIONS = 156
PASS_ACTION = 0
BAR, OPP_BAR, OFF, OPP_OFF = 24, 25, 26, 27

# The 21 distinct rolls (d1 <= d2), lexicographic, and their probabilities.
ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(a, 7)], dtype=np.int32)
ROLL_PROBS = np.array([1.0 / 36 if a == b else 2.0 / 36 for a, b in ROLLS], dtype=np.float32)
NUM_ROLLS = len(ROLLS)  # the chance outcomes: 21, the one place this count is written

# Static index tables for the 24 x 6 point moves (source index p, die d): destination p - d.
_P = np.arange(24)[:, None]
_D = np.arange(1, 7)[None, :]
_DEST = _P - _D  # [24, 6]
_IS_OFF = _DEST < 0
_EXACT_OFF = _DEST == -1
_DEST_PAD = _DEST + 6  # index into [6 off slots] + 24 points
_BAR_DEST = 24 - np.arange(1, 7)  # mover enters on point 25 - d = index 24 - d

START_BOARD = np.zeros(28, dtype=np.int32)
START_BOARD[[23, 12, 7, 5]] = [2, 5, 3, 5]
START_BOARD[[0, 11, 16, 18]] = [-2, -5, -3, -5]

_FLIP = np.concatenate([np.arange(23, -1, -1), [OPP_BAR, BAR, OPP_OFF, OFF]])


def flip(board: Array) -> Array:
    """The same position seen from the other player (`-board[_FLIP]`, written as a reversal
    and two swaps: XLA:CPU ran the index gather element by element, and the complete-move
    listing flips every one of its slots)."""
    bar_off = board[BAR:]
    return -jnp.concatenate([board[23::-1], bar_off[1::-1], bar_off[:1:-1]])


def playable(board: Array) -> Array:
    """bool[25, 6]: single-checker moves (row 0 bar, rows 1..24 points 0..23) x die 1..6,
    ignoring which dice are left."""
    pts = board[:24]
    own = pts > 0
    open_pad = jnp.concatenate([jnp.zeros(6, jnp.bool_), pts >= -1])
    on_bar = board[BAR] > 0
    # Bear-off needs every checker home; a non-exact one also needs no checker further back.
    all_home = ~on_bar & ~jnp.any(own[6:])
    # no checker further back (on a higher index): from the highest occupied index up, which
    # is a max, not a running count (a reduce-window on XLA:CPU)
    highest = jnp.max(jnp.where(own, jnp.arange(24), -1))
    bear_ok = all_home & (jnp.asarray(_EXACT_OFF) | (jnp.arange(24) >= highest)[:, None])
    dest_ok = jnp.where(jnp.asarray(_IS_OFF), bear_ok, open_pad[_DEST_PAD])
    point_moves = own[:, None] & dest_ok & ~on_bar
    bar_moves = on_bar & (pts[_BAR_DEST] >= -1)
    return jnp.concatenate([bar_moves[None, :], point_moves], axis=0)


def playable_die(board: Array, die: Array) -> Array:
    """bool[25]: `playable(board)[:, die - 1]` for one die value (traced scalar 1..6), at a
    sixth of the work (the complete-move listing asks this of every position it grows)."""
    pts = board[:24]
    own = pts > 0
    on_bar = board[BAR] > 0
    idx = jnp.arange(24)
    dest = idx - die
    open_pad = jnp.concatenate([jnp.zeros(6, jnp.bool_), pts >= -1])
    all_home = ~on_bar & ~jnp.any(own[6:])
    highest = jnp.max(jnp.where(own, idx, -1))  # no checker further back from here up
    bear_ok = all_home & ((dest == -1) | (idx >= highest))
    dest_ok = jnp.where(dest < 0, bear_ok, open_pad[jnp.clip(dest + 6, 0, 29)])
    point_moves = own & dest_ok & ~on_bar
    bar_move = on_bar & (pts[jnp.clip(24 - die, 0, 23)] >= -1)
    return jnp.concatenate([bar_move[None], point_moves])


def _any_playable_with(board: Array, die: Array) -> Array:
    """bool: the mover has some single-checker move with `die` (traced scalar 1..6)."""
    pts = board[:24]
    own = pts > 0
    open_pad = jnp.concatenate([jnp.zeros(6, jnp.bool_), pts >= -1])
    on_bar = board[BAR] > 0
    all_home = ~on_bar & ~jnp.any(own[6:])
    idx = jnp.arange(24)
    dest = idx - die
    highest = jnp.max(jnp.where(own, idx, -1))  # no checker further back from here up
    bear_ok = all_home & ((dest == -1) | (idx >= highest))
    dest_ok = jnp.where(dest < 0, bear_ok, open_pad[jnp.clip(dest + 6, 0, 29)])
    point_any = jnp.any(own & dest_ok) & ~on_bar
    bar_any = on_bar & (pts[24 - die] >= -1)
    return point_any | bar_any


def apply_move(board: Array, src: Array, die: Array) -> Array:
    """Move one mover checker from `src` (0 bar, 1..24 = index 0..23) by `die`; assumes it is
    playable. Hits an opponent blot. One-hot arithmetic, no scatter (faster under vmap)."""
    idx = jnp.arange(28)
    from_bar = src == 0
    p = jnp.where(from_bar, BAR, src - 1)
    dest = jnp.where(from_bar, 24 - die, src - 1 - die)
    off = dest < 0
    hit = ~off & (board[jnp.clip(dest, 0, 23)] == -1)
    delta = -(idx == p).astype(jnp.int32)
    delta += jnp.where(off, (idx == OFF), (idx == dest) * jnp.where(hit, 2, 1)).astype(jnp.int32)
    delta -= ((idx == OPP_BAR) & hit).astype(jnp.int32)
    return board + delta


def simple_mask(board: Array, remaining: Array) -> Array:
    """bool[25, 6]: playable moves with a die still left (doubles, or one die left)."""
    return playable(board) & (remaining > 0)[None, :]


def roll_mask_bruteforce(board: Array, remaining: Array) -> Array:
    """`roll_mask` by applying every candidate first step and searching for a second one
    (slow: a reference for the tests)."""
    play = simple_mask(board, remaining)
    vals = jnp.arange(1, 7)
    # Two different dice: the larger and the smaller value left.
    hi = jnp.max(jnp.where(remaining > 0, vals, 0))
    lo = jnp.min(jnp.where(remaining > 0, vals, 7))
    two_dice = (remaining.sum() == 2) & (hi != lo)

    srcs = jnp.arange(25)

    def follow(src, die, other):
        return _any_playable_with(apply_move(board, src, die), other)

    f_hi = jax.vmap(follow, in_axes=(0, None, None))(srcs, hi, lo)  # first hi, then lo
    f_lo = jax.vmap(follow, in_axes=(0, None, None))(srcs, lo, hi)
    cand_hi = play[:, jnp.clip(hi - 1, 0, 5)]
    cand_lo = play[:, jnp.clip(lo - 1, 0, 5)]
    ok_hi = cand_hi & f_hi
    ok_lo = cand_lo & f_lo
    both = jnp.any(ok_hi) | jnp.any(ok_lo)
    # Only one die usable: the larger one if it has any move, else the smaller.
    use_hi = jnp.where(both, ok_hi, cand_hi)
    use_lo = jnp.where(both, ok_lo, cand_lo & ~jnp.any(cand_hi))
    forced = (
        (use_hi[:, None] & (vals == hi)[None, :]) | (use_lo[:, None] & (vals == lo)[None, :])
    )
    return jnp.where(two_dice, forced, play)


def full_mask(rows: Array) -> Array:
    """bool[156] from the [25, 6] move rows; the pass action alone when nothing is playable."""
    flat = rows.reshape(-1)
    none = ~jnp.any(flat)
    pass_row = jnp.zeros(6, jnp.bool_).at[0].set(none)
    return jnp.concatenate([pass_row, flat])


def roll_remaining(d1: Array, d2: Array) -> Array:
    """int32[6] dice left after rolling (d1, d2): 4 of a value for doubles."""
    vals = jnp.arange(1, 7)
    doubles = d1 == d2
    return jnp.where(doubles, 4 * (vals == d1), (vals == d1).astype(jnp.int32) + (vals == d2))


def game_points(board: Array) -> Array:
    """int32 points won by the mover who has just borne off its last checker: 1, 2 (gammon:
    the loser bore off nothing) or 3 (backgammon: also a loser's checker on the bar or in the
    winner's home board)."""
    opp_off = -board[OPP_OFF]
    bg = (board[OPP_BAR] < 0) | jnp.any(board[:6] < 0)
    return jnp.where(opp_off > 0, 1, jnp.where(bg, 3, 2)).astype(jnp.int32)


def _at_dest(vec: Array) -> Array:
    """[24] -> [24, 6]: ``vec[p - d]`` for source p and die d, False where p - d < 0."""
    pad = jnp.concatenate([jnp.zeros(6, vec.dtype), vec])
    return pad[_DEST_PAD]


def _column(m: Array, die: Array) -> Array:
    """[24, 6] -> [24]: the column of die value `die` (traced), by a one-hot reduction."""
    return jnp.any(m & (jnp.arange(1, 7) == die)[None, :], axis=1)


def _follow_points(board: Array, d: Array, e: Array) -> Array:
    """bool[24]: after moving a checker from point index p with die d (no checker on the bar),
    does some move with die e exist? Worked out from the board, without applying the move:
    a move never closes a point for its own side, so only the emptied source, the new checker
    at the destination and the bear-off conditions change."""
    pts = board[:24]
    own = pts > 0
    single = pts == 1
    idx = jnp.arange(24)
    q = idx - d
    g_e = _column(jnp.asarray(_DEST >= 0) & jnp.concatenate(
        [jnp.zeros(6, jnp.bool_), pts >= -1])[_DEST_PAD], e)  # e-move from x to an open point
    base = jnp.sum(own & g_e)
    lose_p = (own & g_e & single).astype(jnp.int32)
    gain_q = ((q >= 0) & _column(_at_dest(g_e), d) & ~_column(_at_dest(own), d)).astype(jnp.int32)
    inside = (base - lose_p + gain_q) > 0
    # bearing off with e afterwards: every checker home, then an exact one from e - 1 or the
    # highest checker when it lies below e - 1.
    out_after = jnp.sum(jnp.maximum(pts[6:], 0)) - (idx >= 6) + (q >= 6)
    ee = e - 1
    own_ee = jnp.any(own & (idx == ee))
    own_ee_after = (own_ee & ~((idx == ee) & single)) | (q == ee)
    h = jnp.max(jnp.where(own, idx, -1))
    h2 = jnp.max(jnp.where(own & (idx != h), idx, -1))
    h_after = jnp.where((idx == h) & single, jnp.maximum(h2, jnp.maximum(q, -1)), h)
    bear = (out_after == 0) & (own_ee_after | ((h_after >= 0) & (h_after < ee)))
    return inside | bear


def _follow_bar(board: Array, d: Array, e: Array) -> Array:
    """bool: after entering from the bar with die d, does some move with die e exist?"""
    pts = board[:24]
    idx = jnp.arange(24)
    open_ = pts >= -1
    still_on_bar = board[BAR] >= 2
    enter_e = jnp.any(open_ & (idx == 24 - e))
    # last checker entered (at 24 - d, far from home: no bear-off): any point move with e
    g_e = _column(jnp.asarray(_DEST >= 0) & jnp.concatenate(
        [jnp.zeros(6, jnp.bool_), open_])[_DEST_PAD], e)
    any_point = jnp.any((pts > 0) & g_e) | jnp.any(open_ & (idx == 24 - d - e))
    return jnp.where(still_on_bar, enter_e, any_point)


def roll_mask(board: Array, remaining: Array) -> Array:
    """bool[25, 6]: legal first steps right after a roll, under the forced-move rule."""
    play = simple_mask(board, remaining)
    vals = jnp.arange(1, 7)
    hi = jnp.max(jnp.where(remaining > 0, vals, 0))
    lo = jnp.min(jnp.where(remaining > 0, vals, 7))
    two_dice = (remaining.sum() == 2) & (hi != lo)
    hi_c, lo_c = jnp.clip(hi, 1, 6), jnp.clip(lo, 1, 6)
    f_hi = jnp.concatenate([_follow_bar(board, hi_c, lo_c)[None], _follow_points(board, hi_c, lo_c)])
    f_lo = jnp.concatenate([_follow_bar(board, lo_c, hi_c)[None], _follow_points(board, lo_c, hi_c)])
    cand_hi = jnp.any(play & (vals == hi)[None, :], axis=1)
    cand_lo = jnp.any(play & (vals == lo)[None, :], axis=1)
    ok_hi = cand_hi & f_hi
    ok_lo = cand_lo & f_lo
    both = jnp.any(ok_hi) | jnp.any(ok_lo)
    use_hi = jnp.where(both, ok_hi, cand_hi)
    use_lo = jnp.where(both, ok_lo, cand_lo & ~jnp.any(cand_hi))
    forced = (use_hi[:, None] & (vals == hi)[None, :]) | (use_lo[:, None] & (vals == lo)[None, :])
    return jnp.where(two_dice, forced, play)
