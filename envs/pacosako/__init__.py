"""Paco Ŝako under the library's protocol (rules: docs/pacosako.md).

    env = envs.make("pacosako")
    state = env.init(key)                         # the standard start position
    state = envs.pacosako.from_notation("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -")
    state = jax.jit(env.step)(state, action)      # one atomic action: lift, place or promote
    envs.pacosako.to_notation(state), envs.pacosako.render_text(state)

Player 0 is White, player 1 Black. A move is a chain of atomic actions by one player; the
player to act (`current_player`) stays the same until the chain ends. Actions (132, the engine's
ML action space shifted to start at 0): 0-63 lift from a square, 64-127 place on a square,
128-131 promote to rook, knight, bishop, queen. Squares are seen from the mover (ranks mirrored
for Black, files kept). The observation is the spec's 8x8xL tensor; by default with
use_perspective, with_must_lift and with_must_promote (32 layers).
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.pacosako import notation as N
from envs.pacosako import repr as RP
from envs.pacosako import rules as R
from envs.pacosako import svg as SVG
from envs.checks import integer
from envs.core import Env, State, require_unbatched

Array = jax.Array
NUM_ACTIONS = R.NUM_ACTIONS
REASONS = R.REASONS
START = N.START
PROMOTION_PIECES = ("rook", "knight", "bishop", "queen")


@struct.dataclass
class PacoSakoState(State):
    """A position plus what the draw rules need.

    board: int8[2, 64] piece code (0 none, 1 pawn, 2 rook, 3 knight, 4 bishop, 5 queen, 6 king)
        of White (row 0) and Black (row 1) on each square a1=0 .. h8=63; both set = a union.
    color: int32 side to act (0 White, 1 Black), equal to current_player.
    required: int32 next action kind (rules.LIFT, PLACE, PROMOTE_THEN_LIFT/PLACE/FINISH).
    hand_piece, hand_partner: int32 the mover's lifted piece and, for a lifted union, the
        opponent's piece in it (0 = none); hand_pos: int32 the square it was lifted from (-1).
    ep: int32 en passant square (-1); promotion: int32 square of the pawn to promote (-1).
    castling: bool[4] White queen side, White king side, Black queen side, Black king side.
    no_progress: int32 lifts since the last union or promotion (the engine's counter).
    rep_hist: uint32[128, 2] keys of the positions since the last progress; rep_len: int32.
    termination: int32 index into REASONS (0 = running); winner: int32 (-1 none).
    """

    board: Array
    color: Array
    required: Array
    hand_piece: Array
    hand_partner: Array
    hand_pos: Array
    ep: Array
    promotion: Array
    castling: Array
    no_progress: Array
    rep_hist: Array
    rep_len: Array
    termination: Array
    winner: Array

    def _svg(self) -> str:
        return render_svg(self)


_FIELDS = ("board", "color", "required", "hand_piece", "hand_partner", "hand_pos", "ep",
           "promotion", "castling", "no_progress", "rep_hist", "rep_len", "termination", "winner")


def _as_dict(state) -> dict:
    return {k: getattr(state, k) for k in _FIELDS}


def _mask_of(p) -> Array:
    return R.legal_mask(p["board"], p["color"], p["required"], p["hand_piece"],
                        p["hand_partner"], p["hand_pos"], p["ep"], p["castling"])


def _settle(p: dict, step_count, max_steps, observation=None) -> PacoSakoState:
    """Derive mask, termination and rewards of a position dict."""
    mask = _mask_of(p)
    running = p["termination"] == R.RUNNING
    stuck = running & ~jnp.any(mask)
    # a player with no legal action loses (on pacoplay.com they would lose on time)
    termination = jnp.where(stuck, R.NO_LEGAL_ACTION, p["termination"]).astype(jnp.int32)
    winner = jnp.where(stuck, 1 - p["color"], p["winner"]).astype(jnp.int32)
    terminated = termination != R.RUNNING
    rewards = jnp.where(winner >= 0, jnp.where(jnp.arange(2) == winner, 1.0, -1.0), 0.0)
    rewards = jnp.where(terminated, rewards, 0.0).astype(jnp.float32)
    truncated = (~terminated) & (step_count >= max_steps) if max_steps else jnp.bool_(False)
    fields = dict(p, termination=termination, winner=winner)
    return PacoSakoState(current_player=p["color"].astype(jnp.int32),
                         observation=(jnp.zeros((8, 8, 1), jnp.float32) if observation is None
                                      else observation), rewards=rewards,
                         terminated=terminated, truncated=truncated, legal_action_mask=mask,
                         step_count=jnp.asarray(step_count, jnp.int32),
                         **{k: fields[k] for k in _FIELDS})


def _fields_from_numpy(f: dict) -> dict:
    """Position fields from parsed notation (one position, or stacked along a leading axis)."""
    winner = jnp.asarray(f.get("winner", np.full(np.shape(f["color"]), -1)), jnp.int32)
    batch = np.shape(f["color"])
    return dict(board=jnp.asarray(f["board"], jnp.int8), color=jnp.asarray(f["color"], jnp.int32),
                required=jnp.asarray(f["required"], jnp.int32),
                hand_piece=jnp.asarray(f["hand_piece"], jnp.int32),
                hand_partner=jnp.asarray(f["hand_partner"], jnp.int32),
                hand_pos=jnp.asarray(f["hand_pos"], jnp.int32), ep=jnp.asarray(f["ep"], jnp.int32),
                promotion=jnp.asarray(f["promotion"], jnp.int32),
                castling=jnp.asarray(f["castling"], jnp.bool_),
                no_progress=jnp.asarray(f["no_progress"], jnp.int32),
                rep_hist=jnp.zeros(batch + (R.REP_CAP, 2), jnp.uint32),
                rep_len=jnp.zeros(batch, jnp.int32),
                termination=jnp.where(winner >= 0, R.PACO, R.RUNNING).astype(jnp.int32),
                winner=winner)


class PacoSako(Env):
    """Paco Ŝako, two players, 132 atomic actions, chains played as repeated actions."""

    renamed_options = (("max_steps", "max_episode_steps"),)  # the step cap's former name

    id = "pacosako"
    num_players = 2
    num_actions = NUM_ACTIONS
    # `rules.legal_mask` allows one kind of action at a time (lift, place or promote): at most
    # 16 lifts (16 pieces a side), 64 places or 4 promotions. Checked over random playouts in
    # tests/envs/test_conformance.py.
    max_legal_actions = 64

    def __init__(self, use_perspective: bool = True, with_must_lift: bool = True,
                 with_must_promote: bool = True, max_episode_steps: Optional[int] = None,
                 draw_after_repetitions: int = R.DRAW_AFTER_REPETITIONS):
        cap = max_episode_steps
        if cap is not None:
            cap = integer("pacosako", "max_episode_steps", cap, minimum=1)
        self.use_perspective = bool(use_perspective)
        self.with_must_lift = bool(with_must_lift)
        self.with_must_promote = bool(with_must_promote)
        self.max_episode_steps = cap
        # 0 = off; True was taken for 1
        self.draw_after_repetitions = integer("pacosako", "draw_after_repetitions",
                                              draw_after_repetitions, minimum=0)
        self._start = N.parse(START)

    # ------------------------------------------------------------- one API shape
    def action_to_string(self, state: PacoSakoState, action) -> str:
        """'lift e2', 'place e4' or 'promote queen' (see the module's `action_to_string`)."""
        return action_to_string(state, self._scalar_action(action))

    def string_to_action(self, state: PacoSakoState, text: str) -> int:
        if not isinstance(text, str):
            raise ValueError(f"pacosako: an action text must be a string, got {text!r}")
        return action_from_string(state, text)

    def render_text(self, state: PacoSakoState) -> str:
        return render_text(state)

    def render_svg(self, state: PacoSakoState) -> str:
        return render_svg(state)

    def _flags(self) -> dict:
        return dict(use_perspective=self.use_perspective, with_must_lift=self.with_must_lift,
                    with_must_promote=self.with_must_promote)

    def _init(self, key) -> PacoSakoState:
        return _settle(_fields_from_numpy(self._start), 0, self.max_episode_steps)

    def _step(self, state: PacoSakoState, action, key) -> PacoSakoState:
        p = R.apply_action(_as_dict(state), action, self.draw_after_repetitions)
        return _settle(p, state.step_count, self.max_episode_steps, state.observation)

    def _observe(self, state: PacoSakoState, player_id) -> Array:
        # with use_perspective the viewer is at the bottom; the must-lift/promote layers always
        # describe the player to act
        return RP.tensor_one(_as_dict(state), **self._flags(),
                             viewer=jnp.asarray(player_id, jnp.int32))

    def from_notation(self, text: str) -> PacoSakoState:
        """A state from the text notation (ValueError if malformed)."""
        fields = _fields_from_numpy(N.parse(text))
        if not hasattr(self, "_build"):
            self._build = jax.jit(lambda f: self._finalize(_settle(f, 0, self.max_episode_steps)))
        return self._build(fields)

    def from_notations(self, texts) -> PacoSakoState:
        """A batch of states (leading axis = len(texts)) from a list of notations, one compile."""
        parsed = [N.parse(t) for t in texts]
        if not parsed:
            raise ValueError("pacosako: from_notations needs at least one notation")
        stacked = {k: np.stack([np.asarray(p.get(k, -1)) for p in parsed])
                   for k in parsed[0] if k in _FIELDS}
        fields = _fields_from_numpy(stacked)
        if not hasattr(self, "_build_batch"):
            self._build_batch = jax.jit(jax.vmap(
                lambda f: self._finalize(_settle(f, 0, self.max_episode_steps))))
        return self._build_batch(fields)


# ------------------------------------------------------------------------ public helpers
@functools.lru_cache(maxsize=1)
def _default_env() -> PacoSako:
    """The default-configured env the module helpers use, built on first use (not at import:
    importing a game builds nothing) and then kept, with its compiled parsers."""
    return PacoSako()


def from_notation(text: str, env: Optional[PacoSako] = None) -> PacoSakoState:
    """Parse the text notation (engine X-FEN, docs/pacosako.md) into a state."""
    return (env or _default_env()).from_notation(text)


def from_notations(texts, env: Optional[PacoSako] = None) -> PacoSakoState:
    """Parse a list of notations into one batched state (leading axis = position)."""
    return (env or _default_env()).from_notations(list(texts))


def to_notation(state: PacoSakoState) -> str:
    """The text notation of one (unbatched) state."""
    require_unbatched(state, "pacosako: to_notation")
    f = {k: np.asarray(getattr(state, k)) for k in _FIELDS}
    return N.write(f["board"], f["color"], f["required"], f["hand_piece"], f["hand_partner"],
                   f["hand_pos"], f["ep"], f["promotion"], f["castling"], f["no_progress"])


def render_text(state: PacoSakoState) -> str:
    """A text diagram of one state with the side to act and the termination."""
    require_unbatched(state, "pacosako: render_text")
    text = N.render(state.board, state.color, state.hand_piece, state.hand_partner,
                    state.hand_pos)
    status = REASONS[int(state.termination)]
    who = "White" if int(state.color) == 0 else "Black"
    text += f"\n{who} to act ({_KIND[int(state.required)]}); {status}"
    if int(state.winner) >= 0:
        text += f"; {'White' if int(state.winner) == 0 else 'Black'} wins"
    return text


_KIND = ("lift", "place", "promote, then lift", "promote, then place", "promote")


def render_svg(state: PacoSakoState) -> str:
    """An SVG picture of one state (White's piece left, Black's right on a square)."""
    require_unbatched(state, "pacosako: render_svg")
    status = f"{'White' if int(state.color) == 0 else 'Black'} to act " \
             f"({_KIND[int(state.required)]}); {REASONS[int(state.termination)]}"
    return SVG.board_svg(state.board, int(state.color), int(state.hand_piece),
                         int(state.hand_partner), int(state.hand_pos), status)


def action_to_string(state: PacoSakoState, action: int) -> str:
    """'lift e2', 'place e4' or 'promote queen' for an action in `state`'s mover frame."""
    require_unbatched(state, "pacosako: action_to_string")
    a = int(action)
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"pacosako: action {a} out of range [0, {NUM_ACTIONS})")
    if a >= 128:
        return f"promote {PROMOTION_PIECES[a - 128]}"
    sq = a % 64 ^ (56 if int(state.color) == 1 else 0)
    return f"{'lift' if a < 64 else 'place'} {N.square_name(sq)}"


def action_from_string(state: PacoSakoState, text: str) -> int:
    """Inverse of `action_to_string` (no legality check; see `env.check_action`)."""
    require_unbatched(state, "pacosako: action_from_string")
    parts = text.strip().lower().split()
    if len(parts) != 2 or parts[0] not in ("lift", "place", "promote"):
        raise ValueError(f"pacosako: bad action {text!r} (e.g. 'lift e2', 'promote queen')")
    if parts[0] == "promote":
        if parts[1] not in PROMOTION_PIECES:
            raise ValueError(f"pacosako: cannot promote to {parts[1]!r}")
        return 128 + PROMOTION_PIECES.index(parts[1])
    sq = N.parse_square(parts[1]) ^ (56 if int(state.color) == 1 else 0)
    return sq + (0 if parts[0] == "lift" else 64)


def engine_action_to_index(kind: str, value, color: int) -> int:
    """The engine's PacoAction (Lift/Place absolute square 0..63, Promote piece name) -> index."""
    if kind == "Promote":
        return 128 + PROMOTION_PIECES.index(str(value).lower())
    sq = int(value) ^ (56 if color == 1 else 0)
    return sq + (0 if kind == "Lift" else 64)


def legal_actions(state: PacoSakoState) -> list[str]:
    """The legal actions of one state as strings (empty at a terminal state)."""
    require_unbatched(state, "pacosako: legal_actions")
    if bool(state.terminated) or bool(state.truncated):
        return []
    return [action_to_string(state, a) for a in np.flatnonzero(np.asarray(state.legal_action_mask))]


# ------------------------------------------------------------------------ representations
def _check_flags(use_perspective, with_must_lift, with_must_promote):
    for name, v in (("use_perspective", use_perspective), ("with_must_lift", with_must_lift),
                    ("with_must_promote", with_must_promote)):
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"pacosako: {name} must be a bool, got {v!r}")


def tensor_representation(state: PacoSakoState, *, use_perspective: bool = True,
                          with_must_lift: bool = False, with_must_promote: bool = False) -> Array:
    """float32[..., 8, 8, L]: the spec's tensor, built directly, for a state or a batch."""
    _check_flags(use_perspective, with_must_lift, with_must_promote)
    return _map_states("tensor", (use_perspective, with_must_lift, with_must_promote), state)


def index_representation(state: PacoSakoState, *, use_perspective: bool = True,
                         with_must_lift: bool = False, with_must_promote: bool = False) -> Array:
    """uint32[..., n]: the spec's index vector for a state or a batch (n = 38 + options)."""
    _check_flags(use_perspective, with_must_lift, with_must_promote)
    return _map_states("index", (use_perspective, with_must_lift, with_must_promote), state)


def expand_index_representation(indices, *, use_perspective: bool = True,
                                with_must_lift: bool = False,
                                with_must_promote: bool = False) -> Array:
    """float32[..., 8, 8, L] from index vectors (branchless: one scatter, constant layers)."""
    _check_flags(use_perspective, with_must_lift, with_must_promote)
    n = RP.index_length(use_perspective, with_must_lift, with_must_promote)
    n_layers = RP.num_layers(use_perspective, with_must_lift, with_must_promote)
    if not isinstance(indices, jax.core.Tracer):
        arr = np.asarray(indices)
        if arr.ndim < 1 or arr.shape[-1] != n:
            raise ValueError(f"pacosako: index vectors must have length {n} for these options, "
                             f"got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"pacosako: index vectors must be integers, got {arr.dtype}")
        flat = arr.reshape(-1, n).astype(np.int64)
        if np.any(flat[:, :33] < 0) or np.any(flat[:, :33] >= 25 * 64):
            raise ValueError("pacosako: piece/en passant indices must lie in [0, 1600)")
        if np.any((flat[:, 33:-1] != 0) & (flat[:, 33:-1] != 1)):
            raise ValueError("pacosako: castling/player/must-lift/must-promote values must be 0 or 1")
        if np.any((flat[:, -1] < 0) | (flat[:, -1] > 100)):
            raise ValueError("pacosako: the half-move clock must lie in [0, 100]")
    del n_layers
    x = jnp.asarray(indices)
    return _compiled("expand", (use_perspective, with_must_lift, with_must_promote),
                     x.ndim - 1)(x)


# bounded: 3 kinds x 8 option sets x the batch ranks in use
@functools.lru_cache(maxsize=64)
def _compiled(kind: str, flags: tuple, extra: int):
    """jit(vmap^extra(one-item function)) per representation kind, options and batch rank."""
    one = {"tensor": RP.tensor_one, "index": RP.index_one, "expand": RP.expand_one}[kind]
    f = lambda x: one(x, *flags)
    for _ in range(extra):
        f = jax.vmap(f)
    return jax.jit(f)


def _map_states(kind, flags, state):
    return _compiled(kind, flags, int(np.ndim(state.color)))(_as_dict(state))
