"""Gomoku for 2 or 3 players on a large board, played through a local view (docs/gomoku.md).

    env = envs.make("gomoku", size=100, win_length=8, num_players=3, view=21)
    env = envs.make("gomoku", size=9, win_length=4, num_players=2, view=9)
    state = env.init(key)
    state = env.step(state, action)          # action: a local index in [0, view * view)

Rules (docs/gomoku.md):

* players place one stone each in fixed rotation (seat 0, 1, 2, 0, ...); a line of at least
  `win_length` stones in a row, column or diagonal wins and ends the game (freestyle: longer
  lines win too, as in OpenSpiel's `gomoku`);
* a full board ends the game (`terminated`), the step cap `max_episode_steps` cuts it
  (`truncated`); both are draws, ranked like a won game's losers (below);
* places: the winner first, the others by chain profile, ties in turn order
  (`envs.gomoku.ranking`); at the end each player gets `rewards_by_place[place]`,
  (+1, -0.2, -1) for 3 players and (+1, -1) for 2; no reward during the game;
* `step_reward`: the spec's scalar reward of the player who just moved, 1.0 for a winning
  move, else 0 (a MuZero reward target; `rewards` carries the placements).

Action `a` is the cell `view_centre + (a // view - h, a % view - h)`, h = view // 2; the
centre is the last stone (the board centre before the first one), moved to an empty cell near
it when the view around the last stone is full (`envs.gomoku.view`). Cells off the board
or on a stone are illegal. The observation is float32[view, view, 2 P + 4]: the local view and
a view-sized thumbnail of the whole board, from the seat of the player it is for.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.gomoku import batching, lines, ranking
from envs.gomoku import view as vw
from envs.gomoku.lines import EMPTY
from envs.gomoku.ranking import NO_WINNER
from envs.gomoku.view import NO_CELL, OFF_BOARD
from envs.checks import integer, real
from envs.core import Array, Env, PRNGKey, State, require_unbatched
from envs.gomoku.render import render_svg, render_text

__all__ = ["Gomoku", "GomokuState", "EMPTY", "NO_WINNER", "NO_CELL", "OFF_BOARD", "UNRANKED",
           "DEFAULT_REWARDS_BY_PLACE"]

UNRANKED = -1  # `places` of a game that is not over
DEFAULT_REWARDS_BY_PLACE = {2: (1.0, -1.0), 3: (1.0, -0.2, -1.0)}
_CELL_TEXT = re.compile(r"^\s*(\d+)\s*,\s*(\d+)\s*$")


@struct.dataclass
class GomokuState(State):
    """State of a gomoku game (`step_count` = stones on the board).

    board: int8[S, S], EMPTY or seat + 1.
    last_move: int32[2] (row, col) of the last stone, NO_CELL before the first.
    view_centre: int32[2] the board cell the local view (and the actions) are centred on.
    row_empties: int32[S] empty cells per board row (the view centre's fallback reads it).
    chain_counts: int32[P, W + 1], per seat the number of chains of each length (index W:
        W or more; `envs.gomoku.lines`).
    block_counts: int8[V, V, P] (int16 for blocks over 127 cells), per thumbnail block each
        seat's stones (`envs.gomoku.view.thumbnail_counts`): what the observation's
        thumbnail reads instead of the whole board.
    winner: int32 the seat that made a line, NO_WINNER otherwise.
    places: int32[P] each seat's place at the end (0 = first), UNRANKED before.
    step_reward: float32 the spec's scalar reward of the player who just moved (1.0 on a win).
    """

    board: Array = struct.field(default=None)
    last_move: Array = struct.field(default=None)
    view_centre: Array = struct.field(default=None)
    row_empties: Array = struct.field(default=None)
    chain_counts: Array = struct.field(default=None)
    block_counts: Array = struct.field(default=None)
    winner: Array = struct.field(default=None)
    places: Array = struct.field(default=None)
    step_reward: Array = struct.field(default=None)

    def _svg(self) -> str:
        require_unbatched(self, "gomoku: render_svg")
        return render_svg(self)


def _integer(name: str, value: Any) -> int:
    return integer("gomoku", name, value)  # an integer within int32 (envs/checks.py)


class Gomoku(Env):
    """The gomoku environment (see the module docstring)."""

    id = "gomoku"
    # players move in rotation (seat 0, 1, 2, 0, ...) whatever happens: a learned model may
    # advance the player to move without the rules (turbozero.training.muzero)
    fixed_turn_order = True

    def __init__(self, size: int = 15, win_length: int = 5, num_players: int = 3,
                 view: Optional[int] = None, max_episode_steps: Optional[int] = None,
                 rewards_by_place: Optional[Sequence[float]] = None,
                 max_steps: Optional[int] = None) -> None:
        # `max_steps` is the spec's name of the step cap (the protocol's `max_episode_steps`)
        if max_steps is not None and max_episode_steps is not None:
            raise ValueError("gomoku: give max_episode_steps or its alias max_steps, not both")
        cap = max_episode_steps if max_steps is None else max_steps
        size = _integer("size", size)
        win_length = _integer("win_length", win_length)
        num_players = _integer("num_players", num_players)
        if num_players not in (2, 3):
            raise ValueError(f"gomoku: num_players must be 2 or 3, got {num_players}")
        if win_length < 2:
            raise ValueError(f"gomoku: win_length must be >= 2, got {win_length}")
        if size < win_length:
            raise ValueError(f"gomoku: the board (size={size}) is smaller than the win length "
                             f"(win_length={win_length})")
        # default view: the spec's 21, or the largest odd side that fits a smaller board
        view = min(21, size - (1 - size % 2)) if view is None else _integer("view", view)
        if view < 1 or view % 2 == 0:
            raise ValueError(f"gomoku: view must be an odd positive integer (a window with a "
                             f"centre cell), got {view}")
        if size < view:
            raise ValueError(f"gomoku: the board (size={size}) is smaller than the view "
                             f"(view={view})")
        if cap is not None:
            cap = integer("gomoku", "max_episode_steps (max_steps)", cap, minimum=1)
        if rewards_by_place is None:
            rewards_by_place = DEFAULT_REWARDS_BY_PLACE[num_players]
        # finite numbers: "abc" was read letter by letter, and a NaN reward trained into NaN
        if isinstance(rewards_by_place, (str, bytes)) or not hasattr(rewards_by_place, "__iter__"):
            raise ValueError(f"gomoku: rewards_by_place must be numbers, one per place, got "
                             f"{rewards_by_place!r}")
        rewards_by_place = tuple(real("gomoku", "rewards_by_place entry", r)
                                 for r in rewards_by_place)
        if len(rewards_by_place) != num_players:
            raise ValueError(f"gomoku: rewards_by_place needs one reward per place "
                             f"({num_players}), got {rewards_by_place}")
        self.size, self.win_length, self.view = size, win_length, view
        self.num_players = num_players
        self.num_actions = view * view
        self.max_episode_steps = cap
        self.rewards_by_place = rewards_by_place
        self._position_jit = None  # jitted `_position` (state_from_board)

    # ------------------------------------------------------------------ protocol
    def _init(self, key: PRNGKey) -> GomokuState:
        del key  # the start is always the empty board
        board = jnp.zeros((self.size, self.size), jnp.int8)
        centre = vw.start_centre(self.size)
        return GomokuState(
            current_player=jnp.int32(0),
            observation=None,
            rewards=jnp.zeros(self.num_players, jnp.float32),
            terminated=jnp.array(False),
            truncated=jnp.array(False),
            legal_action_mask=vw.legal_mask(board, centre, self.view),
            step_count=jnp.int32(0),
            board=board,
            last_move=jnp.full(2, NO_CELL, jnp.int32),
            view_centre=centre,
            row_empties=jnp.full(self.size, self.size, jnp.int32),
            chain_counts=jnp.zeros((self.num_players, self.win_length + 1), jnp.int32),
            block_counts=jnp.zeros((self.view, self.view, self.num_players),
                                   vw.thumbnail_dtype(self.size, self.view)),
            winner=jnp.int32(NO_WINNER),
            places=jnp.full(self.num_players, UNRANKED, jnp.int32),
            step_reward=jnp.float32(0.0),
        )

    def _transition(self, state: GomokuState, action: Array,
                    key: Optional[PRNGKey]) -> GomokuState:
        """The protocol's transition (`Env._apply_rules`: a finished game absorbs, an illegal
        action ends the game where it stood), with the fields a stone writes in place kept
        out of its selects.

        Under `vmap` the rules' `cond` and the illegal-action rule become selects over every
        field of the state, and the board is 10,000 of its 12,000 bytes at 100x100: two
        board-wide selects per move, and a copy of the board for the write, were most of a
        batched move's cost (docs/benchmarks.md, "Gomoku"). Here the stone is written once
        into the board, the row's empty count and the block's stone count (`_place`), only
        where the rules place one (a live game and a legal action, the protocol's own test),
        and `_apply_rules` runs on the rest of the state, so every other field follows the
        protocol as for any game.
        """
        state = state.replace(observation=None)
        # read by every scatter and gather of the move: computed once (3% of a batched move)
        row, col = self._action_cell(state.view_centre, action)
        row, col = batching.computed_once(row), batching.computed_once(col)
        done = state.terminated | state.truncated
        legal = ~jnp.any(self._illegal_players(state, jnp.asarray(action, jnp.int32)))
        placed = self._place(state, row, col, ~done & legal)
        in_place = {name: getattr(placed, name) for name in self._IN_PLACE}
        unset = dict.fromkeys(self._IN_PLACE)

        def rules(s, a):
            return self._after_stone(s.replace(**in_place), row, col).replace(
                observation=None, **unset)

        next_state = self._apply_rules(state.replace(**unset), action, rules)
        return self._terminal_mask(next_state.replace(**in_place))

    # the fields `_place` writes (one cell each), kept out of the protocol's selects
    _IN_PLACE = ("board", "row_empties", "block_counts")

    def _action_cell(self, centre: Array, action: Array) -> tuple[Array, Array]:
        row, col = vw.action_cell(centre, action, self.view)
        # an illegal action's result is discarded by the protocol (Env._apply_rules); the clip
        # only keeps its scatter on the board
        return jnp.clip(row, 0, self.size - 1), jnp.clip(col, 0, self.size - 1)

    def _place(self, state: GomokuState, row: Array, col: Array, placed: Array) -> GomokuState:
        """The mover's stone at (row, col) where `placed` (bool), else the state unchanged:
        the board cell, the row's empty count and the thumbnail block's stone count (where
        nothing is placed the writes go off the arrays and are dropped: no cell is read)."""
        player = state.current_player
        stone = (player + 1).astype(jnp.int8)
        block_row, block_col = vw.block_of(row, col, self.size, self.view)
        row = jnp.where(placed, row, self.size)  # off the arrays below: dropped
        block_row = jnp.where(placed, block_row, self.view)
        return state.replace(
            board=state.board.at[row, col].set(stone, mode="drop"),
            row_empties=state.row_empties.at[row].add(-1, mode="drop"),
            block_counts=state.block_counts.at[block_row, block_col, player].add(
                1, mode="drop"))

    def _step(self, state: GomokuState, action: Array, key: Optional[PRNGKey]) -> GomokuState:
        del key
        row, col = self._action_cell(state.view_centre, action)
        return self._after_stone(self._place(state, row, col, jnp.array(True)), row, col)

    def _after_stone(self, state: GomokuState, row: Array, col: Array) -> GomokuState:
        """The rules after the mover's stone is placed at (row, col) (`_place`; `step_count`
        already advanced): line check, chain counts, the end, the next view centre."""
        size, w = self.size, self.win_length
        player = state.current_player
        stone = (player + 1).astype(jnp.int8)
        board = state.board
        # the window around the new stone (the next view, normally) and the four lines
        # through it, read together
        last_window, arm = vw.window_and_arms(board, row, col, stone, self.view, w)
        arm = batching.computed_once(arm)  # [4, 2], read by the line check and the counts
        won = lines.longest_through(arm) >= w
        counts = state.chain_counts.at[player].set(
            lines.add_stone_counts(state.chain_counts[player], arm, w))
        # step_count is already advanced: it is the number of stones now on the board
        terminated = won | (state.step_count >= size * size)
        capped = (jnp.array(False) if self.max_episode_steps is None
                  else state.step_count >= self.max_episode_steps)
        truncated = ~terminated & capped
        over = terminated | truncated
        winner = jnp.where(won, player, NO_WINNER).astype(jnp.int32)
        # the ranking only at the end, and under `vmap` only when some game of the batch ends
        places, rewards = batching.when(over, self._ranked, self._unranked, counts, winner)
        last = jnp.stack([row, col]).astype(jnp.int32)
        centre, mask = vw.centre_and_mask(board, state.row_empties, last, self.view,
                                          last_window)
        return state.replace(
            current_player=((player + 1) % self.num_players).astype(jnp.int32),
            rewards=rewards.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            legal_action_mask=mask,
            last_move=last,
            view_centre=centre,
            chain_counts=counts,
            winner=winner,
            places=places,
            step_reward=jnp.where(won, 1.0, 0.0).astype(jnp.float32),
        )

    def _ranked(self, counts: Array, winner: Array) -> tuple[Array, Array]:
        """(places, rewards) of a finished game."""
        places = ranking.places(counts, winner).astype(jnp.int32)
        return places, ranking.place_rewards(places, self.rewards_by_place)

    def _unranked(self, counts: Array, winner: Array) -> tuple[Array, Array]:
        return (jnp.full(self.num_players, UNRANKED, jnp.int32),
                jnp.zeros(self.num_players, jnp.float32))

    def _observe(self, state: GomokuState, player_id: Array) -> Array:
        return vw.observation(state.board, state.view_centre, player_id, self.num_players,
                              self.view, state.block_counts)

    # ------------------------------------------------------------ board <-> action
    def action_cell(self, state: GomokuState, action: Any) -> tuple[int, int]:
        """(row, col) of local `action` in a concrete (unbatched) state; it may be off the
        board (then the action is illegal)."""
        require_unbatched(state, "gomoku: action_cell")
        a = self._scalar_action(action)
        if not 0 <= a < self.num_actions:
            raise ValueError(f"gomoku: action {a} out of range [0, {self.num_actions})")
        h = self.view // 2
        centre = np.asarray(state.view_centre)
        return int(centre[0]) + a // self.view - h, int(centre[1]) + a % self.view - h

    def cell_action(self, state: GomokuState, row: int, col: int) -> int:
        """The local action of board cell (row, col) in a concrete state; ValueError when the
        cell is outside the current view."""
        require_unbatched(state, "gomoku: cell_action")
        h = self.view // 2
        centre = np.asarray(state.view_centre)
        i, j = int(row) - int(centre[0]) + h, int(col) - int(centre[1]) + h
        if not (0 <= i < self.view and 0 <= j < self.view):
            raise ValueError(f"gomoku: cell ({row}, {col}) is outside the view centred on "
                             f"({int(centre[0])}, {int(centre[1])}) (view={self.view})")
        return i * self.view + j

    def check_action(self, state: GomokuState, action: Any) -> None:
        """ValueError when `action` is out of range, off the board or on a stone."""
        require_unbatched(state, "gomoku: check_action")
        a = np.asarray(action)
        one_index = a.shape == () and np.issubdtype(a.dtype, np.integer)
        live = not (bool(state.terminated) or bool(state.truncated))
        if one_index and 0 <= int(a) < self.num_actions and live \
                and not bool(np.asarray(state.legal_action_mask)[int(a)]):
            # say why the cell is illegal; everything else is the protocol's check
            row, col = self.action_cell(state, int(a))
            on_board = 0 <= row < self.size and 0 <= col < self.size
            raise ValueError(f"gomoku: action {int(a)} is cell ({row}, {col}), "
                             f"{'on a stone' if on_board else 'off the board'} "
                             f"(size={self.size})")
        super().check_action(state, action)

    def _player_action_to_string(self, state, player: int, action: int) -> str:
        row, col = self.action_cell(state, action)
        return f"{row},{col}"  # OpenSpiel's notation of a gomoku move

    def _player_string_to_action(self, state, player: int, text: str) -> int:
        m = _CELL_TEXT.match(text)
        if m is None:
            raise ValueError(f"gomoku: {text!r} is not a cell; write 'row,col' (e.g. '7,7')")
        return self.cell_action(state, int(m.group(1)), int(m.group(2)))

    # --------------------------------------------------------------- positions
    def state_from_board(self, board: Any, current_player: int = 0,
                         last_move: Optional[tuple[int, int]] = None) -> GomokuState:
        """A live state from a position: board int[S, S] of EMPTY / seat + 1, the seat to
        play, and the last stone (the view centre follows the rule from it; the board centre
        when None). ValueError for a board that is not a live game (wrong shape or values, a
        line already made, full)."""
        b = np.asarray(board)
        if b.shape != (self.size, self.size):
            raise ValueError(f"gomoku: board must have shape ({self.size}, {self.size}), "
                             f"got {b.shape}")
        if not np.issubdtype(b.dtype, np.integer) or b.min() < 0 or b.max() > self.num_players:
            raise ValueError(f"gomoku: board values must be integers in [0, {self.num_players}]")
        if not 0 <= int(current_player) < self.num_players:
            raise ValueError(f"gomoku: current_player must be in [0, {self.num_players}), got "
                             f"{current_player}")
        stones = int(np.count_nonzero(b))
        if stones == self.size * self.size:
            raise ValueError("gomoku: the board is full (the game is over)")
        board_j = jnp.asarray(b, jnp.int8)
        if self._position_jit is None:  # one compiled function per env, built on first use
            self._position_jit = jax.jit(self._position)
        if last_move is None:
            last, anchor = jnp.full(2, NO_CELL, jnp.int32), vw.start_centre(self.size)
        else:
            r, c = (int(v) for v in last_move)
            if not (0 <= r < self.size and 0 <= c < self.size) or b[r, c] == EMPTY:
                raise ValueError(f"gomoku: last_move {last_move} must be a stone on the board")
            last = anchor = jnp.asarray([r, c], jnp.int32)
        state = self._position_jit(board_j, anchor, last, jnp.int32(current_player),
                                      jnp.int32(stones))
        if int(state.chain_counts[:, self.win_length].sum()) > 0:
            raise ValueError(f"gomoku: the board already holds a line of {self.win_length} "
                             f"(the game is over)")
        return state

    def _position(self, board: Array, anchor: Array, last: Array, player: Array,
                        stones: Array) -> GomokuState:
        """The live state of a position whose last stone is `last` and whose view centre
        follows the rule from `anchor` (the last stone, or the board centre before any)."""
        row_empties = jnp.sum(board == EMPTY, axis=1).astype(jnp.int32)
        centre = vw.next_centre(board, row_empties, anchor, self.view)
        state = self._init(jax.random.PRNGKey(0)).replace(
            current_player=player, step_count=stones, board=board, last_move=last,
            view_centre=centre, row_empties=row_empties,
            chain_counts=lines.chain_counts(board, self.num_players, self.win_length),
            block_counts=vw.thumbnail_counts(board, self.num_players, self.view),
            legal_action_mask=vw.legal_mask(board, centre, self.view))
        return self._with_observation(state)

    # ------------------------------------------------------------------ display
    def render_text(self, state: GomokuState) -> str:
        """A text picture of an unbatched state (docs/gomoku.md)."""
        require_unbatched(state, "gomoku: render_text")
        return render_text(state)

    def __repr__(self) -> str:
        cap = f", max_episode_steps={self.max_episode_steps}" if self.max_episode_steps else ""
        return (f"Gomoku(size={self.size}, win_length={self.win_length}, "
                f"num_players={self.num_players}, view={self.view}{cap})")
