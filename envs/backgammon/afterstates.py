"""Every distinct result of a complete backgammon move, as static-size jax arrays.

A complete move plays as many of the dice left as the rules allow (`rules`' docstring), one
checker at a time. The enumeration grows the set of distinct positions die by die:

    level 0: the position itself
    level k: every legal single-checker move from every level k-1 position, duplicates merged

A level's positions are kept at a static capacity (`level_sizes`); levels 1 and 2 are exact for
every roll (30 and 30 * 15 slots suffice by construction), levels 3 and 4 exist only for doubles
and hold `max_afterstates` slots (an overflow is reported). The answer is the deepest non-empty
level (as many dice as possible); when that depth is 1 for a roll of two different dice, only
moves of the larger die are kept if there are any (the forced-move rule). A move that bears
off the last checker counts the dice it used, like any other (as in gnubg's move generator).

Duplicates are found exactly: each position packs into five uint32 words (the mover's checkers
per point, bar and off, 4 bits each; which opponent points are still occupied, 24 bits; the
dice left), the candidates are sorted on them and the first of each run is kept.

Sizes: a position has at most 15 occupied sources, so one die value gives at most 15 legal
single-checker moves, and two values at most 30 (`Backgammon.max_legal_actions`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.backgammon import rules
from envs.afterstates import NO_ACTION
from envs.sampling import legal_candidates

Array = jax.Array

MAX_DICE = 4  # doubles: four moves of one die
FIRST_WIDTH = 30  # legal micro-actions right after a roll (two die values x 15 sources)
WIDTH = 15  # legal single-checker moves with one die value (one per occupied source)
# The default number of complete moves kept per position. Non-doubles never have more than
# 450 (30 first steps x 15 second steps); doubles can: gnubg's move list holds up to 3060. In
# gnubg 0-ply self-play (benchmarks/throughput/backgammon_afterstates.py --count) 99.9% of doubles had at
# most ~520 and the largest seen 783; docs/backgammon.md "Complete moves" has the measurement
# and the cost of a larger M.
DEFAULT_MAX_AFTERSTATES = 256


class Level(NamedTuple):
    """A set of positions reached by the same number of dice (leading axis C)."""

    board: Array  # int32[C, 28] from the mover's side
    remaining: Array  # int32[C, 6] dice left
    actions: Array  # int32[C, 4] micro-actions so far, NO_ACTION-padded
    valid: Array  # bool[C]


def level_sizes(max_afterstates: int) -> tuple[int, ...]:
    """Capacities of levels 0..4: 1, 30, min(M, 450), M, M (levels 1-2 exact for M >= 450)."""
    if max_afterstates < FIRST_WIDTH:
        raise ValueError(f"max_afterstates must be >= {FIRST_WIDTH} (the legal first steps of "
                         f"one roll), got {max_afterstates}")
    return (1, FIRST_WIDTH, min(max_afterstates, FIRST_WIDTH * WIDTH),
            max_afterstates, max_afterstates)


def _keys(board: Array, remaining: Array, invalid: Array) -> tuple[Array, ...]:
    """Five uint32 words that identify (board, dice left) exactly, invalid entries last."""
    mine = jnp.maximum(board[:24], 0).astype(jnp.uint32)  # 0..15 each
    shifts = (4 * jnp.arange(8)).astype(jnp.uint32)
    words = [jnp.sum(mine[8 * j:8 * j + 8] << shifts, dtype=jnp.uint32) for j in range(3)]
    opp_there = (board[:24] < 0).astype(jnp.uint32)
    mask = jnp.sum(opp_there << jnp.arange(24, dtype=jnp.uint32), dtype=jnp.uint32)
    words.append(board[rules.BAR].astype(jnp.uint32) | (board[rules.OFF].astype(jnp.uint32) << 4)
                 | (mask << 8))
    rem = jnp.sum(remaining.astype(jnp.uint32) << (3 * jnp.arange(6, dtype=jnp.uint32)),
                  dtype=jnp.uint32)  # 18 bits
    return (rem | (invalid.astype(jnp.uint32) << 31), *words)


def _compact(level: Level, keep: Array, capacity: int) -> tuple[Level, Array]:
    """The entries of `level` where `keep`, in order, in `capacity` slots; and whether some did
    not fit."""
    count = jnp.sum(keep)
    dest = jnp.where(keep, jnp.cumsum(keep) - 1, capacity)
    pick = jnp.zeros(capacity, jnp.int32).at[dest].set(
        jnp.arange(keep.shape[0], dtype=jnp.int32), mode="drop")
    kept = jax.tree_util.tree_map(lambda x: x[pick], level)
    return kept._replace(valid=jnp.arange(capacity) < count), count > capacity


def _dedup(level: Level, capacity: int, by_dice_left: bool = True) -> tuple[Level, Array]:
    """The distinct valid positions of `level`, packed into `capacity` slots (sort order), and
    whether some did not fit. Two entries are the same when their boards and (if
    `by_dice_left`) their dice left are; the first in sort order is kept, with its fields."""
    n = level.valid.shape[0]
    rem = level.remaining if by_dice_left else jnp.zeros_like(level.remaining)
    keys = jax.vmap(_keys)(level.board, rem, ~level.valid)
    sorted_ = jax.lax.sort((*keys, jnp.arange(n, dtype=jnp.int32)), num_keys=len(keys))
    perm = sorted_[-1]
    same_as_prev = jnp.ones(n, jnp.bool_).at[0].set(False)
    for k in sorted_[:-1]:
        same_as_prev = same_as_prev & (k == jnp.roll(k, 1))
    first = (sorted_[0] >> 31 == 0) & ~same_as_prev  # valid and not a repeat
    return _compact(jax.tree_util.tree_map(lambda x: x[perm], level), first, capacity)


def _rank(action: Array) -> Array:
    """Order of a micro-action's source, far to near: the bar 25, point index p -> p + 1
    (NO_ACTION -> 26, above every source)."""
    row = action // 6 - 1  # 0 bar, 1..24 points
    return jnp.where(action < 0, 26, jnp.where(row == 0, 25, row))


def _expand(level: Level, depth: int, width: int) -> Level:
    """Every legal single-checker move of every position of `level` ([C] -> [C * width]).

    With one die value (doubles), a parent only moves checkers from its last source or nearer
    home: the result of several moves of one die depends only on the multiset of sources, and
    sources far-to-near is always a legal order when any order is (a move never blocks a
    point for its own side, and bearing off only needs the checkers further back moved first),
    so every result is made once, not once per order."""

    def one(board, remaining, actions, valid):
        rows = rules.simple_mask(board, remaining)  # [25, 6]: bar, points 0..23 x die
        if depth > 0:  # a second move of the die just played: from its source or nearer
            prev = actions[depth - 1]
            repeat = (prev % 6 + 1) == jnp.argmax(remaining > 0) + 1
            ranks = jnp.asarray(np.concatenate([[25], np.arange(1, 25)]))  # per row
            rows = rows & (~repeat | (ranks <= _rank(prev)))[:, None]
        ok = valid  # a won position has no checker left to move
        if depth == 0:  # up to two die values
            cand = legal_candidates(rows.reshape(-1) & ok, width)
            src, die = cand.actions // 6, cand.actions % 6 + 1
        else:  # one die value left (doubles, or the second die): pick among the 25 sources
            value = jnp.argmax(remaining > 0) + 1
            by_src = legal_candidates(jnp.any(rows, axis=1) & ok, width)
            src, die = by_src.actions, jnp.full((width,), value)
            cand = by_src._replace(actions=src * 6 + die - 1)
        boards = jax.vmap(rules.apply_move, in_axes=(None, 0, 0))(board, src, die)
        rems = remaining[None, :] - (jnp.arange(1, 7)[None, :] == die[:, None])
        acts = jnp.broadcast_to(actions, (width, MAX_DICE)).at[:, depth].set(
            cand.actions + 6)  # rows index = env micro-action - 6 (the pass row is not here)
        return Level(boards, rems, acts, cand.valid)

    out = jax.vmap(one)(*level)
    return jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), out)


def _pad(level: Level, size: int) -> Level:
    extra = size - level.valid.shape[0]
    return jax.tree_util.tree_map(
        lambda x: jnp.concatenate([x, jnp.zeros((extra,) + x.shape[1:], x.dtype)]), level)


def complete_moves(board: Array, remaining: Array, live: Array,
                   max_afterstates: int = DEFAULT_MAX_AFTERSTATES) -> tuple[Level, Array]:
    """The distinct results of every complete legal move from (board, dice left).

    board int32[28] from the mover's side, remaining int32[6], live bool (False: a chance or
    finished state, every slot invalid). Returns a `Level` of `max_afterstates` slots (the
    result boards still from the mover's side, `remaining` the dice left unplayable, `actions`
    the env micro-actions reaching each; a player without a move gets the position unchanged
    and the pass) and the overflow flag. Jittable; vmap over a batch."""
    sizes = level_sizes(max_afterstates)
    root = Level(board[None].astype(jnp.int32), remaining[None].astype(jnp.int32),
                 jnp.full((1, MAX_DICE), NO_ACTION, jnp.int32), live[None])
    levels, overflow = [root], jnp.asarray(False)
    for depth in range(MAX_DICE):
        kids = _expand(levels[-1], depth, FIRST_WIDTH if depth == 0 else WIDTH)
        # level 2 of two different dice meets each result twice (either die first): merge;
        # the one-die levels make each result once (`_expand`), so they only compact
        if depth == 1:
            kids, over = _dedup(kids, sizes[depth + 1])
        else:
            kids, over = _compact(kids, kids.valid, sizes[depth + 1])
        levels.append(kids)
        overflow = overflow | over
    # the deepest non-empty level: as many dice as possible
    depth = jnp.max(jnp.asarray([jnp.where(jnp.any(lv.valid), k, 0)
                                 for k, lv in enumerate(levels)]))
    size = max(sizes)
    padded = [_pad(lv, size) for lv in levels]
    chosen = jax.tree_util.tree_map(
        lambda *xs: jnp.select([depth == k for k in range(len(xs))], xs), *padded)
    # one die of two different ones playable: the larger one if it can be
    vals = jnp.arange(1, 7)
    hi = jnp.max(jnp.where(remaining > 0, vals, 0))
    two_values = jnp.sum(remaining > 0) == 2
    used_hi = chosen.actions[:, 0] % 6 + 1 == hi
    larger_only = (depth == 1) & two_values & jnp.any(chosen.valid & used_hi)
    valid = chosen.valid & (~larger_only | used_hi)
    # no move at all: the pass, position unchanged
    passed = live & (depth == 0)
    actions = jnp.where(passed & (jnp.arange(MAX_DICE) == 0), rules.PASS_ACTION, chosen.actions)
    chosen = chosen._replace(actions=actions, valid=valid)
    # different sources can still end in one position (a bear-off with either die, a checker
    # borne off from either of two points): merge on the board alone
    merged, _ = _dedup(chosen, max_afterstates, by_dice_left=False)
    return merged, overflow


__all__ = ["DEFAULT_MAX_AFTERSTATES", "FIRST_WIDTH", "Level", "MAX_DICE", "WIDTH",
           "complete_moves", "level_sizes"]
