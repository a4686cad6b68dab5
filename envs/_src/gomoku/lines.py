"""Lines of stones on a gomoku board: the win check and the chain profile (docs/gomoku.md).

A *chain* is a maximal run of one player's stones along one of the four directions (a row, a
column, a diagonal, an anti-diagonal). Its length is counted with a cap: every run of at least
`win_length` stones counts at index `win_length` (only the winner can hold one, and the winner
is ranked first whatever its profile).

Two ways to the same counts:

* `arms` / `add_stone_counts`: what one new stone changes, reading only the `2 * (W - 1)` cells
  on each of the four lines through it. This is what `step` runs: O(W) work per move whatever
  the board size, so a 100x100 board costs no more per move than a 9x9 one.
* `chain_counts`: the whole board from scratch (shifted-and over the board, O(S^2 W)); the
  definition the incremental counts are tested against, and the way to count a board given as
  a position.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import custom_batching

from envs._src.gomoku import batching

Array = jax.Array

EMPTY = 0  # a board cell with no stone; player p's stones are p + 1
# (row step, column step) of the four line directions: row, column, diagonal, anti-diagonal
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def arms(board: Array, row: Array, col: Array, stone: Array, win_length: int) -> Array:
    """int32[4, 2]: per direction, how many `stone`s follow (row, col) going forward and going
    backward along it, each capped at `win_length - 1` (the cells read).

    board: int8[S, S]. The cell (row, col) itself is not read. One game: `arms_cells`; under
    `vmap` over boards, `batched_arms`.
    """
    return _arms_fn(win_length)(board, row, col, stone)


def arms_cells(board: Array, row: Array, col: Array, stone: Array, win_length: int) -> Array:
    """`arms` as a gather of the 8 (W - 1) cells (the definition; one game)."""
    size = board.shape[0]
    k = jnp.arange(1, win_length)  # [W - 1] distances from the stone
    d = jnp.asarray(DIRECTIONS, jnp.int32)  # [4, 2]
    sign = jnp.asarray((1, -1), jnp.int32)  # forward, backward
    # [4, 2, W - 1] cells along each direction and sense
    rows = row + sign[None, :, None] * d[:, 0, None, None] * k[None, None, :]
    cols = col + sign[None, :, None] * d[:, 1, None, None] * k[None, None, :]
    on = (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
    same = on & (board[jnp.clip(rows, 0, size - 1), jnp.clip(cols, 0, size - 1)] == stone)
    return _leading(same)


def _leading(same: Array) -> Array:
    """int32[...]: the leading Trues along the last axis (the run stops at the first cell
    that is not ours), unrolled: a cumprod is a reduce-window, which XLA:CPU ran as its own
    slow loop under vmap."""
    run = same[..., 0]
    count = run.astype(jnp.int32)
    for k in range(1, same.shape[-1]):
        run = run & same[..., k]
        count = count + run
    return count


def batched_arms(boards: Array, rows: Array, cols: Array, stones: Array,
                 win_length: int) -> Array:
    """int32[B, 4, 2]: `arms_cells` of B boards [B, S, S] at (rows, cols) [B] for stones [B].

    As `view.batched_windows`: a gather of single cells with computed indices is slow on
    XLA:CPU, one of long contiguous slices runs at memory speed. Each game reads one slice of
    the boards laid end to end, from (row - W + 1, col - W + 1) to (row + W - 1, col + W - 1)
    in row-major order; the four lines through the stone are then fixed strided slices of it
    (a row, a column, the diagonal, the anti-diagonal), and their cells off the board are
    masked by their coordinates. Only the first and the last game can reach beyond the whole
    array: theirs are gathered cell by cell.
    """
    num, size = boards.shape[0], boards.shape[1]
    n = win_length - 1
    span = 2 * n + 1  # cells of a line, the stone in the middle
    length = 2 * n * size + span
    starts = batching.computed_once(jnp.arange(num, dtype=jnp.int32) * (size * size)
                                    + (rows - n) * size + (cols - n))
    chunks = jax.lax.gather(
        boards.reshape(-1), starts[:, None],
        jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                       start_index_map=(0,)),
        slice_sizes=(length,), mode=jax.lax.GatherScatterMode.CLIP)  # [B, length]
    # line t of direction (dr, dc) is the cell (row + (t - n) dr, col + (t - n) dc)
    last = 2 * n * size + 2 * n + 1
    cells = jnp.stack([
        chunks[:, n * size:n * size + span],            # (0, 1): the row
        chunks[:, n:n + 2 * n * size + 1:size],         # (1, 0): the column
        chunks[:, 0:last:size + 1],                     # (1, 1): the diagonal
        chunks[:, 2 * n:2 * n * size + 1:size - 1],     # (1, -1): the anti-diagonal
    ], axis=1)  # [B, 4, span]
    d = jnp.asarray(DIRECTIONS, jnp.int32)
    t = jnp.arange(span, dtype=jnp.int32) - n
    line_rows = rows[:, None, None] + d[None, :, 0, None] * t
    line_cols = cols[:, None, None] + d[None, :, 1, None] * t
    on = (line_rows >= 0) & (line_rows < size) & (line_cols >= 0) & (line_cols < size)
    same = on & (cells == stones[:, None, None].astype(cells.dtype))
    out = jnp.stack([_leading(same[..., n + 1:]), _leading(same[..., n - 1::-1])], axis=-1)
    ends = jnp.array([0, num - 1])
    exact = jax.vmap(arms_cells, in_axes=(0, 0, 0, 0, None))(
        boards[ends], rows[ends], cols[ends], stones[ends], win_length)
    return out.at[ends].set(exact)


@functools.lru_cache(maxsize=None)
def _arms_fn(win_length: int):
    # jitted: the direction table stays a constant of its own jaxpr (see batching.when)
    cells = jax.jit(functools.partial(arms_cells, win_length=win_length))

    @custom_batching.custom_vmap
    def arms_of(board, row, col, stone):
        return cells(board, row, col, stone)

    @arms_of.def_vmap
    def _batched(axis_size, in_batched, board, row, col, stone):
        if not in_batched[0]:  # one board, many cells (the line-extender's candidates)
            return jax.vmap(cells, in_axes=(None,) + tuple(0 if b else None
                                                           for b in in_batched[1:]))(
                board, row, col, stone), True
        row, col, stone = (x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))
                           for x, b in zip((row, col, stone), in_batched[1:]))
        return jax.jit(batched_arms, static_argnums=4)(board, row, col, stone,
                                                          win_length), True

    return arms_of


def longest_through(arm_counts: Array) -> Array:
    """int32: the longest line through the new stone, each arm counted up to W - 1 cells
    (`arms`): exact below W, and >= W exactly when the stone makes a line of W or more."""
    return 1 + jnp.max(jnp.sum(arm_counts, axis=-1))


def add_stone_counts(counts: Array, arm_counts: Array, win_length: int) -> Array:
    """One player's chain counts after it places a stone with these `arms`.

    counts: int32[W + 1], counts[L] = chains of length L (index W: W or more; index 0 unused).
    In each direction the new stone joins the run behind it (length b) and the run ahead of
    it (length f) into one run of length b + f + 1. The runs it joins were shorter than W
    (else the game would have ended), so their capped lengths are exact.
    """
    fwd, back = arm_counts[:, 0], arm_counts[:, 1]  # [4]
    lengths = jnp.arange(win_length + 1)
    joined = jnp.minimum(fwd + back + 1, win_length)
    gone = (lengths[None, :] == fwd[:, None]) & (fwd[:, None] > 0)
    gone = gone.astype(jnp.int32) + ((lengths[None, :] == back[:, None]) & (back[:, None] > 0))
    made = (lengths[None, :] == joined[:, None]).astype(jnp.int32)
    return counts + jnp.sum(made - gone, axis=0)


def chain_counts(board: Array, num_players: int, win_length: int) -> Array:
    """int32[P, W + 1]: every player's chain counts on a whole board, from scratch.

    For each direction, a chain starts at a stone whose predecessor on the line is not the
    same player's; its capped length is how many of the next W cells (itself included) are
    all that player's (shifted-and, W shifts per direction).
    """
    size = board.shape[0]
    owners = jnp.arange(1, num_players + 1, dtype=board.dtype)
    mine = board[None, :, :] == owners[:, None, None]  # [P, S, S]
    # pad by W on every side so that shifts never wrap
    pad = win_length
    padded = jnp.pad(mine, ((0, 0), (pad, pad), (pad, pad)))

    def shifted(dr: int, dc: int, k: int) -> Array:
        # [P, S, S]: mine at (r + k dr, c + k dc)
        r0, c0 = pad + k * dr, pad + k * dc
        return padded[:, r0:r0 + size, c0:c0 + size]

    lengths = jnp.arange(win_length + 1)
    total = jnp.zeros((num_players, win_length + 1), jnp.int32)
    for dr, dc in DIRECTIONS:
        start = mine & ~shifted(dr, dc, -1)
        run = mine
        length = jnp.zeros(mine.shape, jnp.int32)
        for k in range(win_length):
            if k:
                run = run & shifted(dr, dc, k)
            length = length + run
        hist = (start[..., None] & (length[..., None] == lengths)).astype(jnp.int32)
        total = total + jnp.sum(hist, axis=(1, 2))
    return total
