"""The local view of a large gomoku board: its centre, the action <-> cell map, the legal
actions and the observation planes (docs/gomoku.md, "View centre" and "Observation").

The view is a V x V window (V odd, h = V // 2) centred on a board cell; local action
`a = i * V + j` is the cell `centre + (i - h, j - h)`. The window may cross the board's edge:
such cells are off the board, illegal, and marked in the observation's edge plane.

Centre rule (deterministic, clamped to the board):
* before the first stone: the board's centre cell (S // 2, S // 2);
* after a stone: that stone (the last move), when its window holds an empty cell;
* otherwise the empty cell nearest to that stone (Chebyshev distance, ties to the first in
  row-major order), so that the player to move always has a legal action while the board is
  not full. Both candidates are board cells, so the centre never leaves the board.
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


def next_centre(board: Array, last: Array, view: int) -> Array:
    """int32[2]: the view centre after a stone was placed at `last` (the rule above)."""
    has_empty = jnp.any(window(board, last, view) == EMPTY)
    size = board.shape[0]
    r = jnp.arange(size, dtype=jnp.int32)
    dist = jnp.maximum(jnp.abs(r - last[0])[:, None], jnp.abs(r - last[1])[None, :])
    # empty cells only; a full board has no empty cell, but then the game is over
    dist = jnp.where(board == EMPTY, dist, 2 * size)
    nearest = jnp.argmin(dist.reshape(-1))  # first minimum: row-major tie-break
    fallback = jnp.stack([nearest // size, nearest % size]).astype(jnp.int32)
    return jnp.where(has_empty, last, fallback).astype(jnp.int32)


def thumbnail_block(size: int, view: int) -> int:
    """Board cells per thumbnail cell side: the thumbnail is V x V and covers the board."""
    return -(-size // view)


def _pool(plane: Array, view: int) -> Array:
    """float32[V, V]: the mean of each block of a board plane [S, S] (zeros past the edge)."""
    size = plane.shape[0]
    block = thumbnail_block(size, view)
    padded = jnp.pad(plane, ((0, view * block - size), (0, view * block - size)))
    return padded.reshape(view, block, view, block).mean(axis=(1, 3))


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

    owned = (board[..., None] == stones).astype(jnp.float32)  # [S, S, P]
    rows, cols = window_coords(centre, view)
    r = jnp.arange(size)
    in_view = (((r >= rows[0]) & (r <= rows[-1]))[:, None]
               & ((r >= cols[0]) & (r <= cols[-1]))[None, :])
    board_planes = jnp.concatenate([
        owned, jnp.ones((size, size, 1), jnp.float32), in_view[..., None].astype(jnp.float32)
    ], axis=-1)  # [S, S, P + 2]
    thumb = jax.vmap(lambda p: _pool(p, view), in_axes=-1, out_axes=-1)(board_planes)
    return jnp.concatenate([local_planes, thumb], axis=-1)
