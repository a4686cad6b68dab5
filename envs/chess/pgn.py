"""Chess games as PGN: records of games played by any two policies, with the search's notes.

    records = record_games(env, white, black, key, num_games=4, max_steps=512,
                           names=("agent", "random"))
    text = games_to_pgn(records)          # python-chess, lichess, any PGN reader opens it

A policy is `(variables, states, key) -> actions` (int32[B]) or returns a search output with
`action`, `policy` (the visit distribution) and `root_value` (for the mover, as
`turbozero.search.SearchResult`): then every move it plays carries the comment
`{v=+0.12 p=0.45}`, the searched value of the position for the side that moved and the share
of the root's visits that went to the move played. Games are played inside one jitted
`lax.while_loop` and converted on the host through python-chess (`envs.chess.pychess`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envs.chess.core import REASONS
from envs.chess.pychess import action_to_move, require_python_chess

Array = jax.Array
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
NO_ACTION = -1  # recorded for a game that was already over at that step
NO_NOTE = float("nan")  # value / visit share of a move played by a policy without search
_COMMENT = re.compile(r"v=([+-]?\d+(?:\.\d+)?)\s+p=(\d+(?:\.\d+)?)")


@dataclasses.dataclass(frozen=True)
class GameRecord:
    """One game: its moves (UCI), result, and per-move search notes (None where there are none).

    result: "1-0", "0-1", "1/2-1/2", or "*" for a game cut before its end.
    values[i]: the searched value of the position before move i, for the side making it.
    shares[i]: the share of the root's visits given to move i.
    headers: extra PGN tags (e.g. White, Black, Event, Termination).

    A note is None or NaN (no note: nothing is written) or a finite number (a share in
    [0, 1]); an infinite value is refused here rather than written as `v=+inf`, which no
    reader of the notes can use. A result that contradicts the final position (a checkmate
    scored for the mated side, a stalemate or dead draw scored as a win) is refused when the
    record is written (`game_to_pgn`), which plays the moves through.
    """

    moves: tuple[str, ...]
    result: str
    start_fen: str = START_FEN
    values: Optional[tuple[Optional[float], ...]] = None
    shares: Optional[tuple[Optional[float], ...]] = None
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.result not in ("1-0", "0-1", "1/2-1/2", "*"):
            raise ValueError(f"GameRecord.result must be 1-0, 0-1, 1/2-1/2 or *, "
                             f"got {self.result!r}")
        for name in ("values", "shares"):
            notes = getattr(self, name)
            if notes is not None and len(notes) != len(self.moves):
                raise ValueError(f"GameRecord.{name} has {len(notes)} entries for "
                                 f"{len(self.moves)} moves")
            for i, x in enumerate(notes or ()):
                if x is None or (isinstance(x, (int, float)) and math.isnan(x)):
                    continue
                _check_note(f"GameRecord.{name}[{i}] (move {i + 1})", x,
                            (0.0, 1.0) if name == "shares" else None)


def _check_note(what: str, x, bounds: Optional[tuple[float, float]]) -> None:
    ok = isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and \
        math.isfinite(x)
    if ok and bounds is not None:
        ok = bounds[0] <= x <= bounds[1]
    if not ok:
        want = f"a number in [{bounds[0]:g}, {bounds[1]:g}]" if bounds else "a finite number"
        raise ValueError(f"{what} must be {want} (or None: no note), got {x!r}")


def move_comment(value: Optional[float], share: Optional[float]) -> str:
    """The PGN comment of one move, `v=+0.12 p=0.45`; "" when the move has no notes (None or
    NaN). ValueError for an infinite value or a share outside [0, 1]: never written."""
    if value is None or share is None or math.isnan(value) or math.isnan(share):
        return ""
    _check_note("move_comment: value", value, None)
    _check_note("move_comment: share", share, (0.0, 1.0))
    return f"v={value:+.2f} p={share:.2f}"


def parse_comment(comment: str) -> Optional[tuple[float, float]]:
    """(value, share) from a comment written by `move_comment`, None if it has none."""
    m = _COMMENT.search(comment)
    return (float(m.group(1)), float(m.group(2))) if m else None


def game_to_pgn(record: GameRecord) -> str:
    """One game as PGN text. ValueError if a move is not legal in its position."""
    chess = require_python_chess("games_to_pgn")
    import chess.pgn  # python-chess is optional (the chess extra), checked just above

    board = chess.Board(record.start_fen)
    game = chess.pgn.Game()
    if record.start_fen != START_FEN:
        game.setup(board)
    for tag, value in record.headers:
        game.headers[tag] = str(value)
    game.headers["Result"] = record.result
    node = game
    for i, uci in enumerate(record.moves):
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            raise ValueError(f"move {i + 1} {uci!r} is not a UCI move") from None
        if move not in board.legal_moves:
            raise ValueError(f"move {i + 1} {uci!r} is not legal in {board.fen()}")
        board.push(move)
        comment = move_comment(record.values[i] if record.values else None,
                               record.shares[i] if record.shares else None)
        node = node.add_variation(move, comment=comment)
    _check_result(record.result, board)
    return str(game)


def _check_result(result: str, board) -> None:
    """ValueError when `result` contradicts the final position `board`: at a checkmate or a
    stalemate the result is the rules' own (every recorder ends the game there); at a draw
    the rules impose without a claim (insufficient material, 75 moves, fivefold repetition) a
    win is refused, while "*" stays allowed (a recorder may not apply those rules and cut the
    game later). A position not over by the rules takes any result (a resignation, an
    adjudication, a cap)."""
    outcome = board.outcome(claim_draw=False)
    if outcome is None:
        return
    reason = outcome.termination.name.lower()
    if reason in ("checkmate", "stalemate"):
        ok = result == outcome.result()
    else:
        ok = result in ("1/2-1/2", "*")
    if not ok:
        raise ValueError(f"result {result} contradicts the final position ({reason}, "
                         f"{outcome.result()}): {board.fen()}")


def games_to_pgn(records: Sequence[GameRecord]) -> str:
    """Many games as one PGN file (games separated by a blank line)."""
    if isinstance(records, GameRecord):
        records = [records]
    return "\n\n".join(game_to_pgn(r) for r in records) + "\n"


# ------------------------------------------------------------------ recording games
class MoveNotes(NamedTuple):
    """What one step of a policy says about the moves it chose."""

    action: Array  # int32[B]
    value: Array  # float32[B] searched value for the mover (NO_NOTE without search)
    share: Array  # float32[B] visit share of the chosen move (NO_NOTE without search)


class _RecordCarry(NamedTuple):
    states: Any  # ChessState[B]
    key: Array
    step: Array  # int32 steps played
    returns: Array  # float32[B, 2] rewards summed per player
    actions: Array  # int32[T, B] the move of each step, NO_ACTION once a game is over
    values: Array  # float32[T, B]
    shares: Array  # float32[T, B]


def policy_notes(output: Any) -> MoveNotes:
    """A policy's output as `MoveNotes`: actions alone, or a search output (module docstring)."""
    if hasattr(output, "policy"):
        action = jnp.asarray(output.action, jnp.int32)
        share = jnp.take_along_axis(output.policy, action[:, None], axis=1)[:, 0]
        return MoveNotes(action, jnp.asarray(output.root_value, jnp.float32),
                         share.astype(jnp.float32))
    action = jnp.asarray(output, jnp.int32)
    nothing = jnp.full(action.shape, NO_NOTE, jnp.float32)
    return MoveNotes(action, nothing, nothing)


def play_recorded(env, white: Callable, black: Callable, variables: tuple, key: Array,
                  num_games: int, max_steps: int) -> _RecordCarry:
    """Play `num_games` games, White = `white`, Black = `black`, recording every move (jittable
    with `num_games` and `max_steps` static). Stops when every game is over or at `max_steps`."""
    k_init, k_loop = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, num_games))
    shape = (max_steps, num_games)

    def cond(c: _RecordCarry):
        return (c.step < max_steps) & ~jnp.all(c.states.terminated | c.states.truncated)

    def body(c: _RecordCarry) -> _RecordCarry:
        key, kw, kb, ks = jax.random.split(c.key, 4)
        w = policy_notes(white(variables[0], c.states, kw))
        b = policy_notes(black(variables[1], c.states, kb))
        notes = jax.tree_util.tree_map(
            lambda x, y: jnp.where(c.states.current_player == 0, x, y), w, b)
        over = c.states.terminated | c.states.truncated  # [B] before this step
        nxt = jax.vmap(env.step)(c.states, notes.action, jax.random.split(ks, num_games))
        return _RecordCarry(
            nxt, key, c.step + 1, c.returns + nxt.rewards,
            c.actions.at[c.step].set(jnp.where(over, NO_ACTION, notes.action)),
            c.values.at[c.step].set(jnp.where(over, NO_NOTE, notes.value)),
            c.shares.at[c.step].set(jnp.where(over, NO_NOTE, notes.share)),
        )

    init = _RecordCarry(states, k_loop, jnp.int32(0), jnp.zeros((num_games, 2), jnp.float32),
                        jnp.full(shape, NO_ACTION, jnp.int32),
                        jnp.full(shape, NO_NOTE, jnp.float32),
                        jnp.full(shape, NO_NOTE, jnp.float32))
    return jax.lax.while_loop(cond, body, init)


# env, the two policies, num_games and max_steps are static: one compilation per set-up
_play_recorded_jit = jax.jit(play_recorded, static_argnums=(0, 1, 2, 5, 6))


def result_tag(finished: bool, returns: np.ndarray) -> str:
    """The PGN result of a game from whether it ended and the players' returns [2]."""
    if not finished:
        return "*"
    if returns[0] > 0:
        return "1-0"
    if returns[1] > 0:
        return "0-1"
    return "1/2-1/2"  # draws and the ply cap (a draw, docs/chess.md)


def record_games(env, white: Callable, black: Callable, key: Array, num_games: int,
                 max_steps: Optional[int] = None, variables: tuple = (None, None),
                 names: tuple[str, str] = ("white", "black"),
                 event: str = "turbozero") -> list[GameRecord]:
    """Play and record `num_games` chess games between two policies (module docstring).

    `variables` = (White's, Black's) first argument of each policy. `max_steps` defaults to the
    env's ply cap; games not over by then get the result "*". Returns one `GameRecord` per
    game with its moves, result, search notes and tags (Event, White, Black, Termination).
    """
    if getattr(env, "id", None) != "chess":
        raise ValueError(f"record_games records chess games, got env {getattr(env, 'id', env)!r}")
    if isinstance(num_games, bool) or int(num_games) < 1:
        raise ValueError(f"record_games: num_games must be >= 1, got {num_games}")
    steps = env.max_episode_steps if max_steps is None else max_steps
    if isinstance(steps, bool) or int(steps) < 1:
        raise ValueError(f"record_games: max_steps must be >= 1, got {max_steps}")
    chess = require_python_chess("record_games")
    out = jax.device_get(_play_recorded_jit(env, white, black, tuple(variables), key,
                                            int(num_games), int(steps)))
    finished = out.states.terminated | out.states.truncated
    records = []
    for g in range(int(num_games)):
        board = chess.Board()
        moves, values, shares = [], [], []
        for t in range(int(out.step)):
            a = int(out.actions[t, g])
            if a == NO_ACTION:
                break
            move = action_to_move(board, a)
            board.push(move)
            moves.append(move.uci())
            values.append(_note(out.values[t, g]))
            shares.append(_note(out.shares[t, g]))
        reason = REASONS[int(out.states.termination[g])] if finished[g] else "unfinished"
        headers = (("Event", event), ("White", names[0]), ("Black", names[1]),
                   ("Round", str(g + 1)), ("Termination", reason))
        has_notes = any(v is not None for v in values)
        records.append(GameRecord(
            tuple(moves), result_tag(bool(finished[g]), out.returns[g]),
            values=tuple(values) if has_notes else None,
            shares=tuple(shares) if has_notes else None, headers=headers))
    return records


def _note(x) -> Optional[float]:
    x = float(x)
    return None if math.isnan(x) else x


__all__ = ["GameRecord", "MoveNotes", "NO_ACTION", "NO_NOTE", "START_FEN", "game_to_pgn",
           "games_to_pgn", "move_comment", "parse_comment", "play_recorded", "policy_notes",
           "record_games", "result_tag"]
