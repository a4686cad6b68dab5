"""Backgammon with standard rules, micro-actions and an explicit chance API.

    env = envs.make("backgammon")
    state = env.init(key)                       # opening roll already made
    state = env.step(state, action, key)        # one checker per action

Rules (see docs/backgammon.md): the forced-move rule (play both dice when possible, else the
larger one; doubles as many as possible), hits and the bar, bearing off, single / gammon /
backgammon (a loser's checker on the bar counts) for 1 / 2 / 3 points. No doubling cube.

Turn structure: decision states (dice known) -> the same player acts once per checker moved ->
a chance state (``is_chance``, next player to roll, no dice) -> ``step_chance`` rolls. A player
with no legal move has exactly one legal action, the pass (action 0), which ends the turn.

Board and action layout: `envs.backgammon.rules`.
"""

from __future__ import annotations

from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.backgammon import afterstates as afterstates_lib
from envs.backgammon import features as features_lib
from envs.backgammon import notation, rules
from envs.afterstates import Afterstates
from envs.backgammon import render as render_lib
from envs.core import Array, Env, PRNGKey, State, require_unbatched

OBS_SIZE = features_lib.ENCODINGS["raw"].size  # the default encoding's units


@struct.dataclass
class BackgammonState(State):
    """State of a backgammon game.

    board: int32[28], from `current_player`'s side (layout in `rules`).
    dice: int32[2], the roll being played (low, high); zeros at a chance state.
    remaining: int32[6], unplayed dice per value.
    is_chance: bool, the player `current_player` must roll next.
    """

    board: Array = struct.field(default=None)
    dice: Array = struct.field(default=None)
    remaining: Array = struct.field(default=None)
    is_chance: Array = struct.field(default=None)

    def _svg(self) -> str:
        return render_svg(self)


# today's raw encoding (`features.raw`), under the name other modules import
_observe_board = features_lib.raw


class Backgammon(Env):
    """Standard backgammon (money game scoring, no cube) as micro-actions with chance nodes.

    features: the observation's encoding by name (`envs.backgammon.features`): "raw" (the
    default, 203 units) or "gnubg-lite" (the raw units and 15 hand-made ones)."""

    id = "backgammon"
    num_players = 2
    num_actions = rules.NUM_ACTIONS
    is_stochastic = True
    num_chance_outcomes = rules.NUM_ROLLS
    # A legal micro-action is (source, die) with the source holding one of the mover's
    # checkers: at most 15 occupied points (only the bar while a checker is on it) times at
    # most 2 distinct die values = 30; the pass is legal only alone. Checked over random
    # playouts in tests/envs/test_conformance.py.
    max_legal_actions = 30

    def __init__(self, features: str = "raw") -> None:
        self.features = features
        self._encoding = features_lib.encoding(features)  # ValueError naming the choices
        # contact (1) or race (0): the unit a network's phase split reads (None for "raw")
        self.phase_unit = self._encoding.phase_unit
        self._roll_probs = jnp.asarray(rules.ROLL_PROBS)
        self._rolls = jnp.asarray(rules.ROLLS)

    # ------------------------------------------------------------------ protocol
    def _init(self, key: PRNGKey) -> BackgammonState:
        # Opening: each player rolls one die until they differ; the higher die moves first and
        # plays both dice. Equivalent: a uniform non-double roll and a uniform first player.
        k1, k2 = jax.random.split(key)
        non_doubles = jnp.asarray([i for i, (a, b) in enumerate(rules.ROLLS) if a != b])
        outcome = non_doubles[jax.random.randint(k1, (), 0, non_doubles.shape[0])]
        player = jax.random.randint(k2, (), 0, 2).astype(jnp.int32)
        return self._decision_state(jnp.asarray(rules.START_BOARD), outcome, player)

    def _decision_state(self, board: Array, outcome: Array, player: Array) -> BackgammonState:
        dice = self._rolls[outcome]
        remaining = rules.roll_remaining(dice[0], dice[1])
        mask = rules.full_mask(rules.roll_mask(board, remaining))
        return BackgammonState(
            current_player=jnp.asarray(player, jnp.int32),
            observation=jnp.zeros(self._encoding.size, jnp.float32),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.asarray(False),
            truncated=jnp.asarray(False),
            legal_action_mask=mask,
            step_count=jnp.asarray(0, jnp.int32),
            board=board.astype(jnp.int32),
            dice=dice.astype(jnp.int32),
            remaining=remaining.astype(jnp.int32),
            is_chance=jnp.asarray(False),
        )

    def _observe(self, state: BackgammonState, player_id: Array) -> Array:
        board = jnp.where(player_id == state.current_player, state.board, rules.flip(state.board))
        return self._encoding.encode(board, state.remaining, state.is_chance)

    def _apply_decision(self, state: BackgammonState, action: Array) -> BackgammonState:
        """Play a (legal) micro-action on a live decision state; a chance state is returned
        unchanged. The result is a decision state (same player), a chance state (turn over,
        board flipped, opponent to roll) or a terminal state (board from the winner's side)."""
        src = action // 6
        die = action % 6 + 1
        is_move = (src > 0) & ~state.is_chance
        moved = rules.apply_move(state.board, src - 1, die)
        board = jnp.where(is_move, moved, state.board)
        remaining = state.remaining - jnp.where(is_move, jnp.arange(1, 7) == die, 0)
        return self._settle(state, board, remaining)

    def _settle(self, state: BackgammonState, board: Array, remaining: Array,
                complete: bool = False) -> BackgammonState:
        """`state` after its mover's checkers stand on `board` with `remaining` dice left: the
        same player goes on, the turn passes (chance state) or the game is won. `complete`:
        the move played every die it could (a complete move), so the turn is over unless the
        game is won, and the single-move rows (the dearest part of this, paid per afterstate
        slot) are not worked out: a won game's mask is all legal anyway (`_finalize`)."""
        won = board[rules.OFF] == 15
        if complete:
            rows = jnp.ones((25, 6), jnp.bool_)  # read only when the game is won
            turn_over = ~state.is_chance & ~won
        else:
            rows = rules.simple_mask(board, remaining)
            turn_over = ~state.is_chance & ~won & ~jnp.any(rows)
        points = rules.game_points(board).astype(jnp.float32)
        me = state.current_player
        rewards = jnp.where(
            won, jnp.where(jnp.arange(2) == me, points, -points), 0.0
        ).astype(jnp.float32)
        next_player = jnp.where(turn_over, 1 - me, me).astype(jnp.int32)
        board = jnp.where(turn_over, rules.flip(board), board)
        mask = jnp.where(
            turn_over | state.is_chance,
            jnp.zeros(rules.NUM_ACTIONS, jnp.bool_).at[rules.PASS_ACTION].set(True),
            rules.full_mask(rows),
        )
        return state.replace(
            current_player=next_player,
            rewards=rewards,
            terminated=won,
            legal_action_mask=mask,
            board=board,
            dice=jnp.where(turn_over, 0, state.dice),
            remaining=jnp.where(turn_over, 0, remaining),
            is_chance=state.is_chance | turn_over,
        )

    def _roll(self, state: BackgammonState, outcome: Array) -> BackgammonState:
        """Resolve a chance state with roll `outcome`; other states are returned unchanged."""
        dice = self._rolls[outcome]
        remaining = rules.roll_remaining(dice[0], dice[1])
        mask = rules.full_mask(rules.roll_mask(state.board, remaining))
        c = state.is_chance
        return state.replace(
            dice=jnp.where(c, dice, state.dice),
            remaining=jnp.where(c, remaining, state.remaining),
            legal_action_mask=jnp.where(c, mask, state.legal_action_mask),
            is_chance=jnp.asarray(False),
        )

    def _step(self, state: BackgammonState, action: Array, key: Optional[PRNGKey]) -> BackgammonState:
        after = self._apply_decision(state, action)
        outcome = jax.random.choice(key, rules.NUM_ROLLS, p=self._roll_probs)
        return self._roll(after, outcome)

    # ------------------------------------------------------------ complete moves
    # envs.afterstates.AfterstateEnv: every distinct result of a whole turn, for complete-move
    # players and afterstate TD learning (docs/backgammon.md, "Complete moves")
    max_afterstates = afterstates_lib.DEFAULT_MAX_AFTERSTATES
    max_move_length = afterstates_lib.MAX_DICE

    def afterstates(self, state: BackgammonState,
                    max_afterstates: Optional[int] = None) -> Afterstates:
        """The complete moves of a decision state whose dice are rolled (the rest of the turn
        when some dice are already played), as `envs.afterstates.Afterstates` of M slots.

        Each result is the state `step_deterministic` leaves after the move's micro-actions (a
        chance state, opponent to roll, or the finished game) without its observation (None:
        `observe` the slots valued). A player with no move gets the
        pass. At a chance or finished state: `ValueError` when the state is concrete; inside
        jit or vmap, every slot invalid. M (default `max_afterstates`) of 450 or more keeps every
        move of a non-double roll; doubles beyond M are cut and `overflow` is set."""
        m = self.max_afterstates if max_afterstates is None else max_afterstates
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
            raise ValueError(f"max_afterstates must be an int, got {m!r}")
        afterstates_lib.level_sizes(int(m))  # ValueError below the least size
        flags = (state.is_chance, state.terminated, state.truncated)
        if not any(isinstance(x, jax.core.Tracer) for x in flags):
            if np.ndim(state.step_count) != 0:
                raise ValueError("afterstates takes one state, got a batch of shape "
                                 f"{np.shape(state.step_count)}; jax.vmap it over the batch")
            if bool(state.is_chance):
                raise ValueError("afterstates needs rolled dice: this is a chance state; "
                                 "call step_chance (roll) first")
            if bool(state.terminated) or bool(state.truncated):
                raise ValueError("afterstates needs a live decision state: the game is over")
        return _afterstates(self, state, int(m))

    # ---------------------------------------------------------------- chance API
    # The protocol's rules (absorbing, illegal actions, step count, no-op on decision states)
    # are applied by `Env.step_deterministic` / `step_chance` / `chance_outcome_probs`; these
    # hooks only move checkers and roll.
    def _step_deterministic(self, state: BackgammonState, action: Array) -> BackgammonState:
        """A turn-ending action gives a chance state (no roll yet)."""
        return self._apply_decision(state, action)

    def _step_chance(self, state: BackgammonState, outcome: Array) -> BackgammonState:
        """Roll `outcome`, an index into `rules.ROLLS`."""
        return self._roll(state, outcome)

    def _chance_outcome_probs(self, state: BackgammonState) -> Array:
        """float32[21]: the roll probabilities, in the order of `rules.ROLLS`."""
        return self._roll_probs

    # ------------------------------------------------------------ boundary helpers
    def _player_action_to_string(self, state, player: int, action: int) -> str:
        return render_lib.action_text(action)

    def _player_string_to_action(self, state, player: int, text: str) -> int:
        return render_lib.parse_action(text)

    def render_text(self, state: BackgammonState) -> str:
        return render_text(state)

    def render_svg(self, state: BackgammonState) -> str:
        return render_svg(state)

    def check_action(self, state: BackgammonState, action) -> None:
        """ValueError if `action` is illegal (also at a chance state: roll first)."""
        require_unbatched(state, "backgammon: check_action")
        if bool(state.is_chance) and not (bool(state.terminated) or bool(state.truncated)):
            raise ValueError("backgammon: this is a chance state; call step_chance (roll) first")
        super().check_action(state, action)


def _afterstates(env: Backgammon, state: BackgammonState, m: int) -> Afterstates:
    live = ~(state.is_chance | state.terminated | state.truncated)
    level, overflow = afterstates_lib.complete_moves(state.board, state.remaining, live, m)
    steps = jnp.sum(level.actions >= 0, axis=1).astype(jnp.int32)  # [M] micro-actions each

    # no observation (None, as `transition` leaves it): a consumer observes the slots it
    # values (`env.observe`); writing float32[203] for every slot was most of the call
    # (docs/benchmarks.md, "Backgammon complete moves")
    root = state.replace(observation=None)

    def result(board, remaining, n):
        s = env._settle(root.replace(step_count=root.step_count + n), board, remaining,
                        complete=True)
        return env._terminal_mask(s)

    states = jax.vmap(result)(level.board, level.remaining, steps)
    return Afterstates(states=states, valid=level.valid, actions=level.actions,
                       overflow=overflow)


# ---------------------------------------------------------------------- module API
def from_position_id(position_id: str, dice: Sequence[int], current_player: int = 0) -> BackgammonState:
    """A decision state from a gnubg Position ID (player on roll = `current_player`) and dice."""
    gboard = notation.decode_position_id(position_id)
    return from_gnubg_board(gboard, dice, current_player)


def from_gnubg_board(gboard, dice: Sequence[int], current_player: int = 0) -> BackgammonState:
    """A decision state from gnubg's (opponent, on roll) board pair and a roll."""
    board = notation.gnubg_to_board(gboard)
    try:
        values = list(dice)
    except TypeError:
        raise ValueError(f"dice must be two integers, got {dice!r}") from None
    # a float die (3.7) would be truncated by int() and played as another roll: refuse it
    if len(values) != 2 or not all(
            np.ndim(d) == 0 and np.issubdtype(np.asarray(d).dtype, np.integer) for d in values):
        raise ValueError(f"dice must be two integers, got {dice!r}")
    d1, d2 = (int(d) for d in values)
    if not (1 <= d1 <= 6 and 1 <= d2 <= 6):
        raise ValueError(f"dice must be in 1..6, got {dice!r}")
    if current_player not in (0, 1):
        raise ValueError(f"current_player must be 0 or 1, got {current_player!r}")
    lo, hi = min(d1, d2), max(d1, d2)
    outcome = int(np.flatnonzero((rules.ROLLS[:, 0] == lo) & (rules.ROLLS[:, 1] == hi))[0])
    return _decision_state_jit(jnp.asarray(board), jnp.asarray(outcome), jnp.asarray(current_player))


@jax.jit
def _decision_state_jit(board, outcome, player):
    env = Backgammon()
    s = env._decision_state(board, outcome, player)
    return s.replace(observation=env._observe(s, s.current_player))


def to_gnubg_board(state: BackgammonState):
    """gnubg's (opponent, on roll) board pair, `state.current_player` on roll."""
    require_unbatched(state, "backgammon: to_gnubg_board")
    return notation.board_to_gnubg(np.asarray(state.board))


def to_position_id(state: BackgammonState) -> str:
    """gnubg Position ID of a concrete state, the player to move (or to roll) on roll."""
    require_unbatched(state, "backgammon: to_position_id")
    return notation.encode_position_id(to_gnubg_board(state))


def render_text(state: BackgammonState) -> str:
    """A readable text diagram of a concrete state."""
    require_unbatched(state, "backgammon: render_text")
    return notation.render_board(
        np.asarray(state.board), int(state.current_player), np.asarray(state.dice),
        np.asarray(state.remaining), bool(state.is_chance), bool(state.terminated),
        np.asarray(state.rewards),
    )


def render(state: BackgammonState) -> str:
    """Deprecated alias of `render_text` (the protocol's name)."""
    require_unbatched(state, "backgammon: render")
    return render_text(state)


def render_svg(state: BackgammonState) -> str:
    """An SVG picture of a concrete state (the mover's checkers white, at the bottom right)."""
    require_unbatched(state, "backgammon: render_svg")
    return render_lib.board_svg(np.asarray(state.board), int(state.current_player),
                                np.asarray(state.dice), bool(state.is_chance),
                                bool(state.terminated))


__all__ = [
    "Backgammon",
    "BackgammonState",
    "from_position_id",
    "from_gnubg_board",
    "to_position_id",
    "to_gnubg_board",
    "render",
    "render_text",
    "render_svg",
]
