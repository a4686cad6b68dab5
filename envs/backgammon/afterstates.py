"""Every distinct result of a complete backgammon move, as static-size jax arrays.

A complete move plays as many of the dice left as the rules allow (`rules`' docstring), one
checker at a time. Two paths (docs/backgammon.md, "Complete moves"; issue 43):

* `two_dice_moves`, at most two dice left (every non-double roll): (first source, die) then
  (second source, the other die) for both orders, merged on one exact uint32 key per candidate
  (net sources, net destinations, blots hit), one plain sort.
* `doubles_moves`, three or four of one value left: the set of distinct positions grown die by
  die (level k: every legal move of the die from every level k-1 position, far-to-near so each
  result is made once), the deepest non-empty level kept (no board in it twice).

`complete_moves` picks the path per state; under `vmap` it runs the two-dice path for the whole
batch and gathers only the doubles for theirs (`_pooled`, through `custom_vmap`), first with
small levels, then at M for those that did not fit. `level_moves` is the former single path
(every roll grown level by level), kept as a reference for the tests.

A level's positions are kept at a static capacity; levels 1 and 2 are exact for every roll
(15 and 15 * 15 slots suffice for one die value), levels 3 and 4 hold `max_afterstates` slots
(an overflow is reported). A move that bears off the last checker counts the dice it used,
like any other (as in gnubg's move generator).

Duplicates of the level path are found exactly: each position packs into five uint32 words
(the mover's checkers per point, bar and off, 4 bits each; which opponent points are still
occupied, 24 bits; the dice left), the candidates are sorted on them and the first of each run
is kept.

Sizes: a position has at most 15 occupied sources, so one die value gives at most 15 legal
single-checker moves, and two values at most 30 (`Backgammon.max_legal_actions`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

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
CHUNK_MIN, CHUNK_DIV = 4, 16
SMALL_LEVELS = 32  # doubles' levels first listed this small
TWO_DICE_SLOTS = 128  # two-dice lists first built this small (none above 112 in play)


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


def level_moves(board: Array, remaining: Array, live: Array,
                max_afterstates: int = DEFAULT_MAX_AFTERSTATES) -> tuple[Level, Array]:
    """`complete_moves` grown level by level (any dice left; the path of three or four dice
    left, i.e. doubles, and the reference the two-dice path is tested against)."""
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


# ---------------------------------------------------------------- two dice or fewer left
# Cells of a move key, dense: points 0..23, then these.
BAR_CELL = 24  # the bar (a source)
OFF_CELL = 24  # borne off (a destination)
NONE_CELL = 25  # an empty field of a key
NO_HIT = 24  # the third field: no checker hit on the way
PAIRS = 26 * 27 // 2  # sorted pairs (a <= b) of cells 0..25
CAND_BITS = 9  # the candidate's index, below its key: 2 * 15 * 15 + 2 * 15 = 480 < 512
INVALID_KEY = np.uint32(0xFFFFFFFF)  # sorts after every real key (real keys use 31 bits)


def _src_cell(row: Array) -> Array:
    """Cell of a move row (0 the bar, 1..24 points 0..23)."""
    return jnp.where(row == 0, BAR_CELL, row - 1)


def _dest_cell(row: Array, die: Array) -> Array:
    """Cell a checker reaches from move row `row` with `die` (as `rules.apply_move`)."""
    dest = jnp.where(row == 0, 24 - die, row - 1 - die)
    return jnp.where(dest < 0, OFF_CELL, dest)


def _pair(a: Array, b: Array) -> Array:
    """The sorted pair of two cells as one number in [0, PAIRS)."""
    lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
    return hi * (hi + 1) // 2 + lo


def _key(src: Array, dst: Array, via: Array, cand: Array) -> Array:
    """(sources pair, destinations pair, the hit on the way) in mixed radix (22 bits), the
    candidate's index below it: one uint32, so that one plain sort groups equal results and
    puts each group's lowest candidate first."""
    k = (src * PAIRS + dst) * (NO_HIT + 1) + via
    return (k.astype(jnp.uint32) << CAND_BITS) | cand.astype(jnp.uint32)


def _word(mask: Array) -> Array:
    """uint32[...]: a bool[..., n] mask (n <= 32) as the bits of one word, row i at bit i."""
    n = mask.shape[-1]
    return jnp.sum(mask.astype(jnp.uint32) << jnp.arange(n, dtype=jnp.uint32), axis=-1,
                   dtype=jnp.uint32)


def _nth_bit(word: Array, k: Array) -> Array:
    """int32: the index of the (k+1)-th lowest set bit of uint32 `word` (31 when it has at
    most k): the largest p with at most k set bits below p, by binary search on bit counts."""
    pos = jnp.zeros(jnp.shape(k), jnp.int32)
    for step in (16, 8, 4, 2, 1):
        below = jax.lax.population_count(
            word & ((jnp.uint32(1) << (pos + step).astype(jnp.uint32)) - jnp.uint32(1)))
        pos = jnp.where(below.astype(jnp.int32) <= k, pos + step, pos)
    return pos


def _first_rows(mask: Array, width: int) -> tuple[Array, Array]:
    """The first `width` set rows of a bool[R] mask (R <= 32; row indices, 0 where not valid;
    valid): the mask as one word, the (k+1)-th set bit of it for each k (`_nth_bit`). A
    running count of the rows (`jnp.cumsum`: a reduce-window on XLA:CPU) and a [width, R]
    one-hot cost more, and so did taking the lowest set bit off `width` times, measured
    (docs/benchmarks.md, "Backgammon complete moves", third pass)."""
    bits = _word(mask)[..., None]
    k = jnp.arange(width, dtype=jnp.int32)
    valid = k < jax.lax.population_count(bits).astype(jnp.int32)
    return jnp.where(valid, _nth_bit(bits, k), 0), valid


def _first_set(mask: Array, width: int) -> tuple[Array, Array]:
    """The positions of the first `width` set entries of a bool[n] mask, in order (0 where not
    valid), and valid: the mask packed 32 to a word, each slot's word by comparing it with
    the words' running bit counts (n / 32 of them), its bit by `_nth_bit`."""
    n = mask.shape[0]
    nw = -(-n // 32)
    words = _word(jnp.pad(mask, (0, 32 * nw - n)).reshape(nw, 32))  # [nw]
    counts = jax.lax.population_count(words).astype(jnp.int32)
    ends = jnp.cumsum(counts)  # nw entries only
    slot = jnp.arange(width, dtype=jnp.int32)
    w = jnp.minimum(jnp.sum(ends[None, :] <= slot[:, None], axis=1), nw - 1).astype(jnp.int32)
    k = slot - (ends[w] - counts[w])
    valid = slot < ends[-1]
    return jnp.where(valid, 32 * w + _nth_bit(words[w], k), 0), valid


def two_dice_moves(board: Array, remaining: Array, live: Array,
                   max_afterstates: int = DEFAULT_MAX_AFTERSTATES,
                   capacity: int | None = None) -> tuple[Level, Array]:
    """`complete_moves` when at most two dice are left (every non-double roll, and the end of
    a double), without growing levels: each complete move is (first source, die) then
    (second source, the other die), 2 orders x 15 x 15 candidates plus the 2 x 15 one-die
    moves, and duplicates are merged on one exact key per candidate.

    The key is exact because every candidate starts from the same board: the result is that
    board minus the checkers taken from their sources plus those put on their destinations
    (net of a checker that moved on: source of one move = destination of the other), with
    every opponent blot it landed on hit. A blot on a net destination is always hit, so the
    board fixes those hits; the one hit the net cells do not show is on the way of a checker
    that moved on (its first landing point). So (sorted net sources, sorted net destinations,
    that hit) identifies the result board, and net sources and destinations never share a
    cell, so one board has one key. With the candidate's index in the low bits, one sort of
    plain uint32 (no payload: XLA:CPU sorts a single operand ~6x faster than keys with an
    index, measured) groups equal results with the lowest candidate first, which is the one
    listed. Results come in key order (not `level_moves`' order: no caller reads the order,
    docs/backgammon.md). `capacity` (< M) builds that many slots and pads to M: the same
    answer when the flag says nothing overflowed (`_pooled` retries the others at M)."""
    level_sizes(max_afterstates)
    m = max_afterstates if capacity is None else min(capacity, max_afterstates)
    vals = jnp.arange(1, 7)
    hi = jnp.max(jnp.where(remaining > 0, vals, 0))
    lo = jnp.min(jnp.where(remaining > 0, vals, 7))
    n_dice = jnp.sum(remaining)
    two_values = hi != lo
    hi_c, lo_c = jnp.clip(hi, 1, 6), jnp.clip(lo, 1, 6)
    first = jnp.stack([hi_c, lo_c])  # order 0: the larger die first; order 1: the smaller
    second = jnp.stack([lo_c, hi_c])
    order_ok = jnp.stack([n_dice >= 1, (n_dice >= 1) & two_values])  # one order when one value

    play = rules.playable(board)  # [25, 6]
    col1 = jnp.take(play, first - 1, axis=1).T & (live & order_ok)[:, None]  # [2, 25]
    r1, v1 = jax.vmap(lambda c: _first_rows(c, WIDTH))(col1)  # [2, 15] rows of the 1st checker
    board1 = jax.vmap(jax.vmap(rules.apply_move, in_axes=(None, 0, None)),
                      in_axes=(None, 0, 0))(board, r1, first)  # [2, 15, 28]
    play1 = jax.vmap(jax.vmap(rules.playable_die, in_axes=(0, None)))(board1, second)
    col2 = play1 & (v1 & (n_dice == 2))[..., None]  # [2, 15, 25]
    r2, v2 = jax.vmap(jax.vmap(lambda c: _first_rows(c, WIDTH)))(col2)  # [2, 15, 15]

    s1, t1 = _src_cell(r1), _dest_cell(r1, first[:, None])  # [2, 15]
    blot1 = (t1 < 24) & (board[jnp.clip(t1, 0, 23)] == -1)  # the first checker hits there
    s2, t2 = _src_cell(r2), _dest_cell(r2, second[:, None, None])  # [2, 15, 15]
    s1b, t1b = s1[:, :, None], t1[:, :, None]
    on1 = t1b == s2  # the second move goes on from where the first one landed
    on2 = t2 == s1b  # the second checker lands where the first one left (its own point)
    on = on1 | on2
    src = _pair(jnp.where(on2, s2, s1b), jnp.where(on, NONE_CELL, s2))
    dst = _pair(jnp.where(on1, t2, t1b), jnp.where(on, NONE_CELL, t2))
    via = jnp.where(on1 & blot1[:, :, None], t1b, NO_HIT)
    n2 = 2 * WIDTH * WIDTH
    key2 = _key(src, dst, via, jnp.arange(n2).reshape(2, WIDTH, WIDTH))
    none = jnp.full_like(s1, NONE_CELL)
    key1 = _key(_pair(s1, none), _pair(t1, none), jnp.full_like(s1, NO_HIT),
                n2 + jnp.arange(2 * WIDTH).reshape(2, WIDTH))

    # as many dice as possible; one die of two different ones: the larger if it can be played
    any2 = jnp.any(v2)
    larger_only = two_values & jnp.any(v1[0])
    ok1 = v1 & ~any2 & ((jnp.arange(2) == 0) | ~larger_only)[:, None]
    keys = jnp.concatenate([jnp.where(v2, key2, INVALID_KEY).reshape(-1),
                            jnp.where(ok1, key1, INVALID_KEY).reshape(-1)])
    ordered = jnp.sort(keys)
    group = ordered >> CAND_BITS
    start = (ordered != INVALID_KEY) & jnp.concatenate(
        [jnp.ones(1, jnp.bool_), group[1:] != group[:-1]])
    # the first M distinct results' lowest candidates, in key order (slots past the count
    # read 0, as the scatter that stood here left them): the group starts found by bit
    # counts (`_first_set`), not a running count of the 480 and a scatter of 480 indices
    # into M slots, the largest pieces of a trace of the list (docs/benchmarks.md, "No sort
    # where nothing repeats")
    at, valid = _first_set(start, m)
    count = jnp.sum(start)
    firsts = jnp.where(valid, ordered[at], jnp.uint32(0))
    cand = (firsts & ((1 << CAND_BITS) - 1)).astype(jnp.int32)  # [M] the candidate listed

    is2 = cand < n2
    c = jnp.where(is2, cand, cand - n2)
    o = jnp.where(is2, c // (WIDTH * WIDTH), c // WIDTH)
    k = jnp.where(is2, (c // WIDTH) % WIDTH, c % WIDTH)
    j = jnp.where(is2, c % WIDTH, 0)
    row1, row2 = r1[o, k], r2[o, k, j]
    d1, d2 = first[o], second[o]
    mid = board1[o, k]
    out_board = jnp.where(is2[:, None], jax.vmap(rules.apply_move)(mid, row2, d2), mid)
    used = (vals[None, :] == d1[:, None]).astype(jnp.int32) + jnp.where(
        is2[:, None], vals[None, :] == d2[:, None], 0)
    out_rem = remaining[None, :] - used
    a1 = (row1 + 1) * 6 + d1 - 1  # env micro-action: src (1 the bar) * 6 + die - 1
    a2 = jnp.where(is2, (row2 + 1) * 6 + d2 - 1, NO_ACTION)
    pad = jnp.full((m, MAX_DICE - 2), NO_ACTION, jnp.int32)
    out_act = jnp.concatenate([a1[:, None], a2[:, None], pad], axis=1).astype(jnp.int32)

    # no move at all: the pass, position unchanged
    passed = live & (count == 0)
    first_slot = (jnp.arange(m) == 0) & passed
    out_board = jnp.where(first_slot[:, None], board[None, :], out_board)
    out_rem = jnp.where(first_slot[:, None], remaining[None, :], out_rem)
    out_act = jnp.where(first_slot[:, None], jnp.asarray([rules.PASS_ACTION] + [NO_ACTION] * 3),
                        out_act)
    level = Level(out_board.astype(jnp.int32), out_rem.astype(jnp.int32), out_act,
                  valid | first_slot)
    return _pad(level, max_afterstates), count > m


# ---------------------------------------------------------------- three or four dice left
def _one_die_level(level: Level, depth: int, die: Array, capacity: int) -> tuple[Level, Array]:
    """Every legal move of `die` from every position of `level`, far-to-near (`_expand`), the
    kept children packed parent by parent, row by row (as `_expand` + `_compact` order them)
    into `capacity` slots; and whether some did not fit. Only the kept children are built: the
    [parents, 25] move masks are packed first, then `capacity` boards made from them."""
    ranks = jnp.asarray(np.concatenate([[25], np.arange(1, 25)]))  # per row, far to near

    def rows_of(board, actions, valid):
        rows = rules.playable_die(board, die) & valid
        if depth > 0:  # from the last source or nearer home
            rows = rows & (ranks <= _rank(actions[depth - 1]))
        return rows

    mask = jax.vmap(rows_of)(level.board, level.actions, level.valid)  # [P, 25]
    # slot i's parent: the first whose running count of children passes i; its row: the
    # parent's (i - children before it)-th set row, read off the parent's rows as one word.
    # Gathers and bit counts only: a scatter of P x 25 indices (XLA:CPU runs it element by
    # element) cost ~2x more, and a running count of each slot's 25 rows (a reduce-window on
    # XLA:CPU) was the largest part of a level, measured
    words = _word(mask)  # [P]
    counts = jax.lax.population_count(words).astype(jnp.int32)
    ends = jnp.cumsum(counts)
    count = ends[-1]
    slot = jnp.arange(capacity, dtype=jnp.int32)
    parent = jnp.minimum(jnp.searchsorted(ends, slot, side="right", method="scan_unrolled"),
                         mask.shape[0] - 1).astype(jnp.int32)
    k = slot - (ends[parent] - counts[parent])
    row = jnp.where(k < counts[parent], _nth_bit(words[parent], k), 0)
    board = jax.vmap(rules.apply_move, in_axes=(0, 0, None))(level.board[parent], row, die)
    remaining = level.remaining[parent] - (jnp.arange(1, 7) == die)[None, :]
    actions = level.actions[parent].at[:, depth].set((row + 1) * 6 + die - 1)
    valid = jnp.arange(capacity) < count
    return Level(board, remaining.astype(jnp.int32), actions, valid), count > capacity


def _doubles_levels(board: Array, remaining: Array, live: Array, max_afterstates: int,
                    capacity: int | None) -> tuple[Level, Array]:
    """The deepest non-empty level of one die value's moves (far-to-near, each source
    multiset once), at the levels' capacity (`doubles_moves`), before repeats are merged."""
    m = max_afterstates
    cap = m if capacity is None else min(capacity, m)
    sizes = (1, WIDTH, min(WIDTH * WIDTH, cap), cap, cap)
    die = jnp.clip(jnp.argmax(remaining > 0) + 1, 1, 6)
    n_dice = jnp.sum(remaining)
    root = Level(board[None].astype(jnp.int32), remaining[None].astype(jnp.int32),
                 jnp.full((1, MAX_DICE), NO_ACTION, jnp.int32), live[None])
    levels, overflow = [root], jnp.asarray(False)
    for depth in range(MAX_DICE):
        kids, over = _one_die_level(levels[-1], depth, die, sizes[depth + 1])
        kids = kids._replace(valid=kids.valid & (n_dice > depth))
        levels.append(kids)
        overflow = overflow | over
    depth = jnp.max(jnp.asarray([jnp.where(jnp.any(lv.valid), k, 0)
                                 for k, lv in enumerate(levels)]))
    padded = [_pad(lv, max(sizes)) for lv in levels]
    chosen = jax.tree_util.tree_map(
        lambda *xs: jnp.select([depth == k for k in range(len(xs))], xs), *padded)
    passed = live & (depth == 0)
    actions = jnp.where(passed & (jnp.arange(MAX_DICE) == 0), rules.PASS_ACTION, chosen.actions)
    return chosen._replace(actions=actions, valid=chosen.valid.astype(jnp.bool_)), overflow


def _doubles_batch(board: Array, remaining: Array, live: Array, max_afterstates: int,
                   capacity: int | None) -> tuple[Level, Array]:
    """`doubles_moves` of a batch ([C] leading). The chosen level holds no board twice, so
    nothing is merged: with one die value d, the board a set of moves leaves fixes the
    number of moves m_p made from each point p, top down (m_p = checkers on p before - after
    + those that arrived, m_{p+d}, plus the bar's for its entry point; the bar's is what left
    it), so two different source multisets end on two different boards, borne off or not, and
    `_expand` makes each multiset once. (A five-word board sort merged them until issue 43's
    fourth pass and never found a repeat: docs/benchmarks.md, "No sort where nothing
    repeats"; the gnubg-nn tests check count = distinct boards.) The valid slots are a
    prefix; the others get slot 0's fields, as the compaction that stood here left them."""
    chosen, overflow = jax.vmap(
        lambda b, r, v: _doubles_levels(b, r, v, max_afterstates, capacity))(board, remaining, live)
    ok = chosen.valid
    first = jax.tree_util.tree_map(lambda x: jnp.where(
        ok.reshape(ok.shape + (1,) * (x.ndim - 2)), x, x[:, :1]), chosen)
    return jax.vmap(lambda lv: _pad(lv, max_afterstates))(first._replace(valid=ok)), overflow


def doubles_moves(board: Array, remaining: Array, live: Array,
                  max_afterstates: int = DEFAULT_MAX_AFTERSTATES,
                  capacity: int | None = None) -> tuple[Level, Array]:
    """`complete_moves` when one die value is left (three or four of a double): levels of
    15, 225 (exact: 15 sources x 15), M and M positions, each result made once (far-to-near,
    `_expand`; no board twice, `_doubles_batch`), in the order made. `capacity` (< M) caps
    levels 2-4 lower: the same answer when the flag says nothing overflowed (`_pooled`
    retries the others at M)."""
    out, over = _doubles_batch(board[None], remaining[None], jnp.asarray(live)[None],
                               max_afterstates, capacity)
    return jax.tree_util.tree_map(lambda x: x[0], out), over[0]


# ---------------------------------------------------------------- the public function
def _rounds(out: Level, over: Array, need: Array, chunk: int, lister, last: bool):
    """`lister` (a [chunk] batch -> (Level, overflow)) on the states of the batch where `need`,
    gathered `chunk` at a time, written over `out` / `over`. Unless `last`, a state that
    overflowed keeps its old slots and is returned in the new `need` (to be listed again
    with larger levels)."""
    b = need.shape[0]
    (order,) = jnp.nonzero(need, size=b + chunk, fill_value=b)
    rounds = (jnp.sum(need) + chunk - 1) // chunk

    def body(i, carry):
        out, over, retry = carry
        rows = jax.lax.dynamic_slice(order, (i * chunk,), (chunk,))
        lv, ov = lister(jnp.minimum(rows, b - 1), rows < b)
        keep = rows if last else jnp.where(ov, b, rows)  # a state that did not fit: later
        out = jax.tree_util.tree_map(lambda o, x: o.at[keep].set(x, mode="drop"), out, lv)
        over = over.at[keep].set(ov, mode="drop")
        return out, over, retry.at[jnp.where(ov, rows, b)].set(True, mode="drop")

    return jax.lax.fori_loop(0, rounds, body, (out, over, jnp.zeros_like(need)))


def _pooled(board: Array, remaining: Array, live: Array, m: int) -> tuple[Level, Array]:
    """A batch ([B] leading): every state through `two_dice_moves` with `TWO_DICE_SLOTS`
    slots, then the states with three or four dice left (doubles) through `doubles_moves`,
    gathered `chunk` at a time, so the five sixths of a batch that are not doubles never pay
    for levels 3-4. Most lists are short (non-doubles: at most 112 in gnubg self-play;
    doubles: median 13), so both are first listed small, and only the states that did not
    fit are listed again at M."""
    b = board.shape[0]
    small2 = min(m, TWO_DICE_SLOTS)
    out, over = jax.vmap(lambda x, r, lv: two_dice_moves(x, r, lv, m, small2))(
        board, remaining, live)
    chunk = max(1, min(b, max(CHUNK_MIN, b // CHUNK_DIV)))
    doubles = live & (jnp.sum(remaining, axis=1) > 2)
    if small2 < m:
        out, over, _ = _rounds(out, over, over & live & ~doubles, chunk, lambda src, ok: jax.vmap(
            lambda x, r, lv: two_dice_moves(x, r, lv, m))(board[src], remaining[src],
                                                          live[src] & ok), last=True)
    need = doubles
    for cap in (SMALL_LEVELS, m) if SMALL_LEVELS < m else (m,):
        out, over, need = _rounds(out, over, need, chunk, lambda src, ok, cap=cap: _doubles_batch(
            board[src], remaining[src], live[src] & ok, m, cap), last=cap == m)
    return out, over


@functools.lru_cache(maxsize=None)
def _complete_moves_fn(m: int):
    @custom_vmap
    def one(board, remaining, live):
        return jax.lax.cond(jnp.sum(remaining) <= 2,
                            lambda: two_dice_moves(board, remaining, live, m),
                            lambda: doubles_moves(board, remaining, live, m))

    @one.def_vmap
    def batched(axis_size, in_batched, board, remaining, live):
        args = [x if batched_ else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))
                for x, batched_ in zip((board, remaining, live), in_batched)]
        out = _pooled(*args, m)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return one


def complete_moves(board: Array, remaining: Array, live: Array,
                   max_afterstates: int = DEFAULT_MAX_AFTERSTATES) -> tuple[Level, Array]:
    """The distinct results of every complete legal move from (board, dice left).

    board int32[28] from the mover's side, remaining int32[6], live bool (False: a chance or
    finished state, every slot invalid). Returns a `Level` of `max_afterstates` slots (the
    result boards still from the mover's side, `remaining` the dice left unplayable, `actions`
    the env micro-actions reaching each; a player without a move gets the position unchanged
    and the pass) and the overflow flag. Jittable; vmap over a batch (one vmap pools the
    batch's doubles, `_pooled`; flatten nested batch axes into one to get that)."""
    level_sizes(max_afterstates)
    return _complete_moves_fn(int(max_afterstates))(
        jnp.asarray(board, jnp.int32), jnp.asarray(remaining, jnp.int32), jnp.asarray(live, jnp.bool_))


__all__ = ["DEFAULT_MAX_AFTERSTATES", "FIRST_WIDTH", "Level", "MAX_DICE", "WIDTH",
           "complete_moves", "doubles_moves", "level_moves", "level_sizes", "two_dice_moves"]
