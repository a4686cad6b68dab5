"""PyRat: two rats race for cheese in a maze; both move at once (a simultaneous game).

    env = envs.make("pyrat")                     # 21x15, 41 cheese, 300 turns
    env = envs.make("pyrat", width=7, height=7, cheese_count=10)
    env = envs.make("pyrat", maze="maze.json")   # a fixed maze (docs/pyrat.md)
    state = env.init(key)
    state = env.step(state, jnp.array([UP, LEFT]))

Rules (details and choices in docs/pyrat.md):

* actions UP=0 (y+1), RIGHT=1, DOWN=2, LEFT=3, STAY=4; all five always legal, a move into a
  wall or off the board is a STAY.
* mud: entering a passage of weight w puts the rat on the destination at once with
  `mud_turns = w - 1`; while `mud_turns > 0` its actions are ignored and it counts down; it
  collects cheese only when `mud_turns == 0`.
* a rat on a cheese takes it (+1); both rats arriving on it together take 0.5 each.
* the game ends (``terminated``) when a score exceeds half the starting cheese or no cheese is
  left; it is cut (``truncated``, the protocol's meaning: stopped by the step cap) when
  `max_episode_steps` turns have been played without such an end.

The state keeps the scores (`scores`), so a trainer can compute "cheese each player will still
collect" from any position as final score minus current score.
"""

from __future__ import annotations

from typing import Optional, Union

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.pyrat import maze as mz
from envs.pyrat.maze import DOWN, DX, DY, LEFT, RIGHT, STAY, UP, Maze, load_maze
from envs.checks import integer, real
from envs.core import Array, Env, PRNGKey, State, require_unbatched
from envs.pyrat.render import render_svg, render_text

__all__ = ["PyRat", "PyRatState", "Maze", "load_maze", "UP", "RIGHT", "DOWN", "LEFT", "STAY",
           "NUM_PLANES", "PLAYER_PLANES", "VIEW_CHANNELS", "ACTION_SWAP", "ACTION_NAMES"]

NUM_PLANES = 17
# the longest game a PyRat env is built for: a Zobrist key per turn is made up front (8 bytes
# each), so 10**6 turns are 8 MB; 2**40 asked for 16 TiB before this bound
MAX_TURNS = 10**6
# the one-hot planes that locate player 1 ("me") and player 2 in an observation; a network can
# read its per-player heads at these cells (turbozero.networks.TwoPlayerNet(gather_planes=...))
PLAYER_PLANES = (9, 10)
# player 2's view is player 1's rotated by 180 degrees with these channels swapped (directions
# UP<->DOWN and RIGHT<->LEFT, "me"<->opponent), and its actions map back by ACTION_SWAP
VIEW_CHANNELS = (2, 3, 0, 1, 6, 7, 4, 5, 8, 10, 9, 12, 11, 14, 13, 15, 16)
ACTION_SWAP = (2, 3, 0, 1, 4)
# the action texts of `action_to_string` (absolute directions: UP is y + 1 for both players)
ACTION_NAMES = ("up", "right", "down", "left", "stay")


@struct.dataclass
class PyRatState(State):
    """State of a PyRat game (`step_count` is the turn).

    maze: int8[H, W, 4] passage costs (0 wall, 1 open, 2 <= w <= 127 mud; layout in
      `envs.pyrat.maze`).
    cheese: bool[H, W] cheese still on the board.
    positions: int32[2, 2] (x, y) of player 1 and player 2.
    mud_turns: int32[2] turns each rat is still stuck in mud.
    scores: float32[2] cheese collected so far.
    initial_cheese: float32 scalar, cheese at the start (for the end rule).
    cheese_field: per cell the mud-weighted turns to the nearest cheese (a cap, 16000 or
      1 << 20, where none is reachable) and the flat index (y * W + x) of a cheese at that
      distance (the lowest of equal ones): int32[H, W] holding `distance << 16 | index` on boards
      whose distances fit int16 (the default ones), else int32[H, W, 2] (distance, index); read
      it as `cheese_distance` and `nearest_cheese`. It follows from maze and cheese: kept so
      that the observation's nearness plane does not recompute the field every step
      (`envs.pyrat.maze.NearestCheese`).
    """

    maze: Array = struct.field(default=None)
    cheese: Array = struct.field(default=None)
    positions: Array = struct.field(default=None)
    mud_turns: Array = struct.field(default=None)
    scores: Array = struct.field(default=None)
    initial_cheese: Array = struct.field(default=None)
    cheese_field: Array = struct.field(default=None)

    # The two halves of `cheese_field` (one array since the repair, its gather and scatter and
    # the absorb rule's select then move one array instead of two: docs/benchmarks.md, "PyRat
    # env step (issue 34 item 6)"). Packed when it has the cheese's shape.
    @property
    def cheese_distance(self) -> Array:
        """int16[..., H, W] (int32 on boards where distances may not fit): the turns from each
        cell to the nearest cheese, the cap (16000 or 1 << 20) where none is reachable."""
        f = self.cheese_field
        return (f >> 16).astype(jnp.int16) if f.ndim == self.cheese.ndim else f[..., 0]

    @property
    def nearest_cheese(self) -> Array:
        """int16[..., H, W] (int32 on boards of over 32767 cells): the flat index (y * W + x) of
        a cheese at that distance (the lowest of equal ones)."""
        f = self.cheese_field
        if f.ndim == self.cheese.ndim:
            return (f & 0xFFFF).astype(jnp.int16)
        h, w = self.cheese.shape[-2:]
        return f[..., 1].astype(jnp.int16 if h * w <= 32767 else jnp.int32)

    def _svg(self) -> str:
        require_unbatched(self, "pyrat: render_svg")
        return render_svg(self)


def _zobrist(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, size=shape + (2,), dtype=np.uint64
                                                ).astype(np.uint32)


class PyRat(Env):
    """The PyRat environment (see the module docstring)."""

    renamed_options = (("max_turns", "max_episode_steps"),)  # the step cap's former name

    id = "pyrat"
    num_players = 2
    num_actions = 5
    is_simultaneous = True
    player_planes = PLAYER_PLANES
    opponent_view = (VIEW_CHANNELS, ACTION_SWAP)  # see TwoPlayerNet(opponent_view=...)
    # what `greedy_actions` plays, in the words an evaluation report shows
    greedy_description = "PyRat's shortest-path player: each rat steps toward the nearest cheese"

    # simultaneous: each player's 5 actions are always legal
    max_legal_actions = 5

    def __init__(self, width: Optional[int] = None, height: Optional[int] = None,
                 cheese_count: Optional[int] = None, max_episode_steps: Optional[int] = None,
                 wall_density: float = 0.7, mud_density: float = 0.1, mud_range: int = 3,
                 open_maze: bool = False, maze: Union[None, str, dict, Maze] = None) -> None:
        cap = 300 if max_episode_steps is None else max_episode_steps
        # bounded: a Zobrist key per turn is built up front (2**40 turns asked for 16 TiB)
        self.max_episode_steps = integer("pyrat", "max_episode_steps", cap,
                                         minimum=1, maximum=MAX_TURNS)
        self.fixed_maze: Optional[Maze] = None
        if maze is not None:
            m = load_maze(maze)
            for name, given, actual in (("width", width, m.width), ("height", height, m.height),
                                        ("cheese_count", cheese_count, int(m.cheese.sum()))):
                if given is not None and given != actual:
                    raise ValueError(f"pyrat: {name}={given} disagrees with the maze's {actual}")
            self.fixed_maze = m
            width, height, cheese_count = m.width, m.height, int(m.cheese.sum())
        width = 21 if width is None else width
        height = 15 if height is None else height
        cheese_count = 41 if cheese_count is None else cheese_count
        for name, v in (("width", width), ("height", height), ("cheese_count", cheese_count),
                        ("mud_range", mud_range)):
            integer("pyrat", name, v)
        integer("pyrat", "width", width, minimum=1)
        integer("pyrat", "height", height, minimum=1)
        if width * height < 2:
            raise ValueError(f"pyrat: the board {width}x{height} needs at least 2 cells")
        if cheese_count < 1:
            raise ValueError(f"pyrat: cheese_count must be >= 1, got {cheese_count}")
        real("pyrat", "wall_density", wall_density, minimum=0.0, maximum=1.0)
        real("pyrat", "mud_density", mud_density, minimum=0.0, maximum=1.0)
        if mud_range < 1 or mud_range > 127:
            raise ValueError(f"pyrat: mud_range must be in [1, 127], got {mud_range}")
        if self.fixed_maze is None:
            if cheese_count > mz.max_cheese(width, height):
                raise ValueError(f"pyrat: {cheese_count} cheese do not fit on {width}x{height} "
                                 f"(at most {mz.max_cheese(width, height)})")
            if cheese_count % 2 and (width * height) % 2 == 0:
                raise ValueError("pyrat: an odd cheese count needs a centre cell (odd width "
                                 f"and odd height), got {width}x{height}")
        self.width, self.height = int(width), int(height)
        self.cheese_count = int(cheese_count)
        self.wall_density = 0.0 if open_maze else float(wall_density)
        self.mud_density, self.mud_range = float(mud_density), int(mud_range)
        self.open_maze = bool(open_maze)
        max_mud = 127 if self.fixed_maze is not None else max(self.mud_range, 1)
        n = self.width * self.height
        # Zobrist tables (fixed seed, so keys are stable across runs and processes)
        self._z_cheese = _zobrist((n,), 1)
        self._z_pos = _zobrist((2, n), 2)
        self._z_mud = _zobrist((2, max_mud + 1), 3)
        self._z_turn = _zobrist((self.max_episode_steps + 2,), 4)
        # scores and the end flag decide what follows (a score above half the cheese ends the
        # game), so they are part of the key; scores are multiples of 0.5, indexed by 2 * score
        self._z_score = _zobrist((2, 2 * self.cheese_count + 1), 5)
        self._z_end = _zobrist((), 6)
        # the nearness plane's distance field (its int width depends on the longest distance)
        max_weight = int(self.fixed_maze.cost.max()) if self.fixed_maze is not None else self.mud_range
        self._distance = mz.make_distance_to_cheese(self.width, self.height, max_weight)
        # the same field kept in the state and repaired where cheese was eaten
        self._nearest = mz.NearestCheese(self.width, self.height, max_weight)
        self._fixed_nearest = (None if self.fixed_maze is None else
                               self._nearest.fresh_numpy(self.fixed_maze.cost,
                                                         self.fixed_maze.cheese))

    # ------------------------------------------------------------------ protocol
    def _init(self, key: PRNGKey) -> PyRatState:
        if self.fixed_maze is not None:
            m = self.fixed_maze
            cost, cheese = jnp.asarray(m.cost, jnp.int8), jnp.asarray(m.cheese)
            pos = jnp.array([m.player1, m.player2], dtype=jnp.int32)
            field = jnp.asarray(self._fixed_nearest)
        else:
            cost, cheese = mz.generate(key, self.width, self.height, self.cheese_count,
                                       self.wall_density, self.mud_density, self.mud_range)
            pos = jnp.array([[0, 0], [self.width - 1, self.height - 1]], dtype=jnp.int32)
            field = self._nearest.fresh(cost, cheese)
        return PyRatState(
            current_player=jnp.int32(0),
            observation=jnp.zeros((self.height, self.width, NUM_PLANES), jnp.float32),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.array(False),
            truncated=jnp.array(False),
            legal_action_mask=jnp.ones((2, 5), bool),
            step_count=jnp.int32(0),
            maze=cost,
            cheese=cheese,
            positions=pos,
            mud_turns=jnp.zeros(2, jnp.int32),
            scores=jnp.zeros(2, jnp.float32),
            initial_cheese=jnp.sum(cheese).astype(jnp.float32),
            cheese_field=field,
        )

    def _step(self, state: PyRatState, action: Array, key: Optional[PRNGKey]) -> PyRatState:
        del key
        x, y = state.positions[:, 0], state.positions[:, 1]
        a = jnp.clip(action, 0, 4)
        cost = jnp.where(a < 4, state.maze[y, x, jnp.minimum(a, 3)].astype(jnp.int32), 0)
        free = state.mud_turns == 0
        moves = free & (cost > 0)
        nx = jnp.where(moves, x + jnp.asarray(DX)[a], x)
        ny = jnp.where(moves, y + jnp.asarray(DY)[a], y)
        mud = jnp.where(free, jnp.where(moves, cost - 1, 0), state.mud_turns - 1)
        arrived = mud == 0
        on = state.cheese[ny, nx] & arrived
        shared = on[0] & on[1] & (nx[0] == nx[1]) & (ny[0] == ny[1])
        reward = jnp.where(on, jnp.where(shared, 0.5, 1.0), 0.0).astype(jnp.float32)
        cheese = state.cheese.at[ny, nx].set(state.cheese[ny, nx] & ~on)
        field = self._nearest.repair(state.maze, state.cheese_field,
                                     jnp.where(on, ny * self.width + nx, -1))
        scores = state.scores + reward
        over = jnp.any(scores > state.initial_cheese / 2) | ~jnp.any(cheese)
        cut = ~over & (state.step_count >= self.max_episode_steps)
        return state.replace(positions=jnp.stack([nx, ny], axis=1).astype(jnp.int32),
                             mud_turns=mud.astype(jnp.int32), cheese=cheese, scores=scores,
                             cheese_field=field, rewards=reward, terminated=state.terminated | over,
                             truncated=state.truncated | cut)

    def _observe(self, state: PyRatState, player_id: Array) -> Array:
        """float32[H, W, 16] planes (docs/pyrat.md). Player 1's view is the board as is; player
        2's view is the board rotated by 180 degrees with the players swapped, so that every
        player sees itself as "me" starting bottom-left (its actions then map UP<->DOWN,
        LEFT<->RIGHT)."""
        h, w = self.height, self.width

        # nearness to cheese, 1 / (1 + mud-weighted turns to the nearest cheese): the feature a
        # small network cannot compute itself in a few layers, and the one the greedy baseline
        # follows; the field is kept in the state, repaired by the step where cheese was eaten
        # (`envs.pyrat.maze.NearestCheese`)
        near = 1.0 / (1.0 + self._nearest.finish(state.cheese_field).astype(jnp.float32))

        # One set of planes, built for the viewer, instead of both players' planes and a select
        # between them: with the viewer batched, the select computed both (issue 34 item 6;
        # building the 17 planes cost about as much as the distance field, docs/benchmarks.md).
        # Player 2's planes are player 1's turned round with the channels swapped (VIEW_CHANNELS),
        # so the per-cell inputs are oriented with selects before the planes are made; the
        # arithmetic on each value is the one the two-view version did, so the floats are equal.
        flip = player_id == 1

        def turn(a):  # a [H, W, ...] as the viewer sees it
            return jnp.where(flip, a[::-1, ::-1], a)

        def seats(v):  # (the viewer's, the opponent's) entry of a per-player vector
            return jnp.where(flip, v[1], v[0]), jnp.where(flip, v[0], v[1])

        (mx, ox), (my, oy) = seats(state.positions[:, 0]), seats(state.positions[:, 1])
        mx, ox = jnp.where(flip, w - 1 - mx, mx), jnp.where(flip, w - 1 - ox, ox)
        my, oy = jnp.where(flip, h - 1 - my, my), jnp.where(flip, h - 1 - oy, oy)
        mud_me, mud_op = seats(state.mud_turns)
        score_me, score_op = seats(state.scores)
        # planes 9-15 in one array: each is a value at one cell (the rats' one-hots and mud) or
        # everywhere (scores, turn). The one-hots are comparisons with the cell coordinates (a
        # scatter per plane was slower). As one [H, W, 7] array instead of seven planes, XLA
        # makes the whole observation one fused kernel (it made 14 before the concatenation,
        # each a separate pass; docs/benchmarks.md, "PyRat env step (issue 34 item 6)").
        # Values equal the former `me * mud_me` and `full * score / ic`: 1 * v = v + 0 = v.
        ys, xs = jnp.arange(h)[:, None, None], jnp.arange(w)[None, :, None]
        f32 = jnp.float32
        ic = jnp.maximum(state.initial_cheese, 1.0)
        zero, one, nowhere = f32(0), f32(1), jnp.int32(-1)
        at_x = jnp.stack([mx, ox, mx, ox, nowhere, nowhere, nowhere])
        at_y = jnp.stack([my, oy, my, oy, nowhere, nowhere, nowhere])
        at = jnp.stack([one, one, mud_me.astype(f32), mud_op.astype(f32), zero, zero, zero])
        everywhere = jnp.stack([zero, zero, zero, zero, score_me / ic, score_op / ic,
                                state.step_count.astype(f32) / f32(self.max_episode_steps)])
        block = jnp.where((ys == at_y) & (xs == at_x), at, zero) + everywhere
        # the maze's 8 planes are made unturned and turned afterwards: a rotated view sees
        # direction d as the board's (d + 2) % 4, a swap of plane pairs
        walls = (state.maze == 0).astype(jnp.float32)
        mud = (jnp.maximum(state.maze, 1) - 1).astype(jnp.float32)
        rot = jnp.concatenate([walls, mud], axis=-1)[::-1, ::-1]
        rot = jnp.concatenate([rot[..., 2:4], rot[..., 0:2], rot[..., 6:8], rot[..., 4:6]], -1)
        maze_planes = jnp.where(flip, rot, jnp.concatenate([walls, mud], axis=-1))
        return jnp.concatenate([
            maze_planes,
            turn(state.cheese).astype(jnp.float32)[..., None],
            block,
            turn(near)[..., None],
        ], axis=-1)

    # ------------------------------------------------------------- search support
    def effective_outcomes(self, state: PyRatState) -> tuple[Array, Array, Array]:
        """Per player, the distinct results of its five actions (the spec's outcome indexing).

        Returns (n int32[2], outcomes int32[2, 5], action_to_idx int32[2, 5]): outcome k of
        player p is played by action `outcomes[p, k]` (k < n[p]; padding is STAY), and action
        a leads to outcome `action_to_idx[p, a]`. Open moves come first in action order, the
        "stay where I am" outcome (STAY, moves into walls, any action while in mud) is last.
        """
        x, y = state.positions[:, 0], state.positions[:, 1]
        cost = state.maze[y, x]  # [2, 4]
        opens = (cost > 0) & (state.mud_turns == 0)[:, None]
        rank = jnp.cumsum(opens, axis=1) - 1
        n = jnp.sum(opens, axis=1) + 1
        a2i = jnp.concatenate([jnp.where(opens, rank, (n - 1)[:, None]), (n - 1)[:, None]], 1)
        k = jnp.arange(5)
        # outcome k < n-1 is the (k+1)-th open move
        first = jnp.argmax((rank[:, None, :] == k[None, :, None]) & opens[:, None, :], axis=2)
        outcomes = jnp.where(k[None, :] < (n - 1)[:, None], first, STAY).astype(jnp.int32)
        return n.astype(jnp.int32), outcomes, a2i.astype(jnp.int32)

    def state_key(self, state: PyRatState) -> Array:
        """uint32[2]: a 64-bit Zobrist key of (positions, remaining cheese, mud, turn, scores,
        end of the game). The spec's key stops at the turn; the scores and the end flag are added
        because they decide the end of the game, so two states that differ only there have
        different futures (one may be finished, the other not)."""
        w = self.width
        cells = state.positions[:, 1] * w + state.positions[:, 0]
        zc = jnp.where(state.cheese.reshape(-1)[:, None], jnp.asarray(self._z_cheese),
                       jnp.uint32(0))
        parts = jnp.concatenate([
            zc,
            jnp.asarray(self._z_pos)[jnp.arange(2), cells],
            jnp.asarray(self._z_mud)[jnp.arange(2), jnp.clip(state.mud_turns, 0,
                                                             self._z_mud.shape[1] - 1)],
            jnp.asarray(self._z_turn)[jnp.clip(state.step_count, 0, self.max_episode_steps + 1)][None],
            jnp.asarray(self._z_score)[jnp.arange(2), jnp.clip(
                jnp.round(2 * state.scores).astype(jnp.int32), 0, self._z_score.shape[1] - 1)],
            jnp.where(state.terminated | state.truncated, jnp.asarray(self._z_end),
                      jnp.uint32(0))[None],
        ], axis=0)
        return jax.lax.reduce(parts, jnp.uint32(0), jax.lax.bitwise_xor, (0,))

    def search_embedding(self, state: PyRatState) -> dict[str, Array]:
        """The part of a state that changes during a game (what a search node stores). The kept
        distance field is in it (1260 bytes on the default board, beside 315 of cheese): a
        restored state's observation and next step then read it instead of recomputing it."""
        return dict(cheese=state.cheese, positions=state.positions, mud_turns=state.mud_turns,
                    scores=state.scores, step_count=state.step_count,
                    terminated=state.terminated, truncated=state.truncated,
                    rewards=state.rewards, cheese_field=state.cheese_field)

    def search_restore(self, root: PyRatState, emb: dict[str, Array]) -> PyRatState:
        """A full state from the root's static part (maze) and a node's embedding."""
        s = root.replace(**emb)
        return s.replace(observation=self._observe(s, s.current_player))

    def same_position(self, a: dict[str, Array], b: dict[str, Array]) -> Array:
        """Exact equality of the transposition key's fields (guards against hash collisions)."""
        return (jnp.all(a["positions"] == b["positions"]) & jnp.all(a["mud_turns"] == b["mud_turns"])
                & (a["step_count"] == b["step_count"]) & jnp.all(a["cheese"] == b["cheese"])
                & jnp.all(a["scores"] == b["scores"]) & (a["terminated"] == b["terminated"])
                & (a["truncated"] == b["truncated"]))

    # --------------------------------------------------------------- baselines
    def distance_to_cheese(self, state: PyRatState) -> Array:
        """int32[H, W]: turns from each cell to the nearest cheese, mud weighted (big if none).
        Computed from `state.cheese` (any cheese, also one set by hand): Bellman-Ford in
        `lax.while_loop`, with one loop for a whole vmapped batch
        (`envs.pyrat.maze.make_distance_to_cheese`). The states the env makes carry the same
        field (`state.cheese_field`), which the observation and `greedy_actions` read."""
        return self._distance(state.maze, state.cheese)

    def set_cheese(self, state: PyRatState, cheese: Array) -> PyRatState:
        """`state` with the cheese `cheese` (bool[H, W]) and its distance field remade (the one
        kept in the state follows the cheese only through `step`). Jittable; vmap for a batch."""
        return state.replace(cheese=cheese, cheese_field=self._nearest.fresh(state.maze, cheese))

    def greedy_actions(self, state: PyRatState) -> Array:
        """int32[2]: each rat takes a first step of a shortest (mud-weighted) path to the nearest
        cheese; ties go to the lowest action index; STAY when stuck in mud or no cheese is left.
        Jittable; vmap it for a batch."""
        dist = self._nearest.finish(state.cheese_field)
        big = jnp.int32(1 << 20)
        x, y = state.positions[:, 0], state.positions[:, 1]
        cost = state.maze[y, x].astype(jnp.int32)  # [2, 4]
        nxt = jnp.stack([dist[jnp.clip(y + DY[k], 0, self.height - 1),
                              jnp.clip(x + DX[k], 0, self.width - 1)] for k in range(4)], 1)
        total = jnp.where(cost > 0, cost + nxt, big)
        best = jnp.argmin(total, axis=1)
        ok = (state.mud_turns == 0) & (jnp.min(total, axis=1) < big) & (dist[y, x] > 0)
        return jnp.where(ok, best, STAY).astype(jnp.int32)

    # ------------------------------------------------------------------ display
    def render_text(self, state: PyRatState) -> str:
        """A text picture of an unbatched state (top row first); see docs/pyrat.md."""
        require_unbatched(state, "pyrat: render_text")
        return render_text(state)

    def _player_action_to_string(self, state, player: int, action: int) -> str:
        if not 0 <= action < self.num_actions:
            raise ValueError(f"pyrat: action {action} out of range [0, {self.num_actions})")
        return ACTION_NAMES[action]

    def _player_string_to_action(self, state, player: int, text: str) -> int:
        t = text.strip().lower()
        if t not in ACTION_NAMES:
            raise ValueError(f"pyrat: {text!r} is not an action; one of {', '.join(ACTION_NAMES)}")
        return ACTION_NAMES.index(t)

    def to_maze(self, state: PyRatState) -> Maze:
        """The maze, cheese and positions of an unbatched state as a `Maze` (for saving)."""
        require_unbatched(state, "pyrat: to_maze")
        pos = np.asarray(state.positions)
        return Maze(self.width, self.height, np.asarray(state.maze, np.int32),
                    np.asarray(state.cheese, bool), tuple(int(v) for v in pos[0]),
                    tuple(int(v) for v in pos[1]))

    def __repr__(self) -> str:
        return (f"PyRat({self.width}x{self.height}, cheese={self.cheese_count}, "
                f"max_episode_steps={self.max_episode_steps}{', fixed maze' if self.fixed_maze else ''})")
