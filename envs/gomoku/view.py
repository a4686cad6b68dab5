"""The local view of a large gomoku board: its centre, the action <-> cell map, the legal
actions and the observation planes (docs/gomoku.md, "View centre" and "Observation").

The view is a V x V window (V odd, h = V // 2) centred on a board cell; local action
`a = i * V + j` is the cell `centre + (i - h, j - h)`. The window may cross the board's edge:
such cells are off the board, illegal, and marked in the observation's edge plane.

Centre rule (deterministic, clamped to the board):
* before the first stone: the board's centre cell (S // 2, S // 2);
* after a stone: that stone (the last move), when its window holds an empty cell;
* otherwise an empty cell near that stone: in the nearest row that has an empty cell (the
  upper one on a tie), the empty cell nearest to the stone's column (the left one on a tie).
  So the player to move always has a legal action while the board is not full. Both
  candidates are board cells, so the centre never leaves the board.

The fallback reads the per-row empty counts the state keeps, then one row: O(S) per move
(a whole-board nearest-empty search, the first version, cut random play 7x). `vmap` turns a
`cond` into a `select`, so whatever the fallback costs would be paid on every move although
it is rarely needed: `centre_and_mask` runs it, for the whole batch, only when some game of
the batch needs it. Under `vmap` the windows are read as contiguous slices of the batch's
boards (`batched_windows`), and the observation's thumbnail from per-block stone counts the
state keeps (docs/benchmarks.md, "Gomoku").
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import custom_batching

from envs.gomoku import lines
from envs.gomoku.lines import EMPTY

Array = jax.Array

OFF_BOARD = -1  # a view cell beyond the board's edge (`window`)
NO_CELL = -1  # `last_move` before the first stone


def start_centre(size: int) -> Array:
    """int32[2]: the centre of an empty board."""
    return jnp.full(2, size // 2, jnp.int32)


def window_coords(centre: Array, view: int) -> tuple[Array, Array]:
    """(rows int32[V], cols int32[V]): the board coordinates of the view's rows and columns."""
    offsets = jnp.arange(view, dtype=jnp.int32) - view // 2
    return centre[0] + offsets, centre[1] + offsets


def window(board: Array, centre: Array, view: int) -> Array:
    """int8[V, V]: the board under the view (OFF_BOARD beyond the edge), whatever the board
    size: `window_cells` for one game; under `vmap`, `batched_windows`."""
    return _window_fn(view)(board, centre)


def window_cells(board: Array, centre: Array, view: int) -> Array:
    """`window` as a gather of the V^2 cells (the definition; one game)."""
    size = board.shape[0]
    rows, cols = window_coords(centre, view)
    on = (((rows >= 0) & (rows < size))[:, None] & ((cols >= 0) & (cols < size))[None, :])
    cells = board[jnp.clip(rows, 0, size - 1)[:, None], jnp.clip(cols, 0, size - 1)[None, :]]
    return jnp.where(on, cells, jnp.int8(OFF_BOARD)).astype(board.dtype)


def batched_windows(boards: Array, centres: Array, view: int) -> Array:
    """int8[B, V, V]: `window_cells` of each of B boards [B, S, S] at its centre [B, 2].

    Each window row is read as one slice of V cells of the boards laid end to end, from the
    row's first column (`vmap(window_cells)` gathered cell by cell: a few ns a cell on
    XLA:CPU; docs/benchmarks.md, "Gomoku"). A start left of the board lies in the previous
    row's tail, a row running past the right edge into the next row's head: those cells sit
    beyond the board's columns and are masked by their coordinates, as are rows beyond the
    board (read at the nearest board row). Only the first and the last game can reach beyond
    the whole array, where the gather would move the slice: theirs are read cell by cell.
    """
    num, size = boards.shape[0], boards.shape[1]
    if num < 2:  # one game: the cells
        return jax.vmap(window_cells, in_axes=(0, 0, None))(boards, centres, view)
    h = view // 2
    offsets = jnp.arange(view, dtype=jnp.int32) - h
    rows, cols = centres[:, 0, None] + offsets, centres[:, 1, None] + offsets  # [B, V]
    starts = (jnp.arange(num, dtype=jnp.int32) * (size * size) + rows[:, 0] * size + cols[:, 0])
    cells = lines.slices_at(boards, starts, view * size).reshape(num, view, size)[:, :, :view]
    on = (((rows >= 0) & (rows < size))[:, :, None] & ((cols >= 0) & (cols < size))[:, None, :])
    out = jnp.where(on, cells, jnp.array(OFF_BOARD, boards.dtype))
    # the first and the last game, whose slices may have been clamped: cell by cell
    for b in (0, num - 1):
        out = out.at[b].set(window_cells(boards[b], centres[b], view))
    return out


def window_and_arms(board: Array, row: Array, col: Array, stone: Array, view: int,
                    win_length: int) -> tuple[Array, Array]:
    """(`window` at (row, col), `lines.arms` of `stone` at (row, col)): what a move reads
    around its new stone. When the lines fit the window (W - 1 <= V // 2), they are read
    from it (`lines.arms_in_window`) instead of from the board."""
    win = window(board, jnp.stack([row, col]), view)
    if win_length - 1 > view // 2:
        return win, lines.arms(board, row, col, stone, win_length)
    return win, lines.arms_in_window(win[None], stone[None], win_length)[0]


@functools.lru_cache(maxsize=None)
def _window_fn(view: int):
    @custom_batching.custom_vmap
    def win(board, centre):
        return window_cells(board, centre, view)

    @win.def_vmap
    def _batched(axis_size, in_batched, board, centre):
        board_batched, centre_batched = in_batched
        if not board_batched:  # one board seen from many centres
            return jax.vmap(window_cells, in_axes=(None, 0, None))(board, centre, view), True
        if not centre_batched:
            centre = jnp.broadcast_to(centre, (axis_size,) + jnp.shape(centre))
        return batched_windows(board, centre, view), True

    return win


def legal_mask(board: Array, centre: Array, view: int) -> Array:
    """bool[V * V]: the local actions on an empty board cell."""
    return (window(board, centre, view) == EMPTY).reshape(-1)


def action_cell(centre: Array, action: Array, view: int) -> tuple[Array, Array]:
    """(row, col) int32: the board cell of local `action` (possibly off the board)."""
    h = view // 2
    return centre[0] + action // view - h, centre[1] + action % view - h


def next_centre(board: Array, row_empties: Array, last: Array, view: int) -> Array:
    """int32[2]: the view centre after a stone was placed at `last` (the rule above).

    row_empties: int32[S], the empty cells of each board row.
    """
    has_empty = jnp.any(window(board, last, view) == EMPTY)
    size = board.shape[0]
    idx = jnp.arange(size, dtype=jnp.int32)
    # a full board has no empty cell, but then the game is over; argmin takes the first
    # minimum, hence the upper row and the left column on ties
    row = jnp.argmin(jnp.where(row_empties > 0, jnp.abs(idx - last[0]), 2 * size))
    line = jax.lax.dynamic_index_in_dim(board, row, axis=0, keepdims=False)  # [S]
    col = jnp.argmin(jnp.where(line == EMPTY, jnp.abs(idx - last[1]), 2 * size))
    fallback = jnp.stack([row, col]).astype(jnp.int32)
    return jnp.where(has_empty, last, fallback).astype(jnp.int32)


def centre_and_mask(board: Array, row_empties: Array, last: Array, view: int,
                    last_window: Array) -> tuple[Array, Array]:
    """(`next_centre`, `legal_mask` at that centre): what a move leaves for the next player.
    `last_window`: `window(board, last, view)` (the caller has read it, `window_and_arms`).

    Almost always the centre is the new stone and the mask is its window's empty cells; the
    fallback (a full window) is rare. Under `vmap` a `cond` becomes a `select` and both sides
    run for every game, so the batched rule (`custom_vmap`) runs the fallback, for the whole
    batch, only when some game needs it (one `cond` on the batch). Measured at 100x100, view
    21, batch 256 (docs/benchmarks.md, "Gomoku"): the second window gather and the
    fallback's two row searches were about half of a move's cost.
    """
    return _centre_and_mask_fn(view)(board, row_empties, last, last_window)


@functools.lru_cache(maxsize=None)
def _centre_and_mask_fn(view: int):
    def one(board, row_empties, last, win):
        mask = (win == EMPTY).reshape(-1)

        def fallback():
            centre = next_centre(board, row_empties, last, view)
            return centre, legal_mask(board, centre, view)

        return jax.lax.cond(jnp.any(mask), lambda: (last.astype(jnp.int32), mask), fallback)

    @custom_batching.custom_vmap
    def centre_mask(board, row_empties, last, win):
        return one(board, row_empties, last, win)

    @centre_mask.def_vmap
    def _batched(axis_size, in_batched, board, row_empties, last, win):
        board, row_empties, last, win = (
            x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))
            for x, b in zip((board, row_empties, last, win), in_batched))
        mask = (win == EMPTY).reshape(axis_size, -1)

        def some_full():  # every game's own rule (its cond a select), as unbatched
            return jax.vmap(one)(board, row_empties, last, win)

        # any() as a max over the mask's bytes and all() as a min: XLA:CPU reduced bools
        # twice as slowly
        has_empty = jnp.max(mask.view(jnp.uint8), axis=1)  # [B] 1 where an empty cell
        out = jax.lax.cond(jnp.min(has_empty) > 0,
                           lambda: (last.astype(jnp.int32), mask), some_full)
        return out, (True, True)

    return centre_mask


def thumbnail_block(size: int, view: int) -> int:
    """Board cells per thumbnail cell side: the thumbnail is V x V and covers the board."""
    return -(-size // view)


def thumbnail_dtype(size: int, view: int):
    """The smallest integer dtype that holds a block's stone count (block^2)."""
    area = thumbnail_block(size, view) ** 2
    return jnp.int8 if area <= 127 else jnp.int16 if area <= 32767 else jnp.int32


def thumbnail_counts(board: Array, num_players: int, view: int) -> Array:
    """int[V, V, P] (`thumbnail_dtype`): each seat's stones per thumbnail block, counted over
    the whole board. The state keeps these counts up to date one stone at a time
    (`block_of`); this is their definition, and how a position given as a board is counted."""
    size = board.shape[0]
    block = thumbnail_block(size, view)
    pad = view * block - size
    blocks = jnp.pad(board, ((0, pad), (0, pad)), constant_values=OFF_BOARD).reshape(
        view, block, view, block)
    stones = jnp.arange(1, num_players + 1, dtype=board.dtype)
    return jnp.stack([jnp.sum(blocks == stones[k], axis=(1, 3), dtype=jnp.int32)
                      for k in range(num_players)], axis=-1).astype(thumbnail_dtype(size, view))


def block_of(row: Array, col: Array, size: int, view: int) -> tuple[Array, Array]:
    """The thumbnail block of board cell (row, col)."""
    block = thumbnail_block(size, view)
    return row // block, col // block


def observation(board: Array, centre: Array, player: Array, num_players: int, view: int,
                block_counts: Array) -> Array:
    """float32[V, V, 2 P + 4] from `player`'s seat (layout in docs/gomoku.md):

    local view: 0..P-1 the stones of `player`, the next player, (the previous player); P empty
    board cells; P + 1 cells off the board.
    thumbnail of the whole board (V x V blocks of `thumbnail_block` cells): P + 2 .. 2 P + 1
    the share of each block held by `player`, next, (previous); 2 P + 2 the share of the block
    on the board; 2 P + 3 the share of the block under the local view.

    block_counts: int[V, V, P], each seat's stones per block (`thumbnail_counts`), kept in the
    state: the observation reads V^2 (P + 1) cells whatever the board size. Counting the
    board's blocks here instead (the first version) was most of the observation's cost at
    100x100 (docs/benchmarks.md, "Gomoku").
    """
    size = board.shape[0]
    seats = (player + jnp.arange(num_players)) % num_players  # [P] me, next, previous
    stones = (seats + 1).astype(board.dtype)
    local = window(board, centre, view)  # [V, V]
    local_planes = jnp.concatenate([
        local[..., None] == stones,
        (local == EMPTY)[..., None],
        (local == OFF_BOARD)[..., None],
    ], axis=-1).astype(jnp.float32)  # [V, V, P + 2]

    block = thumbnail_block(size, view)
    # x / block^2 as XLA:CPU compiled the first version's division: times the float32
    # reciprocal (bit for bit the same planes)
    inv_area = jnp.float32(1.0) / jnp.float32(block * block)
    # the seats' counts in (me, next, previous) order: a select per plane, no gather
    counts = [block_counts[..., 0]] * num_players
    for j in range(1, num_players):
        counts = [jnp.where(seats[k] == j, block_counts[..., j], counts[k])
                  for k in range(num_players)]
    first = jnp.arange(view) * block  # [V] the first board row (column) of each block

    def covered(lo: Array, hi: Array) -> Array:  # [V] cells of each block within [lo, hi]
        lo, hi = jnp.maximum(lo, 0), jnp.minimum(hi, size - 1)
        return jnp.clip(jnp.minimum(first + block - 1, hi) - jnp.maximum(first, lo) + 1, 0)

    on_board = covered(0, size - 1)  # [V] a constant: the share of each block on the board
    rows, cols = window_coords(centre, view)
    shares = jnp.stack(
        [c.astype(jnp.float32) for c in counts]
        + [(on_board[:, None] * on_board[None, :]).astype(jnp.float32),
           (covered(rows[0], rows[-1])[:, None] * covered(cols[0], cols[-1])[None, :]
            ).astype(jnp.float32)], axis=-1) * inv_area  # [V, V, P + 2]
    return jnp.concatenate([local_planes, shares], axis=-1)
