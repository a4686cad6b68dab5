"""Chess under the library's protocol, on uint32-pair bitboards (see docs/chess.md).

    env = envs.make("chess")                 # Chess(max_plies=512)
    state = env.init(key)                    # the standard start position
    state = envs.chess.from_fen(fen)         # any legal position
    a = envs.chess.encode_move(state, "e2e4")
    state = jax.jit(env.step)(state, a)
    envs.chess.to_fen(state), envs.chess.decode_action(state, a)

Player 0 is White and player 1 is Black. Actions follow the 4672-move encoding of
docs/chess.md, in the mover's frame (ranks mirrored for Black). The observation
is the 8x8x122 tensor of docs/chess.md from `current_player`'s side.
"""

from __future__ import annotations

import functools
import re
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.chess import bitboard as bbm
from envs.chess import core
from envs.chess.core import NUM_ACTIONS, REASONS
from envs.checks import integer
from envs.core import Env, State, require_unbatched

Array = jax.Array
HISTORY = 8  # past positions in the observation
HASH_HISTORY = 100  # positions kept for repetitions: the 50-move rule bounds the look-back
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
PIECES = "PNBRQK"


@struct.dataclass
class ChessState(State):
    """Chess position plus what repetitions and the observation history need.

    board: uint32[12, 2] bitboards (lo, hi words), White P,N,B,R,Q,K then Black P..K.
    castling: bool[4] rights White K-side, White Q-side, Black K-side, Black Q-side.
    ep_square: int32 absolute square (a1=0) of an en-passant capture that is legal now, else -1.
    halfmove_clock, fullmove_number: int32 as in FEN.
    hist_board: uint32[8, 12, 2] the 8 previous positions, most recent first (zeros before start).
    hist_rep: bool[8] whether each of those positions was a repetition when it occurred.
    hash: uint32[2] the current position's 64-bit hash; hash_hist: uint32[100, 2] previous ones.
    repetition: int32 how many times the current position has occurred (1 = first time).
    termination: int32 index into `envs.chess.REASONS` (0 = ongoing).
    """

    board: Array
    castling: Array
    ep_square: Array
    halfmove_clock: Array
    fullmove_number: Array
    hist_board: Array
    hist_rep: Array
    hash: Array
    hash_hist: Array
    repetition: Array
    termination: Array

    def _svg(self) -> str:  # the picture Jupyter shows (`State._repr_html_`)
        return render_svg(self)


# ----------------------------------------------------------------- shared core
def _position(board, color, castling, ep_raw, halfmove, fullmove, hist_board, hist_rep,
              hash_hist, step_count, max_plies):
    """Build every derived field of a state from a position (mover known, ep not cleaned)."""
    us, them, castle, ep = core.to_mover(board, color, castling, ep_raw)
    mask, in_check, ep_legal, has_moves = core.legal_moves(us, them, castle[:2], ep)
    ep_abs = jnp.where(ep_legal, ep_raw, -1).astype(jnp.int32)
    h = core.position_hash(board, color, castling, ep_abs)
    back = jnp.arange(1, HASH_HISTORY + 1)
    valid = (back <= halfmove) & (back <= step_count)
    same = jnp.all(hash_hist == h[None, :], axis=-1)
    rep = 1 + jnp.sum(valid & same).astype(jnp.int32)
    reasons = jnp.stack([
        ~has_moves & in_check,
        ~has_moves & ~in_check,
        core.insufficient_material(board),
        halfmove >= 100,
        rep >= 3,
    ])
    termination = jnp.where(jnp.any(reasons), jnp.argmax(reasons) + 1, 0).astype(jnp.int32)
    # materialised: callers select whole states on `terminated | truncated` (restarting
    # finished games), and XLA:CPU otherwise fused the terminal checks into every element of
    # that select, e.g. 4672 times per game for the legal mask (docs/chess.md, "Random play")
    termination = core._bar(termination)
    terminated = termination > 0
    truncated = ~terminated & (step_count >= max_plies)
    termination = jnp.where(truncated, core.PLY_CAP, termination)
    mated = termination == core.CHECKMATE
    # the side to move (player `color`) is mated: it gets -1, the other +1
    rewards = jnp.where(
        mated, jnp.where(jnp.arange(2) == color, -1.0, 1.0), 0.0
    ).astype(jnp.float32)
    return ChessState(
        current_player=jnp.asarray(color, jnp.int32),
        observation=None,  # computed on demand (`Env.observe`), docs/chess.md
        rewards=rewards,
        terminated=terminated,
        truncated=truncated,
        legal_action_mask=mask,
        step_count=jnp.asarray(step_count, jnp.int32),
        board=board,
        castling=castling,
        ep_square=ep_abs,
        halfmove_clock=jnp.asarray(halfmove, jnp.int32),
        fullmove_number=jnp.asarray(fullmove, jnp.int32),
        hist_board=hist_board,
        hist_rep=hist_rep,
        hash=h,
        hash_hist=hash_hist,
        repetition=rep,
        termination=termination,
    )


def _observe_state(state: ChessState, player) -> Array:
    return core.observation(
        state.board, state.hist_board, state.hist_rep, state.repetition,
        jnp.asarray(player, jnp.int32), state.castling, state.fullmove_number,
        state.halfmove_clock,
    )


def _fresh(board, color, castling, ep, halfmove, fullmove, max_plies):
    st = _position(
        board, color, castling, ep, halfmove, fullmove,
        jnp.zeros((HISTORY, 12, 2), jnp.uint32), jnp.zeros((HISTORY,), jnp.bool_),
        jnp.zeros((HASH_HISTORY, 2), jnp.uint32), 0, max_plies,
    )
    mask = jnp.where(st.terminated, True, st.legal_action_mask)
    st = st.replace(legal_action_mask=mask)
    return st.replace(observation=_observe_state(st, st.current_player))


_fresh_jit = jax.jit(_fresh, static_argnames=("max_plies",))


@functools.lru_cache(maxsize=None)
def _start_state(max_plies: int) -> ChessState:
    """The start position's state (no observation) as numpy arrays, from one compiled call;
    computed concretely even when first asked for inside a trace (an ahead-of-time compiled
    call runs there; `ensure_compile_time_eval` would have run the rules op by op)."""
    def start():
        return _position(
            *[jnp.asarray(x) for x in _parse_fen(START_FEN)],
            jnp.zeros((HISTORY, 12, 2), jnp.uint32), jnp.zeros((HISTORY,), jnp.bool_),
            jnp.zeros((HASH_HISTORY, 2), jnp.uint32), 0, max_plies,
        )

    state = jax.jit(start).lower().compile()()
    return jax.tree_util.tree_map(np.asarray, state)


class Chess(Env):
    """Chess with every rule; `max_plies` (default 512, docs/chess.md) truncates the game."""

    id = "chess"
    num_players = 2
    num_actions = NUM_ACTIONS

    # the most legal moves of any chess position: 218 (Petrovic's 1964 composition, FEN in
    # tests/envs/test_conformance.py, checked there against python-chess)
    max_legal_actions = 218

    def __init__(self, max_episode_steps: int = 512, *, max_plies: Optional[int] = None):
        # `max_plies` is the former name of `max_episode_steps` (kept for configs and callers)
        cap = max_episode_steps if max_plies is None else max_plies
        # was int(cap): 2.7 ran as 2 plies and "100" as 100 (envs/checks.py)
        self.max_plies = integer("chess", "max_episode_steps (max_plies)", cap, minimum=1)
        self._step_jit = None

    def _init(self, key) -> ChessState:
        del key  # the start position is fixed
        # constants, computed once per process and ply cap: traced, the start position's
        # move generation was traced, batched and lowered again by every function that starts
        # games (the Trainer's state, the collector's restarts): 1-1.5 of a warm
        # `turbozero train chess` start's 14-17 CPU seconds (docs/benchmarks.md, "Start-up and
        # compile time")
        return jax.tree_util.tree_map(jnp.asarray, _start_state(self.max_plies))

    def _step(self, state: ChessState, action, key) -> ChessState:
        del key
        color = state.current_player
        us, them, castle, ep = core.to_mover(
            state.board, color, state.castling, state.ep_square
        )
        us2, them2, castle2, ep2, halfmove, _ = core.apply_move(
            us, them, castle, ep, state.halfmove_clock, action
        )
        # `us2/them2` are in the old mover's frame, which is White's frame iff White moved
        board, castling, ep_abs = core.to_absolute(us2, them2, color, castle2, ep2)
        hist_board = jnp.concatenate([state.board[None], state.hist_board[:-1]], axis=0)
        hist_rep = jnp.concatenate([(state.repetition >= 2)[None], state.hist_rep[:-1]])
        hash_hist = jnp.concatenate([state.hash[None], state.hash_hist[:-1]], axis=0)
        return _position(
            board, 1 - color, castling, ep_abs, halfmove,
            state.fullmove_number + color, hist_board, hist_rep, hash_hist,
            state.step_count, self.max_plies,
        )

    def _observe(self, state: ChessState, player_id) -> Array:
        return _observe_state(state, player_id)

    @property
    def max_episode_steps(self) -> int:
        """The ply cap (the protocol's name; `max_plies` is the same number)."""
        return self.max_plies

    # ------------------------------------------------------------ one API shape
    def action_to_string(self, state: ChessState, action) -> str:
        """The UCI text of `action` (`decode_action`)."""
        return decode_action(state, self._scalar_action(action))

    def string_to_action(self, state: ChessState, text: str) -> int:
        """The action of a UCI move (`encode_move` without the legality check)."""
        return encode_move(state, text, legal_only=False)

    def render_text(self, state: ChessState) -> str:
        return render_text(state)

    def render_svg(self, state: ChessState) -> str:
        return render_svg(state)

    # ------------------------------------------------------------ Python boundary
    def step_uci(self, state: ChessState, uci: str) -> ChessState:
        """Apply a UCI move to a concrete, unbatched state; ValueError if it is illegal."""
        action = encode_move(state, uci)
        if self._step_jit is None:
            self._step_jit = jax.jit(self.step)
        return self._step_jit(state, jnp.int32(action))

    def from_fen(self, fen: str) -> ChessState:
        """A state for `fen` with this environment's ply cap."""
        return from_fen(fen, max_plies=self.max_plies)


# ------------------------------------------------------------------------ FEN
_FEN_PIECE = {c: (0, PIECES.index(c)) for c in PIECES}
_FEN_PIECE.update({c.lower(): (1, PIECES.index(c)) for c in PIECES})


def _sq_name(sq: int) -> str:
    return "abcdefgh"[sq % 8] + str(sq // 8 + 1)


def _parse_sq(s: str) -> int:
    if len(s) != 2 or s[0] not in "abcdefgh" or s[1] not in "12345678":
        raise ValueError(f"bad square {s!r}")
    return (int(s[1]) - 1) * 8 + "abcdefgh".index(s[0])


def _attacked(pieces: dict, sq: int, by: int) -> bool:
    """Plain-Python attack test used only to validate FENs."""
    r, f = divmod(sq, 8)

    def at(rr, ff):
        if 0 <= rr < 8 and 0 <= ff < 8:
            return pieces.get(rr * 8 + ff)
        return None

    pawn_dr = -1 if by == 0 else 1  # a White pawn attacks upwards, so it sits below
    for df in (-1, 1):
        if at(r + pawn_dr, f + df) == (by, 0):
            return True
    for dr, df in bbm.KNIGHT_DELTAS:
        if at(r + dr, f + df) == (by, 1):
            return True
    for dr in (-1, 0, 1):
        for df in (-1, 0, 1):
            if (dr or df) and at(r + dr, f + df) == (by, 5):
                return True
            if not (dr or df):
                continue
            kinds = (3, 4) if dr == 0 or df == 0 else (2, 4)
            rr, ff = r + dr, f + df
            while 0 <= rr < 8 and 0 <= ff < 8:
                p = pieces.get(rr * 8 + ff)
                if p is not None:
                    if p[0] == by and p[1] in kinds:
                        return True
                    break
                rr, ff = rr + dr, ff + df
    return False


def _parse_fen(fen: str):
    """Validate a FEN; return numpy (board, color, castling, ep, halfmove, fullmove)."""
    if not isinstance(fen, str):
        raise ValueError(f"FEN must be a string, got {type(fen).__name__}")
    fields = fen.split()
    if len(fields) != 6:
        raise ValueError(f"FEN needs 6 fields, got {len(fields)}: {fen!r}")
    placement, side, castle_s, ep_s, half_s, full_s = fields
    rows = placement.split("/")
    if len(rows) != 8:
        raise ValueError(f"FEN board needs 8 ranks, got {len(rows)}")
    pieces: dict[int, tuple[int, int]] = {}
    for i, row in enumerate(rows):
        rank = 7 - i
        f = 0
        for ch in row:
            if ch.isdigit() and ch not in "09":
                f += int(ch)
            elif ch in _FEN_PIECE:
                if f > 7:
                    raise ValueError(f"FEN rank {rank + 1} ({row!r}) does not have 8 squares")
                pieces[rank * 8 + f] = _FEN_PIECE[ch]
                f += 1
            else:
                raise ValueError(f"bad character {ch!r} in FEN board")
        if f != 8:
            raise ValueError(f"FEN rank {rank + 1} ({row!r}) does not have 8 squares")
    for c, name in ((0, "White"), (1, "Black")):
        kings = [s for s, p in pieces.items() if p == (c, 5)]
        if len(kings) != 1:
            raise ValueError(f"FEN must have exactly one {name} king, found {len(kings)}")
        if sum(1 for p in pieces.values() if p == (c, 0)) > 8:
            raise ValueError(f"{name} has more than 8 pawns")
        if sum(1 for p in pieces.values() if p[0] == c) > 16:
            raise ValueError(f"{name} has more than 16 pieces")
    if any(p[1] == 0 and s // 8 in (0, 7) for s, p in pieces.items()):
        raise ValueError("a pawn stands on the first or last rank")
    if side not in ("w", "b"):
        raise ValueError(f"side to move must be 'w' or 'b', got {side!r}")
    color = 0 if side == "w" else 1
    castling = np.zeros(4, bool)
    if castle_s != "-":
        if any(ch not in "KQkq" for ch in castle_s) or len(set(castle_s)) != len(castle_s):
            raise ValueError(f"bad castling field {castle_s!r}")
        for ch in castle_s:
            c = 0 if ch.isupper() else 1
            back = 0 if c == 0 else 56
            rook_sq = back + (7 if ch.upper() == "K" else 0)
            if pieces.get(back + 4) != (c, 5) or pieces.get(rook_sq) != (c, 3):
                raise ValueError(
                    f"castling right {ch!r} needs the king on {_sq_name(back + 4)} and a rook "
                    f"on {_sq_name(rook_sq)}"
                )
            castling["KQkq".index(ch)] = True
    ep = -1
    if ep_s != "-":
        ep = _parse_sq(ep_s)
        want_rank = 5 if color == 0 else 2
        if ep // 8 != want_rank:
            raise ValueError(f"en-passant square {ep_s} is not on rank {want_rank + 1}")
        step = -8 if color == 0 else 8  # the pawn that just moved stands beyond the square
        if pieces.get(ep + step) != (1 - color, 0):
            raise ValueError(f"en-passant square {ep_s} has no pawn that just moved past it")
        if ep in pieces or (ep - step) in pieces:
            raise ValueError(f"en-passant square {ep_s} or the square behind it is occupied")
    try:
        halfmove, fullmove = int(half_s), int(full_s)
    except ValueError:
        raise ValueError(f"bad move counters {half_s!r} {full_s!r}") from None
    if halfmove < 0 or fullmove < 1:
        raise ValueError(f"bad move counters {half_s!r} {full_s!r}")
    if max(halfmove, fullmove) > np.iinfo(np.int32).max:  # the state holds int32 counters
        raise ValueError(f"move counters {half_s!r} {full_s!r} are beyond int32")
    kings = {c: s for s, p in pieces.items() for c in (0, 1) if p == (c, 5)}
    if _attacked(pieces, kings[1 - color], color):
        raise ValueError("the side not to move is in check")
    board = np.zeros((12, 2), np.uint32)
    for s, (c, t) in pieces.items():
        board[c * 6 + t] |= bbm.int_to_words(1 << s)
    return (board, np.int32(color), castling, np.int32(ep), np.int32(halfmove),
            np.int32(fullmove))


def from_fen(fen: str, max_plies: int = 512) -> ChessState:
    """The state of a FEN position (no history). ValueError on a malformed or illegal FEN."""
    board, color, castling, ep, halfmove, fullmove = _parse_fen(fen)
    return _fresh_jit(
        jnp.asarray(board), jnp.asarray(color), jnp.asarray(castling), jnp.asarray(ep),
        jnp.asarray(halfmove), jnp.asarray(fullmove), max_plies=int(max_plies),
    )


def _piece_map(state: ChessState) -> dict[int, tuple[int, int]]:
    board = np.asarray(state.board).astype(np.uint64)
    words = board[:, 0] | (board[:, 1] << np.uint64(32))
    out = {}
    for i, w in enumerate(words):
        w = int(w)
        while w:
            s = (w & -w).bit_length() - 1
            out[s] = (i // 6, i % 6)
            w &= w - 1
    return out


def to_fen(state: ChessState) -> str:
    """FEN of a concrete unbatched state (en passant written only when capturable)."""
    require_unbatched(state, "chess: to_fen")
    pieces = _piece_map(state)
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for f in range(8):
            p = pieces.get(rank * 8 + f)
            if p is None:
                empty += 1
                continue
            if empty:
                row, empty = row + str(empty), 0
            ch = PIECES[p[1]]
            row += ch if p[0] == 0 else ch.lower()
        rows.append(row + (str(empty) if empty else ""))
    castling = "".join(ch for ch, on in zip("KQkq", np.asarray(state.castling)) if on) or "-"
    ep = int(state.ep_square)
    side = "w" if int(state.current_player) == 0 else "b"
    return (f"{'/'.join(rows)} {side} {castling} {_sq_name(ep) if ep >= 0 else '-'} "
            f"{int(state.halfmove_clock)} {int(state.fullmove_number)}")


# ------------------------------------------------------------------------ moves
_UCI = re.compile(r"^([a-h][1-8])([a-h][1-8])([nbrq]?)$")


def encode_move(state: ChessState, uci: str, *, legal_only: bool = True) -> int:
    """The action index (docs/chess.md, mover frame) of a UCI move in a concrete unbatched state.

    ValueError if the string is not a UCI move, the move cannot be encoded, or (with
    `legal_only`, the default) it is not legal here.
    """
    require_unbatched(state, "chess: encode_move")
    if not isinstance(uci, str):
        raise ValueError(f"UCI move must be a string, got {type(uci).__name__}")
    m = _UCI.match(uci)
    if not m:
        raise ValueError(f"not a UCI move: {uci!r}")
    frm, to = _parse_sq(m.group(1)), _parse_sq(m.group(2))
    if frm == to:
        raise ValueError(f"not a UCI move: {uci!r} (null move)")
    color = int(state.current_player)
    pieces = _piece_map(state)
    piece = pieces.get(frm)
    last_rank = 7 if color == 0 else 0
    promotes = piece == (color, 0) and to // 8 == last_rank
    letter = m.group(3)
    if promotes and not letter:
        raise ValueError(f"{uci!r}: a pawn reaching the last rank needs a promotion piece")
    if letter and not promotes:
        raise ValueError(f"{uci!r}: promotion piece given for a move that does not promote")
    if color == 1:
        frm, to = frm ^ 56, to ^ 56
    promo = {"": 0, "q": 0, "n": 1, "b": 2, "r": 3}[letter]
    try:
        action = core.encode_squares(frm, to, promo)
    except ValueError as e:
        raise ValueError(f"{uci!r} cannot be a chess move: {e}") from None
    if legal_only and (bool(state.terminated) or not bool(state.legal_action_mask[action])):
        raise ValueError(f"{uci!r} is not a legal move in {to_fen(state)}")
    return action


def _decode(a: int, color: int, pieces: dict) -> str:
    frm, to, promo = int(core.ACT_FROM[a]), int(core.ACT_TO[a]), int(core.ACT_PROMO[a])
    if to < 0:
        raise ValueError(f"action {a} leaves the board")
    if color == 1:
        frm, to = frm ^ 56, to ^ 56
    letter = ("", "n", "b", "r")[promo]
    # a queen-type pawn move onto the last rank is the queen promotion
    if not promo and a < 3584 and pieces.get(frm) == (color, 0) and to // 8 in (0, 7):
        letter = "q"
    return _sq_name(frm) + _sq_name(to) + letter


def decode_action(state: ChessState, action) -> str:
    """The UCI string of `action` in a concrete unbatched state (it need not be legal)."""
    require_unbatched(state, "chess: decode_action")
    a = int(action)
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action {a} out of range [0, {NUM_ACTIONS})")
    return _decode(a, int(state.current_player), _piece_map(state))


def legal_moves_uci(state: ChessState) -> list[str]:
    """The legal moves of a concrete unbatched state as UCI strings (none if it is over)."""
    require_unbatched(state, "chess: legal_moves_uci")
    if bool(state.terminated) or bool(state.truncated):
        return []
    pieces, color = _piece_map(state), int(state.current_player)
    return [_decode(int(a), color, pieces)
            for a in np.flatnonzero(np.asarray(state.legal_action_mask))]


def termination_reason(state: ChessState) -> str:
    """'ongoing', 'checkmate', 'stalemate', 'insufficient_material', 'fifty_moves',
    'threefold_repetition' or 'ply_cap'."""
    require_unbatched(state, "chess: termination_reason")
    return REASONS[int(state.termination)]


# ---------------------------------------------------------------------- rendering
def render_text(state: ChessState) -> str:
    """The board as text, rank 8 on top, White upper case, '.' for an empty square."""
    require_unbatched(state, "chess: render_text")
    pieces = _piece_map(state)
    lines = []
    for rank in range(7, -1, -1):
        cells = []
        for f in range(8):
            p = pieces.get(rank * 8 + f)
            cells.append("." if p is None else (PIECES[p[1]] if p[0] == 0 else PIECES[p[1]].lower()))
        lines.append(f"{rank + 1} " + " ".join(cells))
    lines.append("  a b c d e f g h")
    lines.append(("White" if int(state.current_player) == 0 else "Black") + " to move")
    return "\n".join(lines)


_GLYPH = {(0, i): g for i, g in enumerate("\u2659\u2658\u2657\u2656\u2655\u2654")}
_GLYPH.update({(1, i): g for i, g in enumerate("\u265f\u265e\u265d\u265c\u265b\u265a")})


def render_svg(state: ChessState, size: int = 360, last_action: Optional[int] = None) -> str:
    """An SVG image of the board (rank 8 on top), for notebooks: `IPython.display.SVG(...)`."""
    require_unbatched(state, "chess: render_svg")
    pieces = _piece_map(state)
    sq = size / 8
    highlight = set()
    if last_action is not None:
        # the squares of a move just played are given in the frame of the side that played it
        frm, to = int(core.ACT_FROM[int(last_action)]), int(core.ACT_TO[int(last_action)])
        if int(state.current_player) == 0:  # Black moved
            frm, to = frm ^ 56, (to ^ 56) if to >= 0 else to
        highlight = {frm, to}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
           f'viewBox="0 0 {size} {size}">']
    for rank in range(8):
        for f in range(8):
            s = rank * 8 + f
            x, y = f * sq, (7 - rank) * sq
            colour = "#b58863" if (rank + f) % 2 == 0 else "#f0d9b5"
            if s in highlight:
                colour = "#cdd26a"
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{sq:.1f}" height="{sq:.1f}" '
                       f'fill="{colour}"/>')
            p = pieces.get(s)
            if p is not None:
                out.append(
                    f'<text x="{x + sq / 2:.1f}" y="{y + sq * 0.78:.1f}" font-size="{sq * 0.8:.1f}" '
                    f'text-anchor="middle">{_GLYPH[p]}</text>'
                )
    out.append("</svg>")
    return "\n".join(out)


__all__ = [
    "Chess", "ChessState", "from_fen", "to_fen", "encode_move", "decode_action",
    "legal_moves_uci", "termination_reason", "render_text", "render_svg", "REASONS",
    "START_FEN",
]
