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

The fallback reads the per-row empty counts the state keeps, then one row: O(S) per move.
`vmap` turns a `cond` into a `select`, so whatever the fallback costs is paid on every move
although it is rarely needed. Measured at 100x100, view 21, random play, 2 CPU cores: about
300-450k transitions per CPU-second with this rule, the same as with no fallback at all, and
about 47k with a whole-board nearest-empty (Chebyshev) search (docs/benchmarks.md, "Gomoku").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envs._src.gomoku.lines import EMPTY

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
    """int8[V, V]: the board under the view (OFF_BOARD beyond the edge); a gather of V^2
    cells, whatever the board size."""
    size = board.shape[0]
    rows, cols = window_coords(centre, view)
    on = (((rows >= 0) & (rows < size))[:, None] & ((cols >= 0) & (cols < size))[None, :])
    cells = board[jnp.clip(rows, 0, size - 1)[:, None], jnp.clip(cols, 0, size - 1)[None, :]]
    return jnp.where(on, cells, jnp.int8(OFF_BOARD)).astype(board.dtype)


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


def thumbnail_block(size: int, view: int) -> int:
    """Board cells per thumbnail cell side: the thumbnail is V x V and covers the board."""
    return -(-size // view)


def observation(board: Array, centre: Array, player: Array, num_players: int,
                view: int) -> Array:
    """float32[V, V, 2 P + 4] from `player`'s seat (layout in docs/gomoku.md):

    local view: 0..P-1 the stones of `player`, the next player, (the previous player); P empty
    board cells; P + 1 cells off the board.
    thumbnail of the whole board (V x V blocks of `thumbnail_block` cells): P + 2 .. 2 P + 1
    the share of each block held by `player`, next, (previous); 2 P + 2 the share of the block
    on the board; 2 P + 3 the share of the block under the local view.
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

    # thumbnail: the int8 board cut into blocks once (padding marked OFF_BOARD), each plane a
    # compare and an integer count per block. Counting in int32 and dividing once took 13 us
    # per 100x100 observation on CPU; a float32 mean over the blocks took 115 us.
    block = thumbnail_block(size, view)
    pad = view * block - size
    blocks = jnp.pad(board, ((0, pad), (0, pad)), constant_values=OFF_BOARD).reshape(
        view, block, view, block)
    counts = [jnp.sum(blocks == stones[k], axis=(1, 3), dtype=jnp.int32)
              for k in range(num_players)] + [jnp.sum(blocks != OFF_BOARD, axis=(1, 3),
                                                      dtype=jnp.int32)]
    shares = jnp.stack(counts, axis=-1).astype(jnp.float32) / (block * block)  # [V, V, P + 1]
    # the view's share of each block: rows covered times columns covered, from the ranges
    rows, cols = window_coords(centre, view)
    first = jnp.arange(view) * block  # [V] the first board row (column) of each block

    def covered(lo: Array, hi: Array) -> Array:  # [V] cells of each block within [lo, hi]
        lo, hi = jnp.maximum(lo, 0), jnp.minimum(hi, size - 1)
        return jnp.clip(jnp.minimum(first + block - 1, hi) - jnp.maximum(first, lo) + 1, 0)

    in_view = (covered(rows[0], rows[-1])[:, None] * covered(cols[0], cols[-1])[None, :]
               ).astype(jnp.float32) / (block * block)
    return jnp.concatenate([local_planes, shares, in_view[..., None]], axis=-1)
