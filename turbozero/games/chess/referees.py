"""Chess evaluation opponents stronger than random: material-greedy (jitted) and Stockfish.

- `material`: the 1-ply material-greedy player (`envs.chess.material`), a jittable
  policy that `evaluation.play_match` plays like any other.
- `stockfish`: Stockfish through python-chess's UCI engine module at its weakest settings
  (UCI option "Skill Level" 0, search depth 1). Stockfish is not jittable, so its match is a
  Python loop over a batch of games, as gnubg's is (`games/backgammon/gnubg_match.py`): the agent's
  moves come from one jitted batched call per step, Stockfish's from the engine per game, and
  a python-chess board beside each game converts actions to moves and back
  (`envs.chess.pychess`).

Install Stockfish with the Debian package (`apt-get install stockfish`, which puts the binary in
/usr/games) or any build on the PATH; python-chess with `pip install -e ".[chess]"`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
from typing import Any, Callable, NamedTuple, Optional

import jax
import numpy as np

from envs.chess.core import REASONS
from envs.chess.material import material_policy  # noqa: F401  (re-exported)
from envs.chess.pgn import GameRecord, policy_notes, result_tag
from envs.chess.pychess import action_to_move, game_over, move_to_action, \
    require_python_chess

STOCKFISH_INSTALL = ("apt-get install stockfish (Debian/Ubuntu; the binary goes to "
                     "/usr/games/stockfish), or put a stockfish binary on the PATH")
# what the registered "stockfish" opponent needs, in one line (`turbozero.games`)
STOCKFISH_OPPONENT_INSTALL = 'pip install -e ".[chess]" and ' + STOCKFISH_INSTALL
# where the Debian package installs it; /usr/games is not on every PATH (e.g. root's)
DEBIAN_STOCKFISH = "/usr/games/stockfish"


@functools.lru_cache(maxsize=4)
def _jitted(fn: Callable) -> Callable:
    """`jax.jit(fn)` kept across matches: a new `jax.jit` wrapper of the same function traces
    and compiles again (measured: the agent's search is recompiled at every evaluation
    otherwise). Bounded: a few agents and envs at a time."""
    return jax.jit(fn)


def find_stockfish(path: Optional[str] = None) -> str:
    """The Stockfish binary: `path` if given, else `stockfish` on the PATH, else the Debian
    package's. ValueError saying how to install it when there is none."""
    if path is not None:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ValueError(f"StockfishSettings.path {path!r} is not an executable file")
        return path
    found = shutil.which("stockfish")
    if found is None and os.access(DEBIAN_STOCKFISH, os.X_OK):
        found = DEBIAN_STOCKFISH
    if found is None:
        raise ValueError(f"the stockfish opponent needs a Stockfish binary: {STOCKFISH_INSTALL}")
    return found


@dataclasses.dataclass(frozen=True)
class StockfishSettings:
    """How Stockfish plays. The defaults are its weakest: skill level 0 at depth 1."""

    skill_level: int = 0  # UCI "Skill Level", 0 (weakest) .. 20
    depth: int = 1  # search depth limit per move
    path: Optional[str] = None  # the binary (default: `find_stockfish`)

    def __post_init__(self) -> None:
        if isinstance(self.skill_level, bool) or not 0 <= int(self.skill_level) <= 20:
            raise ValueError(f"StockfishSettings.skill_level must be in 0..20, "
                             f"got {self.skill_level}")
        if isinstance(self.depth, bool) or int(self.depth) < 1:
            raise ValueError(f"StockfishSettings.depth must be >= 1, got {self.depth}")


def open_stockfish(settings: StockfishSettings = StockfishSettings()) -> Any:
    """A started `chess.engine.SimpleEngine` configured by `settings` (call `.quit()`)."""
    chess = require_python_chess("the stockfish opponent")
    import chess.engine  # python-chess is optional (the chess extra), checked just above

    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(settings.path))
    try:
        engine.configure({"Skill Level": int(settings.skill_level)})
    except Exception:
        engine.quit()
        raise
    return engine


class StockfishMatch(NamedTuple):
    """A match against Stockfish: its summary and the games as records."""

    summary: dict  # evaluation.match_summary, from the agent's side
    records: list  # envs.chess.pgn.GameRecord per game (games_to_pgn writes them)


def play_stockfish_match(
    env: Any,
    agent: Callable,
    variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
    settings: StockfishSettings = StockfishSettings(),
    agent_name: str = "agent",
) -> StockfishMatch:
    """`agent` against Stockfish; the agent is White in even games and Black in odd ones (as
    `evaluation.play_match`). `agent(variables, states, key)` returns actions, or a search
    output (`turbozero.search.SearchResult`), whose value and visit share then annotate the
    agent's moves in the records.

    RuntimeError if the env and python-chess ever disagree on a game (a move Stockfish plays is
    illegal in the env, or one ends a game the other does not): the result would mean nothing.
    """
    if getattr(env, "id", None) != "chess":
        raise ValueError(f"stockfish can only play chess, not {getattr(env, 'id', env)!r}")
    for name, value in (("num_games", num_games), ("max_steps", max_steps)):
        if isinstance(value, bool) or int(value) < 1:
            raise ValueError(f"play_against_stockfish: {name} must be >= 1, got {value}")
    chess = require_python_chess("the stockfish opponent")
    import chess.engine  # python-chess is optional (the chess extra), checked just above

    # imported here: turbozero.games registers this module's opponents, and the training
    # package imports turbozero.games
    from turbozero.training.evaluation import play_outside_match

    n = int(num_games)
    agent_jit = _jitted(agent)
    engine = open_stockfish(settings)
    opponent = _StockfishOpponent(chess, engine, chess.engine.Limit(depth=int(settings.depth)), n)
    try:
        match = play_outside_match(
            env, lambda v, s, k: policy_notes(agent_jit(v, s, k)), variables, key, n,
            int(max_steps), opponent)
    finally:
        engine.quit()
    summary = match.summary()
    boards, notes, seat, finished, returns = (opponent.boards, opponent.notes, match.seat,
                                              match.finished, match.returns)
    states = match.states
    engine_name = f"stockfish (skill {settings.skill_level}, depth {settings.depth})"
    termination = np.asarray(states.termination)
    records = []
    for g in range(n):
        names = (agent_name, engine_name) if seat[g] == 0 else (engine_name, agent_name)
        reason = REASONS[int(termination[g])] if finished[g] else "unfinished"
        annotated = any(v is not None for v, _ in notes[g])
        records.append(GameRecord(
            tuple(m.uci() for m in boards[g].move_stack), result_tag(bool(finished[g]),
                                                                      returns[g]),
            values=tuple(v for v, _ in notes[g]) if annotated else None,
            shares=tuple(p for _, p in notes[g]) if annotated else None,
            headers=(("Event", "turbozero vs stockfish"), ("White", names[0]),
                     ("Black", names[1]), ("Round", str(g + 1)), ("Termination", reason))))
    return StockfishMatch(summary, records)


class _StockfishOpponent:
    """Stockfish as an `evaluation.OutsideOpponent`, with a python-chess board beside each game
    (moves converted both ways; RuntimeError when the env and python-chess disagree)."""

    def __init__(self, chess: Any, engine: Any, limit: Any, num_games: int):
        self.engine, self.limit = engine, limit
        self.boards = [chess.Board() for _ in range(num_games)]
        self.notes: list[list[tuple[Optional[float], Optional[float]]]] = [
            [] for _ in range(num_games)]

    def choose(self, game: int, states: Any) -> int:
        board = self.boards[game]
        move = self.engine.play(board, self.limit).move
        action = move_to_action(board, move)
        if not bool(np.asarray(states.legal_action_mask[game, action])):
            raise RuntimeError(f"Stockfish's {move.uci()} is legal for python-chess "
                               f"but not in the env at {board.fen()}")
        return action

    def after_move(self, game: int, action: int, agent_output: Any) -> None:
        board = self.boards[game]
        if agent_output is None:
            self.notes[game].append((None, None))
        else:
            self.notes[game].append((_note(agent_output.value[game]),
                                     _note(agent_output.share[game])))
        board.push(action_to_move(board, action))

    def after_step(self, was_done: np.ndarray, states: Any) -> None:
        ended = np.asarray(states.terminated) & ~was_done
        for g in np.flatnonzero(~was_done):
            if bool(ended[g]) != game_over(self.boards[g]):
                raise RuntimeError(f"the env and python-chess disagree on whether the game "
                                   f"is over at {self.boards[g].fen()}")


def _note(x) -> Optional[float]:
    x = float(x)
    return None if np.isnan(x) else x


def play_against_stockfish(
    env: Any,
    agent: Callable,
    variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
    settings: StockfishSettings = StockfishSettings(),
) -> dict[str, Optional[float]]:
    """`play_stockfish_match`'s summary: counts of wins, draws, losses and unfinished games
    (`evaluation.match_summary`), rates over the finished games only."""
    return play_stockfish_match(env, agent, variables, key, num_games, max_steps,
                                settings).summary


def stockfish_match(env, agent, variables, key, num_games, max_steps):
    """The `match` of the registered "stockfish" opponent (weakest settings)."""
    return play_against_stockfish(env, agent, variables, key, num_games, max_steps)


__all__ = ["DEBIAN_STOCKFISH", "STOCKFISH_INSTALL", "STOCKFISH_OPPONENT_INSTALL",
           "StockfishMatch", "StockfishSettings", "find_stockfish", "material_policy",
           "open_stockfish", "play_against_stockfish", "play_stockfish_match",
           "stockfish_match"]
