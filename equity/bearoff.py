"""gnubg's bear-off databases as a jittable evaluator of bear-off positions.

    from equity.bearoff import load_bearoff_table, bearoff_value, flip_value
    table = load_bearoff_table()                     # once per process (needs gnubg-nn)
    is_bo, v = jax.jit(bearoff_value)(table, board)  # board int32[..., 28], mover on roll
    # v float32[..., 4] = [win, gam_win_cond, gam_loss_cond, bg_rate] for the mover

Boards are the env's layout (`envs/backgammon/rules.py`): int32[28] seen from the mover,
`board[0..23]` the mover's points 1..24 (mover's checkers positive, opponent's negative),
`board[24]` the mover's bar, `board[25]` the opponent's bar (<= 0), `board[26]` / `board[27]`
the checkers borne off (mover >= 0, opponent <= 0).

The database (`gnubg_os0.bd`, shipped in the gnubg-nn wheel) holds, for each of the 54,264
ways to place 0..15 checkers on 6 home points, the distribution of the number of rolls needed
to bear off every checker and of the number of rolls needed to bear off the first checker
(gnubg's "gammon distribution"), each as 16-bit counts out of 65535. The two races are
independent once there is no contact, so the value of a position follows from the two sides'
distributions alone. Where both sides have at most 6 checkers left, gnubg's two-sided database
(`gnubg_ts0.bd`, same wheel) gives the winning chance under optimal play of both sides, and
it is used there instead, as gnubg itself does (docs/equity.md, "Bear-off database", for what
is exact and what is not).
"""

from __future__ import annotations

import dataclasses

import functools
import math
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from equity import _checks

HOME_POINTS = 6
MAX_CHECKERS = 15
NUM_POSITIONS = 54264  # C(15 + 6, 6): 0..15 checkers on 6 points
MAX_ROLLS = 32  # the database's distributions have 32 slots: 0..31 rolls
TWO_SIDED_POSITIONS = 924  # C(6 + 6, 6): 0..6 checkers; the one-sided ids below 924 are these

_HEADER = b"gnubg-OS-06-15-1-1-0"  # one-sided, 6 points, 15 checkers, gammons, compressed, not ND
_TS_HEADER = b"gnubg-TS-06-06-1"  # two-sided, 6 points, 6 checkers, cubeful (4 equities each)
_INSTALL_HINT = 'bear-off database needs gnubg-nn: pip install -e ".[backgammon]"'

# BINOMIAL[n, r] = C(n, r) (0 for n < r). gnubg's one-sided index is a combinatorial number:
# the 6 points and the checkers are written as a row of 21 slots (checkers of point 1, a
# separator, checkers of point 2, ... ), and the index ranks the set of separator slots. With
# s_k = (5 - k) + (checkers on points k+1..6), the index is sum_k C(s_k, 6 - k); s_0 <= 20.
_BINOMIAL = np.array([[math.comb(n, r) for r in range(HOME_POINTS + 1)]
                      for n in range(MAX_CHECKERS + HOME_POINTS)], dtype=np.int32)  # [21, 7]


class BearoffTable(NamedTuple):
    """gnubg's bear-off databases, indexed by the one-sided position id.

    `off[i, n]`: P(all checkers of position `i` are off after exactly `n` rolls).
    `first_off[i, n]`: P(the first checker is off after exactly `n` rolls); a position with
    fewer than 15 checkers (one already off) has `first_off[i, 0] = 1`.
    Both `float32[54264, 32]`, each row summing to 1 (the file's 16-bit counts / 65535). Id 0 is
    the empty position (everything off: 1 at `n = 0`).
    `two_sided[i, j]`: P(the player on roll with home board `i` beats an opponent with home
    board `j`) under optimal play of both, for `i, j < 924` (at most 6 checkers each);
    `float32[924, 924]`, from gnubg's two-sided database.

    A NamedTuple of jax arrays is a pytree: pass it to jitted functions as an argument (passing
    it keeps the 17 MB out of the compiled program, closing over it would embed it).
    """

    off: jax.Array  # float32 [54264, 32]
    first_off: jax.Array  # float32 [54264, 32]
    two_sided: jax.Array  # float32 [924, 924]


def _data_folder() -> str:
    """The gnubg-nn package's data folder (gnubg-nn is imported here only: it is optional)."""
    try:
        import gnubg_nn
    except ImportError:
        raise ValueError(_INSTALL_HINT) from None
    return os.path.join(os.path.dirname(os.path.abspath(gnubg_nn.__file__)), "data")


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"cannot read gnubg's bear-off database {path}: {e}") from None


def _scatter(data: np.ndarray, start: np.ndarray, count: np.ndarray,
             first_slot: np.ndarray) -> np.ndarray:
    """uint16[N, 32]: row i gets data[start[i] : start[i] + count[i]] at slots
    first_slot[i] ..., the rest 0 (the file keeps only each distribution's non-zero run)."""
    n = len(count)
    rows = np.repeat(np.arange(n), count)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    out = np.zeros((n, MAX_ROLLS), dtype=np.uint16)
    out[rows, np.repeat(first_slot, count) + within] = data[np.repeat(start, count) + within]
    return out


def _read_database(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The two distributions of every position as uint16 counts, each [54264, 32].

    File layout (gnubg's bearoff.c, compressed one-sided database with gammons): a 40-byte
    text header; an index of 8 bytes per position (little-endian uint32 offset, counted in
    uint16 entries from the start of the data; the length and first roll count of the bear-off
    distribution's non-zero run; the same two for the first-checker distribution); then the
    data, little-endian uint16, each position's bear-off run followed by its first-off run.
    """
    raw = _read_bytes(path)
    if not raw.startswith(_HEADER):
        raise ValueError(f"{path}: header {raw[:20]!r}, expected {_HEADER!r} (a compressed "
                         "one-sided 6-point 15-checker database with gammon distributions)")
    data_start = 40 + 8 * NUM_POSITIONS
    if len(raw) < data_start or (len(raw) - data_start) % 2:
        raise ValueError(f"{path}: {len(raw)} bytes cannot hold {NUM_POSITIONS} positions")
    index = np.frombuffer(raw, dtype=np.uint8, count=8 * NUM_POSITIONS, offset=40)
    index = index.reshape(NUM_POSITIONS, 8)  # [N, 8]
    offset = index[:, :4].astype(np.int64) @ (256 ** np.arange(4, dtype=np.int64))  # [N]
    nz, first, nz_g, first_g = (index[:, k].astype(np.int64) for k in (4, 5, 6, 7))
    data = np.frombuffer(raw, dtype="<u2", offset=data_start)
    if (np.any(first + nz > MAX_ROLLS) or np.any(first_g + nz_g > MAX_ROLLS)
            or np.any(offset + nz + nz_g > len(data))):
        raise ValueError(f"{path}: index entries point outside the distributions or the file")
    off = _scatter(data, offset, nz, first)
    first_off = _scatter(data, offset + nz, nz_g, first_g)
    # gnubg stores each distribution scaled to 65535; a row far from it means a damaged file.
    for name, counts in (("bear-off", off), ("first-checker", first_off)):
        totals = counts.sum(axis=1, dtype=np.int64)
        if np.any(np.abs(totals - 65535) > MAX_ROLLS):
            bad = int(np.argmax(np.abs(totals - 65535)))
            raise ValueError(f"{path}: {name} distribution of position {bad} sums to "
                             f"{totals[bad]} / 65535")
    return off, first_off


def _read_two_sided(path: str) -> np.ndarray:
    """uint16[924, 924]: the cubeless entry of gnubg's two-sided database, indexed (player on
    roll, opponent). gnubg's bearoff.c: a 40-byte header, then 4 little-endian uint16 per pair
    of positions (cubeless, then three cubeful equities), the pair at `on_roll * 924 + opp`;
    the cubeless equity is `u / 32767.5 - 1`, so with no gammon possible P(win) = u / 65535."""
    raw = _read_bytes(path)
    if not raw.startswith(_TS_HEADER):
        raise ValueError(f"{path}: header {raw[:16]!r}, expected {_TS_HEADER!r} (a cubeful "
                         "two-sided 6-point 6-checker database)")
    size = 40 + 2 * 4 * TWO_SIDED_POSITIONS ** 2
    if len(raw) != size:
        raise ValueError(f"{path}: {len(raw)} bytes, expected {size}")
    entries = np.frombuffer(raw, dtype="<u2", offset=40)
    return entries.reshape(TWO_SIDED_POSITIONS, TWO_SIDED_POSITIONS, 4)[..., 0]


@functools.lru_cache(maxsize=1)
def load_bearoff_table() -> BearoffTable:
    """gnubg's bear-off databases as a `BearoffTable` (read once per process).

    Reads `gnubg_os0.bd` and `gnubg_ts0.bd` from the gnubg-nn package (about 0.4 s, so no
    cache on disk). A missing gnubg-nn raises `ValueError` with the install command; a file
    that is not the expected database raises `ValueError` naming it.
    """
    folder = _data_folder()
    off, first_off = _read_database(os.path.join(folder, "gnubg_os0.bd"))
    two_sided = _read_two_sided(os.path.join(folder, "gnubg_ts0.bd"))
    return BearoffTable(off=jnp.asarray(off, jnp.float32) / 65535.0,
                        first_off=jnp.asarray(first_off, jnp.float32) / 65535.0,
                        two_sided=jnp.asarray(two_sided, jnp.float32) / 65535.0)


def _check_board(board: Any) -> jax.Array:
    """Shape and dtype always (static); checker counts when the board is concrete."""
    shape = np.shape(board)
    if len(shape) == 0 or shape[-1] != 28:
        raise ValueError(f"board must have shape (..., 28) (the env's layout), got shape "
                         f"{tuple(shape)}")
    dtype = board.dtype if hasattr(board, "dtype") else np.asarray(board).dtype
    if not jnp.issubdtype(dtype, jnp.integer):
        raise ValueError(f"board must hold integer checker counts, got dtype {dtype}")
    values = _checks.concrete(board)
    if values is not None:
        b = values.reshape(-1, 28).astype(np.int64)
        mine = np.maximum(b[:, :24], 0).sum(1) + b[:, 24] + b[:, 26]
        theirs = np.maximum(-b[:, :24], 0).sum(1) - b[:, 25] - b[:, 27]
        bad_sign = (b[:, 24] < 0) | (b[:, 25] > 0) | (b[:, 26] < 0) | (b[:, 27] > 0)
        bad = bad_sign | (mine != MAX_CHECKERS) | (theirs != MAX_CHECKERS)
        if np.any(bad):
            k = int(np.argmax(bad))
            raise ValueError(
                f"board {b[k].tolist()} is not a backgammon position: each side needs 15 "
                f"checkers (points + bar + off; here {mine[k]} and {theirs[k]}), bars and "
                "borne-off counts signed mover >= 0, opponent <= 0")
    return jnp.asarray(board)


def _one_sided_index(counts: jax.Array) -> jax.Array:
    """int32[...]: gnubg's one-sided id of `counts` int32[..., 6] (points 1..6, total <= 15)."""
    suffix = jnp.cumsum(counts[..., ::-1], axis=-1)[..., ::-1]  # [..., 6]: on points k+1..6
    k = jnp.arange(HOME_POINTS)
    slot = jnp.clip(HOME_POINTS - 1 - k + suffix, 0, _BINOMIAL.shape[0] - 1)  # [..., 6]
    return jnp.sum(jnp.asarray(_BINOMIAL)[slot, HOME_POINTS - k], axis=-1).astype(jnp.int32)


def bearoff_index(board: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`(is_bearoff bool[...], my_id int32[...], opp_id int32[...])` of boards int32[..., 28].

    A bear-off position: neither side has a checker outside its home board (mover:
    `board[0..5]`, opponent: `board[18..23]`) or on the bar, so no contact is possible, and
    both still have a checker on the board (a finished game has a result, not a value).
    `my_id` / `opp_id` are gnubg's one-sided ids of the mover's and the opponent's home boards
    (the ids `gnubg_nn.bearoff_id_2_pos` inverts), 0 where `is_bearoff` is False.

    Runs under `jit` and `vmap`. A last axis other than 28 or a non-integer dtype raises
    `ValueError`; a concrete board must also have 15 checkers a side. Traced boards are not
    checked: a side with more than 15 checkers on its home board is not a bear-off position,
    one with fewer than 15 in all counts the missing ones as borne off.
    """
    return _index(_check_board(board))


def _index(b: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`bearoff_index` of a checked board."""
    mine = jnp.maximum(b[..., :HOME_POINTS], 0)  # [..., 6]: the mover's points 1..6
    theirs = jnp.maximum(-b[..., 23:17:-1], 0)  # [..., 6]: the opponent's points 1..6
    mover_out = jnp.any(b[..., HOME_POINTS:24] > 0, axis=-1) | (b[..., 24] > 0)
    opp_out = jnp.any(b[..., :18] < 0, axis=-1) | (b[..., 25] < 0)
    n_mine = mine.sum(-1)
    n_theirs = theirs.sum(-1)
    is_bearoff = (~mover_out & ~opp_out & (n_mine >= 1) & (n_theirs >= 1)
                  & (n_mine <= MAX_CHECKERS) & (n_theirs <= MAX_CHECKERS))
    my_id = jnp.where(is_bearoff, _one_sided_index(mine), 0)
    opp_id = jnp.where(is_bearoff, _one_sided_index(theirs), 0)
    return is_bearoff, my_id, opp_id


def _check_table(table: Any) -> None:
    if not isinstance(table, BearoffTable):
        raise ValueError(f"table must be a BearoffTable (load_bearoff_table()), got "
                         f"{type(table).__name__}")
    shapes = {"off": (NUM_POSITIONS, MAX_ROLLS), "first_off": (NUM_POSITIONS, MAX_ROLLS),
              "two_sided": (TWO_SIDED_POSITIONS, TWO_SIDED_POSITIONS)}
    for name, want in shapes.items():
        shape = np.shape(getattr(table, name))
        if shape != want:
            raise ValueError(f"table.{name} must have shape {want}, got {shape}")


def _at_least(dist: jax.Array) -> jax.Array:
    """[..., 32] exactly-n distribution -> [..., 33] P(needs >= n rolls), n = 0..32."""
    tail = jnp.cumsum(dist[..., ::-1], axis=-1)[..., ::-1]
    return jnp.concatenate([tail, jnp.zeros_like(tail[..., :1])], axis=-1)


def race_probabilities(my_off: jax.Array, my_first: jax.Array, opp_off: jax.Array,
                       opp_first: jax.Array) -> tuple[jax.Array, ...]:
    """`(win, gammon_win, loss, gammon_loss)`, each [...], for the side on roll from the two
    sides' distributions (each [..., 32], exactly-n rolls, as in `BearoffTable`).

    The side on roll finishes on its n-th roll before the opponent's n-th: it wins when it
    needs n rolls and the opponent at least n; it wins a gammon when the opponent's first
    checker also needs at least n rolls; it loses when the opponent needs n and it more than n,
    a gammon when its own first checker needs more than n. (gnubg's bearoff.c, one-sided
    evaluation.) The loss is summed, not taken as 1 - win, to keep its precision near 0.
    """
    opp_left = _at_least(opp_off)  # [..., 33]
    opp_first_left = _at_least(opp_first)
    my_left = _at_least(my_off)
    my_first_left = _at_least(my_first)
    win = jnp.sum(my_off * opp_left[..., :-1], axis=-1)
    gammon_win = jnp.sum(my_off * opp_first_left[..., :-1], axis=-1)
    loss = jnp.sum(opp_off * my_left[..., 1:], axis=-1)
    gammon_loss = jnp.sum(opp_off * my_first_left[..., 1:], axis=-1)
    return win, gammon_win, loss, gammon_loss


def _ratio(num: jax.Array, den: jax.Array) -> jax.Array:
    """num / den in [0, 1], 0 where den is 0 (the value format's convention for a conditional
    whose condition cannot happen); the double `where` keeps gradients finite."""
    safe = jnp.where(den > 0, den, 1.0)
    return jnp.where(den > 0, jnp.clip(num / safe, 0.0, 1.0), 0.0)


def bearoff_value(table: BearoffTable, board: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(is_bearoff bool[...], value float32[..., 4])` for boards int32[..., 28], the mover on
    roll (about to roll the dice).

    `value = [win, gam_win_cond, gam_loss_cond, bg_rate]` for the mover: where both sides have
    at most 6 checkers left, `win` is the two-sided database's (optimal play; no gammon is
    possible there); elsewhere all comes from the one-sided database (`race_probabilities`).
    This is what gnubg's 0-ply evaluation does in these positions. A conditional whose
    condition has probability 0 is 0 (as in `equity.gnubg_to_value_outputs`), so
    `gam_win_cond` is 0 when the mover cannot win.
    `bg_rate` is 0: in a bear-off position nobody has a checker in the winner's home board or
    on the bar, so no backgammon is possible. Where `is_bearoff` is False the value is all 0s
    (use it only where `is_bearoff` holds).

    For an afterstate (the mover has just moved, the opponent rolls next) use
    `flip_value(bearoff_value(table, rules.flip(board))[1])`.

    Runs under `jit` and `vmap`; pass `table` as an argument. Bad shapes, dtypes and (concrete)
    checker counts raise `ValueError`, as in `bearoff_index`.
    """
    _check_table(table)
    is_bearoff, my_id, opp_id = _index(_check_board(board))
    win, gammon_win, loss, gammon_loss = race_probabilities(
        table.off[my_id], table.first_off[my_id], table.off[opp_id], table.first_off[opp_id])
    # Both sides within the two-sided database: its exact winning chance replaces the one-sided
    # estimate; the one-sided gammon chances are 0 there too (each side has borne off 9+).
    small = (my_id < TWO_SIDED_POSITIONS) & (opp_id < TWO_SIDED_POSITIONS)
    last = TWO_SIDED_POSITIONS - 1
    exact_win = table.two_sided[jnp.minimum(my_id, last), jnp.minimum(opp_id, last)]
    win = jnp.where(small, exact_win, win)
    loss = jnp.where(small, 1.0 - exact_win, loss)
    # win + loss = 1 up to float32 rounding (each row of the table sums to 1).
    value = jnp.stack([jnp.clip(win, 0.0, 1.0), _ratio(gammon_win, win),
                       _ratio(gammon_loss, loss), jnp.zeros_like(win)], axis=-1)
    return is_bearoff, jnp.where(is_bearoff[..., None], value, 0.0)


def flip_value(value_probs: jax.Array) -> jax.Array:
    """A 4-way value `(..., 4)` for the other player: `[1 - win, gam_loss_cond, gam_win_cond,
    bg_rate]` (exact: the other side's win is this side's loss, its gammons this side's gammon
    losses, and the backgammon rate is shared by wins and losses). Its own inverse."""
    _checks.last_axis_4("value_probs", value_probs)
    _checks.probabilities("value_probs", value_probs)
    v = jnp.asarray(value_probs)
    return jnp.stack([1.0 - v[..., 0], v[..., 2], v[..., 1], v[..., 3]], axis=-1)


@dataclasses.dataclass(frozen=True)
class BearoffExact:
    """Bear-off positions valued from the database instead of the network, for the
    complete-move players and afterstate TD (`AfterstatePlayerConfig(exact=BearoffExact())`):
    in play and in the TD targets.

    `value_out(states)` -> (known bool[...], logits float32[..., 4]) for the player to move
    at each state (the 4-way probabilities as logits, so that they pass through the value
    format as the network's outputs do); `known` is False off the database."""

    def value_out(self, states: Any) -> tuple[jax.Array, jax.Array]:
        known, probs = bearoff_value(load_bearoff_table(), states.board)
        p = jnp.clip(probs, 1e-6, 1.0 - 1e-6)
        return known, jnp.log(p) - jnp.log1p(-p)
