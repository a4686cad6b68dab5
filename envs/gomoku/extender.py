"""A greedy line-extender: the gomoku baseline opponent of evaluation (docs/gomoku.md, "The
line-extender baseline").

    policy = line_extender(env)                    # 2 or 3 players, any size and view
    actions = policy(None, states, key)            # states batched [B]: int32[B] local actions

At each move, among the legal cells of the mover's local view (`state.legal_action_mask`):

1. **win**: a cell that makes a line of at least `win_length` of the mover's stones;
2. else **block**: a cell where one opponent would make such a line with its next stone. With
   3 players the next player's cells come first, then the previous player's: the next player
   moves first, so its immediate win ends the game before the previous player ever moves
   again, while the previous player's threat may still be blocked by the next player (who
   also loses to it). One stone cannot block two threats; it blocks one of them;
3. else **extend**: score each cell by the longest line of the mover's stones through it
   once a stone is placed there, plus `block_weight` (< 1) times the longest line of any one
   opponent's stones through it (where the stone cuts that line), and keep the best cells.

The move is drawn uniformly among the cells of the first tier that has any (`key`), so that
self-play matches and evaluation games are not all the same game. Tiers 1 and 2 read the
same line lengths as tier 3: a cell wins for a player exactly when the longest line through
it reaches `win_length` (`lines.longest_through`).

Cost: for each of the V^2 view cells and each of the P players, `lines.arms` reads the
2 (W - 1) cells on each of the four lines through the cell: O(V^2 P W) per state whatever the
board size; everything is vmapped over cells, players and the batch (figures in
docs/gomoku.md). A terminal state gets a cell its legal mask allows, or 0 when none.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from envs.gomoku import lines
from envs.gomoku import view as vw
from envs.sampling import uniform_legal_action

Array = jax.Array

# An opponent's line counts 3/4 of an own line of that length. Scores are own + w * opponent
# over integer lengths, so only where w falls between the fractions k / (k + 1) matters: any w
# in (2/3, 1) ranks cells alike for win_length <= 5 (an own line one longer beats an opponent
# line one longer, not two longer). Measured, 2 players, 256 games, every seat
# (docs/gomoku.md): 0.75 won 164 against 0.5 on 15x15/5 and 122 on 9x9/4; 0.5 won 143 of 192
# against 0 (no blocking) on 15x15/5.
DEFAULT_BLOCK_WEIGHT = 0.75


def line_lengths(board: Array, centre: Array, player: Array, num_players: int, view: int,
                 win_length: int) -> Array:
    """int32[P, V * V]: for each seat in turn order from `player` (me, next, (previous)) and
    each view cell, the longest line of that seat's stones through the cell once it places a
    stone there (`lines.longest_through`: exact below `win_length`, >= it for a win).

    Occupied and off-board cells get a value too; the caller masks them with the legal mask.
    """
    rows, cols = vw.window_coords(centre, view)  # [V], [V]
    cell_rows = jnp.repeat(rows, view)  # [V * V], row-major like the actions
    cell_cols = jnp.tile(cols, view)  # [V * V]
    seats = (player + jnp.arange(num_players)) % num_players  # [P]
    stones = (seats + 1).astype(board.dtype)  # [P] the board value of each seat's stones

    def through(row: Array, col: Array, stone: Array) -> Array:
        return lines.longest_through(lines.arms(board, row, col, stone, win_length))

    per_cell = jax.vmap(through, in_axes=(0, 0, None))  # over the view's cells
    return jax.vmap(per_cell, in_axes=(None, None, 0))(cell_rows, cell_cols, stones)


def candidate_cells(lengths: Array, legal: Array, win_length: int,
                    block_weight: float) -> Array:
    """bool[V * V]: the cells the extender draws its move from (the tiers of the module
    docstring), from `line_lengths` int32[P, V * V] and the legal mask bool[V * V]."""
    completes = (lengths >= win_length) & legal[None, :]  # [P, V * V]
    # tiers 1 and 2 in priority order: my win, then each opponent's win in turn order
    tiers = [completes[p] for p in range(lengths.shape[0])]
    own = lengths[0].astype(jnp.float32)  # [V * V]
    opponent = jnp.max(lengths[1:], axis=0).astype(jnp.float32)  # [V * V]
    score = jnp.where(legal, own + block_weight * opponent, -jnp.inf)
    best = legal & (score == jnp.max(score))
    chosen = best
    for tier in reversed(tiers):  # the highest-priority non-empty tier wins
        chosen = jnp.where(jnp.any(tier), tier, chosen)
    return chosen


def line_extender(env, block_weight: float = DEFAULT_BLOCK_WEIGHT) -> Callable:
    """The line-extender policy of a gomoku env: `(variables, states[B], key) -> int32[B]`
    local actions (`variables` is ignored). Jittable; `block_weight` in [0, 1)."""
    if not all(hasattr(env, name) for name in ("view", "win_length", "num_players")):
        raise ValueError(f"line_extender: env must be a gomoku env, got {env!r}")
    if isinstance(block_weight, bool) or not isinstance(block_weight, (int, float)) \
            or not 0.0 <= float(block_weight) < 1.0:
        raise ValueError(f"line_extender: block_weight must be a number in [0, 1) (an "
                         f"opponent's line counts less than the mover's own), got "
                         f"{block_weight!r}")
    view, win_length, num_players = env.view, env.win_length, env.num_players
    weight = float(block_weight)

    def one(state, key: Array) -> Array:
        lengths = line_lengths(state.board, state.view_centre, state.current_player,
                               num_players, view, win_length)  # [P, V * V]
        legal = state.legal_action_mask  # [V * V]
        cells = candidate_cells(lengths, legal, win_length, weight)
        return uniform_legal_action(key, cells).astype(jnp.int32)

    def policy(variables, states, key: Array) -> Array:
        del variables
        batch = states.legal_action_mask.shape[0]
        return jax.vmap(one)(states, jax.random.split(key, batch))

    return policy
