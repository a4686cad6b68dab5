"""Lines of stones on a gomoku board: the win check and the chain profile (docs/gomoku.md).

A *chain* is a maximal run of one player's stones along one of the four directions (a row, a
column, a diagonal, an anti-diagonal). Its length is counted with a cap: every run of at least
`win_length` stones counts at index `win_length` (only the winner can hold one, and the winner
is ranked first whatever its profile).

Two ways to the same counts:

* `arms` / `add_stone_counts`: what one new stone changes, reading only the `2 * (W - 1)` cells
  on each of the four lines through it. This is what `step` runs: O(W) work per move whatever
  the board size, so a 100x100 board costs no more per move than a 9x9 one. Under `vmap` the
  cells are read as contiguous slices of the batch's boards (`batched_arms`), or taken from
  the view window around the stone when the lines fit in it (`arms_in_window`).
* `chain_counts`: the whole board from scratch (shifted-and over the board, O(S^2 W)); the
  definition the incremental counts are tested against, and the way to count a board given as
  a position.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import custom_batching

from envs.gomoku import batching

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


def slices_at(boards: Array, starts: Array, length: int) -> Array:
    """int8[*starts.shape, length]: `length` cells of the boards [B, S, S] laid end to end
    (one flat array) from each flat index in `starts` (int32[B, ...]).

    Why: a gather of single cells with computed indices runs at a few ns per cell on XLA:CPU
    (under `vmap`, the view's windows and the lines through the new stone were most of a
    batched move; docs/benchmarks.md, "Gomoku"), one of contiguous slices much faster.
    Callers pick starts so that the cells they want sit at fixed offsets of the slices, and
    mask those off the board by their coordinates. The starts are clamped into the array
    (only the first and the last game can reach beyond it: callers read those two games cell
    by cell) and computed once (`batching.materialised`), so the gather neither checks
    bounds nor recomputes an index per cell.
    """
    total = boards.shape[0] * boards.shape[1] * boards.shape[2]
    starts = batching.materialised(jnp.clip(starts, 0, total - length))
    return jax.lax.gather(
        boards.reshape(-1), starts[..., None],
        jax.lax.GatherDimensionNumbers(offset_dims=(starts.ndim,), collapsed_slice_dims=(),
                                       start_index_map=(0,)),
        slice_sizes=(length,), mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _lines_in(flat: Array, stride: int, origin: int, win_length: int) -> Array:
    """[B, 4, 2 W - 1]: the cells of the four lines through the cell at (origin, origin) of
    row-major 2-D arrays [B, ...] flattened with row stride `stride` (strided slices)."""
    n = win_length - 1
    span = 2 * n + 1  # cells of a line, the stone in the middle
    out = []
    for dr, dc in DIRECTIONS:  # cell t: (origin + (t - n) dr, origin + (t - n) dc)
        first = (origin - n * dr) * stride + (origin - n * dc)
        step = dr * stride + dc
        out.append(flat[:, first:first + step * (span - 1) + 1:step])
    return jnp.stack(out, axis=1)


def _arms_of_line_cells(same: Array, win_length: int) -> Array:
    n = win_length - 1
    return jnp.stack([_leading(same[..., n + 1:]), _leading(same[..., n - 1::-1])], axis=-1)


def arms_in_window(windows: Array, stones: Array, win_length: int) -> Array:
    """int32[B, 4, 2]: `arms` read from each game's view window around the stone (int8
    [B, V, V] centred on it, OFF_BOARD beyond the edge; needs W - 1 <= V // 2): the four
    lines are fixed strided slices of the window, whose off-board cells are never a stone."""
    num, view = windows.shape[0], windows.shape[1]
    cells = _lines_in(windows.reshape(num, view * view), view, view // 2, win_length)
    same = cells == stones[:, None, None].astype(cells.dtype)
    return _arms_of_line_cells(same, win_length)


def batched_arms(boards: Array, rows: Array, cols: Array, stones: Array,
                 win_length: int) -> Array:
    """int32[B, 4, 2]: `arms_cells` of B boards [B, S, S] at (rows, cols) [B] for stones [B],
    from one slice per game (`slices_at`) in which the four lines are fixed strided slices
    (their cells off the board masked by their coordinates); the first and the last game
    cell by cell."""
    num, size = boards.shape[0], boards.shape[1]
    if num < 2:  # one game (its slice may not fit its board): the cells
        return jax.vmap(arms_cells, in_axes=(0, 0, 0, 0, None))(boards, rows, cols, stones,
                                                                win_length)
    n = win_length - 1
    # one slice per game from (row - n, col - n) to (row + n, col + n) in row-major order
    starts = jnp.arange(num, dtype=jnp.int32) * (size * size) + (rows - n) * size + (cols - n)
    slices = slices_at(boards, starts, 2 * n * size + 2 * n + 1)
    cells = _lines_in(slices, size, n, win_length)  # [B, 4, 2 n + 1]
    d = jnp.asarray(DIRECTIONS, jnp.int32)
    t = jnp.arange(2 * n + 1, dtype=jnp.int32) - n
    line_rows = rows[:, None, None] + d[None, :, 0, None] * t
    line_cols = cols[:, None, None] + d[None, :, 1, None] * t
    on = (line_rows >= 0) & (line_rows < size) & (line_cols >= 0) & (line_cols < size)
    out = _arms_of_line_cells(on & (cells == stones[:, None, None].astype(cells.dtype)),
                              win_length)
    # the first and the last game, whose slices may have been clamped: cell by cell
    for b in (0, num - 1):
        out = out.at[b].set(arms_cells(boards[b], rows[b], cols[b], stones[b], win_length))
    return out


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
    # one term per direction, summed unrolled (under vmap a reduction over the 4 directions
    # was a slow loop of its own on XLA:CPU)
    delta = jnp.zeros_like(counts)
    for d in range(arm_counts.shape[0]):
        delta = (delta + (lengths == joined[d]) - ((lengths == fwd[d]) & (fwd[d] > 0))
                 - ((lengths == back[d]) & (back[d] > 0)))
    return counts + delta


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
